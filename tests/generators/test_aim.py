"""Aim: each family's strategy makes its target wrapper path fire in the capture.

For every family, at least half of its examples must reach the family's wrapper paths
(`generators.FAMILY_TARGETS`) when compiled as the plan says. Programs that
pythonify cannot model or that torch fails to compile count as misses, except the known gaps
(`KNOWN_GAPS`, each with the issue that closes it), which are counted apart. RNG's wrapper is
CUDA-only: on CPU the rng family is judged by whether torch.compile reproduces eager's random
numbers under the same seed.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import torch
import torch._dynamo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators import FAMILIES, ProgramSpec, materialize, programs, reached
from pyfy_fuzz.pythonify import pythonify
from pyfy_fuzz.pythonify.paths import wrapper_paths
from pyfy_fuzz.schema.paths import spec_paths

EXAMPLES_PER_FAMILY = 60
pytestmark = pytest.mark.slow

# Refusals of constructs the bundled generator does not model yet, with the issue that adds
# them: such programs still test torch.compile against eager in a campaign, so a family keeps
# drawing them; they leave the denominator here, but may not crowd out the family's target.
# (Tensor hooks on inputs were one, closed by issue 16 item 6: replayed as Dynamo does.)
KNOWN_GAPS: tuple[str, ...] = ()


def _same(a: object, b: object) -> bool:
    la, lb = torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor) and not torch.equal(x.detach(), y.detach()):
            return False
        if not isinstance(x, torch.Tensor) and x != y:
            return False
    return True


def _hit(spec: ProgramSpec, path: Path) -> tuple[bool, str]:
    program = materialize(spec)
    plan = spec.plan
    torch._dynamo.reset()
    try:
        result = pythonify(
            program.make_fn(),
            program.make_inputs(0),
            path,
            frontend=plan.frontend,
            dynamic=plan.dynamic,
            mode=plan.mode,
        )
    except Exception as exc:  # unsupported or a torch failure: a miss, by type and message
        lines = [ln for ln in str(exc).splitlines() if ln.strip() and "raised:" not in ln]
        return False, f"{type(exc).__name__}: {lines[0][:90] if lines else ''}"
    finally:
        torch.set_grad_enabled(True)
    if spec.family != "rng":
        # later_aliasing aims at a later call's relationships, which the spec says
        # (`spec_paths`): its programs must compile for them to be tried at all.
        paths = wrapper_paths(result.ir) + spec_paths(spec)
        return reached(paths, spec.family), "reached" if reached(paths, spec.family) else "missed"
    try:
        eager = program.module.drive(program.make_fn(), program.make_inputs(1), 1)["out"]
        compiled = program.module.drive(result.compiled, program.make_inputs(1), 1)["out"]
    finally:
        torch.set_grad_enabled(True)
    same = _same(eager, compiled)
    return same, "matches eager" if same else "differs from eager"


@pytest.mark.parametrize("family", FAMILIES)
def test_family_reaches_its_wrapper(
    family: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    outcomes: collections.Counter[str] = collections.Counter()
    hits = 0

    @settings(
        max_examples=EXAMPLES_PER_FAMILY,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def sample(data: st.DataObject) -> None:
        nonlocal hits
        spec = data.draw(programs([family]))
        hit, why = _hit(spec, tmp_path / "pythonified.py")
        hits += hit
        outcomes[why] += 1

    sample()
    total = sum(outcomes.values())
    capfd.readouterr()
    with capfd.disabled():
        print(f"\naim {family}: {hits}/{total} = {hits / total:.0%}")
        for why, n in outcomes.most_common():
            print(f"  {n} x {why}")
    assert total >= EXAMPLES_PER_FAMILY // 2
    gaps = sum(n for why, n in outcomes.items() if any(g in why for g in KNOWN_GAPS))
    assert gaps <= 0.7 * total, dict(outcomes)  # the target is not crowded out
    assert hits / (total - gaps) >= 0.5, dict(outcomes)
