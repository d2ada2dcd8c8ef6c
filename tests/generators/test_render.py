"""render(spec): standalone source that rebuilds the inputs' aliasing and drives the plan."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from generators import (
    CallPlan,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
    ViewStep,
    materialize,
    programs,
    render,
)
from generators._variants import variant_changes


def _spec(plan: CallPlan | None = None, grad: str = "none") -> ProgramSpec:
    """a0: a (3, 4) root; a1: a view of it; a2: a0 again; a3: set_ onto its storage."""
    return ProgramSpec(
        family="synthetic_base",
        roots=(RootSpec((3, 4), grad=grad),),
        inputs=(
            InputSpec("root"),
            InputSpec(
                "view", views=(ViewStep("slice", (1, 0, 4, 2)), ViewStep("transpose", (0, 1)))
            ),
            InputSpec("dup", of=0),
            InputSpec("set_shared", views=(ViewStep("as_strided", ((2, 2), (4, 1), 1)),)),
        ),
        body=(Stmt("mul2", ("a0",), ("v0",)),),
        outputs=(OutSpec("ref", ref="v0"),),
        plan=plan or CallPlan(),
    )


def test_inputs_rebuild_the_aliasing_structure() -> None:
    a0, a1, a2, a3 = materialize(_spec()).make_inputs(0)
    assert a2 is a0
    assert a1._base is a0 and a1.shape == (2, 3) and a1.stride() == (2, 4)
    assert a3._base is None and a3.untyped_storage().data_ptr() == a0.untyped_storage().data_ptr()
    assert (a3.shape, a3.stride(), a3.storage_offset()) == ((2, 2), (4, 1), 1)


def test_inputs_are_deterministic_per_seed() -> None:
    program = materialize(_spec())
    assert torch.equal(program.make_inputs(3)[0], program.make_inputs(3)[0])
    assert not torch.equal(program.make_inputs(3)[0], program.make_inputs(4)[0])


def test_variants_change_shape_dtype_and_aliasing() -> None:
    program = materialize(_spec())
    assert program.make_inputs(0, "shape")[0].shape == (4, 5)
    assert program.make_inputs(0, "dtype")[0].dtype == torch.float64
    # Every floating dtype changes (float64 and the halves to float32): a variant that changed
    # nothing would test no guard, and the file's errors on it would read as guard-unsound.
    for dtype in ("float64", "float16", "bfloat16"):
        spec = _spec()
        spec = replace(spec, roots=tuple(replace(r, dtype=dtype) for r in spec.roots))
        assert materialize(spec).make_inputs(0, "dtype")[0].dtype == torch.float32
    un = program.make_inputs(0, "aliasing")
    assert un[2] is not un[0] and un[1]._base is None
    assert torch.equal(un[2], un[0])


def test_a_variant_that_changes_nothing_is_never_drawn() -> None:
    """A dtype variant without a floating argument, or an aliasing variant with one plain
    argument, gives call 0's inputs again: `variant_changes` says so, and programs() drops it."""
    one = replace(_spec(), inputs=(InputSpec("root"),))
    assert variant_changes(replace(one, plan=CallPlan(variant="shape")))
    assert not variant_changes(replace(one, plan=CallPlan(variant="aliasing")))
    assert variant_changes(replace(_spec(), plan=CallPlan(variant="aliasing")))
    ints = replace(one, roots=(RootSpec((3, 4), dtype="int64"),))
    assert not variant_changes(replace(ints, plan=CallPlan(variant="dtype")))
    assert variant_changes(replace(one, plan=CallPlan(variant="dtype")))
    scalar = replace(one, roots=(RootSpec(()),))  # a 0-d root has no dimension to grow
    assert not variant_changes(replace(scalar, plan=CallPlan(variant="shape")))

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def check(spec: ProgramSpec) -> None:
        assert spec.plan.variant is None or variant_changes(spec), spec

    check()


def test_drive_follows_the_plan_for_second_backward() -> None:
    retain = materialize(_spec(CallPlan(second_backward="retain"), grad="leaf"))
    fn, args = retain.make_fn(), retain.make_inputs(0)
    result = retain.module.drive(fn, args, 0)
    first, second = result["grads"][0], result["second"][0]
    torch.testing.assert_close(second, 2 * first)  # accumulated twice
    no_retain = materialize(_spec(CallPlan(second_backward="no_retain"), grad="leaf"))
    result = no_retain.module.drive(no_retain.make_fn(), no_retain.make_inputs(0), 0)
    assert isinstance(result["second"], RuntimeError)


def test_grad_mode_change_is_observed_and_undone() -> None:
    spec = ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((2,), grad="leaf"),),
        inputs=(InputSpec("root"),),
        body=(Stmt("set_grad_enabled", (False,)), Stmt("sin", ("a0",), ("v0",))),
        outputs=(OutSpec("ref", ref="v0"),),
    )
    program = materialize(spec)
    result = program.module.drive(program.make_fn(), program.make_inputs(0), 0)
    assert result["grad_enabled_after"] is False and torch.is_grad_enabled()
    assert not result["out"].requires_grad and result["grads"] is None


@settings(
    max_examples=8,
    database=None,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(programs())
def test_rendered_source_runs_with_torch_only(spec: ProgramSpec) -> None:
    source = render(spec)
    assert "pyfy_fuzz" not in source and "import generators" not in source
    path = Path(materialize(spec).path)
    proc = subprocess.run(
        [sys.executable, "-I", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=path.parent,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "call 0:" in proc.stdout


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_emitted_helpers_carry_nothing_of_their_checkers(spec: ProgramSpec) -> None:
    """The helpers are copied from type-checked modules (generators/_emit.py): their
    type-ignores and formatter and linter pragmas stay behind."""
    text = render(spec)
    for pragma in ("# type: ignore", "# fmt:", "# ruff:", "# noqa"):
        assert pragma not in text


def test_render_rejects_unknown_ops() -> None:
    bad = ProgramSpec(
        family="x",
        roots=(RootSpec((1,)),),
        inputs=(InputSpec("root"),),
        body=(Stmt("frobnicate", ("a0",), ("v0",)),),
        outputs=(OutSpec("ref", ref="a0"),),
    )
    with pytest.raises(ValueError, match="frobnicate"):
        render(bad)
