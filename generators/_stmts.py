"""Statements: each `stmt_<group>` draws one legal statement and updates the builder's model.

A function returns False when no legal statement of its group exists in the current state
(e.g. no float value for `sin`); the caller then tries another group. The rules encoded here
are eager's (see `_model`): no in-place write to a leaf that requires grad or a view of one
(outside no_grad), to memory with overlapping elements, to a view made under no_grad or
returned by a custom Function, or to a tensor whose version counter a saved tensor shares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import event

from ._build import Builder
from ._model import (
    FLOATS,
    HOOK_STYLES,
    Geometry,
    Val,
    broadcast,
    contiguous_strides,
    numel,
    overlap,
    same_elements,
)
from ._spec import FunctionSpec, Stmt

UNARY = {
    "float": ("sin", "cos", "tanh", "sigmoid", "relu", "neg", "mul2", "add1"),
    "int64": ("neg", "abs", "add1", "mul2"),
    "bool": ("logical_not",),
}
SAVES_INPUT = {"sin", "cos", "mul", "maximum", "gram"}  # backward reads an operand
SAVES_RESULT = {"tanh", "sigmoid", "relu"}  # backward reads the result
BINARY = {
    "float": ("add", "mul", "sub", "maximum"),
    "int64": ("add", "mul", "sub"),
    "bool": ("and", "or"),
}
INPLACE = ("add_", "mul_", "copy_", "fill_", "zero_", "index_put_", "sin_")


def _kind(v: Val) -> str:
    return "float" if v.dtype in FLOATS else v.dtype


def tensors(b: Builder, pred: Callable[[Val], bool] | None = None) -> list[Val]:
    return [v for v in b.vals.values() if pred is None or pred(v)]


def bind(b: Builder, val: Val, stmt: Stmt) -> Val:
    b.body.append(stmt)
    b.vals[val.name] = val
    return val


def fresh(b: Builder, like: Val, shape: tuple[int, ...], dtype: str, rg: bool) -> Val:
    """A new tensor with its own storage (strides unknown unless the source was contiguous)."""
    geom = Geometry(shape, contiguous_strides(shape), 0)
    return Val(
        name=b.fresh_name(),
        dtype=dtype,
        geom=geom if (like.geom is not None and like.geom.is_contiguous()) else None,
        shape=shape,
        storage=b.new_id(),
        storage_numel=numel(shape),
        family=b.new_id(),
        requires_grad=rg and b.grad_on and dtype in FLOATS,
        is_leaf=not (rg and b.grad_on),
        subclass=like.subclass,
    )


def note_saved(b: Builder, op: str, operands: list[Val], result: Val) -> None:
    if not b.grad_on or not any(v.requires_grad for v in operands):
        return
    if op in SAVES_INPUT:
        b.saved_families.update(v.family for v in operands)
    if op in SAVES_RESULT:
        b.saved_families.add(result.family)


def _ctx(b: Builder) -> str | None:
    """Occasionally run an out-of-place statement under a context manager."""
    if b.grad_on and b.chance(6):
        return "no_grad"
    if not b.grad_on and b.chance(4):
        return "enable_grad"
    return None


def _with_ctx(b: Builder, ctx: str | None) -> bool:
    """Grad mode inside `ctx`, given the builder's current grad mode."""
    if ctx == "no_grad" or ctx == "inference_mode":
        return False
    if ctx == "enable_grad":
        return True
    return b.grad_on


class _GradMode:
    """Temporarily set the builder's grad mode while a statement under `ctx` is modelled."""

    def __init__(self, b: Builder, ctx: str | None) -> None:
        self.b, self.ctx, self.saved = b, ctx, b.grad_on

    def __enter__(self) -> None:
        self.b.grad_on = _with_ctx(self.b, self.ctx)

    def __exit__(self, *exc: object) -> None:
        self.b.grad_on = self.saved


def stmt_unary(b: Builder, target: Val | None = None) -> bool:
    cands = [target] if target is not None else tensors(b, lambda v: not v.subclass or v.is_float)
    if not cands:
        return False
    v = b.pick(cands)
    op = b.pick(UNARY[_kind(v)])
    ctx = _ctx(b)
    with _GradMode(b, ctx):
        out = fresh(b, v, v.shape, v.dtype, v.requires_grad)
        note_saved(b, op, [v], out)
        bind(b, out, Stmt(op, (v.name,), (out.name,), ctx))
    return True


