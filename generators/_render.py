"""render(spec) -> the source of a standalone module that needs only torch.

The module defines `make_fn()` (the function, or a fresh nn.Module), `make_inputs(seed,
variant)` (arguments with the spec's aliasing structure, deterministic per seed), `PLAN`, `SPEC`
and `DEVICE`. Running it as a script calls the program eagerly as the plan says and prints the
results, so a saved case is readable and runnable without pyfy-fuzz.

Every tensor the module creates lives on `DEVICE`. Random values are drawn from a CPU generator
and then moved, so a program's inputs, parameters and tangents hold the same values on every
device and a case found on one device replays on another.
"""

from __future__ import annotations

import re
from dataclasses import asdict

from pyfy_fuzz.schema.config import call_context

from ._model import HOOK_STYLES, root_geometry
from ._relations import relations_source
from ._saved_hooks import saved_hooks_source
from ._spec import (
    CALL_RELATIONS,
    FunctionSpec,
    InputSpec,
    ModuleSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
    numel,
    variant_tokens,
)

_PRELUDE = '''
def _root(g, shape, dtype, layout, grad, subclass=None, variant=None, first=True):
    """A root tensor: its own storage, the layout asked for, and its grad kind; a variant
    call's root grows ("shape"; "relation": the first root only) or changes dtype."""
    tokens = variant.split("+") if variant else []
    if "shape" in tokens or ("relation" in tokens and first):
        shape = tuple(n + 1 for n in shape)
    if "dtype" in tokens and dtype.is_floating_point:  # float32 <-> float64, halves -> float32
        dtype = torch.float64 if dtype == torch.float32 else torch.float32
    n = 1
    for s in shape:
        n *= s
    if layout == "transposed":
        storage_shape = shape[:-2] + (shape[-1], shape[-2])
    elif layout == "strided":
        storage_shape = shape[:-1] + (2 * shape[-1],)
    elif layout == "expanded":
        storage_shape = (1,) + shape[1:]
    elif layout == "offset":
        storage_shape = (n + 3,)
    else:
        storage_shape = shape
    if dtype.is_floating_point:
        s = torch.randn(storage_shape, generator=g).to(dtype)
    elif dtype == torch.bool:
        s = torch.randint(0, 2, storage_shape, generator=g).bool()
    else:
        s = torch.randint(-4, 5, storage_shape, generator=g).to(dtype)
    s = s.to(DEVICE)  # the storage moves, before autograd and views are layered on it
    if grad == "nonleaf":
        s = s.requires_grad_().clone()
    if layout == "transposed":
        t = s.transpose(-1, -2)
    elif layout == "strided":
        t = s[..., ::2]
    elif layout == "expanded":
        t = s.expand(shape)
    elif layout == "offset":
        t = s[3:].view(shape)
    else:
        t = s
    if grad != "nonleaf":
        t = t.detach()
    if subclass == "two_tensor":
        t = TwoTensor(t, t * 2)
    elif subclass == "nested_two_tensor":
        t = TwoTensor(TwoTensor(t, t * 2), TwoTensor(t * 3, t + 1))
    elif subclass == "mirror":
        t = MirrorTensor(t, "m")
    if grad == "leaf":
        t.requires_grad_()
    return t


def _set_shared(root, size, stride, offset):
    """A tensor over root's storage made with set_: shares memory, has no _base."""
    t = torch.empty(0, dtype=root.dtype, device=root.device)
    t.set_(root.untyped_storage(), offset, size, stride)
    return t


def _leaves(fn, args):
    """Tensors whose .grad a backward fills: arguments requiring grad (a non-leaf one's grad is
    retained: drive calls retain_grad), then parameters."""
    found = []
    params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
    for t in [*torch.utils._pytree.tree_leaves(args), *params]:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if not any(t is f for f in found):
                found.append(t)
    return found


def _unretained(t, args):
    return any(t is args[k] for k in NO_RETAIN if k < len(args))


def _grad_of(leaf):
    """A copy of leaf.grad; None for a non-leaf whose grad was not retained (reading it would
    only warn)."""
    if not (leaf.is_leaf or leaf.retains_grad) or leaf.grad is None:
        return None
    return leaf.grad.clone()


def drive(call, args, seed=0, module=None, variant=None):
    """One call as PLAN says: seed, call, then backward through the outputs requiring grad.

    `module` is the nn.Module whose parameters count as leaves (defaults to `call`); a variant
    call's context (no_grad, inference_mode) replaces the call site's. Returns
    {"out", "grad_enabled_after", "grads", "second"}: grads of the leaves after the first
    backward (None without one); after the second backward, its grads or the exception it
    raised. Errors in the call or the first backward propagate; grad mode is restored.
    """
    leaves = _leaves(call if module is None else module, args)
    again = variant is not None and "again" in variant.split("+")
    for leaf in leaves:
        if not again:  # "again": the call before's arguments, their gradients accumulate
            leaf.grad = None
        if PLAN["backward"] and not leaf.is_leaf and not _unretained(leaf, args):
            leaf.retain_grad()  # only a backward reads the .grad kept
    mark_inputs(args)
    if PLAN["grad_fn_hooks"]:
        _hook_grad_fns(args)
    if PLAN["saved_tensor_hooks"]:
        with torch.autograd.graph.saved_tensors_hooks(_pack, _unpack):
            return _drive(call, args, seed, leaves, variant)
    return _drive(call, args, seed, leaves, variant)


def mark_inputs(args):
    """The plan's mark_dynamic knob: dim 0 of each tensor argument of size >= 2 is marked
    dynamic (maybe_mark_dynamic: torch may still specialise it), before every call."""
    if "mark_dynamic" not in PLAN["config"]:
        return
    for a in torch.utils._pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor) and a.dim() and a.shape[0] >= 2:
            torch._dynamo.maybe_mark_dynamic(a, 0)


def compile_site():
    """What is active around a call when torch.compile compiles at it: the plan's saved-tensor
    hooks (drive wraps the call and its backward in them) and the call site. A compile made
    apart from the drive (pythonify's capture) is made inside this, so it sees what the stock
    compile sees at its first call."""
    stack = contextlib.ExitStack()
    if PLAN["saved_tensor_hooks"]:
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(_pack, _unpack))
    stack.enter_context(call_site())
    return stack


def call_site(variant=None):
    """The call-site context a variant call names, else the plan's configuration's
    (CALL_CONTEXT: no_grad, inference_mode or autocast), around the call only: backward runs
    outside it, as a training step's would."""
    context = variant_context(variant) or CALL_CONTEXT
    if context == "no_grad":
        return torch.no_grad()
    if context == "inference_mode":
        return torch.inference_mode()
    if context == "autocast":
        return torch.autocast(torch.device(DEVICE).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _drive(call, args, seed, leaves, variant=None):
    torch.manual_seed(seed)
    try:
        with call_site(variant):
            out = call(*args)
        result = {"out": out, "grad_enabled_after": torch.is_grad_enabled(), "grads": None, "second": None}
    finally:
        torch.set_grad_enabled(True)
    diff = [o for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not (PLAN["backward"] and diff):
        return result
    g = torch.Generator().manual_seed(1000 + seed)
    terms = []
    for o in diff:
        if PLAN["tangents"] == "ones":
            t = torch.ones(o.shape, dtype=o.dtype, device=o.device)
        else:
            t = torch.randn(o.shape, generator=g).to(o.device, o.dtype)
        terms.append((o * t).sum())
    loss = sum(terms)
    loss.backward(retain_graph=PLAN["second_backward"] == "retain")
    result["grads"] = [_grad_of(leaf) for leaf in leaves]
    if PLAN["second_backward"]:
        try:
            loss.backward()
            result["second"] = [_grad_of(leaf) for leaf in leaves]
        except RuntimeError as exc:
            result["second"] = exc
    return result


def _unalias(t):
    """A copy with the same values and autograd role, sharing nothing."""
    c = t.detach().clone()
    return c.requires_grad_() if t.requires_grad else c
'''

