"""Call relationships (Note [Call relationships]): each token changes what it says in the
rendered program's arguments, `variant_changes` predicts exactly when it changes something,
plans carry sequences of such calls, and the guard oracle judges every call of a sequence."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracles
from generators import later_aliasing_programs, materialize, programs
from generators._spec import (
    CALL_RELATIONS,
    CallPlan,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    SpecError,
    Stmt,
    ViewStep,
    spec_from_dict,
)
from generators.source import RELATE_TOKENS, variant_changes
from oracles import Evidence
from pyfy_fuzz.case.observe import Target, observe_subject
from pyfy_fuzz.schema.paths import spec_paths

# a0 mutated, a1 read: their overlap decides the result; a2 a leaf requiring grad
TWO = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((2, 3)), RootSpec((2, 3)), RootSpec((3,), grad="leaf")),
    inputs=(InputSpec("root", root=0), InputSpec("root", root=1), InputSpec("root", root=2)),
    body=(
        Stmt("mul_", ("a0", 2)),
        Stmt("add", ("a0", "a1"), ("v0",)),
        Stmt("mul", ("v0", "a2"), ("v1",)),
    ),
    outputs=(OutSpec("ref", "v1"),),
    plan=CallPlan(calls=1, variant="overlap", sequence=("nonleaf+strided", "no_grad")),
)


def _facts(args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """What a relationship may change about the arguments, per argument (shift: the storage
    offset), plus which overlap, and the Python numbers (scalars)."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    facts: list[tuple[Any, ...]] = [
        (type(t), tuple(t.shape), t.dtype, t.stride(), t.storage_offset(), t.requires_grad)
        + (t.is_leaf,)
        + (t._base is not None, tuple(j for j, u in enumerate(tensors) if u is t))
        for t in tensors
    ]
    sharing = [
        (i, j)
        for i, a in enumerate(tensors)
        for j, b in enumerate(tensors)
        if i < j
        and type(a) is torch.Tensor
        and type(b) is torch.Tensor
        and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.numel()
    ]
    numbers = [(type(a), a) for a in args if type(a) in (int, float)]  # scalars: their values
    return [*facts, tuple(sharing), *numbers]


def test_each_relationship_changes_what_it_says() -> None:
    program = materialize(replace(TWO, plan=CallPlan(calls=1)))
    a0, a1, a2 = program.make_inputs(0)
    o0, o1, _ = program.make_inputs(0, "overlap")
    assert o0.untyped_storage().data_ptr() == o1.untyped_storage().data_ptr()
    assert o1.storage_offset() == 1 and o0.shape == a0.shape and o1.shape == a1.shape
    torch.testing.assert_close(o1, a1)  # the values of call 0's seed, in the new layout
    *_, n2 = program.make_inputs(0, "nonleaf")
    assert n2.requires_grad and not n2.is_leaf
    s0, *_ = program.make_inputs(0, "strided")
    assert s0.stride() == (6, 2) and s0._base is None
    torch.testing.assert_close(s0, a0)
    *_, d2 = program.make_inputs(0, "no_requires_grad")
    assert not d2.requires_grad
    both = program.make_inputs(0, "nonleaf+strided")
    assert both[0].stride() == (6, 2) and not both[2].is_leaf


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(), st.sampled_from([t for t in CALL_RELATIONS if t not in ("no_grad", "again")]))
def test_variant_changes_predicts_what_make_inputs_does(spec: ProgramSpec, token: str) -> None:
    """A relationship `variant_changes` says applies changes the arguments (contexts change
    the call, not the arguments); relate()'s relationships change them exactly then."""
    spec = replace(spec, plan=replace(spec.plan, variant=None, sequence=()))
    program = materialize(spec)
    try:
        variant_args = program.make_inputs(0, token)
    except RuntimeError:  # a view that no longer fits the grown root: never drawn
        assert not variant_changes(spec, token), (token, spec)
        return
    changed = _facts(variant_args) != _facts(program.make_inputs(0))
    if token == "inference_mode":
        assert not changed
    elif token in RELATE_TOKENS:  # relate()'s own rules, mirrored exactly
        assert changed == variant_changes(spec, token), (token, spec)
    else:  # never drawn where it changes nothing (drawn a little less than it could be)
        assert changed or not variant_changes(spec, token), (token, spec)


def test_a_sequence_needs_a_variant_call_and_known_relationships() -> None:
    with pytest.raises(SpecError, match="need a variant call"):
        spec_from_dict({**_dict(TWO), "plan": {**_dict(TWO)["plan"], "variant": None}})
    with pytest.raises(SpecError, match="plan.sequence\\[1\\]"):
        bad = {**_dict(TWO)["plan"], "sequence": ["overlap", "sideways"]}
        spec_from_dict({**_dict(TWO), "plan": bad})
    assert ProgramSpec.from_json(TWO.to_json()) == TWO


def _dict(spec: ProgramSpec) -> dict[str, Any]:
    import json

    return dict(json.loads(spec.to_json()))


def _observe(spec: ProgramSpec, wrap: Any, name: str) -> Any:
    program = materialize(spec)
    fn = program.make_fn()
    return observe_subject(program, Target(name, wrap(fn) if wrap else fn))