def stmt_binary(b: Builder) -> bool:
    cands = tensors(b)
    if not cands:
        return False
    v = b.pick(cands)
    partners = [
        w
        for w in cands
        if w.dtype == v.dtype
        and broadcast(v.shape, w.shape) is not None
        and (w.subclass is None or v.subclass is None or w.subclass == v.subclass)
    ]
    w = b.pick(partners)  # v itself is always a partner
    op = b.pick(BINARY[_kind(v)])
    shape = broadcast(v.shape, w.shape)
    assert shape is not None
    ctx = _ctx(b)
    with _GradMode(b, ctx):
        out = fresh(
            b, v if v.geom is not None else w, shape, v.dtype, v.requires_grad or w.requires_grad
        )
        out = replace(out, subclass=v.subclass or w.subclass)
        note_saved(b, op, [v, w], out)
        bind(b, out, Stmt(op, (v.name, w.name), (out.name,), ctx))
    return True


def stmt_reduce(b: Builder) -> bool:
    cands = tensors(b, lambda v: v.dtype != "bool" and not v.subclass)
    if not cands:
        return False
    v = b.pick(cands)
    if v.ndim == 0 or b.chance(3):
        args: tuple[object, ...] = (v.name,)
        shape: tuple[int, ...] = ()
    else:
        d = b.integer(0, v.ndim - 1)
        args, shape = (v.name, d), v.shape[:d] + v.shape[d + 1 :]
    out = fresh(b, v, shape, v.dtype, v.requires_grad)
    bind(b, out, Stmt("sum", args, (out.name,)))
    return True


def stmt_matmul(b: Builder) -> bool:
    cands = tensors(b, lambda v: v.is_float and v.ndim >= 2 and not v.subclass)
    if not cands:
        return False
    v = b.pick(cands)
    out = fresh(b, v, v.shape[:-1] + (v.shape[-2],), v.dtype, v.requires_grad)
    note_saved(b, "gram", [v], out)
    bind(b, out, Stmt("gram", (v.name,), (out.name,)))
    return True


def stmt_cast(b: Builder) -> bool:
    cands = tensors(b, lambda v: not v.subclass)
    if not cands:
        return False
    v = b.pick(cands)
    dtype = b.pick([d for d in ("float32", "float64", "int64") if d != v.dtype])
    rg = v.requires_grad and dtype in FLOATS and v.is_float
    out = fresh(b, v, v.shape, dtype, rg)
    bind(b, out, Stmt("to", (v.name, dtype), (out.name,)))
    return True


def stmt_view(b: Builder, target: Val | None = None) -> bool:
    cands = [target] if target is not None else tensors(b)
    if not cands:
        return False
    v = b.pick(cands)
    ctx = "no_grad" if (b.grad_on and v.requires_grad and b.chance(5)) else None
    with _GradMode(b, ctx):
        step = b.view_step(v, allow_as_strided=not v.subclass)
        if step is None:
            return False
        view, val = step
        if ctx:
            event("view: taken under no_grad")
        val = replace(val, name=b.fresh_name())
        bind(b, val, Stmt("view", (v.name, view.op, *view.args), (val.name,), ctx))
    return True


# Ops that return their argument itself (dropout in eval, .to() its own dtype, contiguous()
# of a contiguous tensor) and an explicit copy (stmt_identity).
IDENTITY_OPS = ("dropout_eval", "to_same", "contiguous", "clone")


