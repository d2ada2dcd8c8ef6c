"""The report page as a person sees it: rendered by headless Chromium through ChromeDriver.

Needs Debian's chromium and chromium-driver (.ci/run installs them). Without them the test
skips, unless PYFY_REQUIRE_BROWSER=1 (set by CI), where a missing browser is a failure: a
browser test that silently stops running is worse than none.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pyfy_fuzz.reports.report import load_findings, load_runs, write_report
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts
from pyfy_fuzz.schema.paths import ALL_PATHS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Offline machine: no background networking, updates or sync (each would hang or spam errors).
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1200,1600",
)


def _browser_or_skip(tmp_path: Path):  # type: ignore[no-untyped-def]
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium")
    if missing:
        why = f"browser test needs {', '.join(missing)}"
        if os.environ.get("PYFY_REQUIRE_BROWSER") == "1":
            pytest.fail(why + " (PYFY_REQUIRE_BROWSER=1)")
        pytest.skip(why)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(flag)
    return webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))


def test_nightly_page_renders_title_table_and_plot(tmp_path: Path) -> None:
    summary = {
        "cases": 2581,
        "elapsed_s": 300,
        "findings": [{"signature": "s", "wrappers": ["tokens/forward"]}],
        "wrapper_hits": {"tokens/forward": 40, "dedupe/duplicate_args": 7},
        "finished_at": "2026-11-22T02:00:00Z",
        "torch": "2.13.0",
        "config": {"backend": "aot_eager", "device": "cpu"},
    }
    s = tmp_path / "s.json"
    s.write_text(json.dumps(summary))
    history = [
        {
            "format": 1,
            "finished_at": f"2026-11-{20 + i}T02:00:00Z",
            "paths_reached": 30 + i,
            "paths_total": len(ALL_PATHS),
            "coverage_percent": 47.0 + i,
            "branch_percent": 44.0 + i,
            "new_findings": 3 - i,
        }
        for i in range(3)
    ]
    _, page = write_report(load_runs([s]), tmp_path, "nightly-2026-11-22", history=history)
    driver = _browser_or_skip(tmp_path)
    try:
        driver.get(page.as_uri())
        assert driver.title == "pyfy-fuzz wrapper-path report (nightly-2026-11-22)"
        rows = driver.find_elements("css selector", "table#wrapper-paths tbody tr")
        assert len(rows) == len(ALL_PATHS)
        never = driver.find_elements("css selector", "table#wrapper-paths tr.never")
        assert len(never) == len(ALL_PATHS) - 2
        assert rows[-1].text.split()[:2] == ["tokens/forward", "40"]  # most reached, last
        # The plot decoded as an image and is laid out at a readable size, inside the page.
        img = driver.find_element("css selector", "img#trend")
        natural = driver.execute_script(
            "return [arguments[0].naturalWidth, arguments[0].naturalHeight]", img
        )
        assert natural == [900, 640]
        assert img.size["width"] >= 600 and img.is_displayed()
        page_width = driver.execute_script("return document.documentElement.scrollWidth")
        assert page_width <= 1200  # nothing forces a horizontal scroll
        shot = Path(os.environ.get("PYFY_SCREENSHOT_DIR", tmp_path)) / "nightly-report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    finally:
        driver.quit()


_P0 = CallRef("plan", 0)
_DIFFERENCES = {
    "seq_nr": Difference("seq_nr", "torch.compile", _P0, "seq_nr", "unmapped", note="n"),
    "outputs": Difference("outputs", "torch.compile", _P0, "output", "values", 0),
    "grads": Difference("grads", "torch.compile", _P0, "grad", "values", name="a1"),
    "exceptions": Difference(
        "exceptions", "torch.compile", _P0, "exception", "raised", exc=ExcFacts("E", "m")
    ),
}


def _entry(root: Path, kind: str, oracle: str, count: int, f: str, explanation: str) -> None:
    sig = f"{kind}.{oracle}.{count:012x}"
    (root / sig).mkdir(parents=True)
    case = {
        "format": 1,
        "signature": sig,
        "kind": kind,
        "oracle": oracle,
        "subject": "torch.compile",
        "exc_type": "RuntimeError" if kind == "crash" else None,
        "explanation": "torch.compile differs from eager:\n  - " + explanation,
        "differences": [_DIFFERENCES[oracle].to_dict()],  # what the severity is read from
        "bug_in": "torch",
        "expected": "fail",
        "backend": "aot_eager",
        "count": count,
        "triage": "T0: a person's note <with> markup-looking text",
    }
    (root / sig / "case.json").write_text(json.dumps(case))
    (root / sig / "repro.py").write_text("import torch\n\n" + f)


def test_findings_lead_the_page_most_severe_first_without_horizontal_scroll(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    long_line = "    return " + " + ".join(f"a0.sin().cos().tanh()[{i}]" for i in range(30))
    no_spaces = "x" * 400  # a message with nowhere to break must still wrap
    # seq_nr (severity 4) is seen most often: it must still come after severity 1.
    _entry(corpus, "compile-divergence", "seq_nr", 50, "def f(a0):\n    return a0\n", "seq")
    _entry(corpus, "compile-divergence", "outputs", 1, f"def f(a0):\n{long_line}\n", no_spaces)
    _entry(corpus, "compile-divergence", "grads", 2, "def f(a0, a1):\n    return a1\n", "grads")
    _entry(corpus, "crash", "exceptions", 3, "def f(a0):\n    return a0.t()\n", "crash")
    summary = {
        "cases": 100,
        "elapsed_s": 60,
        "findings": [],
        "wrapper_hits": {"tokens/forward": 40},
        "finished_at": "2026-11-22T02:00:00Z",
        "torch": "2.13.0",
        "config": {"backend": "aot_eager", "device": "cpu"},
    }
    s = tmp_path / "s.json"
    s.write_text(json.dumps(summary))
    findings = load_findings(corpus)
    _, page = write_report(load_runs([s]), tmp_path, "report-2026-11-22", findings=findings)
    driver = _browser_or_skip(tmp_path)
    try:
        driver.get(page.as_uri())
        assert driver.title == "pyfy-fuzz report (report-2026-11-22)"
        section = driver.find_element("css selector", "section#findings")
        table = driver.find_element("css selector", "table#wrapper-paths")
        assert section.location["y"] + section.size["height"] <= table.location["y"]
        rows = driver.find_elements("css selector", "section#findings tr.finding")
        assert len(rows) == 4
        severities = [int(r.get_attribute("data-severity")) for r in rows]
        assert severities == [1, 1, 2, 4]
        ys = [r.location["y"] for r in rows]
        assert ys == sorted(ys)  # laid out in that order, top to bottom
        for row, entry in zip(rows, findings.entries, strict=True):
            assert entry.shown in row.text  # its path
            pre = row.find_element("css selector", "pre.f")
            assert pre.is_displayed() and pre.text.startswith("def f(a")  # its f
            assert pre.text.replace("\n", "").replace(" ", "") == entry.f.replace("\n", "").replace(
                " ", ""
            )
        assert "<with>" in rows[0].text  # escaped, shown as text
        headings = [h.text for h in driver.find_elements("css selector", "section#findings h3")]
        assert headings[0].endswith("Severity 1: silent wrong values or gradients")
        assert headings[-1].endswith("Severity 4: seq_nr mapping")
        page_width = driver.execute_script("return document.documentElement.scrollWidth")
        assert page_width <= 1200  # long lines wrap inside the table and the <pre>
        wide = driver.execute_script(
            "return [...document.querySelectorAll('section#findings pre, section#findings td')]"
            ".filter(e => e.scrollWidth > e.clientWidth + 1).length"
        )
        assert wide == 0  # nothing scrolls or overflows inside its cell either
        shot = Path(os.environ.get("PYFY_SCREENSHOT_DIR", tmp_path)) / "findings-report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    finally:
        driver.quit()
