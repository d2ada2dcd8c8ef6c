"""Eager: the ground truth. A fresh function/module per observation, called directly."""

from __future__ import annotations

from generators import Program
from pyfy_fuzz.case.recording import Target

__all__ = [
    "eager_target",
]


def eager_target(program: Program) -> Target:
    fn = program.make_fn()
    module = fn if hasattr(fn, "parameters") else None
    return Target("eager", fn, module)
