"""The campaign's serve work: reducing the cases no worker can shrink, and hunting the case
that broke a process (Note [A broken process] in worker.py).

A case that kills or hangs its worker exists only as a spec; so does a case after which a
worker's canary failed. Both are handled here, each in a thread of its own whose runs go to a
serve worker of the pool (`job`), so the campaign's loop never waits on them:
- `reduce`: `shrink.reduce` over the spec while a candidate still fails the same way (the
  worker dies alike, `same_death`; or, each candidate a canary job, it leaves the process
  broken alike, `broke`);
- `after_canary` keeps each slot's cases since its last passing canary and, when the canary
  fails, `hunt`s among them, newest first, for one that breaks a fresh process alone.

Contract: the threads never touch the books; what they end with waits in `take_reduced()` and
`take_hunted()` for the campaign's thread, which saves it (saving.py, novelty.py). No job
starts once the deadline has passed (the pool is stopping); a thread then ends with what it
has (`campaign stopped`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators import ProgramSpec
from oracles import Finding
from oracles.finding import as_kind, as_subject
from pyfy_fuzz.campaign.books import NewFinding, Reduced, Stats
from pyfy_fuzz.campaign.budget import Deadline
from pyfy_fuzz.campaign.pool import Pool
from pyfy_fuzz.campaign.saving import discard
from pyfy_fuzz.corpus.store import Corpus
from pyfy_fuzz.corpus.trace import TRACE_DIR
from pyfy_fuzz.schema.finding import PHASE_SUBJECT
from pyfy_fuzz.schema.messages import Broken, Died, Done, FindingDict

__all__ = [
    "Breaker",
    "Hunted",
    "Reductions",
    "UNCHECKED_CASES",
    "broke",
    "death_finding",
    "same_death",
]

# At most this many of a slot's cases since its last passing canary are kept for a hunt (Note
# [A broken process] in worker.py): the canary runs after every case, so a hunt has one.
UNCHECKED_CASES = 8


@dataclass(frozen=True)
class Breaker:
    """The case a hunt found leaving a fresh process broken (Note [A broken process] in
    worker.py), as its canary job ran it."""

    finding: FindingDict  # the canary job's process-broken finding
    spec: str  # the case, ProgramSpec JSON
    staging: Path  # the canary job's run: the entry's pythonified.py and trace
    seed: int | None  # the seed stream of the worker that first ran it
    phase: str | None  # the runner phase after which the canary first failed (Broken.phase)


@dataclass(frozen=True)
class Hunted:
    """A hunt's end."""

    slot: int  # the slot whose canary failed
    broken: Broken  # what its canary found
    found: Breaker | None  # the case that breaks a fresh process alone; None: none did


class _Cancelled(Exception):
    """The campaign stopped: a job can no longer run."""


def broke(result: Done | Died, coarse: str | None = None) -> list[FindingDict]:
    """A canary job's process-broken findings (of the bug `coarse` only, where given)."""
    if not isinstance(result, Done):
        return []
    return [
        f
        for f in result.outcome.findings
        if f["kind"] == "process-broken" and coarse in (None, f["coarse"])
    ]


def same_death(died: Died, r: Done | Died) -> bool:
    """A reduction's candidate took its worker down as `died` did."""
    if not (isinstance(r, Died) and r.kind == died.kind and r.phase == died.phase):
        return False
    if died.kind == "hang":
        return True
    if died.reason.startswith("memory"):
        return r.reason.startswith("memory")
    return r.reason == died.reason


def death_finding(died: Died) -> FindingDict:
    """The finding of a case that took its worker down: a hang or an interpreter crash (the
    signal, or memory), charged to the subject of the phase it was in."""
    reason = (
        "timeout"
        if died.kind == "hang"
        else "memory"
        if died.reason.startswith("memory")
        else died.reason
    )
    return Finding(
        kind=as_kind(died.kind),
        oracle="timeout" if died.kind == "hang" else "interpreter",
        subject=as_subject(PHASE_SUBJECT.get(died.phase, "pyfy-fuzz")),
        wrappers=(),
        explanation=f"the worker died ({died.reason}) while running {died.phase or 'setup'}",
        exc_type=reason,
    ).to_dict()


