"""`pyfy-fuzz report`: the wrapper-path table from campaign summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from generators import materialize, programs
from pyfy_fuzz.cli import main
from pyfy_fuzz.reports.report import ReportError, load_runs, path_rows, render_html, render_text
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts
from pyfy_fuzz.schema.paths import ALL_PATHS


def _summary(tmp: Path, name: str, hits: dict[str, int], findings: list, when: str) -> Path:
    p = tmp / name
    p.write_text(
        json.dumps(
            {
                "cases": sum(hits.values()) + 10,
                "elapsed_s": 60.0,
                "findings": findings,
                "wrapper_hits": hits,
                "finished_at": when,
                "torch": "2.13.0",
                "config": {"backend": "aot_eager", "device": "cpu"},
            }
        )
    )
    return p


def test_rows_never_reached_first_then_by_cases(tmp_path: Path) -> None:
    a = _summary(
        tmp_path,
        "a.json",
        {"dedupe/duplicate_args": 5, "tokens/forward": 1},
        [{"signature": "s", "wrappers": ["dedupe/duplicate_args"]}],
        "2026-11-20T00:00:00Z",
    )
    b = _summary(
        tmp_path, "b.json", {"dedupe/duplicate_args": 2, "new/path": 3}, [], "2026-11-21T00:00:00Z"
    )
    rows = path_rows(load_runs([a, b]))
    reached = [r for r in rows if r.cases]
    assert [r.path for r in reached] == ["tokens/forward", "new/path", "dedupe/duplicate_args"]
    assert all(r.cases == 0 for r in rows[: len(rows) - 3])  # never reached come first
    dedupe = reached[-1]
    assert (dedupe.cases, dedupe.runs, dedupe.findings) == (7, 2, 1)
    assert dedupe.last_reached == "2026-11-21T00:00:00Z"
    assert not reached[1].in_catalogue  # a path the catalogue lacks is still shown
    assert len(rows) == len(ALL_PATHS) + 1
    text = render_text(rows, load_runs([a, b]))
    assert text.startswith(f"3 of {len(ALL_PATHS) + 1} wrapper paths reached in 2 run(s)")
    # a path only a GPU reaches is marked, not mistaken for a generator's gap
    assert "rng/functionalized (CUDA only)" in text and "tokens/forward (CUDA" not in text


def test_html_page_has_title_table_and_marks_never_reached(tmp_path: Path) -> None:
    a = _summary(tmp_path, "a.json", {"tokens/forward": 4}, [], "2026-11-20T00:00:00Z")
    runs = load_runs([a])
    page = render_html(path_rows(runs), runs, "Wrapper <paths>")
    assert "<title>Wrapper &lt;paths&gt;</title>" in page
    assert page.count('<tr class="never">') == len(ALL_PATHS) - 1
    assert '<table id="wrapper-paths">' in page and "<code>tokens/forward</code>" in page
    assert "<code>rng/functionalized</code> <em>(CUDA only)</em>" in page


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such run summary"),
        ("{", "unreadable"),
        ("[1]", "not a `pyfy-fuzz run --json` summary"),
        ('{"cases": 1, "elapsed_s": 1, "findings": {}, "wrapper_hits": {}}', "must be"),
    ],
)
def test_bad_summaries_are_clear_errors(tmp_path: Path, content: str | None, message: str) -> None:
    p = tmp_path / "s.json"
    if content is not None:
        p.write_text(content)
    with pytest.raises(ReportError, match=message):
        load_runs([p])


def test_cli_writes_markdown_and_html_and_exits_2_on_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _summary(tmp_path, "a.json", {"tokens/forward": 4}, [], "2026-11-20T00:00:00Z")
    assert main(["report", "--run", str(a), "--out", str(tmp_path / "rep")]) == 0
    written = sorted(p.suffix for p in (tmp_path / "rep").iterdir())
    assert written == [".html", ".md"]
    assert "tokens/forward" in capsys.readouterr().out
    assert main(["report", "--run", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such run summary" in err[0]


def test_the_catalogue_names_every_path_pythonify_reports() -> None:
    import tempfile

    import torch._dynamo

    from pyfy_fuzz.pythonify import pythonify
    from pyfy_fuzz.pythonify.paths import wrapper_paths

    checked: list[list[str]] = []

    @settings(
        max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(programs())
    def one(spec) -> None:  # type: ignore[no-untyped-def]
        program = materialize(spec)
        torch._dynamo.reset()
        with tempfile.TemporaryDirectory() as d:
            try:
                r = pythonify(
                    program.make_fn(),
                    program.make_inputs(0),
                    Path(d) / "f.py",
                    frontend=spec.plan.frontend,
                    dynamic=spec.plan.dynamic,
                    mode=spec.plan.mode,
                )
            except Exception:  # unsupported, or torch failing: only the paths matter here
                return
        paths = wrapper_paths(r.ir)
        assert set(paths) <= set(ALL_PATHS), sorted(set(paths) - set(ALL_PATHS))
        checked.append(paths)

    one()
    assert len(checked) >= 8 and any(checked), checked  # most programs compile, with paths


def test_coverage_from_several_processes_is_combined_and_reported(tmp_path: Path) -> None:
    """What workers do under `run --coverage`: each saves its own data file; the campaign
    combines them, writes coverage.py's pages, and the report shows the numbers."""
    import subprocess
    import sys

    from pyfy_fuzz.reports.coverage_data import combine_coverage

    mod = tmp_path / "target.py"
    mod.write_text("def f(x):\n    if x:\n        return 1\n    return 2\n")
    data = tmp_path / "cov"
    data.mkdir()
    for arg in ("True", "False"):  # two "workers", each one branch
        code = (
            "import coverage, sys; "
            f"c = coverage.Coverage(data_file={str(data / '.coverage')!r}, data_suffix=True, "
            f"branch=True, include=[{str(mod)!r}]); c.start(); "
            f"sys.path.insert(0, {str(tmp_path)!r}); import target; target.f({arg}); "
            "c.stop(); c.save()"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
    cov = combine_coverage(data, torch_names=[])
    assert cov["percent"] == 100.0, cov  # together the two processes ran every line and branch
    assert cov["branch_percent"] == 100.0, cov
    assert Path(cov["html"]).is_file()
    summary = _summary(tmp_path, "s.json", {"tokens/forward": 1}, [], "2026-11-22T00:00:00Z")
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "coverage": cov}))
    assert main(["report", "--run", str(summary), "--out", str(tmp_path / "rep")]) == 0
    md = next((tmp_path / "rep").glob("*.md")).read_text()
    assert "## Coverage (s.json" in md and "target.py" in md
    page = next((tmp_path / "rep").glob("*.html")).read_text()
    assert '<table id="coverage">' in page and "index.html" in page