_TWO_TENSOR = "from torch.testing._internal.two_tensor import TwoTensor\n"

MIRROR = '''

class MirrorTensor(torch.Tensor):
    """A traceable wrapper subclass around one inner tensor with a constant tag."""

    @staticmethod
    def __new__(cls, inner, tag, outer_size=None, outer_stride=None):
        # the outer geometry torch asks for when it rebuilds the subclass (__tensor_unflatten__)
        return torch.Tensor._make_wrapper_subclass(
            cls, outer_size if outer_size is not None else inner.shape,
            strides=outer_stride if outer_stride is not None else inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype, device=inner.device, requires_grad=inner.requires_grad,
        )

    def __init__(self, inner, tag, outer_size=None, outer_stride=None):
        self.inner = inner
        self.tag = tag

    def __repr__(self):
        return f"MirrorTensor({self.inner!r}, {self.tag!r})"

    def __tensor_flatten__(self):
        return ["inner"], self.tag

    @staticmethod
    def __tensor_unflatten__(inner_tensors, ctx, outer_size, outer_stride):
        return MirrorTensor(inner_tensors["inner"], ctx, outer_size, outer_stride)

    @classmethod
    def __torch_dispatch__(cls, func, types, args, kwargs=None):
        kwargs = kwargs or {}
        tag = next(a.tag for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, MirrorTensor))
        unwrap = lambda t: t.inner if isinstance(t, MirrorTensor) else t
        out = func(*torch.utils._pytree.tree_map(unwrap, args), **torch.utils._pytree.tree_map(unwrap, kwargs))
        wrapped = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: MirrorTensor(t, tag), out)
        return return_and_correct_aliasing(func, args, kwargs, wrapped)
'''

