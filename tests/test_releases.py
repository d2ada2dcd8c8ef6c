"""Note [Which releases have a bug] (pyfy_fuzz/corpus/releases.py): repro.py run under other
torches, recorded per release, said in one line; and `pyfy-fuzz versions`, end to end, on a copy
of a
checked-in entry with this interpreter and with one that has no torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyfy_fuzz.cli import main
from pyfy_fuzz.corpus.releases import (
    NEEDS_CUDA,
    Interpreter,
    InterpreterError,
    ReleaseRecord,
    check_entry,
    fixed_in,
    merge,
    probe,
    records_of,
    releases_line,
)

REPO = Path(__file__).resolve().parents[1]


def rec(torch: str, verdict: str, device: str = "cpu", checked: str = "2026-11-27T00:00:00Z"):
    return ReleaseRecord(torch=torch, device=device, verdict=verdict, checked=checked)


@pytest.mark.parametrize(
    ("records", "line"),
    [
        (
            [rec("2.13.0+cpu", "reproduces"), rec("2.15.0+cu132", "reproduces")],
            "reproduces on 2.13.0, 2.15.0",
        ),
        (
            [rec("2.13.0+cpu", "reproduces"), rec("2.15.0+cu132", "passes")],
            "reproduces on 2.13.0; fixed in 2.15.0",
        ),
        # passing on an older release only is no fix: a regression, said as it is
        (
            [rec("2.13.0+cpu", "passes"), rec("2.15.0", "reproduces")],
            "reproduces on 2.15.0; passes on 2.13.0",
        ),
        ([rec("2.13.0", "passes"), rec("2.15.0", "passes")], "passes on 2.13.0, 2.15.0"),
        (
            [rec("2.13.0", "reproduces"), rec("2.15.0", "error")],
            "reproduces on 2.13.0; errs on 2.15.0",
        ),
        ([], ""),
    ],
)
def test_the_line_says_which_releases_reproduce_and_which_fixed_it(
    records: list[ReleaseRecord], line: str
) -> None:
    assert releases_line(records) == line


def test_a_gpu_entry_on_a_torch_without_cuda_is_not_reproducible_on_cpu_never_fixed() -> None:
    records = [
        rec("2.11.0+cu130", "reproduces", device="cuda"),
        rec("2.13.0+cpu", NEEDS_CUDA, device="cuda"),
    ]
    line = releases_line(records, found_on="cuda")
    assert line == "reproduces on 2.11.0; not reproducible on CPU (2.13.0; found on cuda)"
    assert fixed_in(records) == []


def test_an_entrys_own_repro_check_is_a_record_and_a_later_run_replaces_it() -> None:
    case = {
        "torch": "2.15.0+cu132",
        "device": "cpu",
        "repro": {"verdict": "reproduces", "checked": "2026-11-27T01:00:00Z", "exit_code": 1},
    }
    assert [(r.torch, r.verdict) for r in records_of(case)] == [("2.15.0+cu132", "reproduces")]
    later = rec("2.15.0+cu132", "passes", checked="2026-11-28T00:00:00Z")
    older = rec("2.13.0+cpu", "reproduces")
    case["releases"] = merge(case, [later, older])
    assert [(r.release, r.verdict) for r in records_of(case)] == [
        ("2.13.0", "reproduces"),
        ("2.15.0", "passes"),
    ]
    # one record per (torch, device): a rerun replaces, it does not pile up
    case["releases"] = merge(case, [rec("2.13.0+cpu", "passes", checked="2026-11-29T00:00:00Z")])
    assert len(case["releases"]) == 2


def test_a_record_names_a_known_verdict_and_device() -> None:
    with pytest.raises(ValueError, match="verdict"):
        rec("2.13.0", "fixed")
    with pytest.raises(ValueError, match="device"):
        rec("2.13.0", "passes", device="tpu")


def test_an_interpreter_without_torch_is_refused_in_one_line(tmp_path: Path) -> None:
    import torch

    here = probe(sys.executable)
    assert here.torch == torch.__version__ and here.cuda == torch.cuda.is_available()
    with pytest.raises(InterpreterError, match="no such interpreter"):
        probe(str(tmp_path / "python"))
    bare = _python_without_torch()
    if bare is None:
        pytest.skip("no interpreter without torch on this machine")
    with pytest.raises(InterpreterError, match="cannot import torch"):
        probe(bare)


def test_an_interpreter_named_relatively_or_by_name_runs_repros_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repros run in their entry's directory: `--python .venv/bin/python` (relative to where
    the command was given) raised FileNotFoundError there, a traceback. It is named by its
    absolute path, unresolved (a venv's python is a link); a bare name is looked up on PATH."""
    exe = Path(sys.executable)
    monkeypatch.chdir(exe.parent)
    here = probe(f".{os.sep}{exe.name}")
    assert here.python == str(exe.parent.absolute() / exe.name)
    path, case = _entry(tmp_path, 1)
    assert check_entry(path, case, here, timeout=120).verdict == "reproduces"
    monkeypatch.setenv("PATH", str(exe.parent))
    assert probe(exe.name).python == here.python
    with pytest.raises(InterpreterError, match="no such interpreter"):
        probe("no-such-python-here")


