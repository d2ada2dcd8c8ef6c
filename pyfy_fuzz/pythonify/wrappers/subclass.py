"""AOTDispatchSubclassWrapper (runtime_wrappers.py): tensor subclasses around a dense graph.

The compiled graph sees only plain tensors. The wrapper flattens each subclass argument into its
inner tensors (`__tensor_flatten__`, recursively, plus its symbolic sizes and strides when they
are dynamic) and rebuilds subclass outputs from the graph's flat outputs
(`__tensor_unflatten__`), mirroring torch's unwrap_tensor_subclasses / wrap_tensor_subclasses.

Note [Flat positions of subclass leaves]
----------------------------------------
A plain output names its position in the flat list (`PlainMeta.unwrapped_idx`); a subclass
consumes the next `arg_count` leaves in order: its inner tensors, then one leaf per symbolic
outer size, then one per symbolic outer stride. On torch 2.15+ an inner plain tensor is itself
followed by its own symbolic sizes and strides (`PlainMeta.size_symbols`), and a rebuilt
subclass may take its outer size or stride from an inner tensor rather than from the leaves
(`SubclassMeta.size_from_attr`; Note [Subclass leaves across releases] in _compat.py). The
emitted wrap code keeps one cursor for both, as torch does. In training, the trailing `num_fw_outs_saved_for_bw` outputs are activations:
they stay dense and pass through after the rebuilt user outputs.

The helpers for rebuilding subclasses (`emit_wrap_list`) and for a tangent's expected type and
layout (`tangent_meta_literal`) are shared with autograd.py, whose backward does the same for
gradients.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from .. import records as R
from ..errors import PythonifyUnsupported
from ..meta import (
    EmitContext,
    IRNode,
    OpaqueLeaf,
    PathFacts,
    PlainMeta,
    Registration,
    SubclassMeta,
    TensorMetaRecord,
)
from .source import Emitter, type_var

__all__ = [
    "AOTDispatchSubclassWrapperNode",
    "FIELDS",
    "REGISTRATION",
    "RUNTIME",
    "FUNCTION",
    "emit",
    "emit_wrap_list",
    "memory_format_expr",
    "paths",
    "record",
    "subclass_types",
    "tangent_meta_literal",
]

# Fields of torch's AOTDispatchSubclassWrapper that `record` reads.
FIELDS = ("trace_joint", "maybe_subclass_meta", "num_fw_outs_saved_for_bw")
FUNCTION = "_subclass_wrapper"


@dataclass
class AOTDispatchSubclassWrapperNode(IRNode):
    """Unwraps subclass inputs to their inner tensors and rewraps graph outputs.

    In training, the first outputs are user-visible and rewrapped; the trailing
    `num_fw_outs_saved_for_bw` outputs (activations) pass through as plain tensors.
    """

    wrapper: ClassVar[str] = "AOTDispatchSubclassWrapper"
    inp_metas: list[TensorMetaRecord] = field(default_factory=list)  # per graph input
    out_metas: list[TensorMetaRecord] = field(default_factory=list)  # per forward output
    num_fw_outs_saved_for_bw: int | None = None  # None: inference

    def __post_init__(self) -> None:
        if self.num_fw_outs_saved_for_bw is not None and self.num_fw_outs_saved_for_bw < 0:
            raise ValueError("num_fw_outs_saved_for_bw must be >= 0")


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(
    node=AOTDispatchSubclassWrapperNode, segment="forward_inference", order=1, helpers=3
)


def record(w: Any, aot_config: Any, meta: Any) -> AOTDispatchSubclassWrapperNode | None:
    """None when no input or output is a subclass (torch returns the function unchanged)."""
    if getattr(meta, "act_input_indices", None):
        raise PythonifyUnsupported("AOTDispatchSubclassWrapper act_input_indices (async tensors)")
    if w.maybe_subclass_meta is None:
        return None
    return AOTDispatchSubclassWrapperNode(
        inp_metas=[R.tensor_meta(m) for m in meta.subclass_inp_meta],
        out_metas=[R.tensor_meta(m) for m in meta.subclass_fw_graph_out_meta],
        num_fw_outs_saved_for_bw=w.num_fw_outs_saved_for_bw,
    )


def subclass_types(metas: list[TensorMetaRecord]) -> set[str]:
    """Every subclass type (nested ones too) the generated file must import for `metas`."""
    found: set[str] = set()

    def walk(m: TensorMetaRecord | OpaqueLeaf) -> None:
        if isinstance(m, SubclassMeta):
            found.add(m.type_path)
            for _, a in m.attrs:
                walk(a)

    for m in metas:
        walk(m)
    return found


# --------------------------------------------------------------------------- emit


def _attr(var: str, attr: str) -> str:
    return f"{var}.{attr}" if attr.isidentifier() else f"getattr({var}, {attr!r})"


def _emit_unwrap(e: Emitter, meta: SubclassMeta, var: str, dst: str) -> None:
    """Note [Flat positions of subclass leaves]: inner tensors, then symbolic sizes, strides."""
    for attr, am in meta.attrs:
        if isinstance(am, SubclassMeta):
            inner = e.fresh("_inner")
            e.emit(f"{inner} = {_attr(var, attr)}")
            _emit_unwrap(e, am, inner, dst)
        else:
            e.emit(f"{dst}.append({_attr(var, attr)})")
            if isinstance(am, PlainMeta):
                for what, flags in (("size", am.size_symbols), ("stride", am.stride_symbols)):
                    for i, symbolic in enumerate(flags):
                        if symbolic:
                            e.emit(f"{dst}.append({_attr(var, attr)}.{what}()[{i}])")
    for i, s in enumerate(meta.outer_size):
        if s is None:
            e.emit(f"{dst}.append({var}.size()[{i}])")
    for i, s in enumerate(meta.outer_stride):
        if s is None:
            e.emit(f"{dst}.append({var}.stride()[{i}])")


class _Leaves:
    """Where each flat leaf a wrap reads lies, slot by slot in the metas' order.

    Fixed (every slot required, as on torch <= 2.14, or 2.15 without symbolic inner sizes): the
    k-th slot is `src[k]`. Optional (Note [Optional symbolic leaves]): `src[_at[k]]`, where
    `_at = _wrapped_leaves(...)` is computed when the file runs."""

    def __init__(self, src: str, optional: bool) -> None:
        self.src, self.optional = src, optional
        self.slots: list[str] = []  # "r" required, "o" optional

    def take(self) -> str:
        self.slots.append("r")
        k = len(self.slots) - 1
        return f"{self.src}[_at[{k}]]" if self.optional else f"{self.src}[{k}]"

    def skip_optional(self, n: int) -> None:
        if n and not self.optional:
            raise AssertionError("an optional leaf in a fixed layout")
        self.slots += ["o"] * n


def _has_optional(m: TensorMetaRecord | OpaqueLeaf) -> bool:
    if isinstance(m, PlainMeta):
        return m.arg_count > 1
    if isinstance(m, SubclassMeta):
        symbolic = None in m.outer_size or None in m.outer_stride
        from_attr = m.size_from_attr is not None or m.stride_from_attr is not None
        return (symbolic and from_attr) or any(_has_optional(a) for _, a in m.attrs)
    return False


def _emit_wrap(e: Emitter, meta: SubclassMeta, leaves: _Leaves) -> str:
    inner: dict[str, str] = {}
    for attr, am in meta.attrs:
        if isinstance(am, SubclassMeta):
            inner[attr] = _emit_wrap(e, am, leaves)
        else:
            inner[attr] = leaves.take()
            if isinstance(am, PlainMeta):
                leaves.skip_optional(am.arg_count - 1)
    entries = [f"{attr!r}: {expr}" for attr, expr in inner.items()]

    def dims(vals: tuple[int | None, ...], from_attr: str | None, what: str) -> str:
        if from_attr is not None:  # the leaves become optional; the value is the inner's
            leaves.skip_optional(sum(v is None for v in vals))
            return f"{inner[from_attr]}.{what}()"
        parts = [leaves.take() if v is None else repr(v) for v in vals]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    size = dims(meta.outer_size, meta.size_from_attr, "size")
    stride = dims(meta.outer_stride, meta.stride_from_attr, "stride")
    out = e.fresh("_wrapped")
    e.emit(
        f"{out} = {type_var(meta.type_path)}.__tensor_unflatten__("
        f"{{{', '.join(entries)}}}, {meta.ctx_repr}, {size}, {stride})"
    )
    return out


def emit_wrap_list(
    e: Emitter, metas: list[TensorMetaRecord], src: str, saved: int = 0
) -> tuple[list[str], str]:
    """Mirror of torch's output wrapping (wrap_tensor_subclasses; 2.15's codegen'd
    `_emit_output_wrapping`): plain outputs and subclasses consume the flat leaves in order;
    the last `saved` leaves of `src` are not wrapped (activations).

    Returns the expressions of the rebuilt values and, as source, the index of the first leaf
    they did not use."""
    if not any(_has_optional(m) for m in metas):
        exprs: list[str] = []
        cursor = tallied = 0
        fixed = _Leaves(src, optional=False)
        for m in metas:
            if isinstance(m, PlainMeta):
                exprs.append(f"{src}[{m.unwrapped_idx}]")
                cursor = max(cursor, m.unwrapped_idx + 1)
                tallied += 1
            else:
                fixed.slots = ["r"] * cursor
                exprs.append(_emit_wrap(e, m, fixed))
                cursor = len(fixed.slots)
                tallied += m.arg_count
        return exprs, str(tallied)
    n = f"len({src}) - {saved}" if saved else f"len({src})"
    first = len(e.lines)
    leaves = _Leaves(src, optional=True)
    exprs = _walk(e, metas, leaves)
    # the layout is known once every meta is walked; the file computes `_at` before the wraps
    at = Emitter(e.indent)
    at.emit(f"_at = _wrapped_leaves({src}, {n}, {''.join(leaves.slots)!r})")
    e.lines[first:first] = at.lines
    return exprs, n


def _walk(e: Emitter, metas: list[TensorMetaRecord], leaves: _Leaves) -> list[str]:
    """Each meta's rebuilt value, its slots taken from `leaves` in torch's order."""
    exprs = []
    for m in metas:
        if isinstance(m, PlainMeta):
            exprs.append(leaves.take())
            leaves.skip_optional(m.arg_count - 1)
        else:
            exprs.append(_emit_wrap(e, m, leaves))
    return exprs


def _slots(metas: list[TensorMetaRecord], src: str) -> str:
    """The layout `emit_wrap_list` reads ("r" required, "o" optional per leaf)."""
    leaves = _Leaves(src, optional=True)
    _walk(Emitter(), metas, leaves)
    return "".join(leaves.slots)


# Note [Optional symbolic leaves]
# -------------------------------
# torch 2.15 lets a graph leave out symbolic sizes it does not need: an inner plain tensor's
# own sizes and strides, and an outer size read from an inner tensor (`size_from_attr`), are
# *optional* leaves. Its codegen'd wrapper (subclass_codegen._emit_output_wrapping) decides,
# left to right, whether each optional slot is present: it is when the leaves left still fit
# what the later slots need and the value there is an int or SymInt. `_wrapped_leaves` makes
# the same decisions when the file runs, from the layout the metas give.
def _wrapped_leaves(outs, n_wrapped, slots):
    """The flat position of each slot of `slots` ("r" required, "o" optional) among the first
    `n_wrapped` of `outs`; None for an optional slot the graph did not output."""
    lo, hi = slots.count("r"), len(slots)
    if not lo <= n_wrapped <= hi:
        raise AssertionError(f"expected between {lo} and {hi} wrapped outputs, got {n_wrapped}")
    at: list[int | None] = []
    idx = 0
    for slot in slots:
        left = n_wrapped - idx
        if slot == "r":
            at.append(idx)
            idx, lo, hi = idx + 1, lo - 1, hi - 1
            continue
        take = lo <= left - 1 <= hi - 1 and isinstance(outs[idx], (int, torch.SymInt))
        if not take and not lo <= left <= hi - 1:
            raise AssertionError("could not match output layout with optional SymInt outputs")
        at.append(idx if take else None)
        idx, hi = idx + take, hi - 1
    if idx != n_wrapped:
        raise AssertionError(f"wrapped {idx} outputs, expected {n_wrapped}")
    return at


RUNTIME = ("_wrapped_leaves",)


def memory_format_expr(m: TensorMetaRecord) -> str:
    """The (format, size, stride) triple the file's tangent coercion reads, as source."""
    mf = m.memory_format
    if mf is None:
        return "None"
    if mf.memory_format is not None:
        return f"({mf.memory_format}, None, None)"
    return f"(None, {mf.size!r}, {mf.stride!r})"


