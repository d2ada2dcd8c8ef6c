"""Findings as the oracles make them, for tests that need one without running a case: each
records its differences as data (Note [Differences are data] in pyfy_fuzz/schema/difference.py);
and the one-statement program such tests hand around with them."""

from __future__ import annotations

from typing import Any

from generators import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts
from pyfy_fuzz.schema.finding import Finding

__all__ = ["SIN", "crash_finding", "values_finding"]

# `v0 = a0.sin(); return v0`, one call, no backward: a program for bookkeeping tests.
SIN = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((2,)),),
    inputs=(InputSpec("root", 0),),
    body=(Stmt("sin", ("a0",), ("v0",)),),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1, backward=False),
)


def values_finding(
    subject: str = "torch.compile",
    *,
    oracle: str = "outputs",
    kind: str = "compile-divergence",
    paths: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Output 0 of call 0 has other values than its reference's."""
    d = Difference(
        oracle, subject, CallRef("plan", 0), "output", "values", 0, expected="[1]", actual="[2]"
    )
    return Finding(
        kind,  # type: ignore[arg-type]
        oracle,
        subject,  # type: ignore[arg-type]
        paths,
        Finding.explain(subject, (d,)),
        differences=(d,),
        aspect=d.aspect,
    ).to_dict()


def crash_finding(subject: str = "torch.compile", message: str = "x") -> dict[str, Any]:
    """Call 0 raises a RuntimeError where its reference runs."""
    exc = ExcFacts("RuntimeError", message, "call")
    d = Difference("exceptions", subject, CallRef("plan", 0), "exception", "raised", exc=exc)
    return Finding(
        "crash",
        "exceptions",
        subject,  # type: ignore[arg-type]
        (),
        Finding.explain(subject, (d,)),
        "RuntimeError",
        message=message,
        differences=(d,),
    ).to_dict()
