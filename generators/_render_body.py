"""The function body as Python: each statement, view and output of a spec, one line each.

`render` writes the body with these; a repro.py writes its `def f` with the same ones
(`generators.source`), so the two can never disagree about what a program does.
"""

from __future__ import annotations

from ._hooks import HOOK_FUNCTIONS
from ._model import HOOK_STYLES
from ._spec import OutSpec, Stmt

__all__ = [
    "BACKWARD_LINES",
    "DTYPE_BY_NAME",
    "FUNC_BODIES",
    "FUNC_FORMS",
    "aten_line",
    "PROBE_INTS",
    "PROBE_PREDICATES",
    "ints_literal",
    "out_expr",
    "probe_expr",
    "stmt_lines",
    "view_expr",
]


def _hook_expr(stmt: Stmt, target: str) -> str:
    """The hook a register_hook statement passes, in its HOOK_STYLES style (specs before the
    style was drawn have none: by name)."""
    name = HOOK_FUNCTIONS[int(stmt.args[1]) if len(stmt.args) > 1 else 0]  # type: ignore[call-overload]
    style = HOOK_STYLES[int(stmt.args[2]) if len(stmt.args) > 2 else 0]  # type: ignore[call-overload]
    if style == "lambda":
        return f"lambda g: {name}(g)"
    if style == "closure":  # closes over the argument it is registered on
        return f"lambda g: {name}(g) if {target} is not None else g"
    return name