def stmt_identity(b: Builder) -> bool:
    """An op that may return its argument as-is, then (1 in 2) a write into its result: the
    result *is* the argument, so the write is the argument's (pytorch#195422; returned, a
    write into the output is too: #115249). Or an explicit copy, which a pass may wrongly
    take for a no-op beside a later write of the original (PR #185876)."""
    cands = tensors(b, lambda v: not v.subclass)
    if not cands:
        return False
    v = b.pick(cands)
    op = b.pick(IDENTITY_OPS)
    if op == "contiguous" and (v.geom is None or not v.geom.is_contiguous()):
        op = "clone"  # contiguous() of a strided tensor is a copy
    if op == "dropout_eval" and not v.is_float:
        op = "to_same"
    if op == "clone":
        val = fresh(b, v, v.shape, v.dtype, rg=v.requires_grad)
        val = replace(val, geom=Geometry(v.shape, contiguous_strides(v.shape), 0))
    else:  # the same tensor under a new name: its storage, family, autograd state
        val = replace(v, name=b.fresh_name(), input_index=None, param=False)
    bind(b, val, Stmt(op, (v.name,), (val.name,)))
    event(f"identity: {op}")
    if b.chance(2):
        stmt_inplace(b, target=b.vals[val.name])
    return True


def stmt_data(b: Builder) -> bool:
    """A write autograd does not see: `x.data.mul_(2)` of an argument or a parameter, or a
    parameter's data replaced, `p.data = p.detach() * 2` (pytorch#197738, PR #194534). Not
    where a saved tensor shares the memory: eager's backward would then read the new values
    without a version check, which torch.compile need not reproduce."""
    cands = tensors(
        b,
        lambda v: (
            (v.input_index is not None or v.param)
            and not v.subclass
            and not v.overlapping
            and v.family not in b.saved_families
        ),
    )
    if not cands:
        return False
    v = b.pick(cands)
    if v.param and b.chance(2):
        storage = b.new_id()
        geom = Geometry(v.shape, contiguous_strides(v.shape), 0)
        b.vals[v.name] = replace(v, storage=storage, storage_numel=numel(v.shape), geom=geom)
        b.body.append(Stmt("data_assign", (v.name,)))
        event("data: a parameter's .data replaced")
        return True
    b.body.append(Stmt("data_mul_", (v.name,)))
    event("data: a write through .data")
    return True


def stmt_detach(b: Builder, target: Val | None = None) -> bool:
    cands = [target] if target is not None else tensors(b, lambda v: v.requires_grad)
    if not cands or not cands[0].requires_grad:
        return False
    v = b.pick(cands)
    val = replace(
        v,
        name=b.fresh_name(),
        requires_grad=False,
        is_leaf=True,
        is_view=False,
        view_of_leaf_rg=False,
        input_index=None,
        param=False,
    )
    bind(b, val, Stmt("detach", (v.name,), (val.name,)))
    return True


def mutable(b: Builder, v: Val, grad_on: bool) -> bool:
    """Whether eager allows an in-place data write to v in the given grad mode."""
    if v.overlapping or v.custom_view or v.param and grad_on:
        return False
    if v.family in b.saved_families and b.backward:
        return False
    if v.name in b.dup_names and v.subclass:
        return False
    if grad_on and v.requires_grad and (v.is_leaf or v.view_of_leaf_rg):
        return False
    if grad_on and v.no_grad_view:
        return False
    return True


def stmt_inplace(b: Builder, target: Val | None = None, ctx: str | None = "draw") -> bool:
    if ctx == "draw":
        ctx = None
        if b.chance(4):
            ctx = "no_grad" if b.chance(2) else "inference_mode"
    grad_in = _with_ctx(b, ctx)
    if target is None:
        cands = tensors(b, lambda v: mutable(b, v, grad_in))
        if not cands:
            return False
        target = b.pick(cands)
    elif not mutable(b, target, grad_in):
        return False
    ops = [op for op in INPLACE if op != "sin_" or target.is_float]
    if target.dtype == "bool":  # arithmetic results are not castable back to bool
        ops = ["fill_", "zero_", "copy_", "index_put_"]
    if target.ndim == 0 or target.shape[0] == 0 or target.subclass:
        ops.remove("index_put_")
    op = b.pick(ops)
    args: tuple[object, ...]
    other: Val | None = None
    if op in ("add_", "copy_"):
        others = tensors(
            b,
            lambda w: (
                broadcast(target.shape, w.shape) == target.shape
                and (w.dtype == target.dtype or op == "copy_" and not w.requires_grad)
                and (not overlap(w, target) or same_elements(w, target))
                and (w.subclass is None or w.subclass == target.subclass)
                and not (ctx == "inference_mode" and w.requires_grad)
            ),
        )
        if others and b.integer(0, 3) > 0:  # a tensor 3 times in 4; shrinks to the constant
            other = b.pick(others)
            args = (target.name, other.name)
        elif op == "add_":
            args = (target.name, 1)
        else:
            op, args = "fill_", (target.name, 2)
    elif op == "index_put_":
        args = (target.name, b.integer(0, target.shape[0] - 1))
    elif op in ("mul_", "fill_"):
        args = (target.name, 2)
    else:
        args = (target.name,)
    if target.requires_grad and grad_in and op == "sin_":
        b.saved_families.add(target.family)
    _apply_inplace(b, target, other, grad_in)
    b.body.append(Stmt(op, args, (), ctx))
    event(f"mutation: {op}" + (f" under {ctx}" if ctx else ""))
    if target.input_index is not None or any(
        target.storage == r.storage for r in b.vals.values() if r.input_index is not None
    ):
        event("mutation: of an input's memory")
    return True


