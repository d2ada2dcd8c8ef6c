"""The pythonify IR: one node class per AOTAutograd wrapper, plus graphs, guards and CUDA graphs.

Read this file beside torch/_functorch/_aot_autograd/runtime_wrappers.py: each `*Node` here holds
exactly the metadata its wrapper's `post_compile` consumes, captured from one real compile, as
plain data (ints, bools, strings, lists). No node holds a torch object, so the IR can be printed,
compared and serialised, and the generated file cannot lean on process-local state.

Segment order (inner-most callable first), from the wrapper audit:

    forward_inference   EffectTokens -> DispatchSubclass -> FunctionalizedRng -> FakifiedOut
    autograd_assembly   AOTDispatchAutograd (training only) -> RuntimeWrapper -> DebugAssert
    dispatch            AOTSyntheticBase -> AOTDedupe

At runtime the outer-most wrapper runs first; codegen emits them inner-most first so that
every helper can name the callable it wraps.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

# --------------------------------------------------------------------------- metadata records


@dataclass(frozen=True)
class MemoryFormat:
    """MemoryFormatMeta: either a named memory format or an exact size/stride."""

    memory_format: str | None = None  # e.g. "torch.contiguous_format"
    size: tuple[int, ...] | None = None
    stride: tuple[int, ...] | None = None


@dataclass(frozen=True)
class PlainMeta:
    """PlainTensorMeta: a dense tensor at `unwrapped_idx` of the flat (unwrapped) list."""

    unwrapped_idx: int
    memory_format: MemoryFormat | None = None


@dataclass(frozen=True)
class OpaqueLeaf:
    """OpaqueMeta: a non-tensor attribute carried through unwrapping unchanged."""


@dataclass(frozen=True)
class SubclassMeta:
    """SubclassCreationMeta: how one traceable wrapper subclass flattens and rebuilds.

    `outer_size`/`outer_stride` hold None where the value is symbolic (read from the runtime
    tensor on unwrap, taken from the flat outputs on wrap).
    """

    type_path: str  # "module:QualName", imported by the generated file
    ctx_repr: str  # repr() of the __tensor_flatten__ context, evaluated in the file
    attrs: tuple[tuple[str, PlainMeta | SubclassMeta | OpaqueLeaf], ...]
    outer_size: tuple[int | None, ...]
    outer_stride: tuple[int | None, ...]
    arg_count: int
    included_subclass_symints: bool
    memory_format: MemoryFormat | None = None


TensorMetaRecord = PlainMeta | SubclassMeta


@dataclass(frozen=True)
class InputInfo:
    """InputAliasInfo, reduced to what the runtime epilogue and guards read."""

    is_leaf: bool
    mutates_data: bool
    mutates_metadata: bool
    mutates_storage_metadata: bool
    requires_grad: bool
    mutated_out_of_graph: bool


@dataclass(frozen=True)
class ViewOp:
    """One entry of a ViewMeta sequence: an aten view op replayed on a base."""

    op: str  # python expression of the overload, e.g. "torch.ops.aten.slice.Tensor"
    args: tuple[Any, ...]  # positional args after the base
    out_index: int | None = None  # for multi-output views (split, unbind)
    kwargs: tuple[tuple[str, Any], ...] = ()  # keyword-only schema args (expand's implicit)


@dataclass(frozen=True)
class OutputInfo:
    """OutputAliasInfo: how one user output relates to inputs or intermediates."""

    output_type: str  # OutputType name: non_alias, alias_of_input, is_input, ...
    base_idx: int | None
    requires_grad: bool
    requires_grad_for_backward: bool
    is_tensor: bool
    view_ops: tuple[ViewOp, ...] | None  # None: replay via _view_func / as_strided


@dataclass(frozen=True)
class CompiledGraph:
    """One compiled graph (forward, backward or inference) as source text.

    `kind` is "fx" (aot_eager: the FX graph rendered as Python, one line per node annotated with
    its seq_nr) or "inductor" (Inductor's output module embedded verbatim).
    """

    name: str  # "forward" | "backward" | "inference"
    kind: str
    source: str
    seq_nr: tuple[tuple[str, int], ...]  # node name -> seq_nr, for call_function nodes
    grad_acc: tuple[str, ...] = ()  # backward nodes marked is_gradient_acc
    num_inputs: int = 0
    num_outputs: int = 0
    # Inductor only: inputs whose alignment the compiled code assumed (cloned when misaligned)
    # and, of those, the mutated ones whose clone is copied back after the call.
    realign_inputs: tuple[int, ...] = ()
    realign_writeback: tuple[int, ...] = ()


class CUDAGraphPhase(Enum):
    INFERENCE = "inference"
    FORWARD = "forward"
    BACKWARD = "backward"


# --------------------------------------------------------------------------- visitor


class CodeGenVisitor(abc.ABC):
    """One visit method per node class; gen_python implements it."""

    @abc.abstractmethod
    def visit_effect_tokens(self, node: EffectTokensWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_dispatch_subclass(self, node: AOTDispatchSubclassWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_functionalized_rng(self, node: FunctionalizedRngRuntimeWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_fakified_out(self, node: FakifiedOutWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_autograd(self, node: AOTAutogradWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_runtime(self, node: RuntimeWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_debug_assert(self, node: DebugAssertWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_synthetic_base(self, node: AOTSyntheticBaseWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_dedupe(self, node: AOTDedupeWrapperNode) -> Any: ...

    @abc.abstractmethod
    def visit_cudagraph_setup(self, node: CUDAGraphSetupNode) -> Any: ...


@dataclass
class IRNode(abc.ABC):
    """Base of every wrapper node. `wrapper` names the torch class it mirrors."""

    wrapper: ClassVar[str] = ""
    segment: ClassVar[str] = ""

    @abc.abstractmethod
    def accept(self, visitor: CodeGenVisitor) -> Any: ...


# --------------------------------------------------------------------------- forward_inference


@dataclass
class EffectTokensWrapperNode(IRNode):
    """Prepends `token_count` None tokens to the args and drops as many leading outputs."""

    wrapper: ClassVar[str] = "EffectTokensWrapper"
    segment: ClassVar[str] = "forward_inference"
    token_count: int = 0

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_effect_tokens(self)


@dataclass
class AOTDispatchSubclassWrapperNode(IRNode):
    """Unwraps subclass inputs to their inner tensors and rewraps graph outputs.

    In training, the first outputs are user-visible and rewrapped; the trailing
    `num_fw_outs_saved_for_bw` outputs (activations) pass through as plain tensors.
    """

    wrapper: ClassVar[str] = "AOTDispatchSubclassWrapper"
    segment: ClassVar[str] = "forward_inference"
    inp_metas: list[TensorMetaRecord] = field(default_factory=list)
    out_metas: list[TensorMetaRecord] = field(default_factory=list)
    num_fw_outs_saved_for_bw: int | None = None

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_dispatch_subclass(self)


@dataclass
class FunctionalizedRngRuntimeWrapperNode(IRNode):
    """Appends the CUDA (seed, offset) to the args and advances the offset from an output.

    Only active when torch._functorch.config.functionalize_rng_ops (CUDA only).
    """

    wrapper: ClassVar[str] = "FunctionalizedRngRuntimeWrapper"
    segment: ClassVar[str] = "forward_inference"
    num_forward_returns: int = 0
    return_new_outs: bool = True

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_functionalized_rng(self)


@dataclass
class FakeOutMeta:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    device: str


@dataclass
class FakifiedOutWrapperNode(IRNode):
    """On the first call, returns fake (meta) outputs with the compiled graph's strides.

    Torch uses this when the first call happens under fake tensors (DDPOptimizer's
    fakify_first_call); later calls run the compiled graph.
    """

    wrapper: ClassVar[str] = "FakifiedOutWrapper"
    segment: ClassVar[str] = "forward_inference"
    out_metas: list[FakeOutMeta | None] = field(default_factory=list)

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_fakified_out(self)


# --------------------------------------------------------------------------- autograd_assembly


@dataclass
class AOTAutogradWrapperNode(IRNode):
    """AOTDispatchAutograd.post_compile: the torch.autograd.Function stitching fw and bw.

    Field names follow the wrapper audit. Slices are (start, stop) pairs over the compiled
    forward's outputs.
    """

    wrapper: ClassVar[str] = "AOTDispatchAutograd"
    segment: ClassVar[str] = "autograd_assembly"
    num_forward_returns: int = 0
    num_outputs: int = 0
    num_intermediate_bases: int = 0
    mutated_inp_runtime_indices: list[int] = field(default_factory=list)
    input_info: list[InputInfo] = field(default_factory=list)
    output_info: list[OutputInfo] = field(default_factory=list)
    tensors_saved_for_bw_with_vc_check_slice: tuple[int | None, int | None] = (0, 0)
    tensors_saved_for_bw_no_vc_check_slice: tuple[int | None, int | None] = (0, 0)
    symints_saved_for_bw_slice: tuple[int | None, int | None] = (0, 0)
    num_symints_saved_for_bw: int = 0
    num_backward_tokens: int = 0
    is_rng_op_functionalized: bool = False
    num_graphsafe_rng_states: int = 0
    disable_amp: bool = False
    deterministic: bool | None = None
    has_mutations_in_bw: bool = False
    donated_buffers: bool = False
    tangent_metas: list[TensorMetaRecord] = field(default_factory=list)
    grad_input_metas: list[TensorMetaRecord] | None = None
    has_subclass: bool = False

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_autograd(self)


@dataclass
class RuntimeWrapperNode(IRNode):
    """The runtime epilogue: detach, grad mode, input mutations, output alias regeneration."""

    wrapper: ClassVar[str] = "RuntimeWrapper"
    segment: ClassVar[str] = "autograd_assembly"
    indices_of_inps_to_detach: list[int] = field(default_factory=list)
    trace_joint: bool = False
    disable_amp: bool = False
    keep_input_mutations: bool = False
    input_info: list[InputInfo] = field(default_factory=list)
    output_info: list[OutputInfo] = field(default_factory=list)
    mutated_inp_runtime_indices: list[int] = field(default_factory=list)
    mutated_graph_handled_indices_seen_by_autograd: list[int] = field(default_factory=list)
    num_outputs: int = 0
    num_intermediate_bases: int = 0
    grad_enabled_mutation: bool | None = None

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_runtime(self)


@dataclass
class DebugAssertWrapperNode(IRNode):
    """config.debug_assert: inputs compiled as not requiring grad must not require grad."""

    wrapper: ClassVar[str] = "DebugAssertWrapper"
    segment: ClassVar[str] = "autograd_assembly"
    flat_requires_grad: list[bool | None] = field(default_factory=list)

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_debug_assert(self)


# --------------------------------------------------------------------------- dispatch


@dataclass
class AOTSyntheticBaseWrapperNode(IRNode):
    """Replaces mutated, mutually-aliased inputs by one synthetic base per storage group.

    `base_groups[b]` lists the original arg indices whose shared base becomes new arg b;
    `other_arg_indices` follow the bases. Outputs appended for
    `aliased_arg_idx_with_metadata_mutations` are applied with as_strided_ and dropped.
    `base_kinds` says how each base was made ("storage": a tensor over the shared storage,
    when no alias has a `_base`, e.g. set_-shared inputs; "view_base": the aliases' common
    `_base`); it changes nothing at runtime and names the coverage path variant.
    """

    wrapper: ClassVar[str] = "AOTSyntheticBaseWrapper"
    segment: ClassVar[str] = "dispatch"
    base_groups: dict[int, list[int]] = field(default_factory=dict)
    other_arg_indices: list[int] = field(default_factory=list)
    aliased_arg_idx_with_metadata_mutations: list[int] = field(default_factory=list)
    trace_joint: bool = False
    base_kinds: list[str] = field(default_factory=list)

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_synthetic_base(self)


@dataclass
class AOTDedupeWrapperNode(IRNode):
    """Drops duplicated arguments (the compiled graph saw each tensor once)."""

    wrapper: ClassVar[str] = "AOTDedupeWrapper"
    segment: ClassVar[str] = "dispatch"
    keep_arg_mask: list[bool] = field(default_factory=list)
    add_dupe_map: list[int] = field(default_factory=list)

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_dedupe(self)


# --------------------------------------------------------------------------- CUDA graphs


@dataclass
class CUDAGraphSetupNode(IRNode):
    """Capture/replay of one compiled graph (see seeds/001, "CUDA Graph IR Node").

    Wraps the compiled graph callable of its phase. On cpu, the generated file replays against
    an emulation that keeps CUDA-graph semantics (static input buffers, outputs rewritten in
    place at each replay).
    """

    wrapper: ClassVar[str] = "cudagraphify"
    segment: ClassVar[str] = "cudagraph"
    graph_id: str = "inference"
    phase: CUDAGraphPhase = CUDAGraphPhase.INFERENCE
    warmup_runs: int = 1
    static_input_indices: list[int] = field(default_factory=list)
    saved_tensor_indices: list[int] = field(default_factory=list)
    num_forward_outputs: int | None = None
    backward_graph_id: str | None = None
    device_index: int | None = None
    skip_dynamic_graphs: bool = False
    emulate: bool = True
    # Non-static inputs the graph mutates: torch skips CUDA graphs for those, and so do we.
    mutated_input_indices: list[int] = field(default_factory=list)

    def accept(self, visitor: CodeGenVisitor) -> Any:
        return visitor.visit_cudagraph_setup(self)


# --------------------------------------------------------------------------- guards and entry


@dataclass(frozen=True)
class TensorGuard:
    """What a graph input looked like at compile time. None in `shape` marks a dynamic dim."""

    index: int
    source: str
    dtype: str
    device: str
    shape: tuple[int | None, ...]
    requires_grad: bool
    type_path: str  # "torch:Tensor", or the subclass, or "torch.nn.parameter:Parameter"
    stride: tuple[int, ...] | None = None  # None when any dim is dynamic


@dataclass(frozen=True)
class ValueGuard:
    """A non-tensor graph input (e.g. a SymInt read off a tensor) or a specialised constant."""

    index: int
    source: str
    kind: str  # "symint" | "const"
    value: Any = None


@dataclass
class GuardNode:
    """Checks the file's compile-time assumptions before anything runs.

    `same_object` lists groups of input indices that were one object; `shared_storage` groups
    that shared a storage without being the same object; every other pair of tensor inputs must
    not overlap. Violations raise PythonifyGuardError naming the argument.
    """

    tensors: list[TensorGuard] = field(default_factory=list)
    values: list[ValueGuard] = field(default_factory=list)
    same_object: list[list[int]] = field(default_factory=list)
    shared_storage: list[list[int]] = field(default_factory=list)
    grad_enabled: bool = True
    # The same, over the tensor leaves of the call's arguments (Dynamo dedupes f(x, x) before
    # AOTAutograd, so graph inputs alone cannot tell that the two arguments were one tensor).
    arg_sources: list[str] = field(default_factory=list)
    arg_same_object: list[list[int]] = field(default_factory=list)
    arg_shared_storage: list[list[int]] = field(default_factory=list)


@dataclass
class EntryNode:
    """How `call(*args)` binds arguments and rebuilds the user's return value.

    `input_sources` are Python expressions over `L` (the bound arguments, closure cells and
    `self`) and `G` (the function's globals). `output_expr` rebuilds the return value from
    `outs` (the compiled outputs) and `L`/`G`.
    """

    arg_names: list[str] = field(default_factory=list)
    has_varargs: bool = False
    defaults: dict[str, str] = field(default_factory=dict)
    is_module: bool = False
    frontend: str = "dynamo"
    input_sources: list[str] = field(default_factory=list)
    output_expr: str = "outs"


@dataclass
class PythonifyIR:
    """Everything codegen needs, in segment order."""

    graphs: dict[str, CompiledGraph]
    forward_inference: list[IRNode]
    autograd_assembly: list[IRNode]
    dispatch: list[IRNode]
    cudagraphs: list[CUDAGraphSetupNode]
    guards: GuardNode
    entry: EntryNode
    training: bool
    backend: str
    device: str
    subclass_imports: list[str] = field(default_factory=list)
    constants: dict[str, str] = field(default_factory=dict)  # name -> base64 torch.save bytes
    header: dict[str, str] = field(default_factory=dict)

    def wrapper_nodes(self) -> list[IRNode]:
        """All wrapper nodes in application order (outer-most first), as torch applies them."""
        return [
            *reversed(self.dispatch),
            *reversed(self.autograd_assembly),
            *reversed(self.forward_inference),
        ]

    def active_wrappers(self) -> list[str]:
        return [n.wrapper for n in self.wrapper_nodes()]