_UNARY = {
    "sin": "{0}.sin()",
    "cos": "{0}.cos()",
    "tanh": "{0}.tanh()",
    "sigmoid": "{0}.sigmoid()",
    "relu": "torch.relu({0})",
    "neg": "{0}.neg()",
    "abs": "{0}.abs()",
    "mul2": "{0} * 2",
    "add1": "{0} + 1",
    "logical_not": "{0}.logical_not()",
    "detach": "{0}.detach()",
    "gram": "{0} @ {0}.mT",
    "rand_like": "torch.rand_like({0})",
    "randn_like": "torch.randn_like({0})",
    "dropout": "torch.nn.functional.dropout({0}, 0.5, training=True)",
    "bernoulli": "torch.bernoulli({0}.detach().sigmoid())",
    "batchnorm": "self.bn({0})",
    # stmt_identity: the argument itself, or a copy
    "dropout_eval": "torch.nn.functional.dropout({0}, 0.5, training=False)",
    "to_same": "{0}.to({0}.dtype)",
    "contiguous": "{0}.contiguous()",
    "clone": "{0}.clone()",
}
# stmt_autograd_grad (Note [torch.autograd.grad inside the function])
_GRAD = (
    "torch.autograd.grad({0}.sum(), {1}, retain_graph=True, allow_unused=True, "
    "materialize_grads=True)[0]"
)
_BINARY = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "maximum": "torch.maximum({0}, {1})",
    "and": "{0} & {1}",
    "or": "{0} | {1}",
}
# stmt_scalar: a tensor and a Python number argument (Note [Scalar arguments])
_SCALAR = {"smul": "{0} * {1}", "sadd": "{0} + {1}", "rsub": "{1} - {0}"}
_EXPR = {**_UNARY, **_BINARY, **_SCALAR, "autograd_grad": _GRAD}
# stmt_probe (Note [Reading a tensor's metadata] in _stmts_probe.py): an int the tensor
# reports, and the arithmetic it meets; a predicate on the tensor. {0} the tensor, {1} a dim
# (a form that has one draws it). The order is the draw's: index 0 is where shrinking lands.
PROBE_INTS = {
    "size": "{0} * {0}.size({1})",
    "shape": "{0} * {0}.shape[{1}]",
    "dim": "{0} + {0}.dim()",
    "ndim": "{0} * {0}.ndim",
    "numel": "{0} + {0}.numel()",
    "len": "{0} * len({0})",
    "stride": "{0} * {0}.stride({1})",
    "storage_offset": "{0} + {0}.storage_offset()",
    "element_size": "{0} * {0}.element_size()",
    "item": "{0} * {0}.flatten()[0].item()",
}
PROBE_PREDICATES = {
    "is_contiguous": "{0}.is_contiguous()",
    "requires_grad": "{0}.requires_grad",
    "is_leaf": "{0}.is_leaf",
    "grad_fn": "{0}.grad_fn is None",
    "grad": "{0}.grad is None",
    "is_floating_point": "{0}.is_floating_point()",
    "dtype": "{0}.dtype == torch.float32",
    "device": '{0}.device.type == "cpu"',
    "is_inference": "{0}.is_inference()",
    "size_gt": "{0}.size({1}) > 2",
    "numel_gt": "{0}.numel() > 4",
    "layout": "{0}.layout == torch.strided",
}
# stmt_func (Note [torch.func transforms inside the function] in _stmts_func.py): a transform
# of {0}, whose body is {1} (an expression of r, the transform's own argument). The order is
# the draw's: index 0 is where shrinking lands.
FUNC_FORMS = {
    "vmap": "torch.func.vmap(lambda r: {1})({0})",
    "vmap_dim1": "torch.func.vmap(lambda r: {1}, in_dims=1, out_dims=1)({0})",
    "vmap_inplace": "torch.func.vmap(lambda r: r.clone().mul_(2))({0})",
    "grad": "torch.func.grad(lambda r: ({1} * r).sum())({0})",
    "grad_closure": "torch.func.grad(lambda r: ({1} * {0}).sum())({0})",
    "vmap_grad": "torch.func.vmap(torch.func.grad(lambda r: ({1} * r).sum()))({0})",
    "jvp": "torch.func.jvp(lambda r: {1}, ({0},), (torch.ones_like({0}),))[1]",
}
FUNC_BODIES = {"mul2": "r * 2", "sin": "r.sin()", "exp": "r.exp()", "tanh": "r.tanh()"}
# stmt_backward (Note [Tensor.backward() inside the function] in _stmts_extra.py): {0} the
# value, {1} the one leaf of the "inputs" form.
BACKWARD_LINES = {
    "sum": "{0}.sum().backward(retain_graph=True)",
    "gradient": "{0}.backward(torch.ones_like({0}), retain_graph=True)",
    "inputs": "{0}.sum().backward(inputs=[{1}], retain_graph=True)",
    "helper": "(lambda t: t.sum().backward(retain_graph=True))({0})",
}
# In-place data and metadata ops, rendered as `a0.op(*rest)`.
_METHODS = {
    "add_",
    "mul_",
    "copy_",
    "fill_",
    "zero_",
    "sin_",
    "t_",
    "transpose_",
    "unsqueeze_",
    "squeeze_",
    "as_strided_",
    "set_",
    "resize_",
}
_CTX = {
    "no_grad": "torch.no_grad()",
    "inference_mode": "torch.inference_mode()",
    "enable_grad": "torch.enable_grad()",
}
DTYPE_BY_NAME = {
    d: f"torch.{d}" for d in ("float32", "float64", "float16", "bfloat16", "int64", "bool")
}


def _ref(name: str) -> str:
    return f"self.{name}" if name[0] in "pb" else name


def ints_literal(x: object) -> str:
    """A tuple literal of ints from a tuple or (JSON) list."""
    assert isinstance(x, (tuple, list))
    return repr(tuple(int(i) for i in x))


