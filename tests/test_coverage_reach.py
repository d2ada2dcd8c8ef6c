"""What `run --coverage` counts: lines and branches reached by cases, of those inside functions
(Note [Reached by cases]); the torch files it measures (Note [What coverage measures]); the
worker's per-case new arcs; the summary's numbers in the report and the history."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pyfy_fuzz.cli import main
from pyfy_fuzz.reports.coverage_data import DYNAMO_FILES, combine_coverage, torch_files
from pyfy_fuzz.reports.history import entry_for

TARGET = (
    "X = 1\n\n\ndef f(x):\n    if x:\n        return 1\n    return 2\n\n\nclass C:\n    y = 2\n"
)


def _measure(tmp_path: Path, *, before_import: bool, calls: tuple[str, ...]) -> Path:
    """One "worker": coverage over target.py, started before or after importing it."""
    mod = tmp_path / "target.py"
    mod.write_text(TARGET)
    data = tmp_path / "cov"
    data.mkdir(exist_ok=True)
    start = (
        "import coverage, sys; "
        f"c = coverage.Coverage(data_file={str(data / '.coverage')!r}, data_suffix=True, "
        f"branch=True, include=[{str(mod)!r}]); "
        f"sys.path.insert(0, {str(tmp_path)!r}); "
    )
    imp = "import target; "
    run = "".join(f"target.f({a}); " for a in calls)
    body = (
        "c.start(); " + imp + run if before_import else imp + "c.start(); " + run
    ) + "c.stop(); c.save()"
    subprocess.run([sys.executable, "-c", start + body], check=True)
    return data


def test_import_time_lines_are_neither_reached_nor_counted(tmp_path: Path) -> None:
    """Started before the import, the def, class and module lines ran; they still count for
    nothing: only f's body does (3 statements, 2 branches)."""
    data = _measure(tmp_path, before_import=True, calls=("True",))
    row = combine_coverage(data, torch_names=[])["files"][str(tmp_path / "target.py")]
    assert (row["statements_total"], row["statements_reached"]) == (3, 2)
    assert (row["branches_total"], row["branches_reached"]) == (2, 1)
    assert (row["lines"], row["branches"]) == (66.7, 50.0)


def test_measured_after_import_the_same_case_counts_the_same(tmp_path: Path) -> None:
    data = _measure(tmp_path, before_import=False, calls=("True", "False"))
    row = combine_coverage(data, torch_names=[])["files"][str(tmp_path / "target.py")]
    assert (row["statements_reached"], row["branches_reached"]) == (3, 2)
    assert row["branches"] == 100.0


def test_torch_files_name_every_measured_part() -> None:
    names = torch_files()
    assert any(n.endswith("_aot_autograd/runtime_wrappers.py") for n in names)
    assert any(n.endswith("_aot_autograd/collect_metadata_analysis.py") for n in names)
    for tail in ("_functorch/partitioners.py", "_subclasses/functional_tensor.py", *DYNAMO_FILES):
        assert any(n.endswith(tail) for n in names), tail
    assert all(Path(n).is_file() for n in names)


def test_a_torch_file_no_case_reached_is_listed_as_never_reached(tmp_path: Path) -> None:
    data = _measure(tmp_path, before_import=False, calls=("True",))
    other = tmp_path / "never.py"
    other.write_text("def g(x):\n    if x:\n        return 1\n    return 2\n")
    cov = combine_coverage(data, torch_names=[str(tmp_path / "target.py"), str(other)])
    t = cov["torch"]
    assert t["never_reached"] == [str(other)]
    assert (t["files"], t["branches_reached"], t["branches_total"]) == (2, 1, 4)
    assert cov["files"][str(other)]["branches_reached"] == 0


