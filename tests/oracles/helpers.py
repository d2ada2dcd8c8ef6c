"""Small hand-written programs and planted-wrong subjects for the oracle tests.

A planted subject is eager's function wrapped so that it differs in exactly one way (drops a
mutation, returns a copy instead of a view, doubles a gradient, ...); each oracle test checks
that its oracle reports it -- and that an honest subject gives no finding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from generators import materialize
from generators._spec import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt, ViewStep
from oracles import Evidence
from pyfy_fuzz.case.observe import Target, observe_subject
from pyfy_fuzz.schema.observation import SubjectObs


def spec(
    body: list[tuple[Any, ...]],
    outputs: list[str],
    *,
    grad: str = "leaf",
    shape: tuple[int, ...] = (3,),
    views: tuple[ViewStep, ...] = (),
    plan: CallPlan | None = None,
    extra_input: bool = False,
) -> ProgramSpec:
    """A one-root program; body items are (op, args, outs)."""
    inputs = [InputSpec("root")] if not views else [InputSpec("view", views=views)]
    if extra_input:
        inputs.append(InputSpec("view", views=(ViewStep("slice", (0, 0, 1, 1)),)))
    return ProgramSpec(
        family="input_mutation",
        roots=(RootSpec(shape, grad=grad),),
        inputs=tuple(inputs),
        body=tuple(Stmt(op, tuple(args), tuple(outs)) for op, args, outs in body),
        outputs=tuple(OutSpec("ref", r) for r in outputs),
        plan=plan or CallPlan(calls=2),
    )


def observe(
    s: ProgramSpec,
    wrap: Callable[[Any], Callable[..., Any]] | None = None,
    name: str = "torch.compile",
) -> tuple[Any, SubjectObs]:
    program = materialize(s)
    fn = program.make_fn()
    call = wrap(fn) if wrap else fn
    return program, observe_subject(program, Target(name, call))


def evidence(s: ProgramSpec, compiled_wrap=None, pythonified_wrap=None, **kw: Any) -> Evidence:  # type: ignore[no-untyped-def]
    _, eager = observe(s, None, "eager")
    _, compiled = observe(s, compiled_wrap)
    pythonified = None
    if pythonified_wrap is not None:
        _, pythonified = observe(s, pythonified_wrap, "pythonify")
    return Evidence(eager=eager, compiled=compiled, pythonified=pythonified, **kw)


def on_clones(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Runs fn on copies of the tensor arguments: the caller never sees a mutation."""

    def call(*args: Any) -> Any:
        return fn(
            *[
                a.detach().clone().requires_grad_(a.requires_grad)
                if isinstance(a, torch.Tensor)
                else a
                for a in args
            ]
        )

    return call


def mapped(f: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A subject that post-processes every tensor output with f."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            out = fn(*args)
            if isinstance(out, tuple):
                return tuple(f(o) if isinstance(o, torch.Tensor) else o for o in out)
            return f(out) if isinstance(out, torch.Tensor) else out

        return call

    return wrap


def edited(ev: Evidence, subject: str, call: int | None = None, **changes: Any) -> Evidence:
    """`ev` with one call of one subject's observation changed: call `call`, or the variant
    call when None (observations are frozen, as the oracles see them)."""
    obs: SubjectObs = getattr(ev, subject)
    if call is None:
        assert obs.variant is not None
        obs = replace(obs, variant=replace(obs.variant, **changes))
    else:
        calls = list(obs.calls)
        calls[call] = replace(calls[call], **changes)
        obs = replace(obs, calls=calls)
    changed: dict[str, Any] = {subject: obs}
    return replace(ev, **changed)
