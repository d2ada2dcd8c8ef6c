"""Autograd metadata: requires_grad, is_leaf, is_inference and grad_fn presence of every output,
the grad mode after the call, and whether autograd lets each output be mutated in place (the
in-place probe: the same outputs must be refused, with the same error type)."""

from __future__ import annotations

from pyfy_fuzz.schema.difference import CallRef, Difference
from pyfy_fuzz.schema.observation import ExcObs

from ._base import finding, merge, per_call
from ._calls import PairContext, diff_autograd, probe_write_differs
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
]

NAME = "autograd"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 5
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True


def _outcome(raised: ExcObs | None) -> str:
    return f"refused ({raised.short_type})" if raised else "allowed"


def check(ev: Evidence) -> list[Finding]:
    out = per_call(ev, NAME, diff_autograd)
    for subject, ref, got, exact in ev.pairs():
        rp, gp = ref.mutation_probe, got.mutation_probe
        if not (isinstance(rp, list) and isinstance(gp, list)):
            continue
        ctx = PairContext(ev, subject, exact)
        probe = CallRef("probe", probe="in-place")
        diffs = [
            Difference(
                NAME,
                subject,
                probe,
                "write",
                "allowed",
                r.index,
                expected=_outcome(r.raised),
                actual=_outcome(g.raised),
            )
            for r, g in zip(rp, gp, strict=False)
            if probe_write_differs(r, g, ctx)
        ]
        if diffs:
            out.append(finding(ev, NAME, subject, diffs))
    return merge(out)
