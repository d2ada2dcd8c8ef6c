"""Oracles: compare what eager, torch.compile and the pythonified file did with one program.

    findings = check_all(evidence)

Eager is the ground truth for torch.compile; torch.compile is the reference for pythonify.
One module per oracle family; each `check(evidence) -> list[Finding]`. Differences that are by
design are listed, with their reasons, in `by_design.BY_DESIGN` and nowhere else.
"""

from __future__ import annotations

from . import aliasing, autograd, cudagraph, exceptions, grads, guards, mutation, outputs, seq_nr
from .by_design import BY_DESIGN, ByDesign
from .evidence import Evidence
from .finding import KINDS, Finding

ORACLES = {
    m.NAME: m.check
    for m in (exceptions, outputs, mutation, aliasing, autograd, grads, seq_nr, cudagraph, guards)
}


def check_all(evidence: Evidence) -> list[Finding]:
    """Every oracle's findings, in a fixed order (exceptions first)."""
    found: list[Finding] = []
    for check in ORACLES.values():
        found += check(evidence)
    return found


__all__ = ["BY_DESIGN", "KINDS", "ORACLES", "ByDesign", "Evidence", "Finding", "check_all"]
