"""Issue 17's custom autograd.Function breadth (seed 003): two tensor inputs with
needs_input_grad, the same tensor passed twice, a second differentiable output under
once_differentiable and set_materialize_grads(False), an effectful custom op in backward.
Each renders a Function whose backward is the exact derivative of its forward (checked
against the same expression in plain torch), is generated, and runs through every subject."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, settings

from generators import materialize, programs
from generators._spec import (
    CallPlan,
    FunctionSpec,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    SpecError,
    Stmt,
    validate,
)
from pyfy_fuzz.case.runner import run_case


def _spec(fn: FunctionSpec, args: tuple[str, ...], grads: tuple[str, str] = ("leaf", "leaf")):
    outs = ("v0", "v1") if fn.two_outputs or fn.non_differentiable else ("v0",)
    return ProgramSpec(
        family="autograd_function",
        roots=(RootSpec((3,), grad=grads[0]), RootSpec((3,), grad=grads[1])),
        inputs=(InputSpec("root", root=0), InputSpec("root", root=1)),
        body=(Stmt("apply_fn", (0, *args), outs),),
        outputs=tuple(OutSpec("ref", ref=o) for o in outs),
        functions=(fn,),
        plan=CallPlan(calls=1),
    )


def _grads(spec: ProgramSpec) -> list[torch.Tensor | None]:
    program = materialize(spec)
    result = program.module.drive(program.make_fn(), program.make_inputs(0))
    return list(result["grads"])


def _reference(spec: ProgramSpec, expr) -> list[torch.Tensor | None]:  # type: ignore[no-untyped-def]
    """The gradients of the same computation in plain torch, with drive's tangents."""
    program = materialize(spec)
    a0, a1 = program.make_inputs(0)
    outs = expr(a0, a1)
    g = torch.Generator().manual_seed(1000)
    loss = sum((o * torch.randn(o.shape, generator=g)).sum() for o in outs)
    loss.backward()
    return [a0.grad, a1.grad]


@pytest.mark.parametrize("style", ["ctx", "setup_context"])
@pytest.mark.parametrize(
    ("body", "expr"),
    [
        ("scale", lambda x, w: (x * 3 + w * 2,)),
        ("sin", lambda x, w: (x.sin() * w,)),
    ],
)
def test_two_inputs_have_exact_gradients(style: str, body: str, expr) -> None:  # type: ignore[no-untyped-def]
    spec = _spec(FunctionSpec(style=style, body=body, arity=2), ("a0", "a1"))
    for got, want in zip(_grads(spec), _reference(spec, expr), strict=True):
        torch.testing.assert_close(got, want)


def test_needs_input_grad_leaves_an_input_without_grad_alone() -> None:
    spec = _spec(FunctionSpec(body="sin", arity=2), ("a0", "a1"), grads=("leaf", "none"))
    (got,) = _grads(spec)  # a1 needs no grad: backward returns None for it, and drive has one leaf
    want = _reference(
        replace(spec, roots=(spec.roots[0], RootSpec((3,)))), lambda x, w: (x.sin() * w,)
    )
    torch.testing.assert_close(got, want[0])


def test_the_same_tensor_twice_sums_both_gradients() -> None:
    spec = _spec(FunctionSpec(body="sin", arity=2), ("a0", "a0"))
    got = _grads(spec)[0]
    want = _reference(spec, lambda x, w: (x.sin() * x,))[0]
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("materialize_grads", [True, False])
def test_two_outputs_once_differentiable(materialize_grads: bool) -> None:
    fn = FunctionSpec(
        body="sin",
        two_outputs=True,
        once_differentiable=True,
        materialize_grads=materialize_grads,
    )
    spec = _spec(fn, ("a0",))
    want = _reference(spec, lambda x, w: (x.sin(), x.sin() * 2))
    torch.testing.assert_close(_grads(spec)[0], want[0])
    # one output unused: under set_materialize_grads(False) its gradient arrives as None
    single = replace(spec, outputs=(OutSpec("ref", ref="v1"),))
    torch.testing.assert_close(
        _grads(single)[0], _reference(single, lambda x, w: (x.sin() * 2,))[0]
    )


def test_the_flags_a_function_cannot_have_together_are_refused() -> None:
    bad = _spec(FunctionSpec(body="dirty", arity=2), ("a0", "a1"))
    with pytest.raises(SpecError, match="arity"):
        validate(bad)
    with pytest.raises(SpecError, match="two_outputs"):
        validate(_spec(FunctionSpec(two_outputs=True, non_differentiable=True), ("a0",)))


SETTINGS = settings(
    database=None,
    max_examples=3000,
    derandomize=True,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize(
    "feature",
    ["two inputs", "the same tensor twice", "two outputs", "backward record"],
)
def test_each_feature_is_generated_and_agrees_across_subjects(feature: str) -> None:
    def has(spec: ProgramSpec) -> bool:
        applies = [s for s in spec.body if s.op == "apply_fn"]
        fns = spec.functions
        return {
            "two inputs": any(len(s.args) == 3 and s.args[1] != s.args[2] for s in applies),
            "the same tensor twice": any(
                len(s.args) == 3 and s.args[1] == s.args[2] for s in applies
            ),
            "two outputs": any(f.two_outputs for f in fns),
            "backward record": any(f.backward_record for f in fns),
        }[feature]

    spec = find(programs(["autograd_function"]), has, settings=SETTINGS)
    result = run_case(spec)
    assert not [f for f in result.findings if f.subject in ("pythonify", "pyfy-fuzz")], (
        result.findings
    )
