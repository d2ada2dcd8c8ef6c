"""Outputs: values, dtype, shape, strides (and storage offsets of outputs that alias an input),
subclass type and inner tensors, and non-tensor outputs, call by call."""

from __future__ import annotations

from ._base import per_call
from ._calls import diff_outputs
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "NAME",
    "check",
]

NAME = "outputs"


def check(ev: Evidence) -> list[Finding]:
    return per_call(ev, NAME, diff_outputs)
