"""Guard soundness: the plan's variant call, and each call of its sequence (other shape, dtype,
aliasing, leafness, strides, grad mode: Note [Call relationships] in pyfy_fuzz/schema/spec.py),
breaks what the compile assumed. torch.compile recompiles and must then agree with eager
(compile-divergence); the pythonified file must raise PythonifyGuardError -- or, where its
guards admit the inputs (dynamic shapes), agree with eager (with torch.compile's relaxations:
eager is the reference for inputs the compile never saw) or do exactly what torch.compile's
recompile did. Any other outcome is guard-unsound: a wrong result or an error other than the
guard's.

Guard parity: where Dynamo's guards rejected the variant inputs (torch.compile compiled a new
graph for them), the file -- one compiled graph -- must reject them too. A file that accepts
them and happens to compute the right values still lacks a guard torch has (the next such
input may not be so lucky): a pythonify-divergence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from pyfy_fuzz.schema.difference import CallRef, Difference
from pyfy_fuzz.schema.observation import CallObs, SubjectObs
from pyfy_fuzz.schema.spec import ALIASING_RELATIONS, variant_tokens

from ._base import finding
from ._calls import (
    PairContext,
    at_call,
    diff_aliasing,
    diff_grads,
    diff_inputs,
    diff_outputs,
    exc_facts,
    raise_difference,
)
from .by_design import refused_by_design
from .evidence import Evidence
from .exceptions import raise_diff
from .finding import Finding
from .identity import REUSED_ALIASING
from .versions import diff_versions

__all__ = [
    "ATTRIBUTABLE",
    "GUARD_ERROR",
    "NAME",
    "POSITION",
    "REUSED_ALIASING",
    "check",
    "later_aspect",
]

NAME = "guards"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 9
# False: it judges the file on its own terms (guards attribute on their own), never
# by comparing it with eager (Note [Whose bug] in __init__).
ATTRIBUTABLE = False
GUARD_ERROR = "PythonifyGuardError"


# The per-call comparisons a variant call gets, in the order its first difference is chosen
# (each names the oracle that makes it on plan calls); inputs first: a returned argument
# that differs is the argument's difference (Note [Consequences] in consequences.py); version
# counters last: a counter that did not move is often the echo of a guard missing (the stale
# values come first), and a version difference the plan calls show too would hide it.
_COMPARISONS = (diff_inputs, diff_outputs, diff_aliasing, diff_grads, diff_versions)

# Note [Variant-call identity]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What torch.compile gets wrong on the variant call names one of two bugs, told apart by
# whether Dynamo compiled a new graph for the call:
#
# - It recompiled: the new graph is an ordinary compile of the variant inputs, and its
#   difference from eager is the bug a first call with those inputs shows. It is identified
#   as that: by the oracle that compares the property and its aspect ("input <arg> after the
#   call: values differ"), not as a guards finding, so a bug met on a first call and on a
#   recompile is one entry.
# - It reused the graph compiled for other aliasing (the variant changes only which arguments
#   share memory, and call 0 ran that graph): a guard on aliasing is missing, and every
#   symptom -- stale values, an error eager raises and the graph does not, a crash inside the
#   reused graph's epilogue -- is that one bug. Identified by `REUSED_ALIASING`, whatever the
#   symptom. Where call 0 raised there is no graph to reuse: Dynamo compiles again and fails
#   again, and the error is identified as any error is.
#
# A reused graph under a shape or dtype variant (dynamic shapes admit the new sizes) keeps the
# per-symptom identity: the graph was meant to serve those inputs, so what it gets wrong is
# the graph's own bug, not a guard's.
#
# A variant call whose cause the plan's calls show too (its first difference, in the order
# of _COMPARISONS: an argument before the outputs that echo it) is theirs, whatever the
# variant did: the plan-call finding already names that cause, its consequences folded in (a
# grads difference under an autograd cause), and the variant's other lines are its echoes
# (an output that is the argument only in the variant's aliasing). (Seen: a 0-d argument's
# "shape" variant, which repeats call 0, saved T3's gradient echo as a second entry.)


def _diffs(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    return [d for fn in _COMPARISONS for d in fn(ref, got, ctx)]


def _plan_aspects(ev: Evidence) -> set[tuple[str, str]]:
    """(oracle, aspect) of every difference torch.compile shows on the plan's calls."""
    ctx = PairContext(ev, "torch.compile", ev.compile_exact)
    return {
        (d.oracle, d.aspect)
        for r, g in zip(ev.eager.calls, ev.compiled.calls, strict=False)
        if r.raised is None and g.raised is None
        for d in _diffs(r, g, ctx)
    }


