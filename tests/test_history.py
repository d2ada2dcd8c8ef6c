"""reports/history.json and `pyfy-fuzz nightly`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyfy_fuzz.cli import main
from pyfy_fuzz.reports.history import History, HistoryError, entry_for

SUMMARY = {
    "cases": 100,
    "elapsed_s": 60,
    "findings": [{"signature": "a"}],
    "wrapper_hits": {"dedupe/duplicate_args": 3, "tokens/forward": 1},
    "finished_at": "2026-11-22T01:00:00Z",
    "torch": "2.13.0",
    "coverage": {"percent": 48.1, "files": {}},
    "config": {"device": "cpu"},
}


def test_entries_append_atomically_and_other_formats_are_kept_but_skipped(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"format": 1, "entries": [{"format": 0, "old": True}, "junk"]}))
    h = History.load(path)
    assert h.entries == [] and len(h.warnings) == 2 and "format 0" in h.warnings[0]
    h.append(entry_for(SUMMARY, tmp_path / "s.json"))
    again = History.load(path)
    assert len(again.entries) == 1 and len(again.skipped) == 2  # old entries are not lost
    e = again.entries[0]
    assert (e["cases"], e["new_findings"], e["paths_reached"], e["coverage_percent"]) == (
        100,
        1,
        2,
        48.1,
    )
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"entries": 3}'])
def test_an_unreadable_history_is_an_error_and_never_overwritten(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "history.json"
    path.write_text(text)
    with pytest.raises(HistoryError):
        History.load(path)
    out = tmp_path
    assert (
        main(["nightly", "--budget", "5s", "--out", str(out), "--corpus", str(tmp_path / "c")]) == 2
    )
    assert "history" in capsys.readouterr().err
    assert path.read_text() == text  # nights of results are not replaced by one
    assert not (tmp_path / "c").exists()  # failed before starting any work


@pytest.mark.slow
def test_nightly_runs_reports_and_appends_history(tmp_path: Path) -> None:
    out, corpus = tmp_path / "reports", tmp_path / "corpus"
    argv = ["nightly", "--budget", "25s", "--out", str(out), "--corpus", str(corpus)]
    assert main([*argv, "--progress", "quiet"]) in (0, 1)
    names = sorted(p.name for p in out.iterdir())
    assert "history.json" in names and any(
        n.startswith("nightly-") and n.endswith(".html") for n in names
    )
    run = next((out / "runs").glob("*.json"))
    summary = json.loads(run.read_text())
    assert summary["coverage"]["percent"] is not None  # nightly measures coverage
    h = History.load(out / "history.json")
    assert len(h.entries) == 1 and h.entries[0]["summary"] == str(run)
    assert h.entries[0]["branch_percent"] is not None
    assert any(n.endswith("-trend.png") for n in names)  # tonight is already in the trend
    page = next(out.glob("nightly-*.html")).read_text()
    assert '<img id="trend"' in page
