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
        OpaqueMeta,
        OutputType,
        PlainTensorMeta,
        SubclassCreationMeta,
        ViewAndMutationMeta,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed torch
    raise ImportError(
        f"pyfy_fuzz.pythonify needs torch's AOTAutograd internals (torch {torch.__version__}): "
        f"{exc}. Supported: torch 2.11-2.14."
    ) from exc

TORCH_VERSION = torch.__version__

# Fields read from each wrapper object at post_compile time. A torch that renames one of them
# makes `check_wrapper_fields` fail with the wrapper and field named.
WRAPPER_FIELDS: dict[str, tuple[str, ...]] = {
    "RuntimeWrapper": ("indices_of_inps_to_detach", "trace_joint", "disable_amp"),
    "EffectTokensWrapper": (),
    "AOTDispatchSubclassWrapper": (
        "trace_joint",
        "maybe_subclass_meta",
        "num_fw_outs_saved_for_bw",
    ),
    "FunctionalizedRngRuntimeWrapper": ("return_new_outs",),
    "FakifiedOutWrapper": ("out_metas", "fwd_output_strides", "needs_post_compile"),
    "AOTDedupeWrapper": ("keep_arg_mask", "add_dupe_map", "needs_post_compile"),
    "AOTSyntheticBaseWrapper": (
        "trace_joint",
        "needs_post_compile",
        "aliased_arg_idx_with_metadata_mutations",
        "base_groups",
        "other_arg_indices",
    ),
    "DebugAssertWrapper": ("flat_requires_grad",),
}

SPEC_FIELDS = (
    "maybe_subclass_meta",
    "num_symints_saved_for_bw",
    "backward_state_indices",
    "disable_amp",
    "indices_of_inps_to_detach",
    "fw_metadata",
)

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


def wrapper_classes() -> dict[str, type]:
    """The wrapper classes whose post_compile the capture records, by name."""
    out: dict[str, type] = {}
    for name in WRAPPER_FIELDS:
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


def check_fields(owner: str, obj: Any, fields: tuple[str, ...]) -> None:
    """Fail with the owner and field named when torch renamed something we read."""
    for f in fields:
        if not hasattr(obj, f):
            raise PythonifyUnsupported(
                f"torch {TORCH_VERSION}",
                f"{owner} has no field {f!r}; its internals changed. "
                "Update pyfy_fuzz/pythonify/_compat.py and capture.py.",
            )


def mutated_out_of_graph(info: Any) -> bool:
    return info.mutation_type == MutationType.MUTATED_OUT_GRAPH


def output_type_name(info: Any) -> str:
    return OutputType(info.output_type).name


__all__ = [
    "MutationType",
    "OpaqueMeta",
    "OutputType",
    "PlainTensorMeta",
    "SubclassCreationMeta",
    "TORCH_VERSION",
    "ViewAndMutationMeta",
    "autograd_dispatch_class",
    "check_fields",
    "rw",
    "schemas",
    "wrapper_classes",
]
