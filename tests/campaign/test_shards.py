"""Note [Shards share a corpus]: two campaigns (`--shard 1/2` and `2/2`, as a Slurm array
runs them) on one corpus at once, both finding the same bug in their first seconds: one entry,
whole, saved by one of them and counted by the other as known -- in two processes, and the
books of it fed by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pyfy_fuzz.campaign.campaign import Campaign
from pyfy_fuzz.campaign.config import CampaignConfig
from pyfy_fuzz.campaign.pool import Event
from pyfy_fuzz.corpus.store import Corpus
from pyfy_fuzz.schema.messages import CaseOutcome, Done, Found, Shrunk
from tests.findings import SIN, values_finding

REPO = Path(__file__).resolve().parents[2]
# Each shard ends at its first case that shows the planted bug (stop_on_subject), however
# loaded the machine: the budget only bounds a shard that never gets there.
BUDGET = 120.0
# One shard: ready once imported, then its campaign starts when the test says go.
SHARD = """
import sys, time
from pathlib import Path
from pyfy_fuzz.campaign.campaign import run_campaign
from pyfy_fuzz.campaign.config import CampaignConfig

k, tmp = int(sys.argv[1]), Path(sys.argv[2])
(tmp / f"ready{k}").write_text("")
while not (tmp / "go").exists():
    time.sleep(0.01)
config = CampaignConfig(
    budget_s=float(sys.argv[3]),
    corpus=tmp / "corpus",
    shard=(k, 2),
    seed=3,
    impl="tests.campaign.impls:always_raises",
    wrappers=("input_mutation",),
    workers=1,
    shrink_seconds=2.0,
    stop_on_subject="pythonify",
    json_path=tmp / f"shard{k}.json",
    progress="quiet",
)
sys.exit(run_campaign(config).exit_code)
"""


def _shard(corpus: Path, k: int) -> Campaign:
    c = Campaign(CampaignConfig(budget_s=60, corpus=corpus, shard=(k, 2), progress="quiet"))
    c.repros.close()  # no standalone repro runs in a bookkeeping test
    c.pool.broadcast = lambda *a, **kw: None  # type: ignore[method-assign]
    return c


def _shrink(c: Campaign, f: dict[str, Any]) -> None:
    spec = SIN.to_json()
    c._handle(Event(0, Found(f, spec)), running=True)
    c._handle(Event(0, Shrunk(f, spec, None, True, False, True)), running=True)


def test_a_shard_that_shrank_a_bug_another_saved_meanwhile_counts_it_as_known(
    tmp_path: Path,
) -> None:
    """Both opened the corpus empty and shrank one bug at once; the second to settle reads
    the first's entry under the corpus's lock and merges into it, as into any known bug."""
    first, second = _shard(tmp_path / "c", 1), _shard(tmp_path / "c", 2)
    bug = values_finding(paths=("runtime/a",))
    _shrink(first, bug)
    _shrink(second, values_finding(paths=("runtime/a", "runtime/b")))  # the same bug, bigger
    assert list(first.stats.new) == [bug["signature"]]
    assert not second.stats.new and second.stats.merged == 1
    assert second.summary()["learned"] == [bug["signature"]]
    assert second.summary()["known_seen"] == {bug["signature"]: 1}
    assert sorted(p.name for p in (tmp_path / "c").iterdir() if not p.name.startswith(".")) == [
        bug["signature"]
    ]
    # Between saves, a rescan every few seconds: the first's next bug is known to the second
    # before any of its workers shrinks it.
    other = values_finding(oracle="seq_nr")
    _shrink(first, other)
    second.novelty.rescan()
    seen = Done(CaseOutcome("ok", "x", findings=(other,)), SIN.to_json())
    second._handle(Event(0, seen), running=True)
    assert second.stats.known_seen[other["signature"]] == 1 and not second.stats.pending
    second.saving.flush_counts()
    assert Corpus.open(tmp_path / "c").entries[other["signature"]].case["count"] == 2


@pytest.mark.slow
def test_two_shards_on_one_corpus_save_each_bug_once_and_count_each_others(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    shards = [
        subprocess.Popen(
            [sys.executable, "-c", SHARD, str(k), str(tmp_path), str(BUDGET)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for k in (1, 2)
    ]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready{k}").exists() for k in (1, 2)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in shards)
        time.sleep(0.05)
    (tmp_path / "go").write_text("")  # both budgets run side by side
    errs = []
    for p in shards:
        _, err = p.communicate(timeout=BUDGET + 60)
        errs.append(err.decode()[-3000:])
        assert p.returncode in (0, 1), errs[-1]
    for k, err in zip((1, 2), errs, strict=True):  # a shard that raised says why
        assert (tmp_path / f"shard{k}.json").is_file(), err
    summaries = [json.loads((tmp_path / f"shard{k}.json").read_text()) for k in (1, 2)]
    assert all(s["stopped_on"] for s in summaries)  # both found the planted bug

    corpus = tmp_path / "corpus"
    opened = Corpus.open(corpus, create=False)
    assert not opened.problems, opened.problems  # nothing corrupt, nothing half-written
    for e in opened.entries.values():
        names = {p.name for p in e.path.iterdir()}
        assert {"case.json", "repro.py", "program.py", "README.md"} <= names, names
    claimed = [{f["signature"] for f in s["findings"]} for s in summaries]
    assert not claimed[0] & claimed[1], "both shards claim one entry as their new finding"
    assert claimed[0] | claimed[1] == set(opened.entries)  # nothing lost, nothing unclaimed
    for s in summaries:
        for f in s["findings"]:
            assert Path(f["path"]) == corpus / f["signature"]

    # The bug every program shows: one entry, saved by one shard; the other counts its
    # sightings for it, from the moment it read the entry, and they reach the entry.
    (always,) = [e for e in opened.entries.values() if "planted: never runs" in e.case["message"]]
    saver = 0 if always.signature in claimed[0] else 1
    other = summaries[1 - saver]
    assert always.signature in other["learned"], other["learned"]
    assert other["known_seen"].get(always.signature, 0) >= 1, other["known_seen"]
    assert always.case["count"] >= 1 + other["known_seen"][always.signature]
    by_coarse: dict[str, list[str]] = {}
    for e in opened.entries.values():
        by_coarse.setdefault(str(e.case["coarse"]), []).append(e.signature)
    assert len(by_coarse[str(always.case["coarse"])]) == 1  # no second entry of one bug

    leftovers = [p.name for p in corpus.iterdir() if p.name.startswith((".tmp-", ".old-", ".lock"))]
    assert not leftovers, leftovers
    streams = sorted(p.name for p in (corpus / ".campaign").glob("streams-*.json"))
    assert streams == ["streams-seed3-shard1of2.json", "streams-seed3-shard2of2.json"]
