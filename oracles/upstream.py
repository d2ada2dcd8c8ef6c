"""Bugs upstream already knows: a finding that matches one says "known upstream: pytorch#N".

Note [Known upstream]
~~~~~~~~~~~~~~~~~~~~~
An engineer's first question of a report is whether it is already filed. Each row names a
pytorch/pytorch issue and what a finding of it looks like, as data: its kind, and its first
difference's locus, property and reference side, or the words of torch's own message. A
match is a strong hint, not a proof (one message can have two causes): the entry says
"known upstream" and keeps its own identity and repro. Add a row when triage finds a
finding's issue; a row's test is a finding of that shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyfy_fuzz.schema.difference import differences_of

__all__ = ["KNOWN_UPSTREAM", "Upstream", "known_upstream"]


@dataclass(frozen=True)
class Upstream:
    """One upstream issue and the shape of the findings it explains."""

    issue: int  # pytorch/pytorch issue number
    title: str  # the issue's title, shortened
    kind: str  # the finding's kind
    locus: str  # its first difference's locus
    prop: str = ""  # ... and property ("" any)
    expected: Any = None  # ... and the reference's side (None any)
    kind_detail: str | None = None  # ... and its refinement (None any)
    words: str = ""  # words of torch's message (exceptions; "" any)

    def __post_init__(self) -> None:
        if self.issue <= 0 or not self.title:
            raise ValueError(f"an upstream row names its issue and title: {self}")

    def matches(self, finding: Mapping[str, Any]) -> bool:
        diffs = differences_of(finding)
        if finding.get("kind") != self.kind or not diffs:
            return False
        d = diffs[0]
        if d.locus != self.locus or (self.prop and d.prop != self.prop):
            return False
        if self.expected is not None and d.expected != self.expected:
            return False
        if self.kind_detail is not None and d.kind_detail != self.kind_detail:
            return False
        return not self.words or (d.exc is not None and self.words in d.exc.message)


KNOWN_UPSTREAM = (
    Upstream(
        131794,
        "unused differentiable outputs: the compiled backward gives unused inputs zero "
        "gradients where eager leaves them None",
        "compile-divergence",
        "grad",
        "presence",
        expected="None",
        kind_detail="",
    ),
    Upstream(
        185497,
        "a variable needed for gradient computation modified by an inplace operation in "
        "compiled mode (eager runs): a mutated input saved for backward",
        "crash",
        "exception",
        words="modified by an inplace operation",
    ),
)


def known_upstream(finding: Mapping[str, Any]) -> list[int]:
    """The pytorch issues whose rows match a finding's (or case.json's) dict."""
    return [u.issue for u in KNOWN_UPSTREAM if u.matches(finding)]
