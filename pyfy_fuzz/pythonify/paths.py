"""Wrapper paths read off the pythonify IR: which of the vocabulary's names
(`pyfy_fuzz.schema.paths`: `ALL_PATHS`, `FAMILY_TARGETS`, `REFINEMENTS`) a compile exercised.

The vocabulary moved to the torch-free schema (issue 15). For one release its old names still
import from here, with a DeprecationWarning that says where they went.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..schema import paths as _schema_paths
from .ir import (
    AOTAutogradWrapperNode,
    AOTDedupeWrapperNode,
    AOTDispatchSubclassWrapperNode,
    AOTSyntheticBaseWrapperNode,
    CUDAGraphPhase,
    DebugAssertWrapperNode,
    EffectTokensWrapperNode,
    FakifiedOutWrapperNode,
    FunctionalizedRngRuntimeWrapperNode,
    PythonifyIR,
    RuntimeWrapperNode,
    SubclassMeta,
)

__all__ = ["wrapper_paths"]

# Names that moved to pyfy_fuzz.schema.paths (issue 15); importable from here for one release
# (0.2 drops them).
_MOVED = frozenset(_schema_paths.__all__)


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(
            f"pyfy_fuzz.pythonify.paths.{name} moved to pyfy_fuzz.schema.paths.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_schema_paths, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _runtime_paths(node: RuntimeWrapperNode) -> list[str]:
    paths = []
    infos = node.input_info
    if any(i.mutates_data for i in infos):
        paths.append("runtime/input_mutation/data")
    if any(i.mutates_metadata for i in infos):
        paths.append("runtime/input_mutation/metadata")
    if any(i.mutated_out_of_graph for i in infos):
        paths.append("runtime/input_mutation/out_of_graph")
    if node.indices_of_inps_to_detach:
        paths.append("runtime/detach")
    if node.grad_enabled_mutation is not None:
        paths.append("runtime/grad_mode_mutation")
    if node.disable_amp:
        paths.append("runtime/disable_amp")
    for out in node.output_info:
        if out.output_type != "non_alias":
            paths.append(f"runtime/output/{out.output_type}")
    if node.num_intermediate_bases:
        paths.append("runtime/intermediate_bases")
    return paths


def _subclass_paths(node: AOTDispatchSubclassWrapperNode, ir: PythonifyIR) -> list[str]:
    paths = ["subclass/backward" if ir.training else "subclass/forward"]
    metas = [*node.inp_metas, *node.out_metas]
    if any(isinstance(m, SubclassMeta) and m.included_subclass_symints for m in metas):
        paths.append("subclass/dynamic")
    return paths


def _autograd_paths(node: AOTAutogradWrapperNode, ir: PythonifyIR) -> list[str]:
    paths = ["autograd/training"]
    # The slices index the forward graph's outputs and may be open-ended ((1, None): all
    # outputs after the first), so count them against that graph's output count.
    fw = ir.graphs.get("forward")
    n_out = fw.num_outputs if fw is not None else 0
    saved = sum(
        len(range(n_out)[slice(*pair)])
        for pair in (
            node.tensors_saved_for_bw_with_vc_check_slice,
            node.tensors_saved_for_bw_no_vc_check_slice,
        )
    )
    if saved:
        paths.append("autograd/saved_tensors")
    if node.num_symints_saved_for_bw:
        paths.append("autograd/saved_symints")
    if node.mutated_inp_runtime_indices:
        paths.append("autograd/input_mutation")
    if node.num_backward_tokens:
        paths.append("tokens/backward")
    if node.has_mutations_in_bw:
        paths.append("autograd/mutation_in_backward")
    if any(o.output_type == "custom_function_view" for o in node.output_info):
        paths.append("autograd/custom_function_view")
    return paths


def wrapper_paths(ir: PythonifyIR) -> list[str]:
    """Every wrapper path this compile exercised, sorted, each once."""
    paths: list[str] = []
    for node in ir.wrapper_nodes():
        if isinstance(node, RuntimeWrapperNode):
            paths += _runtime_paths(node)
        elif isinstance(node, AOTDispatchSubclassWrapperNode):
            paths += _subclass_paths(node, ir)
        elif isinstance(node, AOTAutogradWrapperNode):
            paths += _autograd_paths(node, ir)
        elif isinstance(node, EffectTokensWrapperNode) and node.token_count:
            paths.append("tokens/forward")
        elif isinstance(node, AOTSyntheticBaseWrapperNode):
            paths += _synthetic_base_paths(node, ir)
        elif isinstance(node, AOTDedupeWrapperNode) and not all(node.keep_arg_mask):
            paths.append("dedupe/duplicate_args")
        elif isinstance(node, FunctionalizedRngRuntimeWrapperNode):
            paths.append("rng/functionalized")
        elif isinstance(node, FakifiedOutWrapperNode):
            paths.append("fakified_out/first_call")
        elif isinstance(node, DebugAssertWrapperNode):
            paths.append("debug_assert/requires_grad")
    for cg in ir.cudagraphs:
        phase = "inference" if cg.phase is CUDAGraphPhase.INFERENCE else "training"
        paths.append(f"cudagraph/{phase}")
        if cg.mutated_input_indices:
            paths.append("cudagraph/skipped_input_mutation")
        if cg.skip_dynamic_graphs:
            paths.append("cudagraph/skip_dynamic")
    if ir.entry.is_module:
        paths.append("module/parameters" if ir.training else "module/inference")
    if any(None in g.shape for g in ir.guards.tensors):
        paths.append("graph/dynamic")
    return sorted(set(paths))


def _synthetic_base_paths(node: AOTSyntheticBaseWrapperNode, ir: PythonifyIR) -> list[str]:
    paths = ["synthetic_base/training" if node.trace_joint else "synthetic_base/inference"]
    shapes = {g.index: g.shape for g in ir.guards.tensors}
    grouped = [i for group in node.base_groups.values() for i in group]
    ndims = [len(shapes.get(i, ())) for i in grouped]
    if ndims:
        paths.append("synthetic_base/nd" if max(ndims) > 1 else "synthetic_base/1d")
    if node.aliased_arg_idx_with_metadata_mutations:
        paths.append("synthetic_base/metadata_mutation")
    paths += [f"synthetic_base/{kind}" for kind in node.base_kinds]
    return paths
