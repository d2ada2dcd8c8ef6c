"""CUDA-graph replay: outputs handed out by an earlier call must keep their values after later
calls, as eager's do. A replay that rewrites static outputs in place, handed out without a
copy, shows up here as an output of call k whose values changed by the end of the run.

Runs for every program (any subject could hand out a buffer it later reuses); it matters most
for mode="reduce-overhead", where the pythonified file captures and replays (emulated on CPU).
Replays with new input values, parameters not copied, training forward/backward graphs and
shape changes are exercised by the plan's calls and variant; the other oracles compare their
results call by call.

Note [Where the file replays, torch replays]
On CUDA under reduce-overhead torch.compile is torch's own cudagraph trees (Note [The
CUDA-graph reference] in subjects/stock.py), and the file must replay exactly where they do:
torch runs a graph without CUDA graphs when it reads a CPU tensor, mutates an input that is
not static, or holds an op that cannot be captured, and counts each such skip. A file that
captures a graph torch skips (its capture model misses a reason), or skips one torch records,
is a pythonify divergence of its own, whatever the values say.

Compared under Inductor only, whose reduce-overhead compile lowers the graphs the file's
capture lowers. Under aot_eager the reference is torch's `cudagraphs` backend, which traces
inference graphs with Dynamo's cudagraph_backend_keep_input_mutation (False: an argument's
write is applied after the graph), where aot_eager keeps the write inside: the same program
has other graphs there, and torch records one the file rightly skips (seen on an H200:
pythonify-divergence.cudagraph.c7666e0d9adb, a false alarm).
"""

from __future__ import annotations

from pyfy_fuzz.schema.difference import CallRef, Difference
from pyfy_fuzz.schema.observation import CallObs, TensorObs

from ._base import comparable_calls, finding
from .by_design import excuse
from .compare import TensorDiff, diff_tensor
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "OVERWRITTEN",
    "POSITION",
    "check",
]

NAME = "cudagraph"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 8
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True
# cudagraph trees' error on reading an output a later replay overwrote (cudagraph_trees.py)
OVERWRITTEN = "accessing tensor output of CUDAGraphs that has been overwritten"


def _changed_later(call: CallObs) -> dict[int, TensorDiff]:
    """Output index -> what changed between the return and the end of the run (prop
    "unreadable": reading it raised, the message as the actual side)."""
    changed: dict[int, TensorDiff] = {}
    for j, (now, later) in enumerate(zip(call.outputs, call.outputs_later or [], strict=False)):
        if isinstance(later, str) and later.startswith("<unreadable"):
            changed[j] = TensorDiff("unreadable", "readable", later)
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
                    and what.prop == "unreadable"
                    and OVERWRITTEN in str(what.actual)
                    and excuse("cudagraph-overwritten-output")
                ):
                    continue
                diffs.append(
                    Difference(
                        NAME,
                        subject,
                        CallRef("plan", i),
                        "later",
                        what.prop,
                        j,
                        inner=what.inner,
                        expected=what.expected,
                        actual=what.actual,
                    )
                )
        if diffs:
            out.append(finding(ev, NAME, subject, diffs))
    out += _skips(ev)
    return out


def _skips(ev: Evidence) -> list[Finding]:
    """Note [Where the file replays, torch replays]: compared only where both ran every call
    of the plan and nothing else (a raised call stops a subject's plan, and with it what it
    would have recorded; torch's count covers a variant call's recompile too, which the file
    refuses or serves from its one graph), and "captured" only where the file did capture."""
    if ev.device != "cuda" or ev.mode != "reduce-overhead" or ev.pythonified is None:
        return []
    if ev.backend != "inductor":  # other graphs than the file's (see the Note)
        return []
    torch_skips = ev.compiled.extra.get("cudagraph_skips")
    runners = {k: v for k, v in ev.pythonified.extra.items() if k.startswith("_cudagraph_")}
    if torch_skips is None or not runners:
        return []
    if any(c.raised is not None for obs in (ev.compiled, ev.pythonified) for c in obs.calls):
        return []
    if any(obs.variant is not None or obs.sequence for obs in (ev.compiled, ev.pythonified)):
        return []
    skipped = {k: v["skipped"] for k, v in runners.items() if v.get("skipped")}
    captured = any(v.get("captures") for v in runners.values())
    if torch_skips and not skipped and captured:
        prop, expected, actual = "torch_skipped", torch_skips, 0
        note = (
            f"torch ran {torch_skips} graph(s) without CUDA graphs; the file captured every graph"
        )
    elif skipped and not torch_skips:
        why = "; ".join(f"{k}: {v}" for k, v in sorted(skipped.items()))
        prop, expected, actual = "file_skipped", 0, len(skipped)
        note = f"the file ran graphs without CUDA graphs ({why}); torch skipped none"
    else:
        return []
    d = Difference(
        NAME,
        "pythonify",
        CallRef("plan", 0),
        "cudagraph_skip",
        prop,
        expected=expected,
        actual=actual,
        note=note,
    )
    return [finding(ev, NAME, "pythonify", [d])]