def test_every_call_of_a_sequence_is_judged() -> None:
    """A subject that ignores that its arguments overlap (it computes on copies) is right on
    call 0 and the variant call, and wrong on the sequence's overlapping call."""

    def on_copies_when_overlapping(fn: Any) -> Any:
        def call(*args: Any) -> Any:
            a0, a1, a2 = args
            if a0.untyped_storage().data_ptr() == a1.untyped_storage().data_ptr():
                out = fn(a0.clone(), a1.clone(), a2)
                a0.mul_(2)
                return out
            return fn(*args)

        return call

    spec = replace(TWO, plan=CallPlan(calls=1, variant="strided", sequence=("no_grad", "overlap")))
    eager = _observe(spec, None, "eager")
    compiled = _observe(spec, on_copies_when_overlapping, "torch.compile")
    assert [c.variant for c in eager.sequence] == ["no_grad", "overlap"]
    assert eager.sequence[0].grads is None  # no_grad: nothing requires grad, no backward
    found = oracles.check_all(Evidence(eager=eager, compiled=compiled, pythonified=None))
    (f,) = [f for f in found if f.oracle == "guards"]
    assert "sequence call 1 (overlap): output 0: values differ" in f.explanation


ACCUMULATE = ProgramSpec(
    family="autograd_function",
    roots=(RootSpec((3,), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("sin", ("a0",), ("v0",)), Stmt("mul", ("v0", "a0"), ("v1",))),
    outputs=(OutSpec("ref", "v1"),),
    plan=CallPlan(calls=1, variant="strided", sequence=("again",)),
)


def test_an_again_call_passes_the_same_arguments_and_gradients_accumulate() -> None:
    eager = _observe(ACCUMULATE, None, "eager")
    first, again = eager.variant.grads[0], eager.sequence[0].grads[0]  # type: ignore[union-attr]
    assert first is not None and again is not None
    torch.testing.assert_close(again.values, 2 * first.values)


def test_a_subject_that_overwrites_grad_instead_of_accumulating_is_caught() -> None:
    def overwriting(fn: Any) -> Any:
        def call(a0: torch.Tensor) -> Any:
            a0.grad = None  # the gradient of the call before is lost
            return fn(a0)

        return call

    eager = _observe(ACCUMULATE, None, "eager")
    compiled = _observe(ACCUMULATE, overwriting, "torch.compile")
    found = oracles.check_all(Evidence(eager=eager, compiled=compiled, pythonified=None))
    (f,) = [f for f in found if f.oracle == "guards"]
    assert "sequence call 0 (again): grad of a0: values differ" in f.explanation


def test_share_makes_two_views_of_one_storage_keeping_grad_and_leafness() -> None:
    spec = replace(TWO, roots=(RootSpec((2, 3), grad="leaf"), *TWO.roots[1:]))
    a0, a1, a2 = materialize(spec).make_inputs(0, "share")
    assert a0 is not a1 and a0.untyped_storage().data_ptr() == a1.untyped_storage().data_ptr()
    assert (a0.requires_grad, a0.is_leaf) == (True, True)  # a leaf of its own, shared memory
    assert not a1.requires_grad and a2.untyped_storage().data_ptr() != a0.data_ptr()
    before = materialize(spec).make_inputs(0)
    torch.testing.assert_close(a0.detach(), before[0].detach())  # the first's values


def test_shift_moves_all_but_the_first_alias_one_element_on() -> None:
    spec = replace(
        TWO,
        roots=(RootSpec((8,)), TWO.roots[2]),
        inputs=(
            InputSpec("root", root=0),
            InputSpec("view", root=0, views=(ViewStep("slice", (0, 2, 6, 1)),)),
            InputSpec("root", root=1),
        ),
        body=(Stmt("mul_", ("a0", 2)), Stmt("mul", ("a1", "a2"), ("v1",))),
        plan=CallPlan(calls=1, variant="shift"),
    )
    b0, b1, _ = materialize(spec).make_inputs(0)
    s0, s1, _ = materialize(spec).make_inputs(0, "shift")
    assert s0.untyped_storage().data_ptr() == s1.untyped_storage().data_ptr()
    assert (s0.storage_offset(), s1.storage_offset()) == (0, b1.storage_offset() + 1)
    torch.testing.assert_close(s1, b0[3:7])  # it reads the elements one further on


def test_a_graph_that_ignores_a_later_calls_aliasing_is_caught() -> None:
    """Distinct in call 0, one tensor's memory in the variant call (share), one written and
    the other read: a subject that computes on copies then (as a graph compiled for distinct
    arguments would) is wrong there, and the guards oracle says so."""

    def on_copies(fn: Any) -> Any:
        def call(a0: torch.Tensor, a1: torch.Tensor, a2: torch.Tensor) -> Any:
            if a0.untyped_storage().data_ptr() == a1.untyped_storage().data_ptr():
                out = fn(a0.clone(), a1.clone(), a2)
                a0.mul_(2)
                return out
            return fn(a0, a1, a2)

        return call

    spec = replace(TWO, plan=CallPlan(calls=1, variant="share"))
    assert "plan/aliased_later/share" in spec_paths(spec)
    assert "plan/aliased_later/mutate_read" in spec_paths(spec)
    eager = _observe(spec, None, "eager")
    compiled = _observe(spec, on_copies, "torch.compile")
    found = oracles.check_all(Evidence(eager=eager, compiled=compiled, pythonified=None))
    (f,) = [f for f in found if f.oracle == "guards"]
    assert "variant call (share): output 0: values differ" in f.explanation


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(later_aliasing_programs())
def test_the_later_aliasing_family_always_aliases_later_with_a_write_and_a_read(
    spec: ProgramSpec,
) -> None:
    paths = spec_paths(spec)
    assert "plan/aliased_later/mutate_read" in paths, spec
    assert any(p.startswith("plan/aliased_later/") and "mutate" not in p for p in paths), spec
    assert variant_changes(spec), spec  # the forced later call changes the arguments
