"""Outputs: values, dtype, shape, strides (and storage offsets of outputs that alias an input),
subclass type and inner tensors, and non-tensor outputs, call by call."""

from __future__ import annotations

from ._base import per_call
from ._calls import diff_outputs
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
]

NAME = "outputs"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 1
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True


def check(ev: Evidence) -> list[Finding]:
    return per_call(ev, NAME, diff_outputs)
