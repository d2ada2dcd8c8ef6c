"""Every torch-internal name the generator touches, in one place.

pythonify reads AOTAutograd's private data structures (wrapper dataclasses, ViewAndMutationMeta,
subclass metas). They change between torch releases. Importing them here, and checking that
each wrapper still has the fields we read, turns a silent mismatch into one clear error
that names the wrapper and the missing field.
"""

from __future__ import annotations

from typing import Any

import torch

from .errors import PythonifyUnsupported

try:
    import torch._dynamo  # noqa: F401 - runtime_wrappers imports it circularly otherwise
    from torch._functorch._aot_autograd import runtime_wrappers as rw
    from torch._functorch._aot_autograd import schemas
    from torch._functorch._aot_autograd.schemas import (
        MutationType,
        OutputType,
        PlainTensorMeta,
        SubclassCreationMeta,
        ViewAndMutationMeta,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed torch
    raise ImportError(
        f"pyfy_fuzz.pythonify needs torch's AOTAutograd internals (torch {torch.__version__}): "
        f"{exc}. Supported: torch 2.11-2.15."
    ) from exc

TORCH_VERSION = torch.__version__

# A subclass's non-tensor attribute carried through unwrapping (torch 2.13+; torch 2.11 keeps
# only tensor attributes in a SubclassCreationMeta, so nothing is opaque there).
_OPAQUE_META: type | None = getattr(schemas, "OpaqueMeta", None)


def is_opaque_meta(meta: Any) -> bool:
    return _OPAQUE_META is not None and isinstance(meta, _OPAQUE_META)


# Note [Subclass leaves across releases]: torch 2.15 flattens a dynamic subclass further. An
# inner plain tensor of a subclass carries its own symbolic sizes and strides as flat leaves
# after it (PlainTensorMeta.size_symbol_placeholders / stride_symbol_placeholders, and its
# arg_count), and a rebuilt subclass may take its outer size or stride from an inner tensor
# (SubclassCreationMeta.outer_size_from_attr / outer_stride_from_attr). Torch 2.11-2.14 have
# neither field: no extra leaves, sizes from the leaves. A torch that has the fields in another
# shape fails here by name.
def plain_symbol_placeholders(meta: Any) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
    """(size, stride) per-dim flags of a PlainTensorMeta's symbolic leaves; () before 2.15."""
    out = []
    for name in ("size_symbol_placeholders", "stride_symbol_placeholders"):
        flags = getattr(meta, name, ())
        if not isinstance(flags, tuple | list) or not all(isinstance(f, bool) for f in flags):
            raise PythonifyUnsupported(
                f"torch {TORCH_VERSION}",
                f"PlainTensorMeta.{name} is {flags!r}, not per-dim flags; its internals "
                "changed (AOTDispatchSubclassWrapper). Update pyfy_fuzz/pythonify/_compat.py.",
            )
        out.append(tuple(flags))
    return out[0], out[1]


def outer_from_attr(meta: Any) -> tuple[str | None, str | None]:
    """SubclassCreationMeta's (outer_size_from_attr, outer_stride_from_attr); None before 2.15."""
    out = []
    for name in ("outer_size_from_attr", "outer_stride_from_attr"):
        attr = getattr(meta, name, None)
        if attr is not None and not isinstance(attr, str):
            raise PythonifyUnsupported(
                f"torch {TORCH_VERSION}",
                f"SubclassCreationMeta.{name} is {attr!r}, not an attribute name; its "
                "internals changed (AOTDispatchSubclassWrapper). Update _compat.py.",
            )
        out.append(attr)
    return out[0], out[1]


# Fields read from ViewAndMutationMeta, whichever wrapper reads them. Each wrapper's own fields
# are its module's FIELDS (wrappers/); a torch that renames one makes `check_fields` fail with
# the owner and field named.
META_FIELDS = (
    "input_info",
    "output_info",
    "num_intermediate_bases",
    "keep_input_mutations",
    "tokens",
    "num_backward_tokens",
    "subclass_inp_meta",
    "subclass_fw_graph_out_meta",
    "subclass_tangent_meta",
    "is_rng_op_functionalized",
    "num_outputs_rng_offset",
    "num_graphsafe_rng_states",
    "grad_enabled_mutation",
    "static_input_indices",
    "indices_of_inputs_that_requires_grad_with_mutations_in_bw",
    "bw_donated_idxs",
    "deterministic",
)


def wrapper_classes(names: tuple[str, ...]) -> dict[str, type]:
    """runtime_wrappers' classes of these names, or a clear error naming the one gone."""
    out: dict[str, type] = {}
    for name in names:
        cls = getattr(rw, name, None)
        if cls is None:
            raise PythonifyUnsupported(
                f"torch {TORCH_VERSION}",
                f"runtime_wrappers.{name} no longer exists; update pyfy_fuzz/pythonify/_compat.py",
            )
        out[name] = cls
    return out


def autograd_dispatch_class() -> type:
    cls = getattr(rw, "AOTDispatchAutograd", None)
    if cls is None or not hasattr(cls, "post_compile"):
        raise PythonifyUnsupported(
            f"torch {TORCH_VERSION}", "runtime_wrappers.AOTDispatchAutograd.post_compile is gone"
        )
    return cls


def autograd_compile_spec(post_compile: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What AOTDispatchAutograd.post_compile was given, as torch 2.13's one
    AOTDispatchAutogradCompileSpec argument. torch 2.11 passes the same values as separate
    arguments (`num_symints_saved_for_bw_` with a trailing underscore there)."""
    if len(args) == 1 and not kwargs:
        return args[0]
    import inspect
    import types

    binding = inspect.signature(post_compile).bind(*args, **kwargs)
    binding.apply_defaults()
    bound = dict(binding.arguments)
    if "num_symints_saved_for_bw_" in bound:
        bound["num_symints_saved_for_bw"] = bound.pop("num_symints_saved_for_bw_")
    return types.SimpleNamespace(**bound)


def check_fields(owner: str, obj: Any, fields: tuple[str, ...]) -> None:
    """Fail with the owner and field named when torch renamed something we read."""
    for f in fields:
        if not hasattr(obj, f):
            raise PythonifyUnsupported(
                f"torch {TORCH_VERSION}",
                f"{owner} has no field {f!r}; its internals changed. "
                "Update its model in pyfy_fuzz/pythonify/wrappers/.",
            )


def mutated_out_of_graph(info: Any) -> bool:
    return info.mutation_type == MutationType.MUTATED_OUT_GRAPH


def output_type_name(info: Any) -> str:
    return OutputType(info.output_type).name


__all__ = [
    "MutationType",
    "OutputType",
    "PlainTensorMeta",
    "SubclassCreationMeta",
    "TORCH_VERSION",
    "ViewAndMutationMeta",
    "autograd_compile_spec",
    "autograd_dispatch_class",
    "check_fields",
    "is_opaque_meta",
    "outer_from_attr",
    "plain_symbol_placeholders",
    "rw",
    "schemas",
    "wrapper_classes",
]
