"""Which findings are new: the bugs known to the campaign and its workers, the shrinks in
progress, and what each sighting counts for (Note [Bug identity] in oracles/identity.py).

Contract. A finding is known when a known bug covers it (`KnownBugs.match`: its coarse key,
its paths a subset); the known bugs are the corpus's entries, those other campaigns wrote
since (`rescan`, Note [Shards share a corpus] in corpus.py) and this run's. A worker shrinks
the first unknown one (`found`): its coarse key is PENDING to every other worker, its
sightings count for it, and when the shrink ends (`shrunk`) the shrunk finding either merges
into a known bug or is saved under its signature, this run's bigger entries of the same bug
folded into it. A coarse key is shrunk at most MAX_SHRINKS_PER_COARSE times a run. A case the
campaign reduces itself (a dead worker, a broken process) is `claim`ed: saved at once,
unreduced. Whether a finding is new is decided, and the entry saved, under the corpus's lock
(`deciding`). The workers hear of every change (`Known`, `Avoid` through the pool); a worker
started later gets `known_dicts()` and `avoid`. Runs on the campaign's thread only.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oracles.identity import PENDING, KnownBug, KnownBugs
from pyfy_fuzz.campaign.books import NewFinding, Stats, size_of
from pyfy_fuzz.campaign.pool import Pool
from pyfy_fuzz.campaign.saving import Saving, discard
from pyfy_fuzz.corpus.store import Corpus
from pyfy_fuzz.schema.messages import Avoid, FindingDict, Found, Improved, Known, Shrunk

__all__ = [
    "MAX_SHRINKS_PER_COARSE",
    "Novelty",
]

# Shrinks of one coarse key per campaign before all of its findings count as known: a bug whose
# minimal program needs no particular wrapper path is shrunk once; one that shows in two
# unrelated contexts gets a second entry; past that, shrinking it again is time not exploring.
MAX_SHRINKS_PER_COARSE = 2


class Novelty:
    """The known bugs and the specs to avoid, and the books of what is new."""

    def __init__(self, corpus: Corpus, stats: Stats, pool: Pool, saving: Saving) -> None:
        self.corpus, self.stats, self.pool, self.saving = corpus, stats, pool, saving
        self.known: KnownBugs = corpus.known()
        self.avoid: list[str] = []  # specs (JSON) that killed a worker
        self.rescanned = stats.started  # when other campaigns' entries were last read

    def known_dicts(self) -> tuple[dict[str, Any], ...]:
        """What a worker starting now must know (KnownBug.to_dict()s)."""
        return tuple(b.to_dict() for bugs in self.known.table.values() for b in bugs)

    # -- sightings ---------------------------------------------------------------------------
    def count(self, f: FindingDict) -> bool:
        """Count a sighting of `f` for the bug that covers it; False if none does (new)."""
        st = self.stats
        hit = self.known.match(f)
        if hit is None:
            return False
        if hit.signature == PENDING:
            if f["coarse"] in st.pending:
                st.pending[f["coarse"]].count += 1
        elif hit.signature in st.new:
            st.new[hit.signature].count += 1
        else:
            st.known_seen[hit.signature] += 1
        return True

    def add_count(self, sig: str, n: int) -> None:
        if sig in self.stats.new:
            self.stats.new[sig].count += n
        elif sig != PENDING:
            self.stats.known_seen[sig] += n

    # -- a worker's shrink -------------------------------------------------------------------
    def found(self, slot: int, p: Found, seed: int | None) -> None:
        """A worker (slot, on seed stream `seed`) met an unknown bug and starts shrinking it,
        unless another worker got there first or the bug was shrunk often enough."""
        f = p.finding
        coarse = f["coarse"]
        pending = KnownBug(coarse, frozenset(), PENDING)
        if self.known.match(f) is not None or self.stats.shrinks[coarse] >= MAX_SHRINKS_PER_COARSE:
            # Another worker got there first (its shrink stands), or this bug was shrunk often
            # enough: the finder is told so and abandons its shrink.
            self.pool.broadcast(Known((pending.to_dict(),)), only=slot)
            return
        self.stats.pending[coarse] = NewFinding(f, p.spec, size_of(p.spec), seed, owner=slot)
        self.known.add(pending)
        self.pool.broadcast(Known((pending.to_dict(),)), exclude=slot)

    def improved(self, slot: int, p: Improved) -> None:
        new = self.stats.pending.get(p.finding["coarse"])
        if new is not None and new.state == "shrinking" and new.owner == slot:
            size = size_of(p.spec)
            if size <= new.size:
                new.spec, new.size, new.finding = p.spec, size, p.finding

    def shrunk(self, slot: int, p: Shrunk) -> None:
        """The shrink of a pending bug ended: merged into a known bug, or saved."""
        coarse = p.finding["coarse"]
        new = self.stats.pending.get(coarse)
        staging = Path(p.staging) if p.staging else None
        if new is None or new.state != "shrinking" or new.owner != slot:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            return
        with self.deciding():  # what other shards saved meanwhile is known: one entry a bug
            del self.stats.pending[coarse]
            self.stats.shrinks[coarse] += 1
            new.spec, new.size, new.finding = p.spec, size_of(p.spec), p.finding
            settled = [b for b in self.known.of(coarse) if b.signature != PENDING]
            self.known.settle(coarse, settled)
            if self.count(new.finding):
                # The shrunk program shows a bug already known (its paths inside this one's): one
                # bug, one entry -- the sightings go to it.
                self.stats.merged += 1
                hit = self.known.match(new.finding)
                if hit is not None and new.count > 1:
                    self.add_count(hit.signature, new.count - 1)
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)
            else:
                self._settle_new(new, staging, p)
            bugs = [b for b in self.known.of(coarse) if b.signature != PENDING]
            if self.stats.shrinks[coarse] >= MAX_SHRINKS_PER_COARSE and bugs:
                # Shrunk often enough: from now on every finding with this coarse key is a
                # sighting of its most general entry (unless a more specific one covers it).
                general = min(bugs, key=lambda b: len(b.paths))
                bugs.append(KnownBug(coarse, frozenset(), general.signature))
            self.known.settle(coarse, bugs)
            self.pool.broadcast(Known(({"settle": coarse, "bugs": [b.to_dict() for b in bugs]},)))

    def _settle_new(self, new: NewFinding, staging: Path | None, p: Shrunk) -> None:
        """Save a shrunk bug nobody knows under its refined signature."""
        f = new.finding
        paths = frozenset(f["identity_paths"])
        self.stats.new[f["signature"]] = new
        self.known.add(KnownBug(f["coarse"], paths, f["signature"]))
        self._supersede(f["coarse"], paths, new)
        info = {
            "by": "hypothesis",
            "cases": new.shrink_cases,
            "seconds": round(time.monotonic() - new.started, 1),
            "confirmed": p.confirmed,
            "cut_by_budget": p.cut_by_budget,
            "complete": p.complete,
        }
        self.saving.save(new, staging, info)

    def _supersede(self, coarse: str, paths: frozenset[str], by: NewFinding) -> None:
        """This run's entries of the same bug whose shrink was cut short with more paths than
        `paths`: the new entry is the same bug in a smaller context, so they are folded into
        it (moved under .superseded/, never deleted; their sightings added)."""
        for b in self.known.of(coarse):
            old = self.stats.new.get(b.signature)
            if old is None or old is by or not paths < b.paths:
                continue
            saved = self.corpus.entries.get(b.signature)
            by.count += old.count + (int(saved.case.get("count", 1)) if saved else 0)
            del self.stats.new[b.signature]
            self.known.settle(coarse, [k for k in self.known.of(coarse) if k != b])
            if old.path is not None:
                self.corpus.retire(old.path, f"superseded by {by.finding['signature']}")
            self.stats.superseded += 1

    # -- a case the campaign reduces itself ------------------------------------------------
    def claim(
        self,
        finding: FindingDict,
        spec: str,
        seed: int | None,
        *,
        extra: dict[str, Any],
        staging: Path | None = None,
        avoid: bool = False,
    ) -> NewFinding | None:
        """A finding no worker shrinks (a dead worker's, a broken process's): None when a
        known bug covers it (a sighting; `staging` is discarded); else this run's, known to
        every worker (with `avoid`, its spec is avoided too) and saved at once, unreduced,
        from the run in `staging` -- a kill during its reduction must not lose it."""
        with self.deciding():
            if self.count(finding):
                discard(staging)
                return None
            new = NewFinding(finding, spec, size_of(spec), seed)
            new.extra = extra
            self.stats.new[finding["signature"]] = new
            bug = KnownBug(finding["coarse"], frozenset(), finding["signature"])
            self.known.add(bug)
            if avoid:
                self.avoid.append(spec)
                self.pool.broadcast(Avoid((spec,)))
            self.pool.broadcast(Known((bug.to_dict(),)))
            self.saving.save(new, staging, {"by": "reducer", "provisional": True})
        new.state = "reducing"
        return new

    # -- the end of the run ------------------------------------------------------------------
    def finish_interrupted(self) -> None:
        """Findings whose shrink was cut short (budget, or the worker died): save the
        smallest spec seen; nothing found is lost."""
        with self.deciding():
            for coarse, new in list(self.stats.pending.items()):
                del self.stats.pending[coarse]
                self.known.settle(
                    coarse, [b for b in self.known.of(coarse) if b.signature != PENDING]
                )
                if self.count(new.finding):  # a known bug after all (another shard's, maybe)
                    hit = self.known.match(new.finding)
                    if hit is not None and new.count > 1:
                        self.add_count(hit.signature, new.count - 1)
                    continue
                paths = frozenset(new.finding["identity_paths"])
                self.stats.new[new.finding["signature"]] = new
                self.known.add(KnownBug(coarse, paths, new.finding["signature"]))
            for new in self.stats.new.values():
                if new.state != "saved":
                    self.saving.save(new, None, {"by": "hypothesis", "interrupted": True})

    def fold_candidates(self) -> None:
        """This run's entries that share an identity with another entry over comparable
        wrapper paths, for the summary (Note [One entry per identity across wrapper paths]:
        a person decides; `migrate --fold`)."""
        self.stats.fold_candidates = self.corpus.fold_candidates(only=set(self.stats.new))

    # -- other campaigns on the same corpus --------------------------------------------------
    @contextlib.contextmanager
    def deciding(self) -> Iterator[None]:
        """Hold the corpus's lock, knowing what other campaigns saved, while deciding whether
        a finding is new and saving it (Note [Shards share a corpus] in corpus.py)."""
        with self.corpus.lock():
            self.rescan()
            yield

    def rescan(self) -> None:
        """Entries other campaigns (shards) wrote since we last looked become known, here and
        to the workers (Note [Shards share a corpus] in corpus.py)."""
        self.rescanned = time.monotonic()
        bugs = [e.bug for e in self.corpus.rescan()]
        if bugs:
            self.stats.learned += [b.signature for b in bugs]
            self.known.update(bugs)
            self.pool.broadcast(Known(tuple(b.to_dict() for b in bugs)))
