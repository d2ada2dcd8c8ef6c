"""Oracles: compare what eager, torch.compile and the pythonified file did with one program.

    findings = check_all(evidence)

Eager is the ground truth for torch.compile; torch.compile is the reference for pythonify.
One module per oracle family; each `check(evidence) -> list[Finding]`. Differences that are by
design are listed, with their reasons, in `by_design.BY_DESIGN` and nowhere else.
"""

from __future__ import annotations

from dataclasses import replace

from . import (
    aliasing,
    autograd,
    cudagraph,
    exceptions,
    grads,
    guards,
    mutation,
    outputs,
    seq_nr,
    versions,
)
from .by_design import BY_DESIGN, ByDesign, recording
from .consequences import fold
from .evidence import Evidence
from .finding import KINDS, Finding

ORACLES = {
    m.NAME: m.check
    for m in (
        exceptions,
        outputs,
        mutation,
        versions,
        aliasing,
        autograd,
        grads,
        seq_nr,
        cudagraph,
        guards,
    )
}


# Oracles whose pythonify check compares the file with torch.compile's *outputs*, so that
# "the file agrees with eager" can be asked by comparing it with eager instead. seq_nr compares
# the file's tables with torch's graphs and guards attribute on their own (_agrees_with_compile).
_ATTRIBUTABLE = (
    "exceptions",
    "outputs",
    "mutation",
    "versions",
    "aliasing",
    "autograd",
    "grads",
    "cudagraph",
)


def check_all(evidence: Evidence) -> list[Finding]:
    """Every oracle's findings, in a fixed order (exceptions first), attributed (see
    `_torch_alone`), each consequence folded into its cause (Note [Consequences])."""
    found: list[Finding] = []
    for name, check in ORACLES.items():
        got = check(evidence)
        found += [f for f in got if not _torch_alone(evidence, name, f, got)]
    return fold(evidence, found)


def _torch_alone(ev: Evidence, oracle: str, f: Finding, same_oracle: list[Finding]) -> bool:
    """A pythonify finding that is torch.compile's bug alone: torch.compile differs from eager
    under this oracle, and the pythonified file, judged against eager as torch.compile is,
    agrees with eager. The file then differs from torch.compile only because it is right; the
    bug is reported once, against torch.compile, never as one of the generator's."""
    if f.subject != "pythonify" or oracle not in _ATTRIBUTABLE or ev.pythonified is None:
        return False
    if not any(g.subject == "torch.compile" for g in same_oracle):
        return False
    as_compiled = replace(ev, compiled=ev.pythonified, pythonified=None)
    with recording():  # a re-check: its excuses are not the case's
        return not ORACLES[oracle](as_compiled)


__all__ = ["BY_DESIGN", "KINDS", "ORACLES", "ByDesign", "Evidence", "Finding", "check_all"]
