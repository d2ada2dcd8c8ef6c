"""Input mutation: every input, its shared base and module state after the call (values and
metadata: a set_ or transpose_ on an input shows up as shape/stride/offset); and the version
probe: after bumping the arguments' version counters, backward must refuse in both or in
neither of pythonify and torch.compile (they share the saved tensors); against eager the
partitioner's choice of saved tensors differs by design (by_design: partitioner-saved-tensors)."""

from __future__ import annotations

from pyfy_fuzz.schema.difference import CallRef, Difference

from ._base import finding, merge, per_call
from ._calls import diff_inputs
from .by_design import excuse
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
]

NAME = "mutation"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 2
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True


def _call_raised(p: object) -> bool:
    return getattr(p, "phase", None) == "probe-call"


def _probe_text(p: object) -> str:
    if p is None:
        return "not run"
    return "backward ran" if p == "ok" else f"backward raised {p.short_type}"  # type: ignore[attr-defined]


def check(ev: Evidence) -> list[Finding]:
    out = per_call(ev, NAME, diff_inputs)
    for subject, ref, got, _ in ev.pairs():
        r, g = ref.version_probe, got.version_probe
        if r is None or g is None or _call_raised(r) or _call_raised(g):
            continue  # not run, or the probe's call itself raised (the exceptions oracle's)
        if (r == "ok") != (g == "ok"):
            if subject == "torch.compile" and excuse("partitioner-saved-tensors"):
                continue
            probe = CallRef("probe", probe="version")
            d = Difference(
                NAME,
                subject,
                probe,
                "version_probe",
                "outcome",
                expected=_probe_text(r),
                actual=_probe_text(g),
            )
            out.append(finding(ev, NAME, subject, [d]))
    return merge(out)
