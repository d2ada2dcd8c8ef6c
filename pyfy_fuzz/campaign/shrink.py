"""Spec-level test-case reduction: shrink a given `ProgramSpec` while a predicate still holds.

Hypothesis shrinks the findings it makes itself, but a case that kills or hangs a worker (and a
secondary signature found on the way) only exists as a spec value; the campaign reduces it here,
running each candidate in a subprocess. This module is the pure part: which smaller specs to try
(`candidates`) and the greedy loop (`reduce`). It imports no torch.

    result = reduce(spec, lambda s: same_signature(run_in_subprocess(s)), deadline=t0 + 600)
    result.spec, result.tried, result.accepted, result.stopped

"Smaller" is `shrink_key`: ``spec.size()`` (inputs, statements, root elements, outputs)
compared lexicographically, then `complexity` -- one count of everything else a reader has to
hold in mind (plan features, roots and their dims, non-float32 dtypes, non-contiguous layouts,
grad, subclasses, view steps, contexts, tensor operands, nested outputs, custom Functions and
their flags, module parts). Every candidate has a strictly smaller key and the key is a tuple
of naturals, so the loop terminates.

Values are named by refs (``a<i>`` arguments, ``v<k>`` intermediates, ``p<i>``/``b<i>`` module
parameters/buffers). Removing an argument, parameter or buffer renumbers the later ones (and
`InputSpec.of`, `InputSpec.root`, ``apply_fn``'s Function index) so the names stay dense, as
`render` requires; intermediates keep their names. A removal cascades: statements that read a
removed value go too, and so do outputs that name one. Candidates that fail `validate`, leave a
ref unbound or do not render are skipped; whether eager accepts one is the predicate's business.
The edits by name live in _shrink_edits.py, the candidate passes (and their order) in
_shrink_passes.py; this module is the order on specs, the filter and the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from generators import render
from pyfy_fuzz.campaign._shrink_edits import SIMPLE_FUNCTION, out_refs, param_names, stmt_refs
from pyfy_fuzz.campaign._shrink_passes import PASSES
from pyfy_fuzz.schema.spec import OutSpec, ProgramSpec, SpecError, validate, variant_tokens

__all__ = ["ShrinkResult", "candidates", "complexity", "reduce", "shrink_key"]

_GRAD_COST = {"none": 0, "leaf": 1, "nonleaf": 2}
_INPUT_COST = {"root": 0, "int": 1, "float": 1, "dup": 1, "view": 1, "set_shared": 2}
# What render or validate raise for a spec they cannot handle.
_RENDER_ERRORS = (SpecError, ValueError, KeyError, IndexError, TypeError, AssertionError)


# ------------------------------------------------------------------ the order


def complexity(spec: ProgramSpec) -> int:
    """Everything `ProgramSpec.size` does not count, as one natural number (see module doc)."""
    p = spec.plan
    n = (
        max(p.calls - 1, 0)
        + len(variant_tokens(p.variant))
        + sum(1 + len(variant_tokens(v)) for v in p.sequence)
        + p.backward
        + (p.tangents != "ones")
        + (p.second_backward is not None)
        + p.dynamic
        + (p.frontend != "dynamo")
        + (p.mode is not None)
        + p.saved_tensor_hooks
        + p.grad_fn_hooks
        + (p.through is not None)
        + len(p.config)
        + (p.backend is not None)
    )
    for r in spec.roots:
        n += 1 + len(r.shape) + sum(r.shape)
        n += (r.dtype != "float32") + (r.layout != "contiguous") + (r.subclass is not None)
        n += _GRAD_COST.get(r.grad, 2)
    for inp in spec.inputs:
        n += _INPUT_COST.get(inp.kind, 2) + len(inp.views)
        n += int(inp.value != 1.0) if inp.kind == "float" else int(abs(inp.value))  # 1.0, 0
    for s in spec.body:
        n += (s.ctx is not None) + len(stmt_refs(s))
    n += sum(_out_nodes(o) for o in spec.outputs)
    for fn in spec.functions:
        n += 1 + sum(
            getattr(fn, name) != getattr(SIMPLE_FUNCTION, name)
            for name in SIMPLE_FUNCTION.__dataclass_fields__
        )
    m = spec.module
    if m is not None:
        n += 1 + len(m.params) + m.tied + len(m.buffers) + (m.batchnorm is not None)
        n += m.full_backward_hook
    return int(n)


def shrink_key(spec: ProgramSpec) -> tuple[int, ...]:
    """The order `reduce` descends: `spec.size()` first, then `complexity`."""
    return (*spec.size(), complexity(spec))


def _out_nodes(out: OutSpec) -> int:
    return 1 + sum(_out_nodes(o) for o in out.items)


def _well_formed(spec: ProgramSpec) -> bool:
    """Refs bound before use, Function indices and the BatchNorm present: what `validate`
    leaves to the program, and a rendered program would only trip over when run."""
    if not spec.inputs or not spec.outputs:
        return False
    bound = {f"a{i}" for i in range(len(spec.inputs))} | param_names(spec.module)
    for s in spec.body:
        if any(r not in bound for r in stmt_refs(s)):
            return False
        if s.op == "apply_fn" and not (
            s.args and type(s.args[0]) is int and 0 <= s.args[0] < len(spec.functions)
        ):
            return False
        if s.op == "batchnorm" and (spec.module is None or spec.module.batchnorm is None):
            return False
        bound.update(s.outs)
    return all(r in bound for o in spec.outputs for r in out_refs(o))


def _acceptable(spec: ProgramSpec) -> bool:
    if not _well_formed(spec):
        return False
    try:
        validate(spec)
        render(spec)
    except _RENDER_ERRORS:
        return False
    return True


def candidates(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Structurally smaller variants of `spec`, most promising first.

    Each one validates, binds every ref it reads, renders, keeps `spec.family`, has a strictly
    smaller `shrink_key` than `spec`, and is yielded once. Lazy: a caller that takes the first
    good one pays only for the candidates before it."""
    key = shrink_key(spec)
    seen = {spec.to_json()}
    for make in PASSES:
        for cand in make(spec):
            if cand is None:
                continue
            text = cand.to_json()
            if text in seen:
                continue
            seen.add(text)
            if cand.family == spec.family and shrink_key(cand) < key and _acceptable(cand):
                yield cand


