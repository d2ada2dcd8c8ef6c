"""Render a post-AOT FX graph as a standalone Python function, one line per node.

Each call_function line carries `# seq_nr=N` and the node name maps to its seq_nr in a table the
file exports, so the forward/backward correspondence of seeds/004 survives into the file.
"""

from __future__ import annotations

import base64
import builtins
import io
import math
import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from .errors import PythonifyUnsupported
from .ir import CompiledGraph

__all__ = [
    "FxNodeMeta",
    "RenderContext",
    "arg_expr",
    "fx_node_meta",
    "render_fx",
    "seq_nr_table",
    "target_expr",
]


@dataclass
class RenderContext:
    """Collects constants (get_attr tensors) shared by all graphs of one file."""

    constants: dict[str, str] = field(default_factory=dict)

    def add_constant(self, graph: str, name: str, value: torch.Tensor) -> str:
        key = f"_const_{graph}_{name}"
        buf = io.BytesIO()
        torch.save(value.detach().clone(), buf)
        self.constants[key] = base64.b64encode(buf.getvalue()).decode()
        return f"_CONSTANTS[{key!r}]"


def target_expr(target: Any) -> str:
    """A Python expression naming an FX call_function target, importable with torch only."""
    if isinstance(target, torch._ops.OpOverload):
        ns, rest = target.name().split("::")
        base, _, overload = rest.partition(".")
        return f"torch.ops.{ns}.{base}.{overload or 'default'}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        ns, base = target._qualified_op_name.split("::")
        return f"torch.ops.{ns}.{base}"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"torch.ops.higher_order.{target.name()}"
    name = getattr(target, "__name__", "")
    if name and getattr(operator, name, None) is target:
        return f"operator.{name}"
    if name and getattr(builtins, name, None) is target:
        return str(name)
    mod = getattr(target, "__module__", None)
    qual = getattr(target, "__qualname__", None)
    if mod and qual and "<" not in qual:
        root = mod.split(".")[0]
        if root in ("torch", "math"):
            if mod.startswith("torch._C._VariableFunctions") or mod == "torch._C":
                mod = "torch"
            return f"{mod}.{qual}"
        if root == "_operator":
            return f"operator.{qual}"
    raise PythonifyUnsupported(f"graph call target {target!r}", "not nameable from torch")


