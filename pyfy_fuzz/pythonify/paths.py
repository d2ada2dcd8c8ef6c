"""Wrapper paths: the shared names for what a compile exercised, read off the pythonify IR.

A wrapper path is "<family>/<variant>", e.g. ``synthetic_base/nd`` or
``runtime/output/alias_of_intermediate``. Generators aim at them (``hypothesis.event``),
findings carry them, and the coverage report counts them, so all of them use these names.
`FAMILIES` maps each generator family to the path prefix that says it hit its target.
"""

from __future__ import annotations

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

# Generator family -> the path prefixes any one of which means "target reached".
FAMILY_TARGETS: dict[str, tuple[str, ...]] = {
    "dedupe": ("dedupe/",),
    "synthetic_base": ("synthetic_base/",),
    "input_mutation": ("runtime/input_mutation/",),
    "output_aliasing": ("runtime/output/",),
    "subclass": ("subclass/",),
    "effects": ("tokens/",),
    "rng": ("rng/",),  # CUDA only; on CPU the family is judged by eager parity instead
    "autograd_function": ("autograd/",),
    "module": ("module/",),
    "cudagraph": ("cudagraph/",),
}


# AOTAutograd's OutputType names other than non_alias (schemas.py), as runtime paths name them.
OUTPUT_ALIAS_KINDS = (
    "alias_of_input",
    "is_input",
    "alias_of_intermediate_save_as_output",
    "alias_of_intermediate",
    "alias_of_intermediate_base_is_user_output",
    "unsafe_view_alias",
    "custom_function_view",
)

# Every path `wrapper_paths` can name: the report lists those never reached first (they are
# what the next generator work should aim at). A test keeps it a superset of what is emitted.
ALL_PATHS: tuple[str, ...] = (
    "autograd/custom_function_view",
    "autograd/input_mutation",
    "autograd/mutation_in_backward",
    "autograd/saved_symints",
    "autograd/saved_tensors",
    "autograd/training",
    "cudagraph/inference",
    "cudagraph/skip_dynamic",
    "cudagraph/skipped_input_mutation",
    "cudagraph/training",
    "debug_assert/requires_grad",
    "dedupe/duplicate_args",
    "fakified_out/first_call",
    "graph/dynamic",
    "module/inference",
    "module/parameters",
    "rng/functionalized",
    "runtime/detach",
    "runtime/disable_amp",
    "runtime/grad_mode_mutation",
    "runtime/input_mutation/data",
    "runtime/input_mutation/metadata",
    "runtime/input_mutation/out_of_graph",
    "runtime/intermediate_bases",
    *(f"runtime/output/{kind}" for kind in OUTPUT_ALIAS_KINDS),
    "subclass/backward",
    "subclass/dynamic",
    "subclass/forward",
    "synthetic_base/1d",
    "synthetic_base/inference",
    "synthetic_base/metadata_mutation",
    "synthetic_base/nd",
    "synthetic_base/storage",
    "synthetic_base/training",
    "synthetic_base/view_base",
    "tokens/backward",
    "tokens/forward",
)


# Variants that refine a path which is itself always emitted alongside them. They are reported
# and counted like any path, but finding signatures leave them out (`signature_paths`), so
# adding a refinement never renames a known finding in a corpus.
# (autograd/saved_tensors refines autograd/training: it was never emitted before an
# open-ended slice was counted right, so entries signed before that lack it. synthetic_base/1d
# and /nd, the aliased arguments' rank, refine synthetic_base/training or /inference: every
# synthetic base has one, so no shrink can remove it and it would split one bug in two.)
REFINEMENTS: frozenset[str] = frozenset(
    {
        "synthetic_base/storage",
        "synthetic_base/view_base",
        "autograd/saved_tensors",
        "synthetic_base/1d",
        "synthetic_base/nd",
    }
)


def signature_paths(paths: tuple[str, ...] | list[str]) -> list[str]:
    """The wrapper paths a finding's signature is made of: all but the refinements."""
    return sorted(p for p in paths if p not in REFINEMENTS)


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


def reached(paths: list[str], family: str) -> bool:
    """Whether `paths` include the target of generator `family`."""
    try:
        prefixes = FAMILY_TARGETS[family]
    except KeyError:
        known = sorted(FAMILY_TARGETS)
        raise ValueError(f"unknown family {family!r}; expected one of {known}") from None
    return any(p.startswith(prefixes) for p in paths)