_EFFECT_OP = '''

def _register_effect_op():
    """pyfy_gen::record, an ORDERED effectful custom op (registered once per process)."""
    import sys
    import types
    log = sys.modules.setdefault("pyfy_gen_effect_log", types.ModuleType("pyfy_gen_effect_log"))
    if not hasattr(log, "entries"):
        log.entries = []
    try:
        torch.ops.pyfy_gen.record
        return
    except (AttributeError, RuntimeError):
        pass

    @torch.library.custom_op("pyfy_gen::record", mutates_args=())
    def record(x: torch.Tensor) -> None:
        log.entries.append(float(x.detach().float().sum()))

    @record.register_fake
    def _(x):
        return None

    from torch._library.effects import EffectType
    torch.library._register_effectful_op("pyfy_gen::record", EffectType.ORDERED)


_register_effect_op()
'''

# Note [Arguments whose grad is not retained]
# ---------------------------------------------------------------------------------------------
# drive() calls retain_grad on each non-leaf argument requiring grad before a call that runs
# backward, so that their gradients are compared too. Eager (torch 2.13) trips an internal
# assert when such an argument gets an in-place metadata change (t_, transpose_, ...) and then
# any other in-place op: the retain-grad hook stays on the old grad_fn ("out != nullptr",
# variable.cpp; reported once, triage of 2026-11-26, RG1). Eager is the reference, so a
# program that does that would compare torch.compile against eager's crash, hiding whatever
# torch.compile does (the campaign merged D2 into it). Those arguments are not retained.
METADATA_OPS = ("t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_", "set_", "resize_")


def no_retain(spec: ProgramSpec) -> tuple[int, ...]:
    """The arguments (by position) the body changes in place with a metadata op."""
    named = {str(s.args[0]) for s in spec.body if s.op in METADATA_OPS and s.args}
    return tuple(k for k in range(len(spec.inputs)) if f"a{k}" in named)