def view_expr(src: str, op: str, args: tuple[object, ...]) -> str:
    """Python for one view op applied to the expression `src`."""
    if op == "slice":
        d, start, stop, step = args
        return f"{src}[{':, ' * int(d)}{start}:{stop}:{step}]"  # type: ignore[call-overload]
    if op == "select":
        return f"{src}.select({args[0]}, {args[1]})"
    if op == "transpose":
        return f"{src}.transpose({args[0]}, {args[1]})"
    if op in ("unsqueeze", "squeeze"):
        return f"{src}.{op}({args[0]})"
    if op == "expand":
        return f"{src}.expand({tuple(args)!r})"
    if op == "diagonal":
        return f"{src}.diagonal()"
    if op == "reshape":
        return f"{src}.view({tuple(args)!r})"
    if op == "as_strided":
        size, stride, offset = args
        return f"{src}.as_strided({ints_literal(size)}, {ints_literal(stride)}, {offset})"
    if op == "unfold":
        return f"{src}.unfold({args[0]}, {args[1]}, {args[2]})"
    if op == "view_dtype":
        return f"{src}.view({DTYPE_BY_NAME[str(args[0])]})"
    raise ValueError(f"unknown view op {op!r}")


def _aten_arg(x: object, device: str) -> str:
    """One argument of an aten statement (Note [An aten statement] in _stmts_aten.py)."""
    if isinstance(x, str):
        return _ref(x)
    assert isinstance(x, (tuple, list)), x
    tag = x[0]
    if tag == "t":  # a constant: the values the vocabulary's derivation ran with
        shape = ints_literal(x[2])
        n = 1
        for s in x[2]:
            n *= int(s)
        return (
            f"torch.linspace(-1, 1, {n}, device={device}).reshape({shape})"
            f".to({DTYPE_BY_NAME[str(x[1])]})"
        )
    if tag == "d":
        return f"torch.tensor({x[2]!r}, dtype={DTYPE_BY_NAME[str(x[1])]}, device={device})"
    if tag == "dtype":
        return DTYPE_BY_NAME[str(x[1])]
    if tag == "seq":
        return "[" + ", ".join(_aten_arg(v, device) for v in x[1]) + "]"  # type: ignore[union-attr]
    if tag == "l":
        value = x[1]
        return repr(list(value)) if isinstance(value, (list, tuple)) else repr(value)
    raise ValueError(f"unknown aten argument {x!r}")


def probe_expr(src: str, probe: tuple[object, ...] | list[object]) -> str:
    """Python for a metadata read of `src` (stmt_probe): ("int", form[, dim]) or ("if",
    predicate[, dim])."""
    kind, form, *dim = probe
    if kind == "int":
        return PROBE_INTS[str(form)].format(src, *dim)
    if kind == "if":
        return f"{src} * 2 if {PROBE_PREDICATES[str(form)].format(src, *dim)} else {src} + 1"
    raise ValueError(f"unknown probe {probe!r}")


def aten_line(stmt: Stmt) -> str:
    """`v1 = torch.ops.aten.narrow.default(a0, 0, 1, 2)`, or in the statement's spelling
    `v1 = a0.narrow(0, 1, 2)`, `v1 = torch.narrow(a0, 0, 1, 2)` (Note [An aten statement])."""
    name, *rest = stmt.args
    device = next(f"{_ref(a)}.device" for a in rest if isinstance(a, str))
    args, item, spelling = [], "", "aten"
    for a in rest:
        if isinstance(a, (tuple, list)) and a[0] == "kw" and a[1] == "device":
            args.append(f"device={device}")  # the derivation's "cpu": the program's device
        elif isinstance(a, (tuple, list)) and a[0] == "kw":
            args.append(f"{a[1]}={_aten_arg(a[2], device)}")
        elif isinstance(a, (tuple, list)) and a[0] == "item":
            item = f"[{int(a[1])}]"
        elif isinstance(a, (tuple, list)) and a[0] == "spelling":
            spelling = str(a[1])
        else:
            args.append(_aten_arg(a, device))
    base = str(name).split(".")[1]
    if spelling == "method":  # self is the first argument (Recipe.args starts with it)
        call = f"{args[0]}.{base}({', '.join(args[1:])}){item}"
    elif spelling == "function":
        call = f"torch.{base}({', '.join(args)}){item}"
    elif spelling == "aten":
        call = f"torch.ops.{name}({', '.join(args)}){item}"
    else:
        raise ValueError(f"unknown aten spelling {spelling!r}")
    return f"{', '.join(stmt.outs)} = {call}" if stmt.outs else call


