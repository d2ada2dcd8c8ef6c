"""Steering (Note [Steering] in campaign/steering.py): a program that reached an arc first is
kept, and the explorer draws mutations of the kept programs beside fresh ones."""

from __future__ import annotations

from dataclasses import replace
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from generators import ProgramSpec, programs
from pyfy_fuzz.campaign import explore as explore_mod
from pyfy_fuzz.campaign.config import CampaignConfig, WorkerConfig
from pyfy_fuzz.campaign.steering import POOL_MAX, Steering, splice
from pyfy_fuzz.campaign.worker import Channel
from pyfy_fuzz.schema.messages import CaseOutcome, Done
from pyfy_fuzz.schema.spec import validate


def _specs(n: int, family: str = "input_mutation") -> list[ProgramSpec]:
    return _draw(programs((family,)), n)


def _done(spec: str, arcs: tuple[tuple[str, Any], ...], **kw: Any) -> Done:
    outcome = CaseOutcome(kw.pop("status", "ok"), "input_mutation", new_arcs=arcs, **kw)
    return Done(outcome, spec, shrinking=None)


def test_the_campaign_keeps_a_case_that_reached_an_arc_first() -> None:
    s = Steering(enabled=True)
    s.done(_done("A", (("f.py", 1), ("f.py", 2))))
    s.done(_done("B", (("f.py", 2),)))  # nothing new to the campaign (another worker's arc)
    s.done(_done("C", (("g.py", 7),), status="discarded"))  # new, but not an ok case
    s.done(Done(CaseOutcome("ok", "x", new_arcs=(("h.py", 1),)), "D", shrinking="k"))  # shrink
    s.done(_done("E", (("f.py", 3),), pooled=True))
    assert s.pool == ["A", "E"]
    assert s.seen == {("f.py", 1), ("f.py", 2), ("f.py", 3), ("g.py", 7), ("h.py", 1)}
    out = s.summary()
    assert (out["fresh_cases"], out["fresh_kept"], out["pool_cases"], out["pool_kept"]) == (
        3,
        1,
        1,
        1,
    )
    for i in range(POOL_MAX + 5):
        s.done(_done(f"S{i}", (("z.py", i),)))
    assert len(s.pool) == POOL_MAX and s.pool[-1] == f"S{POOL_MAX + 4}"  # the oldest went


def test_unsteered_the_campaign_measures_but_keeps_no_pool() -> None:
    s = Steering(enabled=False)
    s.done(_done("A", (("f.py", 1),)))
    assert s.pool == [] and s.summary()["fresh_kept"] == 1 and not s.summary()["on"]


def test_splice_keeps_one_program_and_takes_the_other_compile_axes() -> None:
    kept, fresh = _specs(2)
    fresh = replace(fresh, plan=replace(fresh.plan, backend="inductor", tangents="ones"))
    child = splice(kept, fresh, True, frozenset({"backend", "tangents"}))
    assert (child.body, child.inputs, child.roots) == (kept.body, kept.inputs, kept.roots)
    assert (child.plan.backend, child.plan.tangents) == ("inductor", "ones")
    other = splice(kept, fresh, False, frozenset({"backend", "calls"}))
    assert other.body == fresh.body and other.plan.backend == kept.plan.backend
    assert other.plan.calls >= fresh.plan.calls
    validate(child)
    validate(other)


def test_splice_never_gives_dynamic_shapes_to_the_aot_front_end() -> None:
    kept, fresh = _specs(2)
    kept = replace(kept, plan=replace(kept.plan, frontend="aot", dynamic=False, config=()))
    fresh = replace(fresh, plan=replace(fresh.plan, dynamic=True))
    assert not splice(kept, fresh, True, frozenset({"dynamic"})).plan.dynamic


class _Pool:
    """What `_strategy` reads of the explorer."""

    def __init__(self, pool: list[ProgramSpec]) -> None:
        self.pool = pool
        self.marked = 0

    def mark_pooled(self, spec: ProgramSpec) -> ProgramSpec:
        self.marked += 1
        return spec


def test_the_explorer_draws_mutations_of_pool_programs() -> None:
    (kept,) = _specs(1, "output_aliasing")
    c = CampaignConfig(budget_s=60, corpus=Path("unused"), wrappers=("input_mutation",))
    holder = _Pool([kept])
    strategy = explore_mod._strategy(c, holder)  # type: ignore[arg-type]
    drawn = _draw(strategy, 60)
    # the pool's program is of a family the campaign's fresh draws never give
    from_pool = [s for s in drawn if s.family == "output_aliasing"]
    assert from_pool and holder.marked >= len(from_pool)
    assert any(s.body == kept.body for s in from_pool)  # the kept program, mutated
    assert len(from_pool) < len(drawn)  # beside fresh draws
    empty = _Pool([])
    unsteered = _draw(explore_mod._strategy(c, empty), 10)  # type: ignore[arg-type]
    assert all(s.family == "input_mutation" for s in unsteered) and empty.marked == 0


def _draw(strategy: Any, n: int) -> list[ProgramSpec]:
    drawn: list[ProgramSpec] = []

    @settings(max_examples=n, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(spec: ProgramSpec) -> None:
        drawn.append(spec)

    collect()
    return drawn


@pytest.mark.parametrize("steer", [True, False])
def test_the_explorer_keeps_a_case_that_reached_an_arc_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steer: bool
) -> None:
    """_Explorer.one: a case whose outcome carries new arcs joins the worker's pool (steered
    only); one without does not."""
    a, b = _specs(2)
    arcs = {a.to_json(): (("f.py", 1),), b.to_json(): ()}

    def fake_run_one(ch: Channel, config: WorkerConfig, impl: Any, spec: ProgramSpec) -> Any:
        return CaseOutcome("ok", spec.family, new_arcs=arcs[spec.to_json()])

    monkeypatch.setattr(explore_mod, "run_one", fake_run_one)
    c = CampaignConfig(budget_s=60, corpus=tmp_path, coverage=True, steer=steer)
    config = WorkerConfig(campaign=c, slot=0, seeds=(b.to_json(),))
    mine, theirs = Pipe()
    explorer = explore_mod._Explorer(Channel(mine), config, None, float("inf"))  # type: ignore[arg-type]
    assert explorer.pool == ([b] if steer else [])  # started with the campaign's pool
    explorer.one(a)
    explorer.one(b)
    assert explorer.pool == ([b, a] if steer else [])
    sent = []
    while theirs.poll():
        sent.append(theirs.recv())
    outcomes = [m.outcome for m in sent if isinstance(m, Done)]
    assert [o.new_arcs for o in outcomes] == [(("f.py", 1),), ()]