# ------------------------------------------------------------------ the loop


@dataclass
class ShrinkResult:
    """What `reduce` reached and why it stopped."""

    spec: ProgramSpec  # the smallest spec for which the predicate held (or the input)
    tried: int  # predicate calls made
    accepted: int  # candidates taken (each strictly smaller than the last)
    stopped: str  # "fixpoint" | "deadline" | "max_tries"


def reduce(
    spec: ProgramSpec,
    still_fails: Callable[[ProgramSpec], bool],
    *,
    deadline: float | None = None,
    max_tries: int = 500,
    clock: Callable[[], float] = time.monotonic,
) -> ShrinkResult:
    """Greedy: take the first candidate of the current spec for which `still_fails` holds and
    start over from it, until no candidate does (fixpoint), `clock()` reaches `deadline`, or
    `max_tries` predicate calls were made.

    `spec` itself is assumed to fail and is not re-checked. The predicate sees only candidates
    (valid, renderable specs), never the same spec twice: verdicts are remembered, so a
    candidate that reappears after a later acceptance costs nothing. Its exceptions propagate.
    """
    current = spec
    tried = accepted = 0
    verdicts: dict[str, bool] = {}
    while True:
        for cand in candidates(current):
            text = cand.to_json()
            if text in verdicts:  # only False can be cached here: True moved `current` on
                continue
            if tried >= max_tries:
                return ShrinkResult(current, tried, accepted, "max_tries")
            if deadline is not None and clock() >= deadline:
                return ShrinkResult(current, tried, accepted, "deadline")
            tried += 1
            verdicts[text] = ok = bool(still_fails(cand))
            if ok:
                current = cand
                accepted += 1
                break
        else:
            return ShrinkResult(current, tried, accepted, "fixpoint")