HOOKS = """

HOOK_LOG = []  # the hooks that ran, in order: pyfy-fuzz compares it between subjects


def _double_grad(grad):
    return grad * 2


def _log_grad_a(grad):
    HOOK_LOG.append(("a", tuple(grad.shape)))


def _log_grad_b(grad):
    HOOK_LOG.append(("b", tuple(grad.shape)))


def _log_accumulated(param):
    HOOK_LOG.append(("accumulated", tuple(param.grad.shape)))


def _log_node_pre(grad_outputs):
    HOOK_LOG.append(("node pre", len(grad_outputs)))


def _log_node(grad_inputs, grad_outputs):
    HOOK_LOG.append(("node", len(grad_inputs), len(grad_outputs)))


def _hook_grad_fns(args):
    # a logging hook and pre-hook on the grad_fn of each non-leaf tensor argument
    for a in torch.utils._pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor) and a.grad_fn is not None:
            a.grad_fn.register_prehook(_log_node_pre)
            a.grad_fn.register_hook(_log_node)


def _module_hook(module, grad_input, grad_output):
    HOOK_LOG.append(("module", len(grad_input), len(grad_output)))
    return tuple(None if g is None else g * 3 for g in grad_input)


def _module_pre_hook(module, grad_output):
    HOOK_LOG.append(("module pre", len(grad_output)))
    return None
"""

# register_hook's second argument (an index; none: 0) -> the hook (HOOKS): one that changes
# the gradient, two that only log (their order is observed).
HOOK_FUNCTIONS = ("_double_grad", "_log_grad_a", "_log_grad_b")


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
_BINARY = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "maximum": "torch.maximum({0}, {1})",
    "and": "{0} & {1}",
    "or": "{0} | {1}",
}
_EXPR = {**_UNARY, **_BINARY}
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


def stmt_lines(stmt: Stmt) -> list[str]:
    a = [(_ref(x) if isinstance(x, str) else repr(x)) for x in stmt.args]
    op = stmt.op
    lhs = ", ".join(stmt.outs)
    if op in _EXPR:
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


# A custom Function's forward lines and its exact gradient, by FunctionSpec.body.
_FN_FORWARD = {
    "scale": ["y = x * 3"],
    "sin": ["y = x.sin()"],
    "dirty": ["x.mul_(3)", "y = x"],
    "view": ["y = x.view_as(x)"],
    "bw_mutate": ["y = x * 3"],
}
_FN_GRAD = {
    "scale": "g * 3",
    "sin": "g * x.cos()",
    "dirty": "g * 3",
    "view": "g",
    "bw_mutate": "g * 3",
}


# Two tensor inputs (FunctionSpec.arity 2): forward lines and each input's exact gradient.
_FN2_FORWARD = {"scale": ["y = x * 3 + w * 2"], "sin": ["y = x.sin() * w"]}
_FN2_GRAD = {"scale": ("g * 3", "g * 2"), "sin": ("g * x.cos() * w", "g * x.sin()")}


