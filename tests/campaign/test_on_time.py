"""Note [Ending on time]: a campaign ends within its budget plus its grace, though its cases
and its repro checks would run on, and loses nothing it found on the way out."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import pyfy_fuzz.campaign.saving as saving_module
from pyfy_fuzz.campaign.campaign import Campaign
from pyfy_fuzz.campaign.config import CampaignConfig
from pyfy_fuzz.campaign.pool import Event, mp_context
from pyfy_fuzz.corpus.repro import NOT_RUN
from pyfy_fuzz.corpus.store import Corpus
from pyfy_fuzz.schema.messages import Found, Shrunk
from tests.campaign.impls import SLEEP_S
from tests.findings import SIN, crash_finding, values_finding

BUDGET = 8.0  # long enough for both workers to be in a (sleeping) case when it ends
GRACE = 5.0  # the CLI's is 15 s; the promise is the same: budget + grace


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent (the fork server) to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _slow_repros(monkeypatch: pytest.MonkeyPatch, pids: Path) -> None:
    """Every saved repro.py first sleeps SLEEP_S (an Inductor compile), noting its pid."""
    real = saving_module.entry_files

    def slow(case: dict[str, Any], **kw: Any) -> dict[str, str]:
        files = real(case, **kw)
        head = f"import os, time\nopen({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        files["repro.py"] = f"{head}time.sleep({SLEEP_S})\n" + files["repro.py"]
        return files

    monkeypatch.setattr(saving_module, "entry_files", slow)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_campaign_ends_on_time_though_its_cases_and_repro_checks_would_run_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "repro-pids"
    _slow_repros(monkeypatch, pids)
    warm = mp_context().Process(target=os.getpid)  # the fork server up before the clock starts
    warm.start()
    warm.join()
    corpus = tmp_path / "corpus"
    config = CampaignConfig(
        budget_s=BUDGET,
        corpus=corpus,
        impl="tests.campaign.impls:sleeps",  # every case takes 30 s
        workers=2,
        grace_s=GRACE,
        json_path=tmp_path / "summary.json",
        progress="quiet",
    )
    t0 = time.monotonic()
    c = Campaign(config)
    # A bug shrunk and saved at the start: its repro check starts at once and would take 30 s.
    saved = values_finding(paths=("runtime/a",))
    c._handle(Event(0, Found(saved, SIN.to_json())), running=True)
    c._handle(Event(0, Shrunk(saved, SIN.to_json(), None, True, False, True)), running=True)
    # A bug a worker is still shrinking when the budget ends: saved from its smallest spec.
    interrupted = crash_finding("pythonify", "planted")
    c._handle(Event(1, Found(interrupted, SIN.to_json())), running=True)
    result = c.run()
    took = time.monotonic() - t0

    assert took <= BUDGET + GRACE, f"took {took:.1f} s for a {BUDGET:.0f} s budget"
    sleeping = [int(p.read_text()) for p in (corpus / ".campaign").rglob("sleeping")]
    assert sleeping, "no case was running when the budget ended"  # the test tests something
    repro_pids = [int(line) for line in pids.read_text().split()]
    assert repro_pids, "no repro check was running when the budget ended"
    assert not [p for p in sleeping + repro_pids if _alive(p)], "a process outlived the campaign"

    # Nothing saved is lost or half-written; the checks that did not run say so.
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(json.dumps(result.summary))
    sigs = {saved["signature"], interrupted["signature"]}
    assert {f["signature"] for f in summary["findings"]} == sigs
    assert all(f["repro"] is None for f in summary["findings"])  # null: not checked
    opened = Corpus.open(corpus, create=False)
    assert not opened.problems and set(opened.entries) == sigs
    for e in opened.entries.values():
        assert {"case.json", "repro.py", "program.py", "README.md"} <= {
            p.name for p in e.path.iterdir()
        }
        assert e.case["repro"]["verdict"] == NOT_RUN, e.case["repro"]
    assert opened.entries[interrupted["signature"]].case["shrink"]["interrupted"]
    assert not [p.name for p in corpus.iterdir() if p.name.startswith((".tmp-", ".old-", ".lock"))]


def test_a_repro_check_skips_an_entry_gone_since_it_was_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry superseded or merged between being saved and its repro's turn (the 11-27 CI
    selftest's compile-divergence.versions entry) is no longer there to run: the check moves
    on to the next rather than the thread dying on FileNotFoundError."""
    import pyfy_fuzz.corpus.repro as repro_module

    c = Campaign(CampaignConfig(budget_s=60, corpus=tmp_path / "corpus", progress="quiet"))
    c.repros.close()  # the campaign's own checker thread ends: this test is the one
    c.repros.thread.join()
    checked: list[Path] = []

    def fake_check(path: Path, **kw: Any) -> tuple[int, str]:
        checked.append(path)
        return 1, ""

    monkeypatch.setattr(repro_module, "check_repro", fake_check)
    here = tmp_path / "corpus" / "here"
    here.mkdir(parents=True)
    c.repros.put("sig-gone", "crash", tmp_path / "corpus" / "gone")
    c.repros.put("sig-here", "crash", here)
    c.repros.close()
    c.repros.run()
    assert checked == [here]
