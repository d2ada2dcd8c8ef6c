"""The nightly trend plot and the report pages that carry it."""

from __future__ import annotations

import base64
import json
import re
import struct
from pathlib import Path

import pytest

from pyfy_fuzz.cli import main
from pyfy_fuzz.reports.report import load_runs, write_report
from pyfy_fuzz.reports.trend import trend_png

SUMMARY = {
    "cases": 120,
    "elapsed_s": 60,
    "findings": [],
    "wrapper_hits": {"tokens/forward": 3},
    "finished_at": "2026-11-22T01:00:00Z",
    "torch": "2.13.0",
    "config": {"backend": "aot_eager", "device": "cpu"},
}


def _nights(n: int) -> list[dict]:
    return [
        {
            "format": 1,
            "finished_at": f"2026-11-{10 + i:02d}T02:00:00Z",
            "paths_reached": 28 + i,
            "paths_total": 43,
            "coverage_percent": 45.0 + i,
            "branch_percent": None if i == 1 else 40.0 + i,  # a night without branch numbers
            "new_findings": i % 3,
        }
        for i in range(n)
    ]


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


@pytest.mark.parametrize("nights", [1, 3, 40])
def test_trend_is_a_png_for_any_number_of_nights(nights: int) -> None:
    w, h = _png_size(trend_png(_nights(nights)))
    assert (w, h) == (900, 640)


def test_trend_draws_the_numbers_and_leaves_gaps() -> None:
    """The plotted data are the history's numbers; a missing one is a gap (NaN), not zero."""
    import matplotlib.figure

    seen: dict[str, list] = {}
    real_savefig = matplotlib.figure.Figure.savefig

    def spy(self, *a, **kw):  # type: ignore[no-untyped-def]
        for ax in self.axes:
            for line in ax.get_lines():
                seen[line.get_label()] = list(line.get_ydata())
            for bar in ax.patches:
                seen.setdefault("bars", []).append(bar.get_height())
        return real_savefig(self, *a, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", spy)
        trend_png(_nights(3))
    assert seen["reached"] == [28.0, 29.0, 30.0] and seen["catalogue"] == [43.0] * 3
    assert seen["branches"][0] == 40.0 and seen["branches"][1] != seen["branches"][1]  # NaN
    assert seen["bars"] == [0.0, 1.0, 2.0]


def test_trend_refuses_an_empty_history() -> None:
    with pytest.raises(ValueError, match="no history entries"):
        trend_png([])


def test_report_with_history_embeds_the_plot_and_links_the_png(tmp_path: Path) -> None:
    s = tmp_path / "s.json"
    s.write_text(json.dumps(SUMMARY))
    md, page = write_report(load_runs([s]), tmp_path / "out", "nightly-x", history=_nights(4))
    png = (tmp_path / "out" / "nightly-x-trend.png").read_bytes()
    assert "](nightly-x-trend.png)" in md.read_text()
    m = re.search(
        r'<img id="trend" alt="[^"]+" src="data:image/png;base64,([^"]+)">', page.read_text()
    )
    assert m is not None and base64.b64decode(m.group(1)) == png  # self-contained page
    # Without a history: no plot, no dangling link.
    md2, page2 = write_report(load_runs([s]), tmp_path / "out2", "r")
    assert "trend" not in md2.read_text() and 'id="trend"' not in page2.read_text()


def test_cli_report_history_errors_and_old_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = tmp_path / "s.json"
    s.write_text(json.dumps(SUMMARY))
    base = ["report", "--run", str(s), "--out", str(tmp_path / "out"), "--history"]
    assert main([*base, str(tmp_path / "none.json")]) == 2
    assert "no such history" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main([*base, str(bad)]) == 2
    assert "unreadable" in capsys.readouterr().err
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": 1, "entries": [{"format": 0}, *_nights(2)]}))
    assert main([*base, str(old)]) == 0
    assert "format 0" in capsys.readouterr().err  # skipped with a warning, not fatal
    assert len(list((tmp_path / "out").glob("*-trend.png"))) == 1