def test_latest_run_column_and_skipping_bad_summaries(tmp_path: Path) -> None:
    old = _summary(tmp_path, "old.json", {"tokens/forward": 9}, [], "2026-11-01T00:00:00Z")
    new = _summary(tmp_path, "new.json", {"dedupe/duplicate_args": 2}, [], "2026-11-22T00:00:00Z")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    warnings: list[str] = []
    runs = load_runs([old, bad, new], warnings)
    assert [r.path.name for r in runs] == ["old.json", "new.json"]
    assert len(warnings) == 1 and "bad.json" in warnings[0] and "skipped" in warnings[0]
    rows = {r.path: r for r in path_rows(runs)}
    # tokens/forward: reached three weeks ago, not by the latest run -- the regression to see.
    assert (rows["tokens/forward"].cases, rows["tokens/forward"].latest) == (9, 0)
    assert rows["tokens/forward"].last_reached == "2026-11-01T00:00:00Z"
    assert rows["dedupe/duplicate_args"].latest == 2
    with pytest.raises(ReportError):
        load_runs([old, bad])  # without a warnings list a bad summary is an error


def test_many_runs_are_summarised_in_one_line(tmp_path: Path) -> None:
    from pyfy_fuzz.reports.report import render_markdown

    runs = load_runs(
        [
            _summary(
                tmp_path, f"n{i}.json", {"tokens/forward": 1}, [], f"2026-11-{10 + i}T00:00:00Z"
            )
            for i in range(6)
        ]
    )
    md = render_markdown(path_rows(runs), runs, "t")
    assert "6 runs from 2026-11-10T00:00:00Z to 2026-11-15T00:00:00Z, 66 cases in all" in md
    assert "latest: n5.json" in md and "n0.json" not in md


# -- findings of a corpus, first ------------------------------------------------------------------
_P0 = CallRef("plan", 0)
_DIFFERENCES = {
    "seq_nr": Difference("seq_nr", "torch.compile", _P0, "seq_nr", "unmapped", note="n"),
    "outputs": Difference("outputs", "torch.compile", _P0, "output", "values", 0),
    "exceptions": Difference(
        "exceptions", "torch.compile", _P0, "exception", "raised", exc=ExcFacts("E", "m")
    ),
}


