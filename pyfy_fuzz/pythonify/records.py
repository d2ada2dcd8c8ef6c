"""Turn AOTAutograd's live metadata objects into the IR's plain records.

Runs inside the capture hooks, at the moment each wrapper's post_compile sees its metadata:
later, torch rewrites some of it in place (make_runtime_safe replaces SymInts by None).
"""

from __future__ import annotations

from typing import Any

import torch

from . import _compat as C
from .errors import PythonifyUnsupported
from .meta import (
    FakeOutMeta,
    InputInfo,
    MemoryFormat,
    OpaqueLeaf,
    OutputInfo,
    PlainMeta,
    SubclassMeta,
    TensorMetaRecord,
    ViewOp,
)

__all__ = [
    "fake_out_metas",
    "input_infos",
    "memory_format",
    "output_infos",
    "slice_pair",
    "tensor_meta",
    "type_path",
    "view_ops",
]


def type_path(cls: type) -> str:
    """'module:QualName' for a class the generated file must import."""
    if "<locals>" in cls.__qualname__:
        raise PythonifyUnsupported(
            f"tensor subclass {cls.__qualname__}", "defined inside a function; not importable"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def input_infos(meta: Any) -> list[InputInfo]:
    return [
        InputInfo(
            is_leaf=bool(i.is_leaf),
            mutates_data=bool(i.mutates_data),
            mutates_metadata=bool(i.mutates_metadata),
            mutates_storage_metadata=bool(i.mutates_storage_metadata),
            requires_grad=bool(i.requires_grad),
            mutated_out_of_graph=C.mutated_out_of_graph(i),
        )
        for i in meta.input_info
    ]


def _plain_arg(a: Any) -> Any:
    if isinstance(a, torch.SymInt | torch.SymFloat | torch.SymBool):
        raise _Symbolic
    if isinstance(a, list | tuple):
        return type(a)(_plain_arg(x) for x in a)
    if isinstance(a, int | float | bool | str) or a is None:
        return a
    if isinstance(a, torch.dtype | torch.memory_format | torch.layout | torch.device):
        return a
    raise _Symbolic


class _Symbolic(Exception):
    pass


def view_ops(seq: Any) -> tuple[ViewOp, ...] | None:
    """Decode a ViewMetaSequence into aten calls, or None when it cannot be replayed.

    Each ViewMeta is a pybind class named `<op>_<overload>_ViewMeta` whose as_tuple() is
    (has_symbolic_inputs, is_multi_output, inverse_return_mode, *op_args[, out_index]) for a
    single-output view and (has_symbolic_inputs, out_index, is_multi_output,
    inverse_return_mode, *op_args) for one output of a multi-output view (split, chunk,
    unbind: torch 2.13 and 2.15), so the fields are found by where the InverseReturnMode
    sits. None falls back to torch's own fallback (_view_func or as_strided), as
    gen_alias_from_base: that fallback gives an as_strided view where torch replays the
    views (the issue-36 triage's c712, a chunk's output).
    """
    if seq is None:
        return None
    out: list[ViewOp] = []
    for vm in seq.sequence:
        name = type(vm).__name__
        if not name.endswith("_ViewMeta") or vm.has_symbolic_inputs:
            return None
        stem = name[: -len("_ViewMeta")]
        op = _resolve_overload(stem)
        if op is None:
            return None
        tup = vm.as_tuple()
        mode = next(
            (k for k, x in enumerate(tup[:4]) if type(x).__name__ == "InverseReturnMode"), 2
        )
        multi = bool(tup[mode - 1])
        args = list(tup[mode + 1 :])
        out_index = int(tup[1]) if mode == 3 else None
        schema_args = len(op._schema.arguments) - 1
        if out_index is None and multi and len(args) == schema_args + 1:
            out_index = int(args.pop())
        if len(args) > schema_args:
            return None
        try:
            plain = [_plain_arg(a) for a in args]
        except _Symbolic:
            return None
        schema = op._schema.arguments[1:]
        if any(not s.has_default_value() for s in schema[len(plain) :]):
            # a ViewMeta whose tuple leaves out an argument the op needs (resize_'s size):
            # torch's own fallback replays it (the 12-07 unsteered run's 8471d04b8b4f)
            return None
        positional = [a for a, s in zip(plain, schema, strict=False) if not s.kwarg_only]
        keyword = tuple((s.name, a) for a, s in zip(plain, schema, strict=False) if s.kwarg_only)
        out.append(
            ViewOp(op=_op_expr(op), args=tuple(positional), out_index=out_index, kwargs=keyword)
        )
    return tuple(out)


def _resolve_overload(stem: str) -> Any:
    """'slice_Tensor' -> aten.slice.Tensor; 't' -> aten.t.default; '_reshape_alias' too."""
    parts = stem.split("_")
    for cut in range(len(parts), 0, -1):
        opname = "_".join(parts[:cut])
        overload = "_".join(parts[cut:]) or "default"
        packet = getattr(torch.ops.aten, opname, None)
        if packet is None:
            continue
        ov = getattr(packet, overload, None)
        if ov is not None:
            return ov
    return None


def _op_expr(op: Any) -> str:
    ns, rest = op.name().split("::")
    base, _, overload = rest.partition(".")
    return f"torch.ops.{ns}.{base}.{overload or 'default'}"


def output_infos(meta: Any) -> list[OutputInfo]:
    res = []
    for o in meta.output_info:
        raw = o.raw_type
        res.append(
            OutputInfo(
                output_type=C.output_type_name(o),
                base_idx=o.base_idx,
                requires_grad=bool(o.requires_grad),
                # torch 2.11 has no such field: its backward keeps a tangent per output that
                # requires grad
                requires_grad_for_backward=bool(
                    getattr(o, "requires_grad_for_backward", o.requires_grad)
                ),
                is_tensor=isinstance(raw, type) and issubclass(raw, torch.Tensor),
                # torch replays an aliased output's views only under this flag, read when its
                # output handlers are built (at compile time); otherwise as_strided
                view_ops=(
                    view_ops(o.view_meta_sequence)
                    if torch._functorch.config.view_replay_for_aliased_outputs
                    else None
                ),
            )
        )
    return res


def _int_or_none(x: Any) -> int | None:
    if isinstance(x, torch.SymInt):
        if x.node.is_nested_int():
            raise PythonifyUnsupported("nested int sizes in a tensor subclass")
        return None
    if x is None:
        return None
    return int(x)


def memory_format(mf: Any) -> MemoryFormat | None:
    if mf is None:
        return None
    if mf.memory_format is not None:
        return MemoryFormat(memory_format=str(mf.memory_format))
    size = tuple(_int_or_none(s) for s in mf.size) if mf.size is not None else None
    stride = tuple(_int_or_none(s) for s in mf.stride) if mf.stride is not None else None
    if size is not None and None in size or stride is not None and None in stride:
        return MemoryFormat(memory_format="torch.contiguous_format")
    return MemoryFormat(size=size, stride=stride)  # type: ignore[arg-type]


def _ctx_repr(ctx: Any) -> str:
    r = repr(ctx)
    try:
        back = eval(r, {"torch": torch})  # noqa: S307 - checking a round trip of our own repr
    except Exception as exc:
        raise PythonifyUnsupported(
            "tensor subclass flatten context", f"{r!r} does not round-trip through repr()"
        ) from exc
    if back != ctx:
        raise PythonifyUnsupported("tensor subclass flatten context", f"{r!r} != its eval")
    return r


def tensor_meta(m: Any) -> TensorMetaRecord:
    if isinstance(m, C.PlainTensorMeta):
        sizes, strides = C.plain_symbol_placeholders(m)
        return PlainMeta(
            m.unwrapped_idx,
            memory_format(getattr(m, "memory_format", None)),
            size_symbols=sizes,
            stride_symbols=strides,
        )
    if isinstance(m, C.SubclassCreationMeta):
        cls = m.original_subclass_type or type(m.original_subclass)
        size_from, stride_from = C.outer_from_attr(m)
        attrs: list[tuple[str, PlainMeta | SubclassMeta | OpaqueLeaf]] = []
        for name, am in m.attrs.items():
            if C.is_opaque_meta(am):
                attrs.append((name, OpaqueLeaf()))
            else:
                attrs.append((name, tensor_meta(am)))
        return SubclassMeta(
            type_path=type_path(cls),
            ctx_repr=_ctx_repr(m.meta),
            attrs=tuple(attrs),
            outer_size=tuple(_int_or_none(s) for s in m.outer_size),
            outer_stride=tuple(_int_or_none(s) for s in m.outer_stride),
            arg_count=int(m.arg_count),
            included_subclass_symints=bool(m.included_subclass_symints),
            memory_format=memory_format(getattr(m, "memory_format", None)),
            size_from_attr=size_from,
            stride_from_attr=stride_from,
        )
    raise PythonifyUnsupported(f"subclass meta {type(m).__name__}")


def fake_out_metas(out_metas: list[Any], strides: list[Any] | None) -> list[FakeOutMeta | None]:
    res: list[FakeOutMeta | None] = []
    for i, t in enumerate(out_metas):
        if not isinstance(t, torch.Tensor):
            res.append(None)
            continue
        stride = tuple(t.stride())
        if strides and i < len(strides) and strides[i] is not None:
            stride = tuple(strides[i])
        try:
            res.append(
                FakeOutMeta(
                    tuple(int(s) for s in t.shape),
                    tuple(int(s) for s in stride),
                    str(t.dtype),
                    str(t.device),
                )
            )
        except (TypeError, RuntimeError) as exc:
            raise PythonifyUnsupported("FakifiedOutWrapper with symbolic shapes") from exc
    return res


def slice_pair(s: slice) -> tuple[int | None, int | None]:
    """A slice over the forward outputs as (start, stop), negative and None kept as they are."""
    if s.step not in (None, 1):
        raise PythonifyUnsupported("a strided saved-tensor slice", repr(s))
    return (s.start, s.stop)