def arg_expr(a: Any) -> str:
    """Render one FX argument as Python source."""
    if isinstance(a, torch.fx.Node):
        return a.name
    if isinstance(a, tuple):
        inner = ", ".join(arg_expr(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(arg_expr(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{arg_expr(k)}: {arg_expr(v)}" for k, v in a.items()) + "}"
    if isinstance(a, bool) or a is None or isinstance(a, int | str):
        return repr(a)
    if isinstance(a, float):
        if math.isnan(a):
            return "float('nan')"
        if math.isinf(a):
            return "float('inf')" if a > 0 else "float('-inf')"
        return repr(a)
    if isinstance(a, torch.dtype | torch.layout | torch.memory_format):
        return str(a)
    if isinstance(a, torch.device):
        return f"torch.device({str(a)!r})"
    if isinstance(a, slice):
        return f"slice({arg_expr(a.start)}, {arg_expr(a.stop)}, {arg_expr(a.step)})"
    if isinstance(
        a, torch._ops.OpOverload | torch._ops.OpOverloadPacket | torch._ops.HigherOrderOperator
    ):
        return target_expr(a)
    raise PythonifyUnsupported(f"graph argument of type {type(a).__name__}", repr(a)[:80])


def render_fx(
    gm: torch.fx.GraphModule,
    name: str,
    fn_name: str,
    ctx: RenderContext,
    origin: str = "aot_eager",
) -> CompiledGraph:
    """One boxed function `fn_name(args) -> list` equivalent to `gm`; `origin` says which
    compiler handed torch this graph to run as it is.

    Long: one branch per FX node kind, in the order the rendered lines come out."""
    lines: list[str] = []
    seq: list[tuple[str, int]] = []
    grad_acc: list[str] = []
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    lines.append(f"def {fn_name}(args):")
    lines.append(
        f'    """{name} graph: {len(placeholders)} inputs ({origin}, rendered from FX)."""'
    )
    if placeholders:
        unpack = ", ".join(placeholders)
        lines.append(f"    {unpack}{',' if len(placeholders) == 1 else ''} = args")
    num_outputs = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "get_attr":
            value = _fetch_attr(gm, node.target)
            if not isinstance(value, torch.Tensor):
                raise PythonifyUnsupported(
                    f"get_attr of {type(value).__name__}", f"{node.target} in the {name} graph"
                )
            lines.append(f"    {node.name} = {ctx.add_constant(name, node.name, value)}")
            continue
        if node.op == "call_function":
            call = _call_expr(node)
            comment = ""
            if "seq_nr" in node.meta:
                sn = int(node.meta["seq_nr"])
                seq.append((node.name, sn))
                comment = f"  # seq_nr={sn}"
                if node.meta.get("is_gradient_acc"):
                    grad_acc.append(node.name)
                    comment += " (gradient accumulation)"
            lines.append(f"    {node.name} = {call}{comment}")
            continue
        if node.op == "output":
            outs = node.args[0]
            if isinstance(outs, list | tuple):
                num_outputs = len(outs)
                lines.append("    return [" + ", ".join(arg_expr(o) for o in outs) + "]")
            else:
                num_outputs = 1
                lines.append(f"    return [{arg_expr(outs)}]")
            continue
        raise PythonifyUnsupported(f"FX node op {node.op!r}", f"{node.format_node()}")
    return CompiledGraph(
        name=name,
        kind="fx",
        source="\n".join(lines),
        seq_nr=tuple(seq),
        grad_acc=tuple(grad_acc),
        num_inputs=len(placeholders),
        num_outputs=num_outputs,
    )


@dataclass(frozen=True)
class FxNodeMeta:
    """torch's metadata on one call_function node, as handed to the backend (plain data).

    Kept apart from the rendered graph so an oracle can compare the generated file's SEQ_NR
    table with what torch.compile actually produced.
    """

    name: str
    target: str
    seq_nr: int | None
    is_gradient_acc: bool
    autograd_backward: bool
    # Traced from a custom autograd.Function's forward or backward (Dynamo records the
    # Function in the node's source_fn_stack): whose seq_nr rule the node follows (seeds/004).
    custom_function: bool = False


def _from_custom_function(node: torch.fx.Node) -> bool:
    """Whether Dynamo's source_fn_stack names an autograd.Function; entries are
    (name, target) pairs, and a torch without the key says nothing."""
    stack = node.meta.get("source_fn_stack") or ()
    return any(isinstance(e, tuple) and e and e[0] == "autograd.function" for e in stack)


def fx_node_meta(gm: torch.fx.GraphModule) -> tuple[FxNodeMeta, ...]:
    return tuple(
        FxNodeMeta(
            name=n.name,
            target=str(n.target),
            seq_nr=int(n.meta["seq_nr"]) if "seq_nr" in n.meta else None,
            is_gradient_acc=bool(n.meta.get("is_gradient_acc")),
            autograd_backward=bool(n.meta.get("autograd_backward")),
            custom_function=_from_custom_function(n),
        )
        for n in gm.graph.nodes
        if n.op == "call_function"
    )


def seq_nr_table(gm: torch.fx.GraphModule) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    seq = tuple(
        (n.name, int(n.meta["seq_nr"]))
        for n in gm.graph.nodes
        if n.op == "call_function" and "seq_nr" in n.meta
    )
    # call_function nodes only, as `render_fx` and `fx_node_meta` read them: torch also marks
    # a backward placeholder (a tangent that is itself the accumulated gradient) and the
    # Inductor path listed it where the aot_eager path did not (found on an H200, issue 18).
    acc = tuple(
        n.name for n in gm.graph.nodes if n.op == "call_function" and n.meta.get("is_gradient_acc")
    )
    return seq, acc


def _call_expr(node: torch.fx.Node) -> str:
    target = target_expr(node.target)
    parts = [arg_expr(a) for a in node.args]
    parts += [f"{k}={arg_expr(v)}" for k, v in node.kwargs.items()]
    return f"{target}({', '.join(parts)})"


def _fetch_attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
