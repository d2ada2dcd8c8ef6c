"""Statements: each `stmt_<group>` draws one legal statement and updates the builder's model.

A function returns False when no legal statement of its group exists in the current state
(e.g. no float value for `sin`); the caller then tries another group. The rules encoded here
are eager's (see `_model`): no in-place write to a leaf that requires grad or a view of one
(outside no_grad), to memory with overlapping elements, to a view made under no_grad or
returned by a custom Function, or to a tensor whose version counter a saved tensor shares.

This module holds the groups every family mixes (values, views, in-place and metadata writes,
grad mode); _stmts_extra.py the ones a family adds (effects, random numbers, custom
Functions, hooks, BatchNorm), and `_strategy.random_stmt` draws among them by weight.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import event

from ._build import Builder
from ._model import (
    FLOATS,
    Geometry,
    Val,
    broadcast,
    contiguous_strides,
    numel,
    overlap,
    same_elements,
)
from ._spec import Stmt

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
# Every hand-written in-place data write; stmt_inplace draws all but "setitem" (`v[i] = n`,
# stmt_probe's: Note [Reading a tensor's metadata] in _stmts_probe.py).
INPLACE = ("add_", "mul_", "copy_", "fill_", "zero_", "index_put_", "sin_", "setitem")


def _kind(v: Val) -> str:
    return "float" if v.dtype in FLOATS else v.dtype


def tensors(b: Builder, pred: Callable[[Val], bool] | None = None) -> list[Val]:
    """The values a statement may read: an inference tensor only inside inference_mode (out
    of it, eager refuses to save it for backward or write it in place: it is returned at
    most; Note [The context axis] in _strategy.py)."""
    return [
        v
        for v in b.vals.values()
        if (b.inference_on or not v.inference) and (pred is None or pred(v))
    ]


def scalar_partners(b: Builder, v: Val) -> list[str]:
    """The Python number arguments `v` may meet keeping its dtype (Note [Scalar arguments] in
    _stmts_scalar.py): ints with any tensor but bool, floats with floating tensors only."""
    return [
        name
        for name, value in b.scalars.items()
        if (type(value) is float and v.dtype in FLOATS)
        or (type(value) is int and v.dtype != "bool")
    ]


def number_operand(b: Builder, target: Val, constant: int) -> int | str:
    """An in-place op's number operand: the constant, or half the time a number argument
    the target may meet (Note [Scalar arguments])."""
    names = scalar_partners(b, target)
    return b.pick(names) if names and b.chance(2) else constant


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


def own_ctx(b: Builder) -> str | None:
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


class GradMode:
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
    ctx = own_ctx(b)
    with GradMode(b, ctx):
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
    ctx = own_ctx(b)
    with GradMode(b, ctx):
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
    with GradMode(b, ctx):
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
    if v.inference and not b.inference_on:
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
    ops = [op for op in INPLACE if op != "setitem" and (op != "sin_" or target.is_float)]
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
            args = (target.name, number_operand(b, target, 1))
        else:
            op, args = "fill_", (target.name, number_operand(b, target, 2))
    elif op == "index_put_":
        args = (target.name, b.integer(0, target.shape[0] - 1))
    elif op in ("mul_", "fill_"):
        args = (target.name, number_operand(b, target, 2))
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
    if b.module is not None or b.scalars and not breaks:
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


def _dynamo_only(body: list[Stmt]) -> bool:
    """Whether the body branches on a tensor's metadata or reads its data with item() (only
    Dynamo guards the one and runs the other: Note [Reading a tensor's metadata] in
    _stmts_probe.py), or calls a torch.func transform (Note [torch.func transforms inside the
    function] in _stmts_func.py): such a body stays on Dynamo."""
    return any(
        s.op == "func" or s.op == "probe" and (s.args[1][0] == "if" or s.args[1][1] == "item")
        for s in body
    )


def takes_grad(body: list[Stmt]) -> bool:
    """Whether a body takes a gradient (Note [torch.autograd.grad inside the function] and
    Note [Tensor.backward() inside the function] in _stmts_extra.py)."""
    return any(s.op in ("autograd_grad", "backward") for s in body)


def _front_end(b: Builder, op: str, breaks: bool) -> None:
    """Dynamo breaks the graph at an input's metadata mutation; AOT traces it
    (stmt_metadata). A body that takes a gradient stays on Dynamo (Note [torch.autograd.grad
    inside the function] in _stmts_extra.py)."""
    if breaks or takes_grad(b.body) or _dynamo_only(b.body):
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
