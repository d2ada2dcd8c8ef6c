"""Gradients: of every leaf (arguments requiring grad, parameters) for the plan's tangents; the
second backward (retain_graph on the first) or the error it must raise without it; and the
hooks that ran during the call and its backward, in order (the program's HOOK_LOG)."""

from __future__ import annotations

from ._base import per_call
from ._calls import diff_grads
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
]

NAME = "grads"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 6
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True


def check(ev: Evidence) -> list[Finding]:
    return per_call(ev, NAME, diff_grads)
