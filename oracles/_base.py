"""What every oracle shares: which pair it checks, which calls are comparable, how a list of
differences becomes one Finding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pyfy_fuzz.observe import CallObs, ExcObs

from ._calls import PairContext
from .evidence import Evidence
from .finding import Finding, as_kind, as_subject
from .identity import aspect_of, normalise_message

Diff = Callable[[CallObs, CallObs, PairContext], list[str]]


def divergence_kind(subject: str) -> str:
    return "compile-divergence" if subject == "torch.compile" else "pythonify-divergence"


def reference_name(subject: str) -> str:
    return "eager" if subject == "torch.compile" else "torch.compile"


def finding(
    ev: Evidence,
    oracle: str,
    subject: str,
    diffs: list[str],
    *,
    kind: str | None = None,
    exc_type: str | None = None,
    exc: ExcObs | None = None,
    aspect: str | None = None,
) -> Finding:
    """One finding of `oracle` for `subject`. `exc` is the exception that identifies it (the
    subject's, or the reference's where the subject failed to raise it): its type, normalised
    message and innermost torch frame become the identity; otherwise `aspect` does (an oracle
    that knows its difference kinds names them), by default the first difference's
    (Note [Bug identity] in identity.py)."""
    shown = diffs[:6] + ([f"... and {len(diffs) - 6} more"] if len(diffs) > 6 else [])
    head = f"{subject} differs from {reference_name(subject)}"
    return Finding(
        kind=as_kind(kind or divergence_kind(subject)),
        oracle=oracle,
        subject=as_subject(subject),
        wrappers=ev.wrappers,
        explanation=head + ":\n" + "\n".join(f"  - {d}" for d in shown),
        exc_type=exc.short_type if exc is not None else exc_type,
        aspect=aspect if aspect is not None else aspect_of(diffs[0]) if diffs else "",
        message=normalise_message(exc.message) if exc is not None else "",
        frame=exc.frame if exc is not None else "",
    )


def comparable_calls(
    ev: Evidence, subject: str, ref_calls: list[CallObs], got_calls: list[CallObs]
):  # type: ignore[no-untyped-def]
    """(index, ref, got) for calls where neither side raised (the exceptions oracle owns the
    rest) and, for pythonify, torch.compile itself agreed with eager on raising."""
    for i, (r, g) in enumerate(zip(ref_calls, got_calls, strict=False)):
        if r.raised is not None or g.raised is not None:
            continue
        if subject == "pythonify" and i < len(ev.eager.calls) and ev.eager.calls[i].raised:
            continue
        yield i, r, g


def per_call(ev: Evidence, oracle: str, diff: Diff) -> list[Finding]:
    """Run `diff` on every comparable call of every pair; one finding per pair at most."""
    out = []
    for subject, ref, got, exact in ev.pairs():
        if ref.setup_error is not None or got.setup_error is not None:
            continue
        diffs: list[str] = []
        for i, r, g in comparable_calls(ev, subject, ref.calls, got.calls):
            r64 = None
            if subject == "torch.compile" and ev.ref64 is not None and i < len(ev.ref64.calls):
                r64 = ev.ref64.calls[i]
            ctx = PairContext(ev, subject, exact, r64)
            diffs += [f"call {i}: {d}" for d in diff(r, g, ctx)]
        if diffs:
            out.append(finding(ev, oracle, subject, diffs))
    return out


def merge(found: list[Finding]) -> list[Finding]:
    """One finding per (kind, subject, exception type) of an oracle: a per-call difference
    and a probe difference of one pair are one report, not two with the same signature."""
    merged: dict[tuple[str, str, str | None], Finding] = {}
    for f in found:
        key = (f.kind, f.subject, f.exc_type)
        if key in merged:
            first = merged[key]
            extra = f.explanation.split(":\n", 1)[-1]
            merged[key] = replace(first, explanation=first.explanation + "\n" + extra)
        else:
            merged[key] = f
    return list(merged.values())