def _apply_inplace(b: Builder, target: Val, other: Val | None, grad_in: bool) -> None:
    """Autograd after `target.op_(other)`: if other requires grad, target's family does too."""
    if not (grad_in and other is not None and other.requires_grad and target.is_float):
        return
    for name, v in list(b.vals.items()):
        if v.family == target.family and not v.param:
            b.vals[name] = replace(v, requires_grad=True, is_leaf=False)


def stmt_metadata(b: Builder, target: Val | None = None, breaks: bool = False) -> bool:
    """An in-place metadata change of an argument (t_, transpose_, unsqueeze_, squeeze_, ...).

    Dynamo graph-breaks on an in-place view op, set_ or resize_ of a graph input: the
    program switches to the AOT front-end (tensor arguments only, no module), which traces
    it as a metadata mutation, or, with `breaks` (input_mutation's "metadata break"), stays
    on Dynamo, which breaks the graph there and the file splits (Note [Regions] in
    pythonify; a module's graph break is refused).
    """
    if b.module is not None or b.ints and not breaks:
        return False
    if breaks and b.profile.frontend != "dynamo":
        breaks = False
    if target is None:
        cands = tensors(
            b,
            lambda v: (
                v.input_index is not None
                and v.name not in b.dup_names
                and not v.subclass
                and not (v.requires_grad and v.is_leaf)
            ),
        )
        if not cands:
            return False
        target = b.pick(cands)
    v = target
    if v.requires_grad and (v.is_leaf or v.view_of_leaf_rg) or v.subclass:
        return False  # eager refuses in-place ops on (views of) leaves that require grad
    op = b.pick(_metadata_ops(v))
    half = numel(v.shape) // 2
    args: tuple[object, ...]
    geom: Geometry | None
    new_shape: tuple[int, ...]
    if op == "set_":
        _set_storage(b, v, breaks)
        return True
    if op == "resize_" and v.geom is not None:
        new_shape = (half,)
        args, geom = (new_shape,), Geometry(new_shape, (1,), v.geom.offset)
    elif op == "as_strided_":
        size, stride, offset = b._strided_window(v.storage_numel)
        args, geom, new_shape = (size, stride, offset), Geometry(size, stride, offset), size
    elif op == "t_":
        args, geom, new_shape = (), v.geom, v.shape
        if v.ndim == 2:
            new_shape = (v.shape[1], v.shape[0])
            if v.geom is not None:
                geom = Geometry(new_shape, v.geom.stride[::-1], v.geom.offset)
    else:
        res = b._view_args(v, op[:-1])
        if res is None:
            return False
        args, geom, new_shape = res
    _front_end(b, op, breaks)
    b.vals[v.name] = replace(v, geom=geom, shape=new_shape)
    b.body.append(Stmt(op, (v.name, *args)))
    return True


def _front_end(b: Builder, op: str, breaks: bool) -> None:
    """Dynamo breaks the graph at an input's metadata mutation; AOT traces it
    (stmt_metadata)."""
    if breaks:
        event(f"graph break: {op} of an input")
        return
    b.profile = replace(b.profile, frontend="aot")
    event(f"metadata mutation: {op}")