def _python_without_torch() -> str | None:
    for cand in ("/usr/bin/python3", shutil.which("python3")):
        if cand is None:
            continue
        done = subprocess.run([cand, "-c", "import torch"], capture_output=True, check=False)
        if done.returncode != 0:
            return cand
    return None


def _entry(tmp_path: Path, exit_code: int, device: str = "cpu") -> tuple[Path, dict]:
    d = tmp_path / "e"
    d.mkdir()
    (d / "repro.py").write_text(f"import sys, torch\nsys.exit({exit_code})\n")
    return d, {"kind": "compile-divergence", "device": device}


@pytest.mark.parametrize(("code", "verdict"), [(1, "reproduces"), (0, "passes"), (2, "error")])
def test_check_entry_runs_the_repro_under_the_interpreter(
    tmp_path: Path, code: int, verdict: str
) -> None:
    path, case = _entry(tmp_path, code)
    interp = probe(sys.executable)
    r = check_entry(path, case, interp, timeout=120)
    assert (r.verdict, r.exit_code, r.torch, r.python) == (
        verdict,
        code,
        interp.torch,
        sys.executable,
    )


def test_a_cuda_entry_is_not_run_without_cuda(tmp_path: Path) -> None:
    path, case = _entry(tmp_path, 1, device="cuda")
    (path / "repro.py").write_text("raise SystemExit('must not run')\n")
    r = check_entry(path, case, Interpreter(sys.executable, "2.15.0", cuda=False), timeout=60)
    assert r.verdict == NEEDS_CUDA and r.exit_code is None


def _copy_entry(tmp_path: Path) -> Path:
    """A checked-in entry whose repro reproduces on the pinned torch, in a corpus of its own."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for d in sorted((REPO / "corpus").iterdir()):
        case = d / "case.json"
        if case.is_file() and json.loads(case.read_text()).get("repro", {}).get("verdict") == (
            "reproduces"
        ):
            return Path(shutil.copytree(d, corpus / d.name))
    raise AssertionError("no checked-in entry reproduces")


def test_the_versions_command_records_each_release_in_the_entry_and_its_readme(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    entry = _copy_entry(tmp_path)
    case = json.loads((entry / "case.json").read_text())
    case.pop("releases", None)  # as the campaign saved it: its own repro check only
    (entry / "case.json").write_text(json.dumps(case))
    out = tmp_path / "versions.json"
    code = main(["versions", str(entry.parent), "--python", sys.executable, "--json", str(out)])
    assert code == 0, capsys.readouterr()
    case = json.loads((entry / "case.json").read_text())
    [record] = case["releases"]
    assert record["python"] == sys.executable and record["torch"] == torch.__version__
    assert record["verdict"] == "reproduces"
    line = releases_line(records_of(case))
    here = torch.__version__.split("+")[0]
    assert line.startswith("reproduces on ") and here in line.split(";")[0], line
    assert f"**{line}**" in (entry / "README.md").read_text()
    assert json.loads(out.read_text())["entries"][0]["line"] == line


def test_the_versions_command_refuses_bad_input_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = _copy_entry(tmp_path)
    before = (entry / "case.json").read_text()
    assert main(["versions", str(tmp_path / "nowhere")]) == 2
    assert main(["versions", str(entry), "--python", str(tmp_path / "py")]) == 2
    assert main(["versions", str(entry), "--timeout", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("pyfy-fuzz: error: ") for line in err), err
    assert (entry / "case.json").read_text() == before  # nothing written on a refusal


def test_the_report_and_the_readme_say_which_releases_and_a_fix_changes_the_status() -> None:
    from pyfy_fuzz.corpus.entry import readme
    from pyfy_fuzz.reports.triage_render import render_findings_markdown, render_findings_text
    from pyfy_fuzz.reports.triage_view import Findings, entry_from_case, group_entries

    src = sorted((REPO / "corpus").glob("*/case.json"))[0]
    case = json.loads(src.read_text())
    case.update(torch="2.13.0+cpu", device="cpu", expected="fail")
    case["repro"] = {"verdict": "reproduces", "checked": "2026-11-27T00:00:00Z", "exit_code": 1}
    case["releases"] = merge(case, [rec("2.15.0+cu132", "passes")])
    line = "reproduces on 2.13.0; fixed in 2.15.0"
    e = entry_from_case(case, "corpus/x", "def f(a0):\n    return a0")
    assert e.releases == line
    findings = Findings("corpus", group_entries([e]))
    assert f"releases: {line}" in render_findings_text(findings)
    assert f"releases: {line}" in render_findings_markdown(findings)
    text = readme(case, has_pythonified=False)
    assert f"**{line}**" in text and "fixed upstream in 2.15.0" in text


def test_replay_on_cpu_says_a_gpu_entry_is_not_reproducible_on_cpu_never_fixed(
    tmp_path: Path,
) -> None:
    from pyfy_fuzz.campaign.replay import replay

    entry = _copy_entry(tmp_path)
    case = json.loads((entry / "case.json").read_text())
    case.update(device="cuda", torch="2.11.0+cu130")
    (entry / "case.json").write_text(json.dumps(case))
    [outcome] = replay([entry.parent], device="cpu").outcomes
    assert outcome.verdict == "skipped"
    assert outcome.detail == "found on cuda (torch 2.11.0+cu130): not reproducible on CPU"