def function_source(k: int, fn: FunctionSpec) -> str:
    """A custom autograd.Function whose backward is the exact derivative of its forward.

    Long: one builder for every combination of the FunctionSpec flags (style, body, arity,
    outputs, ctx features, backward effects); split, the flags' interplay would be spread
    over several functions that each need all of them."""
    two = fn.arity == 2
    fwd = _FN2_FORWARD[fn.body] if two else _FN_FORWARD[fn.body]
    grad = _FN_GRAD[fn.body]
    params = "x, w" if two else "x"
    outs = "y, y.detach() * 0" if fn.non_differentiable else "y"
    if fn.two_outputs:
        outs = "y, y * 2"
    ctx_lines = []
    if fn.body in ("sin", "bw_mutate"):
        ctx_lines.append("ctx.save_for_backward(x, w)" if two else "ctx.save_for_backward(x)")
    if fn.body == "dirty":
        ctx_lines.append("ctx.mark_dirty(x)")
    if not fn.materialize_grads:
        ctx_lines.append("ctx.set_materialize_grads(False)")
    lines = [f"class Fn{k}(torch.autograd.Function):"]
    if fn.style == "ctx":
        lines += ["    @staticmethod", f"    def forward(ctx, {params}):"]
        lines += [f"        {s}" for s in fwd]
        lines += [f"        {s}" for s in ctx_lines]
        if fn.non_differentiable:
            lines += [
                "        extra = y.detach() * 0",
                "        ctx.mark_non_differentiable(extra)",
                "        return y, extra",
            ]
        else:
            lines.append(f"        return {outs}")
    else:
        lines += ["    @staticmethod", f"    def forward({params}):"]
        lines += [f"        {s}" for s in fwd]
        lines.append(f"        return {outs}")
        lines += [
            "",
            "    @staticmethod",
            "    def setup_context(ctx, inputs, output):",
            f"        ({params},) = inputs" if not two else "        x, w = inputs",
        ]
        lines += [f"        {s}" for s in ctx_lines]
        if fn.non_differentiable:
            lines.append("        ctx.mark_non_differentiable(output[1])")
        if not ctx_lines and not fn.non_differentiable:
            lines.append("        pass")
    lines += ["", "    @staticmethod"]
    if fn.once_differentiable:
        lines.append("    @once_differentiable")
    bw_args = "ctx, g, g_extra" if fn.non_differentiable or fn.two_outputs else "ctx, g"
    lines.append(f"    def backward({bw_args}):")
    if fn.backward_print:
        lines.append('        torch.ops.aten._print("pyfy-fuzz backward")')
    if fn.two_outputs:  # y * 2: its gradient reaches the input twice over
        lines += [
            "        if g_extra is not None:",
            "            g = g_extra * 2 if g is None else g + g_extra * 2",
        ]
    none = "None, None" if two else "None"
    if not fn.materialize_grads:
        lines += ["        if g is None:", f"            return {none}"]
    if fn.backward_record:
        lines.append("        torch.ops.pyfy_gen.record(g)  # an effectful custom op")
    if fn.body in ("sin", "bw_mutate"):
        lines.append(
            "        x, w = ctx.saved_tensors" if two else "        (x,) = ctx.saved_tensors"
        )
    if fn.body == "bw_mutate":  # after unpacking: the saved version is checked there
        lines.append("        x.mul_(2)  # a forward input, mutated during the backward")
    if two:
        gx, gw = _FN2_GRAD[fn.body]
        lines += [
            f"        gx = {gx} if ctx.needs_input_grad[0] else None",
            f"        gw = {gw} if ctx.needs_input_grad[1] else None",
            "        return gx, gw",
        ]
    else:
        lines.append(f"        return {grad}")
    return "\n".join(lines)


def _root_expr(k: int, r: RootSpec) -> str:
    sub = repr(r.subclass)
    # The "relation" variant grows the first root only: sizes it shared with other roots
    # (one symbol under dynamic shapes) now differ.
    first = "" if k == 0 else ", first=False"
    return (
        f"r{k} = _root(g, {tuple(r.shape)!r}, {DTYPE_BY_NAME[r.dtype]}, {r.layout!r}, {r.grad!r}, "
        f"{sub}, variant{first})"
    )


def _input_expr(i: int, inp: InputSpec) -> str:
    if inp.kind == "root":
        return f"a{i} = r{inp.root}"
    if inp.kind == "view":
        expr = f"r{inp.root}"
        for step in inp.views:
            expr = view_expr(expr, step.op, step.args)
        return f"a{i} = {expr}"
    if inp.kind == "dup":
        return f"a{i} = a{inp.of}"
    if inp.kind == "set_shared":
        size, stride, offset = inp.views[0].args
        return f"a{i} = _set_shared(r{inp.root}, {ints_literal(size)}, {ints_literal(stride)}, {offset})"
    if inp.kind == "int":
        return f"a{i} = {inp.value}"
    raise ValueError(f"unknown input kind {inp.kind!r}")


_FLOATS = ("float32", "float64", "float16", "bfloat16")


def variant_changes(spec: ProgramSpec, variant: str | None = None) -> bool:
    """Whether a variant call (the plan's, or `variant`) gets other inputs or another context
    than call 0 (what `_root`, `make_inputs` and `relate` do with it): some relationship it
    names applies to the program (Note [Call relationships]). A variant that changes nothing
    tests no guard; it repeats call 0."""
    variant = spec.plan.variant if variant is None else variant
    tokens = variant_tokens(variant)
    return _builds(spec, tokens) and any(_token_changes(spec, t) for t in tokens)


