"""The campaign's books under bug identity: one bug shrunk once, its later sightings counted
for it, a smaller shrunk program folding a bigger one of this run, at most two shrinks per
coarse key (Note [Bug identity] in oracles/identity.py). No workers: events are fed directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oracles.identity import PENDING
from pyfy_fuzz.campaign.campaign import Campaign
from pyfy_fuzz.campaign.config import CampaignConfig
from pyfy_fuzz.campaign.novelty import MAX_SHRINKS_PER_COARSE
from pyfy_fuzz.campaign.pool import Event
from pyfy_fuzz.schema.messages import CaseOutcome, Done, Found, Known, Report, Shrunk
from tests.findings import SIN, values_finding

SPEC = SIN.to_json()


def _f(*paths: str) -> dict[str, Any]:
    return values_finding(paths=paths)


@pytest.fixture
def campaign(tmp_path: Path) -> Any:
    c = Campaign(CampaignConfig(budget_s=60, corpus=tmp_path / "corpus", progress="quiet"))
    c.repros.close()  # no standalone repro runs in a bookkeeping test
    c.sent: list[tuple[Known, int | None]] = []  # type: ignore[misc]
    c.pool.broadcast = lambda command, exclude=None, only=None: c.sent.append(  # type: ignore[method-assign]
        (command, only)
    )
    return c


def _feed(c: Campaign, slot: int, message: Report) -> None:
    c._handle(Event(slot, message), running=False)


def _found(c: Campaign, slot: int, f: dict[str, Any]) -> None:
    _feed(c, slot, Found(f, SPEC))


def _done(c: Campaign, f: dict[str, Any]) -> None:
    _feed(c, 0, Done(CaseOutcome("ok", "x", findings=(f,)), SPEC))


def _shrunk(c: Campaign, slot: int, f: dict[str, Any]) -> None:
    _feed(c, slot, Shrunk(f, SPEC, None, confirmed=True, cut_by_budget=False, complete=False))


def test_one_bug_is_shrunk_once_and_its_sightings_count_for_it(campaign: Any) -> None:
    big = _f("runtime/a", "runtime/b")
    _found(campaign, 0, big)
    assert list(campaign.stats.pending) == [big["coarse"]]
    # Another worker meets the same coarse key while slot 0 shrinks it: known (PENDING).
    _found(campaign, 1, _f("runtime/c"))
    told, only = campaign.sent[-1]
    assert only == 1 and told.items[0]["signature"] == PENDING
    small = _f("runtime/a")
    _shrunk(campaign, 0, small)
    assert list(campaign.stats.new) == [small["signature"]] and not campaign.stats.pending
    assert (campaign.corpus.root / small["signature"] / "case.json").is_file()
    # A bigger program with the shrunk one's paths is a sighting of it, not a new bug.
    _done(campaign, big)
    assert campaign.stats.new[small["signature"]].count == 1
    # Without runtime/a it is not covered: shrunk again, saved as a second entry.
    other = _f("runtime/c", "runtime/d")
    _done(campaign, other)
    assert campaign.novelty.known.match(other) is None
    _found(campaign, 1, other)
    _shrunk(campaign, 1, _f("runtime/c"))
    assert len(campaign.stats.new) == 2 == MAX_SHRINKS_PER_COARSE
    # Shrunk twice: from now on the coarse key is known, whatever the paths.
    third = _f("runtime/z")
    hit = campaign.novelty.known.match(third)
    assert hit is not None and hit.signature in campaign.stats.new


def test_a_smaller_shrink_folds_this_runs_bigger_entry(campaign: Any) -> None:
    first = _f("runtime/a", "runtime/b")
    _found(campaign, 0, first)
    _shrunk(campaign, 0, first)  # a shrink cut short: both paths kept
    path = campaign.stats.new[first["signature"]].path
    second = _f("runtime/b")  # the same bug without runtime/a
    _found(campaign, 1, second)
    _shrunk(campaign, 1, second)
    assert list(campaign.stats.new) == [second["signature"]] and campaign.stats.superseded == 1
    assert not path.exists()
    assert (campaign.corpus.root / ".superseded" / path.name / "SUPERSEDED").is_file()


def test_a_shrink_that_ends_in_a_known_bug_is_merged(campaign: Any) -> None:
    known = _f("runtime/a")
    _found(campaign, 0, known)
    _shrunk(campaign, 0, known)
    _found(campaign, 1, _f("runtime/x"))
    _shrunk(campaign, 1, _f("runtime/a", "runtime/x"))  # the shrunk program still needs a
    assert list(campaign.stats.new) == [known["signature"]] and campaign.stats.merged == 1


def test_a_shrink_the_budget_cut_short_is_saved_not_dropped(campaign: Any) -> None:
    """Its PENDING mark covers every finding of its coarse key, its own included: the end of
    the run settles the mark away before asking whether the finding is known."""
    cut = _f("runtime/a")
    _found(campaign, 0, cut)
    _done(campaign, _f("runtime/a", "runtime/b"))  # a sighting while it was being shrunk
    campaign.novelty.finish_interrupted()
    assert list(campaign.stats.new) == [cut["signature"]] and not campaign.stats.pending
    case = campaign.corpus.entries[cut["signature"]].case
    assert case["shrink"]["interrupted"] and case["count"] == 2


def test_the_books_count_what_the_cache_did_for_the_warm_subject(campaign: Any) -> None:
    """The share of cases really served warm is reported, so a bypass never passes for a match
    (Note [The warm subject])."""
    for warm in ("hit", "hit", "unsaved", None):
        _feed(campaign, 0, Done(CaseOutcome("ok", "x", warm=warm), SPEC))  # type: ignore[arg-type]
    assert campaign.summary()["warm_cache"] == {"hit": 2, "unsaved": 1}


def test_a_new_entry_with_more_paths_than_an_older_one_is_named_a_fold_candidate(
    tmp_path: Path,
) -> None:
    """Note [One entry per identity across wrapper paths]: a campaign over a corpus whose
    entry has FEWER paths than this run's shrunk program (a shard that had not seen it yet, a
    GPU corpus merged in) names the pair in its summary; it folds nothing itself."""
    corpus = tmp_path / "corpus"
    first = Campaign(CampaignConfig(budget_s=60, corpus=corpus, progress="quiet"))
    first.repros.close()
    general = _f("runtime/b")
    _found(first, 0, general)
    _shrunk(first, 0, general)
    second = Campaign(CampaignConfig(budget_s=60, corpus=corpus, progress="quiet"))
    second.repros.close()
    second.pool.broadcast = lambda *a, **k: None  # type: ignore[method-assign]
    bigger = _f("runtime/a", "runtime/b")
    second.novelty.known.table.clear()  # KnownBugs.match would have taken it: as if not yet known
    _found(second, 0, bigger)
    _shrunk(second, 0, bigger)
    second.novelty.fold_candidates()
    assert list(second.stats.new) == [bigger["signature"]]
    assert second.summary()["fold_candidates"] == [[bigger["signature"], general["signature"]]]
    assert (corpus / bigger["signature"]).is_dir() and (corpus / general["signature"]).is_dir()