def tangent_meta_literal(m: TensorMetaRecord) -> str:
    """(subclass type or None, memory format, [(attr, meta)] or None), as source."""
    if isinstance(m, PlainMeta):
        return f"(None, {memory_format_expr(m)}, None)"
    attrs = ", ".join(
        f"({a!r}, {'None' if isinstance(am, OpaqueLeaf) else tangent_meta_literal(am)})"
        for a, am in m.attrs
    )
    return f"({type_var(m.type_path)}, {memory_format_expr(m)}, [{attrs}])"


def emit(node: AOTDispatchSubclassWrapperNode, ctx: EmitContext) -> str:
    e = Emitter()
    e.emit("unwrapped = []")
    for i, m in enumerate(node.inp_metas):
        if isinstance(m, PlainMeta):
            e.emit(f"unwrapped.append(args[{i}])")
            continue
        var = e.fresh("_arg")
        tv = type_var(m.type_path)
        e.emit(f"{var} = args[{i}]")
        e.emit(f"if type({var}) is not {tv}:")
        e.emit(f"    raise AssertionError(f'expected {{{tv}}}, got {{type({var})}}')")
        _emit_unwrap(e, m, var, "unwrapped")
    e.emit(f"unwrapped.extend(args[{len(node.inp_metas)}:])")
    e.emit(f"outs = {ctx.inner}(unwrapped)")
    exprs, tallied = emit_wrap_list(e, node.out_metas, "outs", node.num_fw_outs_saved_for_bw or 0)
    result = "[" + ", ".join(exprs) + "]"
    if node.num_fw_outs_saved_for_bw is not None:
        e.emit(f"return {result} + list(outs[{tallied}:])")
    else:
        e.emit(f"return {result}")
    body = "\n".join(e.lines)
    return f'''def _subclass_wrapper(args):
    """AOTDispatchSubclassWrapper: unwrap subclass inputs into their inner tensors (and
    symbolic sizes), run the dense graph, rebuild subclass outputs. Trailing outputs saved for
    backward ({node.num_fw_outs_saved_for_bw}) stay dense."""
{body}'''


# --------------------------------------------------------------------------- paths


def paths(node: AOTDispatchSubclassWrapperNode, facts: PathFacts) -> list[str]:
    out = ["subclass/backward" if facts.training else "subclass/forward"]
    metas = [*node.inp_metas, *node.out_metas]
    if any(isinstance(m, SubclassMeta) and m.included_subclass_symints for m in metas):
        out.append("subclass/dynamic")
    if any(_nested(m) for m in metas):
        out.append("subclass/nested")
    return out


def _nested(m: object) -> bool:
    """A subclass whose inner tensors are subclasses too (TwoTensor(TwoTensor(..), ..))."""
    return isinstance(m, SubclassMeta) and any(isinstance(a, SubclassMeta) for _, a in m.attrs)