def effective_variant(spec: ProgramSpec, variant: str | None) -> str | None:
    """`variant` less the relationships that change nothing for this program (a `leaf` where
    no argument requires grad): what the call really changes, which names its bug (Note
    [Variant-call identity] in oracles/guards.py: an `aliasing+leaf` call that only changes
    aliasing ran on the graph compiled for other aliasing, like an `aliasing` one). `again`
    stays: it passes the call before's very tensors whatever else it changes."""
    tokens = variant_tokens(variant)
    kept = [t for t in tokens if t == "again" or _token_changes(spec, t)]
    return "+".join(kept) if kept else variant


def _builds(spec: ProgramSpec, tokens: tuple[str, ...]) -> bool:
    """Whether make_inputs can build the call: a grown root keeps its slices, selects and
    transposes, but a reshape or expand to call 0's sizes no longer fits it, nor a
    view(dtype) a root of another dtype (a plan whose later call cannot be built is drawn
    without that call, never run to fail)."""
    grown = {i.root for i in spec.inputs if i.kind != "int" and "shape" in tokens}
    if "relation" in tokens:
        grown.add(0)
    steps = [(i.root, s.op) for i in spec.inputs if i.kind == "view" for s in i.views]
    if "dtype" in tokens and any(op == "view_dtype" for _, op in steps):
        return False  # a root of another dtype has another element size than its partner
    return not any(root in grown and op in ("reshape", "expand") for root, op in steps)


def _token_changes(spec: ProgramSpec, token: str) -> bool:
    """Long: one short rule per relationship token, each mirroring what `_root`, make_inputs'
    aliasing branch or `relate` does with the program's arguments; split, each rule would sit
    apart from the others it must stay consistent with."""
    tensors = [i for i in spec.inputs if i.kind != "int"]
    owned = [i for i in tensors if i.kind != "dup"]
    plain = [  # arguments `relate` changes: plain tensors (no subclass)
        i for i in owned if i.kind in ("root", "view") and spec.roots[i.root].subclass is None
    ]
    if token == "dtype":
        return any(spec.roots[i.root].dtype in _FLOATS for i in owned)
    if token == "aliasing":
        return len(tensors) >= 2 or any(i.kind in ("view", "set_shared") for i in tensors)
    if token == "shape":  # a root passed itself grows (views and set_ keep their sizes)
        return any(spec.roots[i.root].shape for i in owned if i.kind == "root")
    if token == "relation":  # the first root grows; another passed itself shares a size
        used = {i.root for i in owned if i.kind == "root"}
        first = set(spec.roots[0].shape) if 0 in used else set()
        return any(first & set(spec.roots[k].shape) for k in used if k != 0)

    def alone(i: InputSpec) -> bool:  # a root passed itself, sharing memory with no other
        return (
            i.kind == "root"
            and sum(j.kind != "int" and j.root == i.root for j in owned) == 1
            and not any(j.kind == "dup" and spec.inputs[j.of] is i for j in spec.inputs)
        )

    if token == "overlap":  # two roots passed alone, needing no grad, of one dtype
        once = [
            i
            for i in plain
            if alone(i)
            and spec.roots[i.root].grad == "none"
            and numel(spec.roots[i.root].shape) >= 2
        ]
        dtypes = [spec.roots[i.root].dtype for i in once]
        return len(dtypes) != len(set(dtypes))
    if token == "share":  # two roots passed alone, of one shape and dtype
        kinds = [
            (spec.roots[i.root].shape, spec.roots[i.root].dtype)
            for i in plain
            if alone(i) and numel(spec.roots[i.root].shape) >= 1
        ]
        return len(kinds) != len(set(kinds))
    if token == "shift":  # two plain arguments of one root (a dup is the same tensor)
        roots = [
            i.root if i.kind != "dup" else spec.inputs[i.of].root
            for i in tensors
            if spec.roots[i.root if i.kind != "dup" else spec.inputs[i.of].root].subclass is None
        ]
        return any(roots.count(r) >= 2 and numel(spec.roots[r].shape) >= 1 for r in roots)
    if token == "nonleaf":
        return any(i.kind == "root" and spec.roots[i.root].grad == "leaf" for i in plain)
    if token in ("leaf", "no_requires_grad"):
        grads = {"leaf": ("nonleaf",), "no_requires_grad": ("leaf", "nonleaf")}[token]
        return any(
            spec.roots[i.root].grad in grads
            or (i.kind == "view" and spec.roots[i.root].grad != "none")
            for i in plain
        )
    if token == "strided":
        # A root laid out strided already has to_strided's geometry (it is "contiguous" when
        # its last dimension has size 1): nothing changes.
        return any(
            alone(i)
            and root_geometry(spec.roots[i.root])[0].is_contiguous()
            and spec.roots[i.root].layout != "strided"
            and spec.roots[i.root].shape
            and spec.roots[i.root].grad != "nonleaf"
            for i in plain
        )
    if token in ("no_grad", "inference_mode"):
        return call_context(spec.plan.config) != token
    if token == "again":  # accumulated gradients show only where a backward reaches a leaf
        leaves = any(spec.roots[i.root].grad == "leaf" for i in owned)
        return spec.plan.backward and (leaves or bool(spec.module and spec.module.params))
    raise ValueError(f"unknown relationship {token!r}; expected one of {CALL_RELATIONS}")


