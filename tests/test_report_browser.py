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

from pyfy_fuzz.pythonify.paths import ALL_PATHS
from pyfy_fuzz.report import load_runs, write_report

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