def _metadata_ops(v: Val) -> list[str]:
    """The in-place metadata changes eager allows on v, in a list as long as it was before
    set_ and resize_ (issue 17) joined: a pick over another range moves where Hypothesis's
    shrinking ends for the whole family (tests/generators/test_shrinking.py) and how soon the
    self-test's campaigns meet their programs. So set_ takes t_'s place on a 0-d tensor
    (where t_ changes nothing), and resize_ as_strided_'s on a 1-d tensor with an even number
    of elements (both re-lay the same storage)."""
    ops = ["unsqueeze_"]
    if v.ndim <= 2:
        settable = not (v.requires_grad or v.is_view or v.dtype == "bool")
        ops.append("set_" if v.ndim == 0 and settable else "t_")
    if v.ndim >= 2:
        ops.append("transpose_")
    if 1 in v.shape:
        ops.append("squeeze_")
    if v.geom is not None and not v.requires_grad and not v.is_view:
        # resize_ to fewer elements: the same storage read contiguously from the offset
        # (growing would allocate memory nobody wrote; an expanded root has fewer elements)
        half = numel(v.shape) // 2
        fits = half >= 1 and v.geom.offset + half <= v.storage_numel
        even_1d = v.ndim == 1 and numel(v.shape) % 2 == 0
        ops.append("resize_" if fits and even_1d else "as_strided_")
    return ops


def _set_storage(b: Builder, v: Val, breaks: bool) -> None:
    """`v.set_(t)` with t a fresh result: v keeps its version counter and takes t's storage
    and geometry. AOT replays it on the caller's tensor with set_ after the graph, not with a
    copy (Note [Copying input mutations back], pyfy_fuzz/pythonify/wrappers/runtime.py)."""
    t = fresh(b, v, v.shape, v.dtype, rg=False)
    bind(b, t, Stmt("mul", (v.name, 2), (t.name,)))
    _front_end(b, "set_", breaks)
    b.vals[v.name] = replace(v, storage=t.storage, storage_numel=t.storage_numel, geom=t.geom)
    b.body.append(Stmt("set_", (v.name, t.name)))


def stmt_grad_mode(b: Builder) -> bool:
    """Flip grad mode for the rest of the body (the change outlives the call, as in eager)."""
    if b.grad_toggled:
        return False
    b.grad_toggled = True
    b.grad_on = not b.grad_on
    b.body.append(Stmt("set_grad_enabled", (b.grad_on,)))
    event("grad mode changed inside the function")
    return True


def stmt_effect(b: Builder) -> bool:
    """A side effect: aten._print, the print HOP, an ordered effectful custom op, or a graph
    break, explicit or Python's print (Dynamo runs it in Python between two graphs; Note
    [Regions] in pythonify)."""
    kind = b.pick(("aten_print", "print_hop", "effect_op", "graph_break", "print"))
    cands = tensors(b, lambda v: not v.subclass)
    if kind in ("print_hop", "effect_op") and not cands:
        kind = "aten_print"
    args: tuple[object, ...] = ()
    if kind in ("print_hop", "effect_op"):
        args = (b.pick(cands).name,)
    b.body.append(Stmt(kind, args))
    event(f"effect: {kind}")
    return True


def stmt_rng(b: Builder) -> bool:
    cands = tensors(b, lambda v: v.is_float and not v.subclass)
    if not cands:
        return False
    v = b.pick(cands)
    ops = ["rand_like", "randn_like", "dropout", "bernoulli"]
    if numel(v.shape) == 0:  # eager's dropout returns an empty input as-is: not a new value
        ops.remove("dropout")
    op = b.pick(ops)
    rg = v.requires_grad and op == "dropout"
    out = fresh(b, v, v.shape, v.dtype, rg)
    bind(b, out, Stmt(op, (v.name,), (out.name,)))
    event(f"rng: {op}")
    return True