def stmt_lines(stmt: Stmt) -> list[str]:
    a = [(_ref(x) if isinstance(x, str) else repr(x)) for x in stmt.args]
    op = stmt.op
    lhs = ", ".join(stmt.outs)
    if op == "aten":
        line = aten_line(stmt)
    elif op in _EXPR:
        line = f"{lhs} = {_EXPR[op].format(*a)}"
    elif op == "sum":
        line = f"{lhs} = {a[0]}.sum({', '.join(a[1:])})"
    elif op == "to":
        line = f"{lhs} = {a[0]}.to({DTYPE_BY_NAME[str(stmt.args[1])]})"
    elif op == "view":
        src, vop = a[0], str(stmt.args[1])
        line = f"{lhs} = {view_expr(src, vop, stmt.args[2:])}"
    elif op == "index_put_":
        at = f"device={a[0]}.device"
        line = (
            f"{a[0]}.index_put_((torch.tensor([{a[1]}], {at}),), "
            f"torch.tensor(2, dtype={a[0]}.dtype, {at}))"
        )
    elif op == "probe":
        line = f"{lhs} = {probe_expr(a[0], stmt.args[1])}"
    elif op == "func":
        form, body = (str(x) for x in stmt.args[1])  # type: ignore[union-attr]
        line = f"{lhs} = {FUNC_FORMS[form].format(a[0], FUNC_BODIES[body])}"
    elif op == "setitem":
        line = f"{a[0]}[{a[1]}] = {a[2]}"
    elif op == "backward":
        line = BACKWARD_LINES[str(stmt.args[1])].format(a[0], *a[2:])
    elif op in _METHODS:
        line = f"{a[0]}.{op}({', '.join(a[1:])})"
    elif op == "data_mul_":  # stmt_data: a write autograd does not see
        line = f"{a[0]}.data.mul_(2)"
    elif op == "data_assign":
        line = f"{a[0]}.data = {a[0]}.detach() * 2"
    elif op == "set_grad_enabled":
        line = f"torch.set_grad_enabled({a[0]})"
    elif op == "graph_break":
        line = "torch._dynamo.graph_break()"
    elif op == "print":
        line = 'print("pyfy-fuzz graph break")'
    elif op == "aten_print":
        line = 'torch.ops.aten._print("pyfy-fuzz effect")'
    elif op == "print_hop":
        line = f'torch._higher_order_ops.print("pyfy-fuzz {{}}", {a[0]})'
    elif op == "effect_op":
        line = f"torch.ops.pyfy_gen.record({a[0]})"
    elif op == "apply_fn":
        line = f"{lhs} = Fn{stmt.args[0]}.apply({', '.join(a[1:])})"
    elif op == "register_hook":
        line = f"{a[0]}.register_hook({_hook_expr(stmt, a[0])})"
    elif op == "post_accumulate_hook":
        line = f"{a[0]}.register_post_accumulate_grad_hook(_log_accumulated)"
    else:
        raise ValueError(f"unknown statement op {op!r}")
    if stmt.ctx is None:
        return [line]
    return [f"with {_CTX[stmt.ctx]}:", f"    {line}"]


def out_expr(out: OutSpec) -> str:
    if out.kind == "ref":
        return _ref(out.ref)
    if out.kind == "int":
        return repr(out.value)
    if out.kind == "none":
        return "None"
    if out.kind == "size":
        return f"{_ref(out.ref)}.shape[{out.value}]"
    if out.kind == "tuple":
        inner = ", ".join(out_expr(o) for o in out.items)
        return f"({inner},)" if len(out.items) == 1 else f"({inner})"
    raise ValueError(f"unknown output kind {out.kind!r}")
