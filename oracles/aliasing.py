"""Aliasing: for every output, whether it is an input, its _base (an input, another output, an
intermediate), and storage shared with inputs and with other outputs -- a compile must not add
or drop aliasing (seeds/002). Then the in-place probe: after a write into each output, the same
inputs and other outputs must see it as in the reference."""

from __future__ import annotations

from pyfy_fuzz.schema.difference import CallRef, Difference
from pyfy_fuzz.schema.observation import ProbeObs

from ._base import finding, merge, per_call
from ._calls import diff_aliasing
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
    "probe_diffs",
]

NAME = "aliasing"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 4
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True


def probe_diffs(subject: str, ref: list[ProbeObs], got: list[ProbeObs]) -> list[Difference]:
    """What sees a write into each output (the in-place probe), where neither side refused."""
    out = []
    probe = CallRef("probe", probe="in-place")
    for r, g in zip(ref, got, strict=False):
        if r.raised is not None or g.raised is not None:
            continue  # the autograd oracle compares refusals
        for prop, rs, gs in (
            ("changed_inputs", list(r.changed_inputs), list(g.changed_inputs)),
            ("changed_outputs", list(r.changed_outputs), list(g.changed_outputs)),
        ):
            if rs != gs:
                out.append(
                    Difference(NAME, subject, probe, "write", prop, r.index, expected=rs, actual=gs)
                )
    return out


def check(ev: Evidence) -> list[Finding]:
    out = per_call(ev, NAME, diff_aliasing)
    for subject, ref, got, _ in ev.pairs():
        if isinstance(ref.mutation_probe, list) and isinstance(got.mutation_probe, list):
            diffs = probe_diffs(subject, ref.mutation_probe, got.mutation_probe)
            if diffs:
                out.append(finding(ev, NAME, subject, diffs))
    return merge(out)
