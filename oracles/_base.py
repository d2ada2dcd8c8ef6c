"""What every oracle shares: which pair it checks, which calls are comparable, how a list of
differences becomes one Finding."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts
from pyfy_fuzz.schema.observation import CallObs

from ._calls import PairContext, at_call
from .evidence import Evidence
from .finding import Finding, as_kind, as_subject
from .identity import normalise_message

Diff = Callable[[CallObs, CallObs, PairContext], list[Difference]]


def divergence_kind(subject: str) -> str:
    return "compile-divergence" if subject == "torch.compile" else "pythonify-divergence"


def finding(
    ev: Evidence,
    oracle: str,
    subject: str,
    diffs: list[Difference],
    *,
    kind: str | None = None,
    exc: ExcFacts | None = None,
    aspect: str | None = None,
) -> Finding:
    """One finding of `oracle` for `subject`. `exc` is the exception that identifies it (the
    subject's, or the reference's where the subject failed to raise it): its type, normalised
    message and innermost torch frame become the identity; otherwise `aspect` does, by
    default the first difference's (Note [Bug identity] in identity.py)."""
    return Finding(
        kind=as_kind(kind or divergence_kind(subject)),
        oracle=oracle,
        subject=as_subject(subject),
        wrappers=ev.wrappers,
        explanation=Finding.explain(subject, tuple(diffs)),
        exc_type=exc.type if exc is not None else None,
        aspect=aspect if aspect is not None else diffs[0].aspect if diffs else "",
        message=normalise_message(exc.message) if exc is not None else "",
        frame=exc.frame if exc is not None else "",
        differences=tuple(diffs),
    )


def comparable_calls(
    ev: Evidence, subject: str, ref_calls: list[CallObs], got_calls: list[CallObs]
) -> Iterator[tuple[int, CallObs, CallObs]]:
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
        diffs: list[Difference] = []
        for i, r, g in comparable_calls(ev, subject, ref.calls, got.calls):
            r64 = None
            if subject == "torch.compile" and ev.ref64 is not None and i < len(ev.ref64.calls):
                r64 = ev.ref64.calls[i]
            ctx = PairContext(ev, subject, exact, r64)
            diffs += at_call(diff(r, g, ctx), CallRef("plan", i))
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
            diffs = first.differences + f.differences
            merged[key] = replace(
                first, differences=diffs, explanation=Finding.explain(first.subject, diffs)
            )
        else:
            merged[key] = f
    return list(merged.values())
