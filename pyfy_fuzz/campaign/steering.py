"""Steering by torch's coverage: the programs that reached an arc first, kept and mutated.

Torch-free. The campaign's `Steering` keeps the arcs of torch's measured files that any case
has reached and the pool of programs that reached one first; workers start with both
(`WorkerConfig.seen`, `.seeds`) and the explorer draws mutations of pool programs
(`splice`, drawn in explore.py) beside fresh ones. Note [Steering].
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from pyfy_fuzz.schema.messages import Done
from pyfy_fuzz.schema.spec import ProgramSpec, SpecError, validate

__all__ = ["AXES", "POOL_MAX", "Steering", "splice"]

# Note [Steering]
# As coverage-guided fuzzers do (AFL's queue), a program that reaches an arc of torch's
# measured files (Note [What coverage measures] in reports/coverage_data.py) that no earlier
# program reached is kept, and new programs are made from the kept ones:
# - After every case a worker reads which arcs the case reached first in that process
#   (case_coverage.CaseCoverage.new_arcs: the tracer's in-memory data, a set difference per
#   file that grew); the outcome carries them. The campaign keeps every arc any case reached
#   (`Steering.seen`); an explored case (not a shrink's) with status ok whose arcs include
#   one it had not seen joins the pool (at most POOL_MAX, the oldest dropped first).
# - A worker starts with the campaign's arcs and pool, and adds its own keepers as it goes
#   (workers do not tell each other between starts; a recycled worker gets everything).
# - The explorer's strategy is `one_of(fresh, pooled)` once the pool has a program: about
#   half the draws take a pool program P, a fresh program F of P's family, and a drawn
#   non-empty set of AXES, and `splice` them: P's program under F's compile axes, or F's
#   program under P's (Hypothesis draws which). The axes are the plan's fields that eager
#   does not see and the generator draws apart from the body (dynamic shapes, the
#   configuration knobs, the backend, the tangents, the number of calls), so a spliced spec
#   is one the generator could have drawn: no legality rule of the body is broken.
#   Hypothesis draws the choices, so a spliced finding shrinks like any other (toward a
#   fresh draw, then the reducer). A Hypothesis run keeps the pool it started with; the
#   explorer starts a new run (the next seed) when its pool has grown and REFRESH_CASES
#   cases have run.
# - `--no-steer` measures the same and keeps the same books but never draws from the pool:
#   a steered and an unsteered campaign of one budget and seed compare branch for branch
#   (the summary's "steering" counts cases drawn from the pool and how many reached arcs
#   first, beside the fresh ones).
# Mutating statements (the body) waits for the grammar's axes (issue 36, item 1).
POOL_MAX = 256
AXES = ("dynamic", "config", "backend", "tangents", "calls")


def splice(
    kept: ProgramSpec, fresh: ProgramSpec, keep_program: bool, axes: frozenset[str]
) -> ProgramSpec:
    """`kept`'s program under `fresh`'s values of `axes` (keep_program), or `fresh`'s program
    under `kept`'s; a value the program cannot take (a knob of another front-end, dynamic
    shapes without Dynamo) stays the program's own. Note [Steering]."""
    program, other = (kept, fresh) if keep_program else (fresh, kept)
    plan = program.plan
    changes: dict[str, Any] = {a: getattr(other.plan, a) for a in AXES if a in axes}
    if "calls" in changes:  # never fewer calls than the program's family drew
        changes["calls"] = max(changes["calls"], plan.calls)
    if plan.frontend != "dynamo":
        changes.pop("dynamic", None)
    child = replace(program, plan=replace(plan, **changes))
    try:
        validate(child)
    except SpecError:  # a knob of another front-end: the program keeps its own
        changes.pop("config", None)
        child = replace(program, plan=replace(plan, **changes))
    return child


class Steering:
    """The campaign's side: every arc seen, the pool, and the counts the summary shows."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled  # False: --no-steer (measured, never drawn from)
        self.seen: set[tuple[str, Any]] = set()
        self.pool: list[str] = []  # spec JSON, oldest first
        self.counts: Counter[str] = Counter()

    def done(self, done: Done) -> None:
        """A case ended: its arcs join `seen`; an explored case with status ok that reached
        one first joins the pool."""
        r = done.outcome
        explored = done.job is None and not done.shrinking
        origin = "pool" if r.pooled else "fresh"
        if explored:
            self.counts[f"{origin}_cases"] += 1
        new = [arc for arc in r.new_arcs if arc not in self.seen]
        if not new:
            return
        self.seen.update(new)
        if not explored or r.status != "ok":
            return
        self.counts[f"{origin}_kept"] += 1
        self.counts[f"{origin}_arcs"] += len(new)
        if self.enabled:
            self.pool.append(done.spec)
            del self.pool[:-POOL_MAX]

    def summary(self) -> dict[str, Any]:
        """The summary's "steering": whether it was on, the pool, every arc seen, and per
        origin (pool: drawn from the pool; fresh: drawn as without steering) the explored
        cases, those that reached an arc first (kept) and those arcs."""
        c = self.counts
        return {
            "on": self.enabled,
            "pool": len(self.pool),
            "arcs": len(self.seen),
            **{
                f"{o}_{k}": c[f"{o}_{k}"]
                for o in ("pool", "fresh")
                for k in ("cases", "kept", "arcs")
            },
        }