def _call_ref(index: int | None, call: CallObs, *, accepted: bool = False) -> CallRef:
    """The plan's variant call (index None) or call `index` of its sequence, as differences
    name it."""
    return CallRef(
        "variant" if index is None else "sequence",
        0 if index is None else index,
        relation=call.variant or "",
        recompiled=call.recompiled,
        accepted=accepted,
    )


def later_aspect(d: Difference) -> str:
    """A guards finding's aspect: which later call (its relationships: Note [Call
    relationships]) and what differs in it -- a graph reused for inputs it was meant to serve
    is identified per symptom and per relationship (Note [Variant-call identity])."""
    kind = "variant call" if d.call.kind == "variant" else "sequence call"
    return f"{kind} ({d.call.relation}): {d.aspect}"


def _aliasing_only(variant: str | None) -> bool:
    """The call changes only which arguments share memory (Note [Variant-call identity])."""
    tokens = variant_tokens(variant)
    return bool(tokens) and all(t in ALIASING_RELATIONS for t in tokens)


def _compiled_variant(ev: Evidence, e: CallObs, c: CallObs, index: int | None) -> list[Finding]:
    """torch.compile's variant call against eager's, identified as Note [Variant-call
    identity] says."""
    called = _call_ref(index, c)
    how = raise_difference(e.raised, c.raised)
    if how == "raised" and c.raised is not None and refused_by_design("torch.compile", c.raised):
        return []
    if how is not None:
        d = raise_diff(NAME, "torch.compile", called, how, e.raised, c.raised)
        diffs, exc = [d], d.exc
        kind = "crash" if how == "raised" else None
    elif e.raised is None:
        diffs = at_call(_diffs(e, c, PairContext(ev, "torch.compile", ev.compile_exact)), called)
        if diffs and (diffs[0].oracle, diffs[0].aspect) in _plan_aspects(ev):
            return []
        exc, kind = None, None
    else:
        return []
    if not diffs:
        return []
    compiled = bool(ev.compiled.calls) and ev.compiled.calls[0].raised is None
    if _aliasing_only(e.variant) and not c.recompiled and compiled:
        return [finding(ev, NAME, "torch.compile", diffs, aspect=REUSED_ALIASING)]
    if exc is not None:
        return [finding(ev, NAME, "torch.compile", diffs, kind=kind, exc=exc)]
    if c.recompiled:
        return [finding(ev, diffs[0].oracle, "torch.compile", diffs)]
    return [finding(ev, NAME, "torch.compile", diffs, aspect=later_aspect(diffs[0]))]


def _agrees_with_compile(ev: Evidence, c: CallObs | None, p: CallObs) -> bool:
    """Whether the file's variant call did exactly what torch.compile's did (then any
    difference from eager is torch.compile's, already a compile-divergence)."""
    if c is None or c.raised is not None or ev.file_reference.setup_error is not None:
        return False
    return not _diffs(c, p, PairContext(ev, "pythonify", True))


def _nth(obs: SubjectObs | None, index: int | None) -> CallObs | None:
    """The subject's variant call (index None) or call `index` of its sequence."""
    if obs is None:
        return None
    if index is None:
        return obs.variant
    return obs.sequence[index] if index < len(obs.sequence) else None


def check(ev: Evidence) -> list[Finding]:
    """The variant call, then each call of the plan's sequence, each judged alone; the first
    call with a finding ends it (a later call's differences are mostly its echoes). None is
    judged after a plan call eager raised in: how much of that call ran before the error is
    not what either subject promises (eager commits the statements before it; Dynamo raises
    while tracing and runs none), and what the program keeps between calls -- a module's
    parameters, an "again" call's arguments -- differs from there on (issue 36's fifth run's
    3efff8217842: `p0.data = p0 * 2` before a refused `p0.add_(1)`). Nor after one
    torch.compile raised in where eager ran: Dynamo refused call 0 (`set_` on a graph input)
    and eager changed the module's parameter (run G's 3eff, the mirror case). The exceptions
    oracle judges that call itself."""
    for calls in (ev.eager.calls, ev.compiled.calls):
        if any(c.raised is not None and c.raised.phase != "inputs" for c in calls):
            return []
    for index in (None, *range(len(ev.eager.sequence))):
        out = _check_call(ev, index)
        if out:
            return out
    return []