def _make_inputs_source(spec: ProgramSpec) -> str:
    lines = [
        "_LAST_ARGS = []",
        "",
        "",
        "def make_inputs(seed=0, variant=None):",
        '    """The arguments for one call; a `variant` call\'s relationships to call 0 differ'
        ' (shape, dtype, aliasing, ...)."""',
        '    if variant and "again" in variant.split("+") and _LAST_ARGS:',
        "        return _LAST_ARGS[0]",
        "    g = torch.Generator().manual_seed(seed)",
    ]
    lines += [f"    {_root_expr(k, r)}" for k, r in enumerate(spec.roots)]
    lines += [f"    {_input_expr(i, inp)}" for i, inp in enumerate(spec.inputs)]
    names = ", ".join(f"a{i}" for i in range(len(spec.inputs)))
    lines.append(f"    args = ({names}{',' if len(spec.inputs) == 1 else ''})")
    aliased = [i for i, inp in enumerate(spec.inputs) if inp.kind in ("view", "dup", "set_shared")]
    tensor_ins = [i for i, inp in enumerate(spec.inputs) if inp.kind != "int"]
    lines.append('    if variant and "aliasing" in variant.split("+"):')
    if aliased:
        lines.append(
            f"        args = tuple(_unalias(a) if i in {tuple(aliased)!r} else a for i, a in enumerate(args))"
        )
    elif len(tensor_ins) >= 2:
        first, last = tensor_ins[0], tensor_ins[-1]
        # Prefer two inputs with identical roots (a twin): passed as one tensor, only the
        # aliasing guards can tell.
        plain = [i for i in tensor_ins if spec.inputs[i].kind == "root"]
        twins = [
            (i, j)
            for i in plain
            for j in plain
            if i < j and spec.roots[spec.inputs[i].root] == spec.roots[spec.inputs[j].root]
        ]
        if twins:
            first, last = twins[0]
        lines.append(
            f"        args = tuple(args[{first}] if i == {last} else a for i, a in enumerate(args))"
        )
    else:
        lines.append("        pass")
    lines.append("    args = relate(args, variant)")
    lines.append('    _LAST_ARGS[:] = [args]  # what an "again" call passes once more')
    lines.append("    return args")
    return "\n".join(lines)


def module_init(m: ModuleSpec) -> list[str]:
    lines = [
        "    def __init__(self):",
        "        super().__init__()",
        "        g = torch.Generator().manual_seed(1234)",
    ]
    for i, shape in enumerate(m.params):
        lines.append(
            f"        self.p{i} = torch.nn.Parameter("
            f"torch.randn({tuple(shape)!r}, generator=g).to(DEVICE))"
        )
    if m.tied:
        lines.append(f"        self.p{len(m.params)} = self.p0  # tied")
    for i, shape in enumerate(m.buffers):
        lines.append(
            f'        self.register_buffer("b{i}", '
            f"torch.randn({tuple(shape)!r}, generator=g).to(DEVICE))"
        )
    if m.batchnorm is not None:
        lines.append(f"        self.bn = torch.nn.BatchNorm1d({m.batchnorm}, device=DEVICE)")
    return lines


