"""The campaign's books: what it counted and what it found, as plain data.

`Stats` is everything the summary and the progress display read; `NewFinding` is one bug this
run found, from the first sighting through its shrink to the saved entry. The campaign's parts
(novelty.py, saving.py, reductions.py, summary.py) all write or read these; only the
campaign's own thread does, except where a part says otherwise.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generators import ProgramSpec
from pyfy_fuzz.schema.messages import FindingDict

__all__ = [
    "NewFinding",
    "Reduced",
    "Stats",
    "size_of",
]


def size_of(spec_json: str) -> tuple[int, ...]:
    """A spec's size (`ProgramSpec.size`): smaller is a better repro."""
    return ProgramSpec.from_json(spec_json).size()


@dataclass
class NewFinding:
    """A bug first seen in this run, and the smallest spec that shows it so far."""

    finding: FindingDict  # the finding of the smallest spec so far (the entry's)
    spec: str  # that spec, ProgramSpec JSON
    size: tuple[int, ...]  # size_of(spec)
    stream_seed: int | None  # the seed stream of the worker that found it
    owner: int | None = None  # the slot shrinking it
    count: int = 1  # sightings not yet added to its entry
    state: str = "shrinking"  # shrinking | reducing | saved
    path: Path | None = None  # its entry, once saved
    shrink_cases: int = 0  # cases its shrink ran
    started: float = field(default_factory=time.monotonic)  # when it was first seen
    extra: dict[str, Any] = field(default_factory=dict)  # case.json fields of its own


@dataclass
class Stats:
    """What the campaign counted (the summary's numbers and the progress display's)."""

    started: float  # time.monotonic() at the start
    budget_s: float  # the campaign's budget
    cases: int = 0  # cases run, shrinking included
    shrink_cases: int = 0  # cases run to shrink a finding
    status: Counter[str] = field(default_factory=Counter)  # explored cases by status
    families: Counter[str] = field(default_factory=Counter)  # explored cases by family
    wrapper_hits: Counter[str] = field(default_factory=Counter)  # by wrapper path
    unsupported: int = 0  # explored cases pythonify does not support
    # The warm subject, by what AOTAutograd's cache did (Note [The warm subject]): only "hit"
    # and "partial" cases were judged warm.
    warm: Counter[str] = field(default_factory=Counter)
    backends: Counter[str] = field(default_factory=Counter)  # explored cases per backend
    deaths: Counter[str] = field(default_factory=Counter)  # worker deaths by kind
    recycled: int = 0  # workers that left to be replaced (cases, memory, a broken process)
    # cases after which a worker's canary failed, each hunted for the case that broke its
    # process (Note [A broken process] in worker.py)
    hunts: int = 0
    known_seen: Counter[str] = field(default_factory=Counter)  # sightings of older entries
    # Bugs being shrunk, by coarse key; once saved, by signature in `new`.
    pending: dict[str, NewFinding] = field(default_factory=dict)
    new: dict[str, NewFinding] = field(default_factory=dict)
    shrinks: Counter[str] = field(default_factory=Counter)  # per coarse key
    merged: int = 0  # shrinks that ended in a bug already known (counted there)
    superseded: int = 0  # this run's entries folded into a later, smaller one
    # (bigger, general) pairs of one identity with comparable paths, one of them this run's
    fold_candidates: list[tuple[str, str]] = field(default_factory=list)
    # entries other campaigns (shards) wrote into the corpus during this run, known from when
    # they were read (Note [Shards share a corpus] in corpus.py)
    learned: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the summary (and CLI) warns of
    stopped_on: dict[str, Any] | None = None  # stop_on_subject's case, once met

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def per_min(self) -> float:
        return 60.0 * self.cases / max(self.elapsed, 1e-9)

    def new_by_kind(self) -> Counter[str]:
        return Counter(n.finding["kind"] for n in self.new.values())

    @property
    def exploring_fraction(self) -> float:
        """The share of cases spent exploring (not shrinking a finding)."""
        return (self.cases - self.shrink_cases) / self.cases if self.cases else 1.0


@dataclass(frozen=True)
class Reduced:
    """A reduction's end: the smallest spec that still failed the same way."""

    signature: str  # the entry's
    spec: str  # ProgramSpec JSON
    info: dict[str, Any]  # case.json's "shrink": by, cases, seconds, stopped
    staging: Path | None  # the best candidate's canary-job run (its files), or None
