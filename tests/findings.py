"""Findings as the oracles make them, for tests that need one without running a case: each
records its differences as data (Note [Differences are data] in pyfy_fuzz/schema/difference.py)."""

from __future__ import annotations

from typing import Any

from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts
from pyfy_fuzz.schema.finding import Finding

__all__ = ["crash_finding", "values_finding"]


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
