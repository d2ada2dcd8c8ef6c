"""Validity: generated programs run in eager, as their call plan says, without error.

Invalid programs waste a campaign's budget, so the strategies model eager's rules; this
measures how well (target: at least 90% over at least 200 examples) and prints the rate.
"""

from __future__ import annotations

import collections

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from generators import ProgramSpec, materialize, programs

EXAMPLES = 240


def run_plan_eagerly(spec: ProgramSpec) -> None:
    """Every call of the plan with backward, then the variant call (which may raise)."""
    program = materialize(spec)
    fn = program.make_fn()
    for seed in range(spec.plan.calls):
        program.module.drive(fn, program.make_inputs(seed), seed)


def test_at_least_90_percent_of_programs_run_in_eager(capfd: pytest.CaptureFixture[str]) -> None:
    outcomes: collections.Counter[tuple[str, str]] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()

    @settings(
        max_examples=EXAMPLES,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs())
    def sample(spec: ProgramSpec) -> None:
        try:
            run_plan_eagerly(spec)
            outcomes[spec.family, "ok"] += 1
        except Exception as exc:  # the rate is the measurement; each error is counted
            outcomes[spec.family, "error"] += 1
            errors[f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"] += 1
        finally:
            torch.set_grad_enabled(True)

    sample()
    total = sum(outcomes.values())
    ok = sum(n for (_, kind), n in outcomes.items() if kind == "ok")
    families = sorted({f for f, _ in outcomes})
    capfd.readouterr()  # drop what the programs printed (aten._print writes to fd 1)
    with capfd.disabled():
        print(f"\neager validity: {ok}/{total} = {ok / total:.1%}")
        for f in families:
            good, bad = outcomes[f, "ok"], outcomes[f, "error"]
            print(f"  {f:<18} {good}/{good + bad}")
        for message, n in errors.most_common(5):
            print(f"  {n} x {message}")
    assert total >= 200
    assert ok / total >= 0.9, errors.most_common(5)
