"""CUDA-graph replay: outputs handed out by an earlier call must keep their values after later
calls, as eager's do. A replay that rewrites static outputs in place, handed out without a
copy, shows up here as an output of call k whose values changed by the end of the run.

Runs for every program (any subject could hand out a buffer it later reuses); it matters most
for mode="reduce-overhead", where the pythonified file captures and replays (emulated on CPU).
Replays with new input values, parameters not copied, training forward/backward graphs and
shape changes are exercised by the plan's calls and variant; the other oracles compare their
results call by call.
"""

from __future__ import annotations

from pyfy_fuzz.observe import CallObs, TensorObs

from ._base import comparable_calls, finding
from .by_design import excuse
from .compare import diff_tensor
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "NAME",
    "check",
]

NAME = "cudagraph"


def _changed_later(call: CallObs) -> dict[int, str]:
    """Output index -> what changed between the return and the end of the run."""
    changed: dict[int, str] = {}
    for j, (now, later) in enumerate(zip(call.outputs, call.outputs_later or [], strict=False)):
        if isinstance(later, str) and later.startswith("<unreadable"):
            changed[j] = later
        elif isinstance(now, TensorObs) and isinstance(later, TensorObs):
            d = diff_tensor(now, later, exact=True, strict_meta=True)
            if d:
                changed[j] = d
    return changed


def check(ev: Evidence) -> list[Finding]:
    out = []
    for subject, ref, got, _ in ev.pairs():
        if ref.setup_error is not None or got.setup_error is not None:
            continue
        diffs = []
        for i, r, g in comparable_calls(ev, subject, ref.calls, got.calls):
            rc, gc = _changed_later(r), _changed_later(g)
            for j, what in sorted(gc.items()):
                if j in rc:
                    continue
                if (
                    subject == "torch.compile"
                    and ev.device == "cuda"
                    and ev.mode == "reduce-overhead"
                    and what.startswith("<unreadable")
                    and excuse("cudagraph-overwritten-output")
                ):
                    continue
                ref_name = "eager" if subject == "torch.compile" else "torch.compile"
                diffs.append(
                    f"output {j} of call {i} changed after later calls ({what}); "
                    f"in {ref_name} it kept its values"
                )
        if diffs:
            out.append(finding(ev, NAME, subject, diffs))
    return out