def _backward_may_mutate(b: Builder, v: Val) -> bool:
    """Can a custom Function's backward write into v (AOTAutograd: a forward input mutated in
    the backward, autograd/mutation_in_backward)? v must be an argument that requires grad,
    its own storage, not saved by an earlier op: the engine runs the earlier ops' backward
    nodes after this one (lower sequence numbers), and one that saved v would find it
    modified. Later ops run theirs first."""
    return (
        b.grad_on
        and b.backward
        and v.requires_grad
        and v.input_index is not None
        and not v.is_view
        and not v.overlapping
        and not v.subclass
        and not v.param
        and v.family not in b.saved_families
        and v.name not in b.dup_names
    )


def stmt_function(b: Builder, target: Val | None = None) -> bool:
    """Apply a new custom autograd.Function to a float value."""
    if target is None:
        cands = tensors(b, lambda v: v.is_float and not v.subclass)
        if not cands:
            return False
        target = b.pick(cands)
    v = target
    bodies = ["scale", "sin", "view"]
    if mutable(b, v, b.grad_on) and not v.is_view:
        bodies.append("dirty")
    if _backward_may_mutate(b, v):
        bodies.append("bw_mutate")
    style, body = b.pick(("ctx", "setup_context")), b.pick(bodies)
    non_differentiable = b.chance(3)
    materialize_grads, once_differentiable = not b.chance(3), b.chance(3)
    # One draw for the rest (it was backward_print's, 1 in 4 still): a new draw of its own
    # moved where Hypothesis's shrinking ends (tests/generators/test_shrinking.py).
    extra = b.integer(0, 11)
    w = _second_input(b, v, extra, body)
    fn = FunctionSpec(
        style=style,
        body=body,
        non_differentiable=non_differentiable,
        materialize_grads=materialize_grads,
        once_differentiable=once_differentiable,
        backward_print=extra >= 9,
        arity=1 if w is None else 2,
        two_outputs=extra == 6 and not non_differentiable,
        backward_record=extra == 5,
    )
    k = len(b.functions)
    b.functions.append(fn)
    if w is not None:
        event("autograd.Function: two inputs" + (" (the same tensor twice)" if w is v else ""))
        return _apply_two(b, k, fn, v, w)
    return _apply_one(b, k, fn, v)


def _apply_one(b: Builder, k: int, fn: FunctionSpec, v: Val) -> bool:
    """Fn<k>.apply(v): the output as the body makes it (a dirty input is the output, a view
    output is a custom Function's view), and a second output where the spec has one."""
    rg = v.requires_grad and b.grad_on
    if fn.body == "dirty":
        out = replace(v, name=b.fresh_name(), requires_grad=rg, is_leaf=not rg, input_index=None)
        for name, w in list(b.vals.items()):
            if w.family == v.family:
                b.vals[name] = replace(
                    w, requires_grad=rg or w.requires_grad, is_leaf=not rg and w.is_leaf
                )
    elif fn.body == "view":
        out = replace(
            v,
            name=b.fresh_name(),
            is_view=True,
            custom_view=True,
            requires_grad=rg,
            is_leaf=not rg,
            input_index=None,
            param=False,
        )
    else:
        out = fresh(b, v, v.shape, v.dtype, v.requires_grad)
        if fn.body in ("sin", "bw_mutate") and rg:
            b.saved_families.add(v.family)
    outs = [out.name]
    b.vals[out.name] = out
    if fn.non_differentiable or fn.two_outputs:
        rg_extra = fn.two_outputs and v.requires_grad
        second = replace(fresh(b, v, v.shape, v.dtype, rg_extra), name=b.fresh_name())
        b.vals[second.name] = second
        outs.append(second.name)
    b.body.append(Stmt("apply_fn", (k, v.name), tuple(outs)))
    event(f"autograd.Function: {fn.style} {fn.body}")
    return True


def _second_input(b: Builder, v: Val, extra: int, body: str) -> Val | None:
    """The Function's second tensor input (FunctionSpec.arity 2), from the Function's one
    draw: 8, another float value of v's shape and dtype (v again where there is none); 7, v
    itself (F.apply(x, x)); else none. Bodies scale and sin only."""
    if extra not in (7, 8) or body not in ("scale", "sin"):
        return None
    if extra == 7:
        return v
    others = tensors(b, lambda w: w.name != v.name and w.shape == v.shape and w.dtype == v.dtype)
    others = [w for w in others if not w.subclass]
    return others[-1] if others else v