def _fn_source(spec: ProgramSpec) -> str:
    params = ", ".join(f"a{i}" for i in range(len(spec.inputs)))
    body: list[str] = []
    for stmt in spec.body:
        body += stmt_lines(stmt)
    outs = [out_expr(o) for o in spec.outputs]
    ret = outs[0] if len(outs) == 1 else f"({', '.join(outs)})"
    if spec.module is None:
        lines = [
            f"def f({params}):",
            *(f"    {b}" for b in body),
            f"    return {ret}",
            "",
            "",
            "def make_fn():",
            "    return f",
        ]
        return "\n".join(lines)
    sep = ", " if params else ""
    lines = [
        "class Program(torch.nn.Module):",
        *module_init(spec.module),
        "",
        f"    def forward(self{sep}{params}):",
        *(f"        {b}" for b in body),
        f"        return {ret}",
        "",
        "",
        "def make_fn():",
        "    m = Program()",
    ]
    if spec.module.full_backward_hook:
        lines.append("    m.register_full_backward_pre_hook(_module_pre_hook)")
        lines.append("    m.register_full_backward_hook(_module_hook)")
    lines.append("    return m")
    return "\n".join(lines)


def _uses(spec: ProgramSpec, *ops: str) -> bool:
    return any(s.op in ops for s in spec.body)


def uses_effect_op(spec: ProgramSpec) -> bool:
    """The program calls pyfy_gen::record: in its body, or in a custom Function's backward."""
    return _uses(spec, "effect_op") or any(f.backward_record for f in spec.functions)


# A torch device string ("cpu", "cuda", "cuda:1", "meta"); torch checks the type at import.
_DEVICE_RE = re.compile(r"[a-z][a-z0-9_]*(:[0-9]+)?")


def render(spec: ProgramSpec, device: str = "cpu") -> str:
    """The standalone source of `spec` (see the module docstring), its tensors on `device`."""
    if not isinstance(device, str) or not _DEVICE_RE.fullmatch(device):
        raise ValueError(f"device must be a torch device string like 'cuda', got {device!r}")
    parts = [
        f'"""pyfy-fuzz program (family {spec.family}). Needs only torch: python this_file.py"""',
        "",
        "import contextlib",
        "",
        "import torch",
    ]
    subclasses = {r.subclass for r in spec.roots}
    if subclasses & {"two_tensor", "nested_two_tensor"}:
        parts.append(_TWO_TENSOR.strip())
    if "mirror" in subclasses:
        parts.append("from torch.utils._python_dispatch import return_and_correct_aliasing")
    if any(f.once_differentiable for f in spec.functions):
        parts.append("from torch.autograd.function import once_differentiable")
    parts += ["", f"DEVICE = {device!r}"]
    parts.append(_PRELUDE)
    parts += ["", relations_source(), "", saved_hooks_source(), ""]
    if "mirror" in subclasses:
        parts.append(MIRROR)
    if uses_effect_op(spec):
        parts.append(_EFFECT_OP)
    parts.append(HOOKS)
    for k, fn in enumerate(spec.functions):
        parts += ["", function_source(k, fn), ""]
    parts += ["", _fn_source(spec), "", "", _make_inputs_source(spec), ""]
    parts.append(f"PLAN = {asdict(spec.plan)!r}")
    parts.append(f"CALL_CONTEXT = {call_context(spec.plan.config)!r}")
    parts.append(f"NO_RETAIN = {no_retain(spec)!r}  # Note [Arguments whose grad is not retained]")
    parts.append(f"SPEC = {spec.to_json()!r}")
    parts.append(_MAIN)
    return "\n".join(parts)


_MAIN = """

if __name__ == "__main__":
    fn = make_fn()
    for seed in range(PLAN["calls"]):
        result = drive(fn, make_inputs(seed), seed)
        print(f"call {seed}: out={result['out']!r}")
        print(f"call {seed}: grads={result['grads']!r}")
"""
