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

from pyfy_fuzz.observe import CallObs, SubjectObs
from pyfy_fuzz.schema.spec import variant_tokens

from ._base import finding
from ._calls import (
    PairContext,
    diff_aliasing,
    diff_grads,
    diff_inputs,
    diff_outputs,
    raise_difference,
)
from .by_design import refused_by_design
from .evidence import Evidence
from .finding import Finding
from .identity import aspect_of
from .versions import diff_versions

__all__ = [
    "GUARD_ERROR",
    "NAME",
    "REUSED_ALIASING",
    "check",
]

NAME = "guards"
GUARD_ERROR = "PythonifyGuardError"


# The per-call comparisons a variant call gets, by the oracle that makes them on plan calls;
# inputs first: a returned argument that differs is the argument's difference (Note
# [Consequences] in consequences.py); version counters last.
_COMPARISONS = (
    ("mutation", diff_inputs),
    ("outputs", diff_outputs),
    ("aliasing", diff_aliasing),
    ("grads", diff_grads),
    # last: a counter that did not move is often the echo of a guard missing (the stale
    # values come first), and a version difference the plan calls show too would hide it
    ("versions", diff_versions),
)

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
REUSED_ALIASING = "variant call (aliasing): ran on the graph compiled for other aliasing"


def _diffs(ref: CallObs, got: CallObs, ctx: PairContext) -> list[str]:
    return [d for _, d in _oracle_diffs(ref, got, ctx)]


def _oracle_diffs(ref: CallObs, got: CallObs, ctx: PairContext) -> list[tuple[str, str]]:
    return [(name, d) for name, fn in _COMPARISONS for d in fn(ref, got, ctx)]


def _plan_aspects(ev: Evidence) -> set[tuple[str, str]]:
    """(oracle, aspect) of every difference torch.compile shows on the plan's calls."""
    ctx = PairContext(ev, "torch.compile", ev.compile_exact)
    return {
        (oracle, aspect_of(d))
        for r, g in zip(ev.eager.calls, ev.compiled.calls, strict=False)
        if r.raised is None and g.raised is None
        for oracle, d in _oracle_diffs(r, g, ctx)
    }


def _label(index: int | None, variant: str | None) -> str:
    """How a difference names the call: the plan's variant call, or call k of its sequence."""
    return f"{'variant call' if index is None else f'sequence call {index}'} ({variant}"


def _aliasing_only(variant: str | None) -> bool:
    """The call changes only which arguments share memory (Note [Variant-call identity])."""
    tokens = variant_tokens(variant)
    return bool(tokens) and all(t in ("aliasing", "overlap") for t in tokens)


def _compiled_variant(ev: Evidence, e: CallObs, c: CallObs, index: int | None) -> list[Finding]:
    """torch.compile's variant call against eager's, identified as Note [Variant-call
    identity] says."""
    called = f"{_label(index, e.variant)}{', recompiled' if c.recompiled else ''})"
    how = raise_difference(e.raised, c.raised)
    pairs: list[tuple[str, str]] = []
    kind: str | None = None
    if how == "raised" and c.raised is not None and refused_by_design("torch.compile", c.raised):
        return []
    if how in ("raised", "returned"):
        what = c.raised.short_type if c.raised else "returned"
        exp = e.raised.short_type if e.raised else "returned"
        diffs = [f"{called}: {what}; eager {exp}"]
        exc, kind = (c.raised or e.raised), ("crash" if e.raised is None else None)
    elif how == "other" and e.raised is not None and c.raised is not None:
        diffs = [f"{called}: raised {c.raised.short_type}; eager raised {e.raised.short_type}"]
        exc = c.raised
    elif e.raised is None:
        pairs = _oracle_diffs(e, c, PairContext(ev, "torch.compile", ev.compile_exact))
        if pairs and (pairs[0][0], aspect_of(pairs[0][1])) in _plan_aspects(ev):
            return []
        diffs, exc = [f"{called}: {d}" for _, d in pairs], None
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
        oracle, first = pairs[0]
        return [finding(ev, oracle, "torch.compile", diffs, aspect=aspect_of(first))]
    return [finding(ev, NAME, "torch.compile", diffs)]


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
    call with a finding ends it (a later call's differences are mostly its echoes)."""
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
    called = _label(index, e.variant)
    if p.raised is not None and p.raised.short_type == GUARD_ERROR:
        return out
    if p.raised is not None:
        if e.raised is not None and p.raised.is_a(e.raised):
            return out
        if c is not None and c.raised is not None and p.raised.is_a(c.raised):
            return out  # torch.compile raises the same there: its bug, reported above
        diffs = [
            f"{called}): raised {p.raised.short_type}: {p.raised.message}; expected {GUARD_ERROR}"
        ]
        out.append(finding(ev, NAME, "pythonify", diffs, kind="guard-unsound", exc=p.raised))
        return out
    if e.raised is not None:
        diffs = [f"{called}): returned; eager raised {e.raised.short_type}"]
    else:
        # Compared with eager, the truth for inputs the compile never saw.
        diffs = [
            f"{called}) accepted by the file's guards: {d}"
            for d in _diffs(e, p, PairContext(ev, "torch.compile", ev.compile_exact))
        ]
    if diffs and _agrees_with_compile(ev, c, p):
        return out  # the file does what torch.compile does; its divergence is reported above
    if diffs:
        out.append(finding(ev, NAME, "pythonify", diffs, kind="guard-unsound"))
    elif c is not None and c.recompiled and ref.setup_error is None:
        # Right values, but a guard torch has is missing from the file (guard parity) -- on
        # an input the file's graph reads: Dynamo also guards inputs it only passes through.
        guarded = _names(ev.pythonified.extra.get("guarded_inputs", ()))
        failed = sorted(_failed_names(c.recompile_reasons) & guarded)
        if failed:
            diffs = [
                f"{called}): torch.compile's guards rejected the inputs "
                f"({'; '.join(c.recompile_reasons)[:200]}); the file's accepted them, "
                f"expected {GUARD_ERROR} (it guards {', '.join(failed)})"
            ]
            out.append(finding(ev, NAME, "pythonify", diffs, kind="pythonify-divergence"))
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