def _apply_two(b: Builder, k: int, fn: FunctionSpec, v: Val, w: Val) -> bool:
    """Fn<k>.apply(v, w): a fresh output requiring grad where either input does; sin saves
    both inputs; needs_input_grad picks the gradients backward returns."""
    rg = (v.requires_grad or w.requires_grad) and b.grad_on
    out = fresh(b, v, v.shape, v.dtype, v.requires_grad or w.requires_grad)
    if fn.body == "sin" and rg:
        b.saved_families.update({v.family, w.family})
    b.vals[out.name] = out
    outs = [out.name]
    if fn.non_differentiable or fn.two_outputs:
        second = replace(fresh(b, v, v.shape, v.dtype, fn.two_outputs and rg), name=b.fresh_name())
        b.vals[second.name] = second
        outs.append(second.name)
    b.body.append(Stmt("apply_fn", (k, v.name, w.name), tuple(outs)))
    event(f"autograd.Function: {fn.style} {fn.body}, two inputs")
    return True


def stmt_hook(b: Builder) -> bool:
    """A tensor hook: one that doubles the gradient, on an input or an intermediate; one that
    logs (the order hooks run in is observed), on an input only (Dynamo refuses a side effect
    in a hook it traces into the graph); or a post-accumulate-grad hook on a leaf input."""
    cands = tensors(b, lambda v: v.requires_grad and not v.subclass)
    if not cands or not b.grad_on:
        return False
    v = b.pick(cands)
    on_input = v.input_index is not None and not v.param
    kind = b.integer(0, 3) if on_input else 0  # HOOK_FUNCTIONS' index; 3: post-accumulate
    if kind == 3 and not v.is_leaf:
        kind = 1
    if kind == 3:
        b.body.append(Stmt("post_accumulate_hook", (v.name,)))
        event("hook: post-accumulate-grad on a leaf input")
        return True
    style = b.integer(0, len(HOOK_STYLES) - 1) if on_input else 0  # a constant, not a name
    b.body.append(Stmt("register_hook", (v.name, kind, style)))
    where = "an input" if v.input_index is not None else "an intermediate"
    event(f"hook: {'modifies the grad' if kind == 0 else 'logs'}, on {where}")
    event(f"hook: written as {HOOK_STYLES[style]}")
    return True


def stmt_batchnorm(b: Builder) -> bool:
    if b.module is None or b.module.batchnorm is None:
        return False
    c = b.module.batchnorm
    cands = tensors(
        b,
        lambda v: (
            v.dtype == "float32"
            and v.ndim in (2, 3)
            and v.shape[1] == c
            and v.shape[0] * (v.shape[2] if v.ndim == 3 else 1) > 1
            and not v.subclass
        ),
    )
    if not cands:
        return False
    v = b.pick(cands)
    out = fresh(b, v, v.shape, v.dtype, True)
    if b.grad_on:
        b.saved_families.add(v.family)
    bind(b, out, Stmt("batchnorm", (v.name,), (out.name,)))
    event("module: BatchNorm running stats updated")
    return True


GROUPS = {
    "unary": stmt_unary,
    "binary": stmt_binary,
    "reduce": stmt_reduce,
    "matmul": stmt_matmul,
    "cast": stmt_cast,
    "view": stmt_view,
    "detach": stmt_detach,
    "identity": stmt_identity,
    "data": stmt_data,
    "inplace": stmt_inplace,
    "metadata": stmt_metadata,
    "grad_mode": stmt_grad_mode,
    "effect": stmt_effect,
    "rng": stmt_rng,
    "function": stmt_function,
    "hook": stmt_hook,
    "batchnorm": stmt_batchnorm,
}


def random_stmt(b: Builder) -> None:
    """One statement from the profile's weighted groups (falls back to unary, then nothing)."""
    weights = [(g, w) for g, w in b.profile.weights.items() if w > 0]
    x = b.integer(0, sum(w for _, w in weights) - 1)
    group = weights[-1][0]
    for name, w in weights:
        if x < w:
            group = name
            break
        x -= w
    if not GROUPS[group](b):
        stmt_unary(b)
