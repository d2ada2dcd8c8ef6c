"""One bug seen through two oracles is one finding (Note [Consequences]), and a variant call is
identified by what it compiled (Note [Variant-call identity] in oracles/guards.py)."""

from __future__ import annotations

import copy
from typing import Any

import torch

import oracles
from generators._spec import CallPlan
from oracles import Finding
from oracles.guards import REUSED_ALIASING
from oracles.identity import severity_of
from oracles.seq_nr import unmapped_class
from pyfy_fuzz.case.recording import exc_obs

from .helpers import edited, evidence, mapped, spec

GRAD = spec([("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))], ["v1"])
_UNBUMPED = ("versions", "input <arg>: version counter moved True")


def _losing_the_write(fn: Any) -> Any:
    """A subject that returns its argument without the program's in-place write."""
    return lambda a0: a0


def test_a_returned_argument_that_differs_is_one_mutation_finding() -> None:
    s = spec([("mul_", ("a0", 2), ())], ["a0"], grad="none")
    found = oracles.check_all(evidence(s, compiled_wrap=_losing_the_write))
    assert [f.oracle for f in found] == ["mutation"]
    (f,) = found
    assert f.consequences == (("outputs", "output N: values"), _UNBUMPED)
    assert "(outputs) call 0: output 0: values differ" in f.explanation
    assert f.aspect == "input <arg> after the call: values"


def test_an_output_computed_from_an_argument_whose_write_was_lost_is_its_echo() -> None:
    # `a0.mul_(2); return a0.tanh()` with the write lost: tanh of the old value.
    s = spec([("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="none")
    found = oracles.check_all(evidence(s, compiled_wrap=lambda fn: lambda a0: a0.sin()))
    assert [(f.oracle, f.consequences) for f in found] == [
        ("mutation", (("outputs", "output N: values"), _UNBUMPED))
    ]


def test_an_output_that_differs_otherwise_stays_its_own_finding() -> None:
    s = spec([("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))], ["a0", "v0"], grad="none")

    def wrong(fn: Any) -> Any:
        def call(a0: torch.Tensor) -> Any:
            return a0, a0.sin().double()  # the write lost, and another output's dtype wrong

        return call

    found = oracles.check_all(evidence(s, compiled_wrap=wrong))
    assert sorted(f.oracle for f in found) == ["mutation", "outputs"]
    assert [f.consequences for f in found if f.oracle == "outputs"] == [()]


def test_a_lost_write_and_its_missed_version_bump_are_one_finding() -> None:
    # The write lost: the argument differs (mutation), its counter did not move (versions),
    # and backward through a tensor saved before the call runs where eager's raised.
    s = spec([("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="nonleaf")
    found = oracles.check_all(evidence(s, compiled_wrap=lambda fn: lambda a0: a0.sin()))
    (f,) = [f for f in found if f.oracle in ("mutation", "versions")]
    assert f.oracle == "mutation" and _UNBUMPED in f.consequences
    assert "(versions) backward through tensors saved before the call" in f.explanation


def test_a_missed_version_bump_alone_is_its_own_finding() -> None:
    # Values right (the write lands through .data), the counter never moves.
    s = spec([("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="none")

    def quiet(fn: Any) -> Any:
        def call(a0: torch.Tensor) -> Any:
            a0.data.mul_(2)
            return a0.sin()

        return call

    found = oracles.check_all(evidence(s, compiled_wrap=quiet))
    assert [(f.oracle, f.aspect) for f in found] == [("versions", _UNBUMPED[1])]


def test_gradients_that_follow_an_autograd_difference_fold_into_it() -> None:
    found = oracles.check_all(evidence(GRAD, compiled_wrap=mapped(lambda o: o.detach())))
    (f,) = [f for f in found if f.oracle in ("autograd", "grads")]
    assert f.oracle == "autograd" and f.consequences[0][0] == "grads"
    assert "(grads) call 0: grad: ran True vs False" in f.explanation
    # Its identity is the autograd aspect alone; its severity the wrong gradient's.
    d = f.to_dict()
    own = [x for x in d["differences"] if x["oracle"] == "autograd"]
    assert severity_of(d) == 1 and severity_of({**d, "differences": own}) == 3
    assert Finding.from_dict(d) == f
    assert f.coarse == Finding.from_dict({**d, "consequences": []}).coarse


def test_autograd_aspect_leads_with_is_leaf() -> None:
    # A detached output: requires_grad True vs False and is_leaf False vs True; the aspect
    # says which way the output moved.
    found = oracles.check_all(evidence(GRAD, compiled_wrap=mapped(lambda o: o.detach())))
    (f,) = [f for f in found if f.oracle == "autograd"]
    assert f.aspect == "output N.is_leaf False"


def _variant(kind: str) -> Any:
    shape = CallPlan(calls=1, variant="shape")
    if kind == "shape":
        return spec([("mul2", ("a0",), ("v0",))], ["v0"], grad="none", plan=shape)
    plan = CallPlan(calls=1, variant="aliasing")
    return spec([("add", ("a0", "a1"), ("v0",))], ["v0"], grad="none", extra_input=True, plan=plan)


def _wrong_on_variant(fn: Any) -> Any:
    def call(*args: torch.Tensor) -> Any:
        out = fn(*args)
        first = args[0].shape == (3,) and len({a.untyped_storage().data_ptr() for a in args}) == 1
        return out if first else out + 1

    return call


def test_a_recompiled_variant_call_is_identified_as_a_first_call_would_be() -> None:
    ev = evidence(_variant("shape"), compiled_wrap=_wrong_on_variant)
    assert ev.compiled.variant is not None
    ev = edited(ev, "compiled", recompiled=True)  # what Dynamo's counters say for torch.compile
    (f,) = oracles.check_all(ev)
    assert f.oracle == "outputs" and f.aspect == "output N: values"
    assert "variant call (shape, recompiled): output 0: values differ" in f.explanation
    # Not recompiled, under a shape variant: the graph's own bug, kept as a guards finding.
    ev = edited(ev, "compiled", recompiled=False)
    (g,) = oracles.check_all(ev)
    assert g.oracle == "guards" and g.aspect == "variant call (shape): output N: values"


def test_a_variant_call_showing_what_the_plan_calls_show_adds_nothing() -> None:
    """Wrong on every call: call 0's outputs finding names the bug; the variant call, whether
    it recompiled or not, repeats it and is no guards finding (Note [Variant-call identity])."""
    for recompiled in (False, True):
        ev = evidence(_variant("shape"), compiled_wrap=mapped(lambda o: o + 1))
        assert ev.compiled.variant is not None
        ev = edited(ev, "compiled", recompiled=recompiled)
        (f,) = oracles.check_all(ev)
        assert f.oracle == "outputs" and "variant call" not in f.explanation, f.explanation


def test_a_variant_call_whose_cause_the_plan_calls_show_adds_nothing_with_new_echoes() -> None:
    """The campaign's T1 split: call 0 loses the write into a0 and returns another argument;
    the variant passes a0 twice, so its output is a0, an echo call 0 did not have. The cause
    (a0's lost write) is call 0's finding; the variant call's lines are not a second one."""
    s = spec(
        [("mul_", ("a0", 2), ())], ["a0"], grad="none", plan=CallPlan(calls=1, variant="shape")
    )
    for recompiled in (False, True):
        ev = evidence(s, compiled_wrap=_losing_the_write)
        assert ev.compiled.variant is not None
        ev = edited(ev, "compiled", recompiled=recompiled)
        e0 = ev.eager.calls[0]  # call 0 shows the write alone
        outputs, later = copy.deepcopy((e0.outputs, e0.outputs_later))
        ev = edited(ev, "compiled", 0, outputs=outputs, outputs_later=later)
        found = oracles.check_all(ev)
        assert [f.oracle for f in found] == ["mutation"], [f.explanation for f in found]
        assert "variant call" not in found[0].explanation


def test_every_symptom_of_a_graph_reused_for_other_aliasing_is_one_bug() -> None:
    ev = evidence(_variant("aliasing"), compiled_wrap=_wrong_on_variant)
    assert ev.eager.variant is not None and ev.eager.variant.variant == "aliasing"
    (values,) = oracles.check_all(ev)
    assert values.oracle == "guards" and values.aspect == REUSED_ALIASING
    # The same reuse raising instead: a crash of the reused graph is the same missing guard.
    assert ev.compiled.variant is not None
    ev = edited(ev, "compiled", raised=exc_obs(RuntimeError("setStorage: out of bounds"), "call"))
    (crash,) = oracles.check_all(ev)
    assert crash.kind == "compile-divergence" and crash.exc_type is None
    assert crash.coarse == values.coarse and severity_of(crash.to_dict()) == 1
    # Recompiled for the new aliasing, the crash is identified by its exception.
    ev = edited(ev, "compiled", recompiled=True)
    (own,) = oracles.check_all(ev)
    assert own.kind == "crash" and own.exc_type == "RuntimeError"
    # Where call 0 raised, no graph was there to reuse: the error is identified as any error.
    ev = edited(ev, "compiled", recompiled=False)
    ev = edited(
        ev, "compiled", 0, raised=exc_obs(RuntimeError("setStorage: out of bounds"), "call")
    )
    assert REUSED_ALIASING not in [f.aspect for f in oracles.check_all(ev)]


def test_seq_nr_names_a_custom_functions_backward_whatever_its_nodes_compute() -> None:
    assert unmapped_class(["with_effects"], False) == "effect tokens"
    in_fn = unmapped_class(["with_effects"], True)
    assert in_fn == unmapped_class(["aten.mul.Tensor"], True)
    assert in_fn == "custom autograd.Function backward"


def test_fx_node_meta_marks_nodes_traced_from_a_custom_function() -> None:
    """The installed torch records the Function in source_fn_stack (a version check: if this
    fails, seq_nr findings of custom Functions split by what their backward computes)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    from pyfy_fuzz.pythonify.graph_render import fx_node_meta

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
            return g * 2

    metas: list[Any] = []

    def keep(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        metas.append(fx_node_meta(gm))
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    try:
        fn = torch.compile(
            lambda a: Scale.apply(a).sin(), backend=aot_autograd(fw_compiler=keep, bw_compiler=keep)
        )
        fn(torch.randn(3, requires_grad=True)).sum().backward()
    finally:
        torch._dynamo.reset()
    forward, backward = metas
    assert [n.custom_function for n in forward] == [True, False]  # mul (in Scale), sin
    in_fn = [n.target for n in backward if n.custom_function and n.autograd_backward]
    assert in_fn == ["aten.mul.Tensor"]


def test_a_relationship_that_changes_nothing_does_not_split_a_reused_graph() -> None:
    """`aliasing+leaf` where no argument requires grad changes only aliasing: the call runs on
    the graph compiled for other aliasing, one bug with `aliasing` (the 10-minute campaign of
    2026-11-27 saved T2 twice: compile-divergence.guards.51962eb067c1 and a21a35d340c2)."""
    from generators.source import effective_variant

    plan = CallPlan(calls=1, variant="aliasing+leaf")
    s = spec([("add", ("a0", "a1"), ("v0",))], ["v0"], grad="none", extra_input=True, plan=plan)
    assert effective_variant(s, "aliasing+leaf") == "aliasing"
    assert effective_variant(s, "again+leaf") == "again"
    ev = evidence(s, compiled_wrap=_wrong_on_variant)
    assert ev.eager.variant is not None and ev.eager.variant.variant == "aliasing"
    (values,) = oracles.check_all(ev)
    assert values.oracle == "guards" and values.aspect == REUSED_ALIASING
