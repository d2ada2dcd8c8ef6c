"""The saved-tensor hook contract (Note [Saved-tensor hook contract], generators/_saved_hooks.py):
what each subject packs may differ from eager; a packed tensor that backward never unpacks, or
an unpack of something no pack returned, is found where eager kept the promise."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

import oracles
from generators._spec import CallPlan
from oracles._calls import PairContext, diff_saved_hooks
from pyfy_fuzz.corpus.repro import render_repro
from pyfy_fuzz.schema.observation import CallObs

from .helpers import evidence, spec

HOOKED = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
    ["v1"],
    plan=CallPlan(calls=2, saved_tensor_hooks=True),
)


class _Stashed(torch.autograd.Function):
    """sin(x) * x whose backward reads x from a stash on ctx: right gradients, but what it
    saved through the hooks is never unpacked (the selftest's saved_tensors_read_around_hooks)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.stash = x
        return x.sin() * x

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        x = ctx.stash
        return g * (x.cos() * x + x.sin())


def _stashed(fn: Any) -> Any:
    return lambda a0: _Stashed.apply(a0)


def test_honest_subjects_keep_the_contract_though_they_pack_differently() -> None:
    ev = evidence(HOOKED, compiled_wrap=lambda fn: torch.compile(fn, backend="aot_eager"))
    assert oracles.check_all(ev) == []
    packed, never, foreign = ev.eager.calls[0].saved_hooks or (0, 0, 0)
    assert packed >= 2 and (never, foreign) == (0, 0)
    assert ev.compiled.calls[0].saved_hooks is not None
    assert evidence(replace(HOOKED, plan=CallPlan(calls=1))).eager.calls[0].saved_hooks is None


def test_tensors_packed_and_never_unpacked_are_found() -> None:
    found = oracles.check_all(evidence(HOOKED, compiled_wrap=_stashed))
    (f,) = [f for f in found if f.oracle == "autograd"]
    assert "call 0: saved-tensor hooks: 1 of 2 packed tensors never unpacked" in f.explanation
    assert not [f for f in found if f.oracle == "grads"]  # the gradients are right


def test_an_unpack_of_what_no_pack_returned_is_found_unless_eager_did_it_too() -> None:
    ref, got = CallObs(0, None, saved_hooks=(3, 0, 0)), CallObs(0, None, saved_hooks=(2, 0, 1))
    ev = evidence(HOOKED)
    compiled, file = PairContext(ev, "torch.compile", True), PairContext(ev, "pythonify", True)

    def said(ref: CallObs, got: CallObs, ctx: PairContext) -> list[tuple[str, object]]:
        return [(d.prop, d.actual) for d in diff_saved_hooks(ref, got, ctx)]

    assert said(ref, got, compiled) == [("foreign_unpacks", 1)]
    assert said(replace(ref, saved_hooks=(3, 0, 2)), got, compiled) == []
    assert said(ref, replace(got, saved_hooks=None), compiled) == []
    # pythonify against torch.compile (strict): the same graphs pack the same tensors
    assert said(ref, replace(got, saved_hooks=(2, 0, 0)), file) == [("packed", 2)]
    assert said(ref, replace(got, saved_hooks=(2, 0, 0)), compiled) == []


def test_the_repro_installs_the_logging_hooks_and_compares_the_promises() -> None:
    found = oracles.check_all(evidence(HOOKED, compiled_wrap=_stashed))
    (f,) = [f for f in found if f.oracle == "autograd"]
    source = render_repro(HOOKED, f.to_dict(), backend="aot_eager")
    assert "saved_tensors_hooks(_pack, _unpack)" in source and "SAVED_LOG.clear()" in source
    assert "def saved_hooks_summary():" in source
    assert "[n > 0 for n in saved_hooks_summary()[1:]]" in source
    compile(source, "repro.py", "exec")
