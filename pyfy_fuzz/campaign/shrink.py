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
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from generators import render
from pyfy_fuzz.schema.spec import (
    CallPlan,
    FunctionSpec,
    InputSpec,
    ModuleSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    SpecError,
    Stmt,
    validate,
    variant_tokens,
)

__all__ = ["ShrinkResult", "candidates", "complexity", "reduce", "shrink_key"]

# A value name; constants in Stmt.args (dtype names, view op names, numbers) never match.
_REF = re.compile(r"[avpb]\d+")
# Families whose reason to exist is the plan's mode: the mode is never simplified there.
_MODE_FAMILIES = frozenset({"cudagraph"})
_GRAD_COST = {"none": 0, "leaf": 1, "nonleaf": 2}
_INPUT_COST = {"root": 0, "int": 1, "dup": 1, "view": 1, "set_shared": 2}
# Fewest dims each root layout needs (what `_root` in the rendered program indexes).
_LAYOUT_MIN_NDIM = {"contiguous": 0, "offset": 0, "strided": 1, "expanded": 1, "transposed": 2}
_SIMPLE_FUNCTION = FunctionSpec()
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
        + len(p.config)
        + (p.backend is not None)
    )
    for r in spec.roots:
        n += 1 + len(r.shape) + sum(r.shape)
        n += (r.dtype != "float32") + (r.layout != "contiguous") + (r.subclass is not None)
        n += _GRAD_COST.get(r.grad, 2)
    for inp in spec.inputs:
        n += _INPUT_COST.get(inp.kind, 2) + len(inp.views) + abs(inp.value)
    for s in spec.body:
        n += (s.ctx is not None) + len(_stmt_refs(s))
    n += sum(_out_nodes(o) for o in spec.outputs)
    for fn in spec.functions:
        n += 1 + sum(
            getattr(fn, name) != getattr(_SIMPLE_FUNCTION, name)
            for name in _SIMPLE_FUNCTION.__dataclass_fields__
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


# ------------------------------------------------------------------ refs


def _is_ref(x: object) -> bool:
    return isinstance(x, str) and _REF.fullmatch(x) is not None


def _stmt_refs(s: Stmt) -> list[str]:
    return [x for x in s.args if _is_ref(x)]


def _out_refs(out: OutSpec) -> Iterator[str]:
    if out.kind in ("ref", "size"):
        yield out.ref
    for item in out.items:
        yield from _out_refs(item)


def _used(spec: ProgramSpec) -> set[str]:
    """Every name read by a statement or an output."""
    names = {r for s in spec.body for r in _stmt_refs(s)}
    names.update(r for o in spec.outputs for r in _out_refs(o))
    return names


def _param_names(m: ModuleSpec | None) -> set[str]:
    if m is None:
        return set()
    names = {f"p{i}" for i in range(len(m.params) + m.tied)}
    return names | {f"b{i}" for i in range(len(m.buffers))}


def _well_formed(spec: ProgramSpec) -> bool:
    """Refs bound before use, Function indices and the BatchNorm present: what `validate`
    leaves to the program, and a rendered program would only trip over when run."""
    if not spec.inputs or not spec.outputs:
        return False
    bound = {f"a{i}" for i in range(len(spec.inputs))} | _param_names(spec.module)
    for s in spec.body:
        if any(r not in bound for r in _stmt_refs(s)):
            return False
        if s.op == "apply_fn" and not (
            s.args and type(s.args[0]) is int and 0 <= s.args[0] < len(spec.functions)
        ):
            return False
        if s.op == "batchnorm" and (spec.module is None or spec.module.batchnorm is None):
            return False
        bound.update(s.outs)
    return all(r in bound for o in spec.outputs for r in _out_refs(o))


def _acceptable(spec: ProgramSpec) -> bool:
    if not _well_formed(spec):
        return False
    try:
        validate(spec)
        render(spec)
    except _RENDER_ERRORS:
        return False
    return True


def _rename(spec: ProgramSpec, names: dict[str, str]) -> ProgramSpec:
    """Replace refs everywhere they are read (statement args, outputs), all at once."""
    if not names:
        return spec

    def arg(x: Any) -> Any:
        return names.get(x, x) if _is_ref(x) else x

    def out(o: OutSpec) -> OutSpec:
        return replace(o, ref=names.get(o.ref, o.ref), items=tuple(out(i) for i in o.items))

    body = tuple(replace(s, args=tuple(arg(x) for x in s.args)) for s in spec.body)
    return replace(spec, body=body, outputs=tuple(out(o) for o in spec.outputs))


def _prune_out(out: OutSpec, gone: set[str]) -> OutSpec | None:
    """`out` without what names a removed value; None when nothing is left of it."""
    if out.kind != "tuple":
        return None if out.kind in ("ref", "size") and out.ref in gone else out
    items = tuple(p for p in (_prune_out(i, gone) for i in out.items) if p is not None)
    return replace(out, items=items) if items else None


def _remove(
    spec: ProgramSpec, stmts: Iterable[int] = (), names: Iterable[str] = ()
) -> ProgramSpec | None:
    """Drop the statements at `stmts` and every statement or output that reads a value they
    bind or one of `names` (transitively). None if no output would be left."""
    drop, gone = set(stmts), set(names)
    body = []
    for k, s in enumerate(spec.body):
        if k in drop or any(r in gone for r in _stmt_refs(s)):
            gone.update(s.outs)
        else:
            body.append(s)
    outputs = tuple(p for p in (_prune_out(o, gone) for o in spec.outputs) if p is not None)
    if not outputs:
        return None
    return replace(spec, body=tuple(body), outputs=outputs)


def _without_input(spec: ProgramSpec, i: int) -> ProgramSpec | None:
    """Drop argument i, its duplicates and whatever reads them; renumber the later arguments."""
    drop = {i}
    for j, inp in enumerate(spec.inputs):  # dups point backwards: one sweep is transitive
        if inp.kind == "dup" and inp.of in drop:
            drop.add(j)
    if len(drop) >= len(spec.inputs):
        return None
    smaller = _remove(spec, names=[f"a{j}" for j in drop])
    if smaller is None:
        return None
    kept = [j for j in range(len(spec.inputs)) if j not in drop]
    new = {old: k for k, old in enumerate(kept)}
    inputs = tuple(
        replace(spec.inputs[j], of=new[spec.inputs[j].of])
        if spec.inputs[j].kind == "dup"
        else spec.inputs[j]
        for j in kept
    )
    smaller = _rename(smaller, {f"a{old}": f"a{k}" for old, k in new.items() if old != k})
    return replace(smaller, inputs=inputs)


def _renumber(prefix: str, removed: int, count: int) -> dict[str, str]:
    """Names `<prefix><k>` for k > removed move down by one (k < count)."""
    return {f"{prefix}{k}": f"{prefix}{k - 1}" for k in range(removed + 1, count)}


# ------------------------------------------------------------------ candidate passes
# Each pass yields raw candidates (maybe invalid, maybe not smaller); `candidates` filters.


def _drop_inputs(spec: ProgramSpec) -> Iterator[ProgramSpec | None]:
    """Fewer arguments: dropped with what reads them, or their reads moved to an earlier one.
    Later arguments first: generators draw the forced structure first."""
    n = len(spec.inputs)
    for i in reversed(range(n)):
        yield _without_input(spec, i)
    dup_of = {inp.of for inp in spec.inputs if inp.kind == "dup"}
    tensors = [i for i, inp in enumerate(spec.inputs) if inp.kind != "int"]
    for j in reversed(tensors):
        if j in dup_of:
            continue
        for i in tensors:
            if i < j:
                yield _without_input(_rename(spec, {f"a{j}": f"a{i}"}), j)


def _drop_statements(spec: ProgramSpec) -> Iterator[ProgramSpec | None]:
    """Fewer statements: halves of the body, then one at a time (with what reads it), then one
    statement bypassed (what read its result reads its operand instead)."""
    n = len(spec.body)
    if n >= 4:
        yield _remove(spec, stmts=range(n // 2, n))
        yield _remove(spec, stmts=range(n // 2))
    for k in reversed(range(n)):
        yield _remove(spec, stmts=[k])
    for k in reversed(range(n)):
        s = spec.body[k]
        if not s.outs:
            continue
        for src in dict.fromkeys(_stmt_refs(s)):
            body = spec.body[:k] + spec.body[k + 1 :]
            yield _rename(replace(spec, body=body), {o: src for o in s.outs})


def _out_variants(out: OutSpec) -> Iterator[OutSpec]:
    """Smaller forms of one output: a tuple replaced by an item, less an item, or inner ones."""
    if out.kind != "tuple":
        return
    yield from out.items
    for k in range(len(out.items)):
        if len(out.items) > 1:
            yield replace(out, items=out.items[:k] + out.items[k + 1 :])
        for inner in _out_variants(out.items[k]):
            yield replace(out, items=out.items[:k] + (inner,) + out.items[k + 1 :])


def _drop_outputs(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Fewer or flatter outputs; at least one output stays."""
    outs = spec.outputs
    if len(outs) > 1:
        for k in reversed(range(len(outs))):
            yield replace(spec, outputs=outs[:k] + outs[k + 1 :])
    for k, out in enumerate(outs):
        for smaller in _out_variants(out):
            yield replace(spec, outputs=outs[:k] + (smaller,) + outs[k + 1 :])


def _simplify_plan(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """A plainer plan: all simplifications at once, then one at a time. The front-end may
    change (the predicate says whether the finding needs AOT); the mode only where the family
    does not exist for it."""
    p = spec.plan
    steps: list[dict[str, Any]] = []
    if p.calls > 1:
        steps.append({"calls": 1})
    if p.variant is not None:
        steps.append({"variant": None, "sequence": ()})
    if p.backward:
        off = {
            "backward": False,
            "second_backward": None,
            "saved_tensor_hooks": False,
            "grad_fn_hooks": False,
        }
        steps.append(off | {"tangents": "ones"})
    if p.second_backward is not None:
        steps.append({"second_backward": None})
    if p.saved_tensor_hooks:
        steps.append({"saved_tensor_hooks": False})
    if p.grad_fn_hooks:
        steps.append({"grad_fn_hooks": False})
    if p.dynamic:
        steps.append({"dynamic": False})
    if p.tangents != "ones":
        steps.append({"tangents": "ones"})
    if p.frontend != "dynamo":
        steps.append({"frontend": "dynamo"})
    if p.mode is not None and spec.family not in _MODE_FAMILIES:
        steps.append({"mode": None})
    if p.backend is not None:  # the campaign's own backend (cheaper than Inductor)
        steps.append({"backend": None})
    if p.calls > 2:
        steps.append({"calls": p.calls - 1})
    if len(steps) > 1:
        plainest = CallPlan(
            calls=min(p.calls, 1),
            backward=False,
            tangents="ones",
            frontend="dynamo",
            mode=None if spec.family not in _MODE_FAMILIES else p.mode,
        )
        yield replace(spec, plan=plainest)
    for step in steps:
        yield replace(spec, plan=replace(p, **step))


def _simplify_sequence(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Fewer calls, then simpler relationships (Note [Call relationships]): the sequence
    dropped; each of its calls dropped; a later call made the variant call (the calls before
    it gone); each call's relationships cut to one of them."""
    p = spec.plan
    seq = p.sequence
    if seq:
        yield replace(spec, plan=replace(p, sequence=()))
        for k in range(len(seq)):
            yield replace(spec, plan=replace(p, sequence=seq[:k] + seq[k + 1 :]))
            yield replace(spec, plan=replace(p, variant=seq[k], sequence=seq[k + 1 :]))
    if p.variant is None:
        return
    calls = [p.variant, *seq]
    for k, variant in enumerate(calls):
        tokens = variant_tokens(variant)
        for t in tokens if len(tokens) > 1 else ():
            fewer = [*calls[:k], t, *calls[k + 1 :]]
            yield replace(spec, plan=replace(p, variant=fewer[0], sequence=tuple(fewer[1:])))


def _default_config(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """torch's defaults first, then each knob left out (Note [Drawn configurations]): a
    finding keeps a knob of its configuration only when the bug needs it."""
    config = spec.plan.config
    if not config:
        return
    yield replace(spec, plan=replace(spec.plan, config=()))
    if len(config) > 1:
        for name in config:
            kept = tuple(n for n in config if n != name)
            yield replace(spec, plan=replace(spec.plan, config=kept))


def _drop_unused(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Roots no argument is made from, Functions no statement applies, module parts unread."""
    for r in reversed(range(len(spec.roots))):
        if any(inp.root == r and inp.kind in ("root", "view", "set_shared") for inp in spec.inputs):
            continue
        inputs = tuple(
            replace(inp, root=inp.root - 1) if inp.root > r else inp for inp in spec.inputs
        )
        yield replace(spec, roots=spec.roots[:r] + spec.roots[r + 1 :], inputs=inputs)
    applies = {s.args[0] for s in spec.body if s.op == "apply_fn" and s.args}
    for k in reversed(range(len(spec.functions))):
        if k in applies:
            continue
        body = tuple(
            replace(s, args=(s.args[0] - 1, *s.args[1:]))
            if s.op == "apply_fn" and s.args and type(s.args[0]) is int and s.args[0] > k
            else s
            for s in spec.body
        )
        yield replace(spec, functions=spec.functions[:k] + spec.functions[k + 1 :], body=body)
    if spec.module is not None:
        yield from _simplify_module(spec, spec.module)


def _simplify_module(spec: ProgramSpec, m: ModuleSpec) -> Iterator[ProgramSpec]:
    used = _used(spec)
    has_bn = any(s.op == "batchnorm" for s in spec.body)
    if not (used & _param_names(m)) and not has_bn:
        yield replace(spec, module=None)
    if m.full_backward_hook:
        yield replace(spec, module=replace(m, full_backward_hook=False))
    if m.batchnorm is not None and not has_bn:
        yield replace(spec, module=replace(m, batchnorm=None))
    n = len(m.params)
    if m.tied and f"p{n}" not in used:
        yield replace(spec, module=replace(m, tied=False))
    for j in reversed(range(n)):
        if f"p{j}" in used or (m.tied and j == 0):
            continue  # the tied name is p0 again
        smaller = replace(spec, module=replace(m, params=m.params[:j] + m.params[j + 1 :]))
        yield _rename(smaller, _renumber("p", j, n + m.tied))
    nb = len(m.buffers)
    for j in reversed(range(nb)):
        if f"b{j}" in used:
            continue
        smaller = replace(spec, module=replace(m, buffers=m.buffers[:j] + m.buffers[j + 1 :]))
        yield _rename(smaller, _renumber("b", j, nb))


def _simplify_roots(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Plainer roots: float32, contiguous, no grad, no subclass (together, then apart), then
    smaller shapes: every dim 1, no size-1 dims, then per dim: 1, half, one less, dropped."""
    for k, r in enumerate(spec.roots):
        plain = RootSpec(r.shape)  # float32, contiguous, no grad, no subclass
        yield _with_root(spec, k, plain)
        changes: list[dict[str, Any]] = [
            {"dtype": plain.dtype},
            {"layout": plain.layout},
            {"grad": plain.grad},
            {"grad": "leaf"} if r.grad == "nonleaf" else {},
            {"subclass": plain.subclass},
        ]
        for change in changes:
            if change:
                yield _with_root(spec, k, replace(r, **change))
    for k, r in enumerate(spec.roots):
        shape = r.shape
        if any(s > 1 for s in shape):
            yield _with_shape(spec, k, tuple(min(s, 1) for s in shape))
        if 1 in shape:
            yield _with_shape(spec, k, tuple(s for s in shape if s != 1))
        for d, s in enumerate(shape):
            for smaller in dict.fromkeys((1, s // 2, s - 1)):
                if 1 <= smaller < s:
                    yield _with_shape(spec, k, shape[:d] + (smaller,) + shape[d + 1 :])
            if s == 1:
                yield _with_shape(spec, k, shape[:d] + shape[d + 1 :])


def _with_root(spec: ProgramSpec, k: int, root: RootSpec) -> ProgramSpec:
    return replace(spec, roots=spec.roots[:k] + (root,) + spec.roots[k + 1 :])


def _with_shape(spec: ProgramSpec, k: int, shape: tuple[int, ...]) -> ProgramSpec:
    """Root k with a new shape. A layout needing more dims becomes contiguous; module
    parameters, buffers and BatchNorm features sized like the root follow it, so a module
    program can shrink its data without breaking the broadcasts its builder relied on."""
    old = spec.roots[k]
    layout = old.layout if len(shape) >= _LAYOUT_MIN_NDIM.get(old.layout, 0) else "contiguous"
    spec = _with_root(spec, k, replace(old, shape=shape, layout=layout))
    m = spec.module
    if m is None:
        return spec

    def follow(s: tuple[int, ...]) -> tuple[int, ...]:
        if tuple(s) == old.shape:
            return shape
        if old.shape and tuple(s) == old.shape[-1:]:
            return shape[-1:]
        return s

    bn = m.batchnorm
    if bn is not None and len(old.shape) >= 2 and bn == old.shape[1]:
        bn = shape[1] if len(shape) >= 2 else bn
    m = replace(
        m,
        params=tuple(follow(s) for s in m.params),
        buffers=tuple(follow(s) for s in m.buffers),
        batchnorm=bn,
    )
    return replace(spec, module=m)


def _simplify_inputs(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Arguments made more directly: a root instead of a view or set_-shared tensor, one view
    step fewer, the int 0."""
    for i, inp in enumerate(spec.inputs):
        if inp.kind in ("view", "set_shared"):
            yield _with_input(spec, i, InputSpec("root", root=inp.root))
        if inp.kind == "view" and len(inp.views) > 1:
            for k in reversed(range(len(inp.views))):
                views = inp.views[:k] + inp.views[k + 1 :]
                yield _with_input(spec, i, replace(inp, views=views))
        if inp.kind == "int" and inp.value != 0:
            yield _with_input(spec, i, replace(inp, value=0))


def _with_input(spec: ProgramSpec, i: int, inp: InputSpec) -> ProgramSpec:
    return replace(spec, inputs=spec.inputs[:i] + (inp,) + spec.inputs[i + 1 :])


def _simplify_statements(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Statements without their context manager; in-place ops with a constant operand."""
    for k, s in enumerate(spec.body):
        simpler: list[Stmt] = []
        if s.ctx is not None:
            simpler.append(replace(s, ctx=None))
        if s.op == "add_" and len(s.args) == 2 and _is_ref(s.args[1]):
            simpler.append(replace(s, args=(s.args[0], 1)))
        if s.op == "copy_" and len(s.args) == 2 and _is_ref(s.args[1]):
            simpler.append(replace(s, op="fill_", args=(s.args[0], 2)))
        for t in simpler:
            yield replace(spec, body=spec.body[:k] + (t,) + spec.body[k + 1 :])


def _simplify_functions(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Custom Functions with the plain defaults: all flags at once, then one at a time. The
    non-differentiable second output goes only where nothing reads it."""
    used = _used(spec)
    for k, fn in enumerate(spec.functions):
        applies = [s for s in spec.body if s.op == "apply_fn" and s.args and s.args[0] == k]
        extra_read = any(len(s.outs) > 1 and s.outs[1] in used for s in applies)
        names = [
            n
            for n in _SIMPLE_FUNCTION.__dataclass_fields__
            if getattr(fn, n) != getattr(_SIMPLE_FUNCTION, n)
            and not (n in ("non_differentiable", "two_outputs") and extra_read)
            and n != "arity"  # the applications pass both inputs: structural, kept
        ]
        options = [names] if len(names) > 1 else []
        options += [[n] for n in names]
        for option in options:
            simpler = replace(fn, **{n: getattr(_SIMPLE_FUNCTION, n) for n in option})
            body = spec.body
            seconds = (fn.non_differentiable or fn.two_outputs) and not (
                simpler.non_differentiable or simpler.two_outputs
            )
            if seconds:  # the second output goes with the flag that made it
                body = tuple(replace(s, outs=s.outs[:1]) if s in applies else s for s in spec.body)
            functions = spec.functions[:k] + (simpler,) + spec.functions[k + 1 :]
            yield replace(spec, functions=functions, body=body)


# Most promising first: what removes the most (and makes every later run cheaper) comes first.
_PASSES: tuple[Callable[[ProgramSpec], Iterable[ProgramSpec | None]], ...] = (
    _default_config,  # first: the rule, and a finding under the defaults is plainer
    _drop_inputs,
    _drop_statements,
    _drop_outputs,
    _simplify_plan,
    _simplify_sequence,
    _drop_unused,
    _simplify_roots,
    _simplify_inputs,
    _simplify_statements,
    _simplify_functions,
)


def candidates(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Structurally smaller variants of `spec`, most promising first.

    Each one validates, binds every ref it reads, renders, keeps `spec.family`, has a strictly
    smaller `shrink_key` than `spec`, and is yielded once. Lazy: a caller that takes the first
    good one pays only for the candidates before it."""
    key = shrink_key(spec)
    seen = {spec.to_json()}
    for make in _PASSES:
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