def _check_call(ev: Evidence, index: int | None) -> list[Finding]:
    """Long: the rules of the module docstring in order (torch.compile's call, then the file's
    refusal, its errors, its values, its guard parity); each arm is a few lines sharing the
    call's three observations."""
    e = _nth(ev.eager, index)
    if e is None or (e.raised is not None and e.raised.phase == "inputs"):
        return []
    out = []
    c = _nth(ev.compiled, index)
    if c is not None and ev.compiled.setup_error is None:
        out += _compiled_variant(ev, e, c, index)
    p = _nth(ev.pythonified, index)
    if p is None or ev.pythonified is None or ev.pythonified.setup_error is not None:
        return out
    ref = ev.file_reference
    c = _nth(ref, index)  # from here on, the file against the compile it models
    if p.raised is not None and p.raised.short_type == GUARD_ERROR:
        return out
    if p.raised is not None:
        if e.raised is not None and p.raised.is_a(e.raised):
            return out
        if c is not None and c.raised is not None and p.raised.is_a(c.raised):
            return out  # torch.compile raises the same there: its bug, reported above
        d = Difference(
            NAME,
            "pythonify",
            _call_ref(index, e),
            "exception",
            "not_guard",
            exc=exc_facts(p.raised),
            expected=GUARD_ERROR,
        )
        out.append(finding(ev, NAME, "pythonify", [d], kind="guard-unsound", exc=d.exc))
        return out
    accepted = _call_ref(index, e, accepted=True)
    if e.raised is not None:
        diffs = [raise_diff(NAME, "pythonify", accepted, "returned", e.raised, None)]
    else:
        # Compared with eager, the truth for inputs the compile never saw.
        ctx = PairContext(ev, "torch.compile", ev.compile_exact)
        diffs = [replace(d, subject="pythonify") for d in at_call(_diffs(e, p, ctx), accepted)]
    if diffs and _agrees_with_compile(ev, c, p):
        return out  # the file does what torch.compile does; its divergence is reported above
    if diffs:
        out.append(
            finding(
                ev, NAME, "pythonify", diffs, kind="guard-unsound", aspect=later_aspect(diffs[0])
            )
        )
    elif c is not None and c.recompiled and ref.setup_error is None:
        # Right values, but a guard torch has is missing from the file (guard parity) -- on
        # an input the file's graph reads: Dynamo also guards inputs it only passes through.
        guarded = _names(ev.pythonified.extra.get("guarded_inputs", ()))
        failed = sorted(_failed_names(c.recompile_reasons) & guarded)
        if failed:
            note = (
                f"torch.compile's guards rejected the inputs "
                f"({'; '.join(c.recompile_reasons)[:200]}); the file's accepted them, "
                f"expected {GUARD_ERROR} (it guards {', '.join(failed)})"
            )
            d = Difference(
                NAME,
                "pythonify",
                accepted,
                "guard",
                "parity",
                expected=GUARD_ERROR,
                actual="accepted",
                note=note,
            )
            out.append(finding(ev, NAME, "pythonify", [d], kind="pythonify-divergence"))
    return out


def _names(sources: Iterable[str]) -> set[str]:
    """L['a0'] -> a0 (Dynamo's guard-failure reasons name locals bare)."""
    out = set()
    for s in sources:
        m = re.fullmatch(r"L\[['\"]([^'\"]+)['\"]\]", s)
        out.add(m.group(1) if m else s)
    return out


def _failed_names(reasons: Iterable[str]) -> set[str]:
    """The tensors Dynamo's guard failures name: "tensor 'b' dtype mismatch ...",
    'Duplicate tensors found: ["a", "b"]'. Reasons of other shapes name none."""
    out: set[str] = set()
    for r in reasons:
        out.update(re.findall(r"tensor '([^']+)'", r))
        dup = re.search(r"Duplicate tensors found: (\[.*?\])", r)
        if dup:
            out.update(re.findall(r'"([^"]+)"', dup.group(1)))
    return out
