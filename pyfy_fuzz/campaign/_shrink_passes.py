"""The shrinker's candidate passes: each yields smaller variants of a spec (shrink.py;
torch-free).

A pass yields raw candidates -- maybe invalid, maybe not smaller, maybe None where an edit left
nothing -- and `shrink.candidates` filters them. `PASSES` is their order, most promising
first: what removes the most (and makes every later run cheaper) comes first. The order is
the shrinker's behaviour: a reordered table shrinks to other specs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from pyfy_fuzz.campaign._shrink_edits import (
    SIMPLE_FUNCTION,
    inline_number,
    is_ref,
    param_names,
    remove,
    rename,
    renumber,
    stmt_refs,
    used_names,
    without_input,
)
from pyfy_fuzz.schema.spec import (
    CallPlan,
    InputSpec,
    ModuleSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
    variant_tokens,
)

__all__ = ["PASSES"]

# Families whose reason to exist is the plan's mode: the mode is never simplified there.
_MODE_FAMILIES = frozenset({"cudagraph"})
# Fewest dims each root layout needs (what `_root` in the rendered program indexes).
_LAYOUT_MIN_NDIM = {"contiguous": 0, "offset": 0, "strided": 1, "expanded": 1, "transposed": 2}


def _drop_inputs(spec: ProgramSpec) -> Iterator[ProgramSpec | None]:
    """Fewer arguments: dropped with what reads them, or their reads moved to an earlier one.
    Later arguments first: generators draw the forced structure first."""
    n = len(spec.inputs)
    for i in reversed(range(n)):
        yield without_input(spec, i)
    for i in reversed(range(n)):
        if spec.inputs[i].scalar:  # a number argument whose reads take its value instead
            yield without_input(inline_number(spec, i), i)
    dup_of = {inp.of for inp in spec.inputs if inp.kind == "dup"}
    tensors = [i for i, inp in enumerate(spec.inputs) if not inp.scalar]
    for j in reversed(tensors):
        if j in dup_of:
            continue
        for i in tensors:
            if i < j:
                yield without_input(rename(spec, {f"a{j}": f"a{i}"}), j)


def _drop_statements(spec: ProgramSpec) -> Iterator[ProgramSpec | None]:
    """Fewer statements: halves of the body, then one at a time (with what reads it), then one
    statement bypassed (what read its result reads its operand instead)."""
    n = len(spec.body)
    if n >= 4:
        yield remove(spec, stmts=range(n // 2, n))
        yield remove(spec, stmts=range(n // 2))
    for k in reversed(range(n)):
        yield remove(spec, stmts=[k])
    for k in reversed(range(n)):
        s = spec.body[k]
        if not s.outs:
            continue
        for src in dict.fromkeys(stmt_refs(s)):
            body = spec.body[:k] + spec.body[k + 1 :]
            yield rename(replace(spec, body=body), {o: src for o in s.outs})


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
            "through": None,  # both checkpoints differ from a plain call in backward only
        }
        steps.append(off | {"tangents": "ones"})
    if p.second_backward is not None:
        steps.append({"second_backward": None})
    if p.saved_tensor_hooks:
        steps.append({"saved_tensor_hooks": False})
    if p.grad_fn_hooks:
        steps.append({"grad_fn_hooks": False})
    if p.through is not None:
        steps.append({"through": None})
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
    used = used_names(spec)
    has_bn = any(s.op == "batchnorm" for s in spec.body)
    if not (used & param_names(m)) and not has_bn:
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
        yield rename(smaller, renumber("p", j, n + m.tied))
    nb = len(m.buffers)
    for j in reversed(range(nb)):
        if f"b{j}" in used:
            continue
        smaller = replace(spec, module=replace(m, buffers=m.buffers[:j] + m.buffers[j + 1 :]))
        yield rename(smaller, renumber("b", j, nb))


def _read_as_dtype(spec: ProgramSpec, k: int) -> bool:
    """Whether an argument views root k as another dtype (a `view_dtype` step)."""
    return any(
        i.root == k and any(s.op == "view_dtype" for s in i.views)
        for i in spec.inputs
        if i.kind in ("view", "set_shared")
    )


def _simplify_roots(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Plainer roots: float32, contiguous, no grad, no subclass (together, then apart), then
    smaller shapes: every dim 1, no size-1 dims, then per dim: 1, half, one less, dropped. A
    root an argument reads as another dtype keeps its dtype: the generator pairs only dtypes
    of one element size (`generators._build.DTYPE_PARTNER`), and float32 read as bfloat16
    is a view of another size the generator never draws (the issue-36 triage's 3369)."""
    for k, r in enumerate(spec.roots):
        read = _read_as_dtype(spec, k)
        plain = RootSpec(r.shape, dtype=r.dtype if read else "float32")  # contiguous, no grad
        yield _with_root(spec, k, plain)
        changes: list[dict[str, Any]] = [
            {} if read else {"dtype": plain.dtype},
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
        if inp.kind == "float" and inp.value != 1.0:
            yield _with_input(spec, i, replace(inp, value=1.0))


def _with_input(spec: ProgramSpec, i: int, inp: InputSpec) -> ProgramSpec:
    return replace(spec, inputs=spec.inputs[:i] + (inp,) + spec.inputs[i + 1 :])


def _simplify_statements(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Statements without their context manager; in-place ops with a constant operand."""
    for k, s in enumerate(spec.body):
        simpler: list[Stmt] = []
        if s.ctx is not None:
            simpler.append(replace(s, ctx=None))
        if s.op == "add_" and len(s.args) == 2 and is_ref(s.args[1]):
            simpler.append(replace(s, args=(s.args[0], 1)))
        if s.op == "copy_" and len(s.args) == 2 and is_ref(s.args[1]):
            simpler.append(replace(s, op="fill_", args=(s.args[0], 2)))
        for t in simpler:
            yield replace(spec, body=spec.body[:k] + (t,) + spec.body[k + 1 :])


def _simplify_functions(spec: ProgramSpec) -> Iterator[ProgramSpec]:
    """Custom Functions with the plain defaults: all flags at once, then one at a time. The
    non-differentiable second output goes only where nothing reads it."""
    used = used_names(spec)
    for k, fn in enumerate(spec.functions):
        applies = [s for s in spec.body if s.op == "apply_fn" and s.args and s.args[0] == k]
        extra_read = any(len(s.outs) > 1 and s.outs[1] in used for s in applies)
        names = [
            n
            for n in SIMPLE_FUNCTION.__dataclass_fields__
            if getattr(fn, n) != getattr(SIMPLE_FUNCTION, n)
            and not (n in ("non_differentiable", "two_outputs") and extra_read)
            and n != "arity"  # the applications pass both inputs: structural, kept
        ]
        options = [names] if len(names) > 1 else []
        options += [[n] for n in names]
        for option in options:
            simpler = replace(fn, **{n: getattr(SIMPLE_FUNCTION, n) for n in option})
            body = spec.body
            seconds = (fn.non_differentiable or fn.two_outputs) and not (
                simpler.non_differentiable or simpler.two_outputs
            )
            if seconds:  # the second output goes with the flag that made it
                body = tuple(replace(s, outs=s.outs[:1]) if s in applies else s for s in spec.body)
            functions = spec.functions[:k] + (simpler,) + spec.functions[k + 1 :]
            yield replace(spec, functions=functions, body=body)


# Most promising first: what removes the most (and makes every later run cheaper) comes first.
PASSES: tuple[Callable[[ProgramSpec], Iterable[ProgramSpec | None]], ...] = (
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
