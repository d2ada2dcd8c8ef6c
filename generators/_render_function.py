"""A program's custom autograd.Functions as Python: `class Fn<k>`, one per FunctionSpec.

Each backward is the exact derivative of its forward, so the gradients any subject computes
can be compared with eager's. The class is written line by line from the spec's flags (style,
body, arity, outputs, what the ctx does, what the backward does besides), for the program and
for a repro.py alike (`generators.source`). Its forward, setup_context and backward each log
what torch hands them first (`_log_call`, generators/_hooks.py; Note [What user code
receives] there: nothing is logged while torch traces, so the compiled graphs are unchanged).
"""

from __future__ import annotations

from ._spec import FunctionSpec

__all__ = ["function_source"]

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


def function_source(k: int, fn: FunctionSpec, log: bool = True) -> str:
    """A custom autograd.Function whose backward is the exact derivative of its forward;
    without `log`, its methods log nothing (a repro whose finding does not read the log)."""
    lines = [f"class Fn{k}(torch.autograd.Function):"]
    lines += _ctx_forward(k, fn) if fn.style == "ctx" else _setup_context_forward(k, fn)
    lines += ["", "    @staticmethod"]
    lines += _backward(k, fn)
    if not log:
        lines = [x for x in lines if not x.lstrip().startswith("_log_call(")]
    return "\n".join(lines)


def _params(fn: FunctionSpec) -> str:
    return "x, w" if fn.arity == 2 else "x"


def _forward_body(fn: FunctionSpec) -> list[str]:
    """The forward's lines up to its return (the same in both styles)."""
    fwd = _FN2_FORWARD[fn.body] if fn.arity == 2 else _FN_FORWARD[fn.body]
    return [f"        {s}" for s in fwd]


def _returned(fn: FunctionSpec) -> str:
    """What the forward returns: y, and a second output where the spec has one."""
    if fn.two_outputs:
        return "y, y * 2"
    return "y, y.detach() * 0" if fn.non_differentiable else "y"


def _ctx_calls(fn: FunctionSpec) -> list[str]:
    """What the forward tells the ctx: saved tensors, a dirty input, no materialized grads."""
    ctx_lines = []
    if fn.body in ("sin", "bw_mutate"):
        two = fn.arity == 2
        ctx_lines.append("ctx.save_for_backward(x, w)" if two else "ctx.save_for_backward(x)")
    if fn.body == "dirty":
        ctx_lines.append("ctx.mark_dirty(x)")
    if not fn.materialize_grads:
        ctx_lines.append("ctx.set_materialize_grads(False)")
    return ctx_lines


def _ctx_forward(k: int, fn: FunctionSpec) -> list[str]:
    """`forward(ctx, ...)`: the ctx style, which tells the ctx in the forward itself."""
    lines = ["    @staticmethod", f"    def forward(ctx, {_params(fn)}):"]
    lines.append(f'        _log_call("Fn{k}.forward", {_params(fn)})')
    lines += _forward_body(fn)
    lines += [f"        {s}" for s in _ctx_calls(fn)]
    if fn.non_differentiable:
        lines += [
            "        extra = y.detach() * 0",
            "        ctx.mark_non_differentiable(extra)",
            "        return y, extra",
        ]
    else:
        lines.append(f"        return {_returned(fn)}")
    return lines


def _setup_context_forward(k: int, fn: FunctionSpec) -> list[str]:
    """`forward(...)` and `setup_context(ctx, inputs, output)`: the functorch style."""
    params, ctx_lines = _params(fn), _ctx_calls(fn)
    outputs = "*output" if fn.two_outputs or fn.non_differentiable else "output"
    lines = ["    @staticmethod", f"    def forward({params}):"]
    lines.append(f'        _log_call("Fn{k}.forward", {params})')
    lines += _forward_body(fn)
    lines.append(f"        return {_returned(fn)}")
    lines += [
        "",
        "    @staticmethod",
        "    def setup_context(ctx, inputs, output):",
        f'        _log_call("Fn{k}.setup_context", *inputs, {outputs})',
        f"        ({params},) = inputs" if fn.arity != 2 else "        x, w = inputs",
    ]
    lines += [f"        {s}" for s in ctx_lines]
    if fn.non_differentiable:
        lines.append("        ctx.mark_non_differentiable(output[1])")
    return lines


def _backward(k: int, fn: FunctionSpec) -> list[str]:
    """`backward`: the exact gradient, and what else the spec has it do (print, record,
    mutate a saved input)."""
    two = fn.arity == 2
    lines = ["    @once_differentiable"] if fn.once_differentiable else []
    bw_args = "ctx, g, g_extra" if fn.non_differentiable or fn.two_outputs else "ctx, g"
    lines.append(f"    def backward({bw_args}):")
    lines.append(f'        _log_call("Fn{k}.backward", {bw_args[5:]})')
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
        lines.append(f"        return {_FN_GRAD[fn.body]}")
    return lines