class Reductions:
    """The reduction and hunt threads, and what they hand back."""

    def __init__(
        self, pool: Pool, corpus: Corpus, deadline: Deadline, shrink_s: float, stats: Stats
    ) -> None:
        self.pool, self.corpus, self.deadline = pool, corpus, deadline
        self.shrink_s, self.stats = shrink_s, stats
        self.threads: list[threading.Thread] = []  # crash reductions and hunts: serve work
        # Per slot, the cases run since its worker's last passing canary, newest last (Note [A
        # broken process] in worker.py; with a canary after every case, the one case).
        self.unchecked: dict[int, deque[str]] = {}
        self._lock = threading.Lock()  # guards what the threads hand back
        self._reduced: list[Reduced] = []
        self._hunted: list[Hunted] = []

    def busy(self) -> bool:
        """A reduction or hunt is running: a serve worker is wanted."""
        return any(t.is_alive() for t in self.threads)

    def fresh(self, slot: int) -> None:
        """`slot` has a fresh process: no case of it is unchecked."""
        self.unchecked[slot] = deque(maxlen=UNCHECKED_CASES)

    def join(self, left: Callable[[], float]) -> None:
        """Wait for the threads (their candidates were cancelled with the pool)."""
        for t in self.threads:
            t.join(timeout=left())

    def take_reduced(self) -> list[Reduced]:
        with self._lock:
            reduced, self._reduced = self._reduced, []
        return reduced

    def take_hunted(self) -> list[Hunted]:
        with self._lock:
            hunted, self._hunted = self._hunted, []
        return hunted

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        self.threads.append(t)
        t.start()

    def job(self, spec_json: str, *, canary: bool) -> tuple[Done | Died, Path | None]:
        """Run a spec on a serve worker and wait for it: as a canary job (Note [A broken
        process] in worker.py) into a staging directory of its own, which then holds what
        the run made. Raises _Cancelled once the campaign stops."""
        if self.deadline.passed():
            raise _Cancelled  # the pool is stopping: a job sent now would never run
        staging = self.corpus.new_staging() if canary else None
        fut = self.pool.submit(
            spec_json,
            canary=canary,
            workdir=str(staging) if staging else None,
            trace_dir=str(staging / TRACE_DIR) if staging else None,
        )
        try:
            return fut.result(), staging
        except CancelledError:
            discard(staging)
            raise _Cancelled from None

    # -- reduction ---------------------------------------------------------------------------
    def reduce(
        self, new: NewFinding, same: Callable[[Done | Died], object], canary: bool = False
    ) -> None:
        """Reduce `new`'s spec in a thread while a candidate still fails the `same` way."""
        self._spawn(self._reduce, new, same, canary)

    def _reduce(self, new: NewFinding, same: Callable[[Done | Died], object], canary: bool) -> None:
        """A thread: `new`'s spec reduced while a candidate still fails the `same` way (the
        worker dies alike; or, each candidate a canary job, it leaves the process broken
        alike, and the entry takes the best candidate's run with its spec). The smallest is
        handed back (`take_reduced`)."""
        from pyfy_fuzz.campaign.shrink import reduce

        tried = [0]
        best = [ProgramSpec.from_json(new.spec)]
        kept: list[Path | None] = [None]  # the best candidate's canary-job run

        def still_fails(spec: ProgramSpec) -> bool:
            tried[0] += 1
            r, staging = self.job(spec.to_json(), canary=canary)
            if not same(r):
                discard(staging)
                return False
            best[0] = spec  # the reducer only tries smaller specs
            discard(kept[0])
            kept[0] = staging
            return True

        t0 = time.monotonic()
        end = min(t0 + self.shrink_s, self.deadline.at)
        try:
            res = reduce(best[0], still_fails, deadline=end)
            best[0], stopped = res.spec, res.stopped
        except _Cancelled:  # the campaign stopped: keep what was accepted so far
            stopped = "campaign stopped"
        info = {
            "by": "reducer",
            "cases": tried[0],
            "seconds": round(time.monotonic() - t0, 1),
            "stopped": stopped,
        }
        with self._lock:
            self._reduced.append(
                Reduced(new.finding["signature"], best[0].to_json(), info, kept[0])
            )

    # -- a process left broken (Note [A broken process] in worker.py) ------------------------
    def after_canary(self, slot: int, done: Done, seed: int | None) -> None:
        """Keep the slot's cases since its last passing canary; when the canary fails, a
        thread hunts among them for the case that breaks a process (its runs are serve work,
        as a reduction's are)."""
        unchecked = self.unchecked.setdefault(slot, deque(maxlen=UNCHECKED_CASES))
        unchecked.append(done.spec)
        broken = done.outcome.broken
        if broken is None:
            unchecked.clear()
            return
        suspects = list(reversed(unchecked))  # newest first: the likeliest
        unchecked.clear()
        if self.deadline.passed():
            self.stats.notes.append(f"worker {slot}: {broken.describe()}; not hunted: time")
            return
        self.stats.hunts += 1
        self._spawn(self.hunt, slot, broken, suspects, seed)

    def hunt(self, slot: int, broken: Broken, suspects: list[str], seed: int | None) -> None:
        """A thread: each suspect once more as a canary job on a fresh serve worker, until one
        leaves that process broken too -- only a case that breaks a process alone is saved,
        never one that met the breakage. The end is handed back (`take_hunted`)."""
        found = None
        for spec in suspects:
            try:
                r, staging = self.job(spec, canary=True)
            except _Cancelled:
                return  # the campaign stopped: no verdict
            hits = broke(r)
            if hits and staging is not None and isinstance(r, Done) and r.outcome.broken:
                found = Breaker(hits[0], spec, staging, seed, r.outcome.broken.phase)
                break
            discard(staging)
        with self._lock:
            self._hunted.append(Hunted(slot, broken, found))