def test_new_arcs_are_reported_once(tmp_path: Path) -> None:
    """The worker's per-case read: a case's arcs the process had not seen, then nothing for
    the same code again, and nothing for arcs the campaign had seen when it started."""
    import coverage

    from pyfy_fuzz.campaign.case_coverage import CaseCoverage

    mod = tmp_path / "target_arcs.py"
    mod.write_text(TARGET)
    sys.path.insert(0, str(tmp_path))
    try:
        import target_arcs  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    name = str(mod.resolve())
    cov = coverage.Coverage(data_file=None, branch=True, include=[name])
    cov.start()
    try:
        probe = CaseCoverage(cov, [name], ())
        target_arcs.f(True)
        first = probe.new_arcs()
        target_arcs.f(True)
        again = probe.new_arcs()
        target_arcs.f(False)
        other = probe.new_arcs()
        seeded = CaseCoverage(cov, [name], first + other)
        seeded_new = seeded.new_arcs()
    finally:
        cov.stop()
    assert first and {n for n, _ in first} == {name}
    assert again == ()
    assert other and not set(other) & set(first)
    assert seeded_new == ()


COVERAGE = {
    "percent": 40.0,
    "files": {
        "/x/site-packages/torch/_functorch/partitioners.py": {
            "lines": 50.0,
            "branches": 25.0,
            "statements_total": 10,
            "statements_reached": 5,
            "branches_total": 8,
            "branches_reached": 2,
            "torch": True,
        },
        "/x/site-packages/torch/_dynamo/side_effects.py": {
            "lines": 0.0,
            "branches": 0.0,
            "statements_total": 4,
            "statements_reached": 0,
            "branches_total": 2,
            "branches_reached": 0,
            "torch": True,
        },
    },
    "torch": {
        "files": 2,
        "branches_total": 10,
        "branches_reached": 2,
        "branch_percent": 20.0,
        "never_reached": ["/x/site-packages/torch/_dynamo/side_effects.py"],
    },
    "html": "/x/html/index.html",
}


def test_history_and_report_carry_torch_branches_per_file(tmp_path: Path) -> None:
    summary = {
        "cases": 10,
        "elapsed_s": 60,
        "findings": [],
        "wrapper_hits": {"tokens/forward": 1},
        "finished_at": "2026-12-01T01:00:00Z",
        "torch": "2.13.0",
        "coverage": COVERAGE,
        "steering": {"on": True, "pool": 3},
        "status": {"ok": 10},
        "config": {"device": "cpu", "backend": "aot_eager"},
    }
    e = entry_for(summary, tmp_path / "s.json")
    t = e["torch_coverage"]
    assert (t["branches_reached"], t["branches_total"], t["branch_percent"]) == (2, 10, 20.0)
    assert t["files"] == {
        "torch/_functorch/partitioners.py": [2, 8],
        "torch/_dynamo/side_effects.py": [0, 2],
    }
    assert t["never_reached"] == ["torch/_dynamo/side_effects.py"]
    assert e["steering"] == {"on": True, "pool": 3}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(summary))
    assert main(["report", "--run", str(path), "--out", str(tmp_path / "rep")]) == 0
    md = next((tmp_path / "rep").glob("*.md")).read_text()
    assert "20.0% of torch's branches reached by cases" in md
    assert "never reached: torch/_dynamo/side_effects.py" in md
    assert "2 of 8" in md
    page = next((tmp_path / "rep").glob("*.html")).read_text()
    assert "<td>2 of 8</td>" in page


def test_run_prints_torch_branches_per_file_and_steering() -> None:
    import io

    from pyfy_fuzz.cli.run import _print_coverage

    out = io.StringIO()
    steering = {
        "on": False,
        "pool": 0,
        "pool_cases": 0,
        "pool_kept": 0,
        "fresh_cases": 9,
        "fresh_kept": 4,
    }
    _print_coverage({"coverage": COVERAGE, "steering": steering}, out)
    text = out.getvalue()
    assert "torch branches reached by cases: 2 of 10 (20.0%) in 2 files" in text
    assert "torch/_functorch/partitioners.py" in text and "2 of 8" in text
    assert "never reached: torch/_dynamo/side_effects.py" in text
    assert "steering off" in text