def _corpus(tmp: Path) -> Path:
    """Three entries: seq_nr (severity 4, seen 9 times), outputs (1), a crash (2); one
    damaged."""
    root = tmp / "corpus"
    for kind, oracle, count in [
        ("compile-divergence", "seq_nr", 9),
        ("compile-divergence", "outputs", 1),
        ("crash", "exceptions", 3),
    ]:
        sig = f"{kind}.{oracle}.0123456789ab"
        d = root / sig
        d.mkdir(parents=True)
        case = {
            "format": 1,
            "signature": sig,
            "kind": kind,
            "oracle": oracle,
            "subject": "torch.compile",
            "exc_type": "RuntimeError" if kind == "crash" else None,
            "explanation": f"torch.compile differs from eager:\n  - call 0: {oracle} differ",
            "differences": [_DIFFERENCES[oracle].to_dict()],
            "bug_in": "torch",
            "expected": "fail",
            "backend": "aot_eager",
            "count": count,
        }
        (d / "case.json").write_text(json.dumps(case))
        (d / "repro.py").write_text(f"import torch\n\ndef f(a0):\n    return a0  # {oracle}\n")
    (root / "damaged").mkdir()
    (root / "damaged" / "case.json").write_text("{")
    return root


def test_cli_corpus_findings_come_first_most_severe_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path)
    run = _summary(tmp_path, "a.json", {"tokens/forward": 4}, [], "2026-11-20T00:00:00Z")
    out = tmp_path / "rep"
    assert main(["report", "--corpus", str(corpus), "--run", str(run), "--out", str(out)]) == 0
    std = capsys.readouterr()
    warn = std.err.strip().splitlines()
    assert len(warn) == 1 and warn[0].startswith("warning: ") and "damaged" in warn[0]
    text = std.out
    assert text.startswith("Findings\n")
    order = [text.index(s) for s in ("outputs.0123", "crash.exceptions", "seq_nr.0123")]
    assert order == sorted(order)  # severity 1, 2, 4
    assert text.index("seq_nr.0123") < text.index("wrapper paths reached")
    assert "    | def f(a0):" in text and "(metadata in torch, seen 9x, repro not run yet)" in text
    (md,) = out.glob("report-*.md")
    (page,) = out.glob("report-*.html")
    md_text, html_text = md.read_text(), page.read_text()
    assert md_text.index("## Findings") < md_text.index("## Wrapper paths")
    assert md_text.index("### Severity 1") < md_text.index("### Severity 4")
    assert html_text.index('<section id="findings">') < html_text.index('id="wrapper-paths"')
    assert "<title>pyfy-fuzz report (report-" in html_text
    assert "white-space: pre-wrap" in html_text  # long lines of f wrap, never scroll


def test_cli_corpus_alone_and_bad_corpora(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path)
    out = tmp_path / "rep"
    assert main(["report", "--corpus", str(corpus), "--out", str(out)]) == 0
    assert "wrapper paths reached" not in capsys.readouterr().out
    (page,) = out.glob("findings-*.html")
    assert 'id="wrapper-paths"' not in page.read_text()  # no runs: no all-never table
    not_corpus = tmp_path / "src"
    (not_corpus / "pkg").mkdir(parents=True)
    for argv, message in [
        (["--corpus", str(tmp_path / "missing")], "no such corpus"),
        (["--corpus", str(corpus / "damaged" / "case.json")], "is not a directory"),
        (["--corpus", str(not_corpus)], "is not a pyfy-fuzz corpus"),
        ([], "give --corpus DIR, --run SUMMARY.json, or both"),
    ]:
        assert main(["report", *argv, "--out", str(tmp_path / "no")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "no").exists()  # nothing written


def test_nightly_report_carries_the_corpus_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """nightly passes its --corpus to the report (the campaign itself is stubbed out)."""
    from types import SimpleNamespace

    from pyfy_fuzz.cli import run as run_cli

    corpus = _corpus(tmp_path)
    summary = json.loads(
        _summary(tmp_path, "s.json", {"tokens/forward": 2}, [], "2026-11-22T00:00:00Z").read_text()
    )

    def fake_campaign(config):  # type: ignore[no-untyped-def]
        assert config.corpus == corpus
        config.json_path.write_text(json.dumps(summary))
        return SimpleNamespace(summary=summary, exit_code=0)

    monkeypatch.setattr(run_cli, "run_and_summarise", fake_campaign)
    out = tmp_path / "reports"
    assert main(["nightly", "--budget", "5s", "--corpus", str(corpus), "--out", str(out)]) == 0
    assert "damaged" in capsys.readouterr().err
    page = next(out.glob("nightly-*.html")).read_text()
    assert page.index('<section id="findings">') < page.index('id="wrapper-paths"')
    assert "compile-divergence.outputs.0123456789ab" in page
