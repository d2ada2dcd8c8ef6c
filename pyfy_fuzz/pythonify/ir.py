"""The pythonify IR: the wrapper nodes of one compile, its graphs, guards, CUDA graphs and entry.

Read each wrapper's node beside torch/_functorch/_aot_autograd/runtime_wrappers.py: the nodes
live one per module in `wrappers/` (with how each is recorded, emitted and reported), the
metadata records they hold in `meta.py`, and this module holds what belongs to no wrapper
(guards, the entry point) and `PythonifyIR`, which puts them together. Every node holds
exactly the metadata its wrapper's `post_compile` consumes, captured from one real compile, as
plain data (ints, bools, strings, lists). No node holds a torch object, so the IR can be
printed, compared and serialised, and the generated file cannot lean on process-local state.

Segment order (inner-most callable first), from the wrapper audit; each wrapper module's
`REGISTRATION` places it, and the pipeline orders the recorded nodes by it:

    forward_inference   EffectTokens -> DispatchSubclass -> FunctionalizedRng -> FakifiedOut
    autograd_assembly   AOTDispatchAutograd (training only) -> RuntimeWrapper -> DebugAssert
    dispatch            AOTSyntheticBase -> AOTDedupe

At runtime the outer-most wrapper runs first; codegen emits them inner-most first so that
every helper can name the callable it wraps.

The node and record classes are re-exported here, so `from pyfy_fuzz.pythonify.ir import
RuntimeWrapperNode` keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .meta import (
    CompiledGraph,
    CUDAGraphPhase,
    FakeOutMeta,
    GradStore,
    HookReplay,
    InputInfo,
    IRNode,
    MemoryFormat,
    OpaqueLeaf,
    OutputInfo,
    PlainMeta,
    ScalarGuard,
    SubclassMeta,
    TensorMetaRecord,
    ViewOp,
)
from .wrappers.autograd import AOTAutogradWrapperNode
from .wrappers.cudagraph import CUDAGraphSetupNode
from .wrappers.debug_assert import DebugAssertWrapperNode
from .wrappers.dedupe import AOTDedupeWrapperNode
from .wrappers.effect_tokens import EffectTokensWrapperNode
from .wrappers.fakified_out import FakifiedOutWrapperNode
from .wrappers.rng import FunctionalizedRngRuntimeWrapperNode
from .wrappers.runtime import RuntimeWrapperNode
from .wrappers.subclass import AOTDispatchSubclassWrapperNode
from .wrappers.synthetic_base import AOTSyntheticBaseWrapperNode

__all__ = [
    "AOTAutogradWrapperNode",
    "AOTDedupeWrapperNode",
    "AOTDispatchSubclassWrapperNode",
    "AOTSyntheticBaseWrapperNode",
    "CUDAGraphPhase",
    "CUDAGraphSetupNode",
    "CompiledGraph",
    "DebugAssertWrapperNode",
    "EffectTokensWrapperNode",
    "EntryNode",
    "FakeOutMeta",
    "FakifiedOutWrapperNode",
    "FunctionalizedRngRuntimeWrapperNode",
    "GuardNode",
    "IRNode",
    "InputInfo",
    "MemoryFormat",
    "OpaqueLeaf",
    "OutputInfo",
    "PlainMeta",
    "PythonifyIR",
    "RuntimeWrapperNode",
    "ScalarGuard",
    "SubclassMeta",
    "TensorGuard",
    "TensorMetaRecord",
    "ValueGuard",
    "ViewOp",
]


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
    # The strides guarded: every one when no dim is dynamic; with dynamic dims, those the
    # compile saw as numbers (None: an expression of sizes, not guarded); None: none guarded.
    stride: tuple[int | None, ...] | None = None
    # Where it requires grad: whether it was a leaf (an in-place write to a leaf requiring
    # grad is an error in eager, to a non-leaf it is recorded: the graph differs)
    is_leaf: bool = True
    # An inference tensor (made under inference_mode: no autograd dispatch key); Dynamo's
    # TENSOR_MATCH guards the dispatch key set, so one of the other kind recompiles
    is_inference: bool = False


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
    # Dynamo's AUTOGRAD_SAVED_TENSORS_HOOKS guard: the GraphModule saved-tensor hooks on top
    # at compile time, which the graphs inlined (their code: (pack, unpack)), or None
    saved_hooks: tuple[str, str] | None = None
    # torch.is_inference_mode_enabled() at compile time: part of Dynamo's GLOBAL_STATE guard
    inference_mode: bool = False
    # The same, over the tensor leaves of the call's arguments (Dynamo dedupes f(x, x) before
    # AOTAutograd, so graph inputs alone cannot tell that the two arguments were one tensor).
    arg_sources: list[str] = field(default_factory=list)
    # Note [Arguments the graph does not take]: tensor arguments no graph input reads (one
    # returned as it is), guarded as Dynamo's TENSOR_MATCH guards them; `index` is the
    # position in `arg_sources`.
    arg_tensors: list[TensorGuard] = field(default_factory=list)
    arg_same_object: list[list[int]] = field(default_factory=list)
    arg_shared_storage: list[list[int]] = field(default_factory=list)
    # Size symbols (Note [Size symbols] in capture/dynamo.py): symbol -> the (input index, dim)
    # pairs that carry it (dim None: a SymInt input); every size of a symbol must be equal.
    size_symbols: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)
    # Per shared_storage group, each input's (index, was a view, storage offset less the
    # group's least): Note [Aliased input layout] in pipeline.py.
    alias_layout: list[list[tuple[int, bool, int]]] = field(default_factory=list)
    symbol_ranges: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    # Dynamo's guards on the Python scalars the arguments hold, checked before anything runs
    # (Note [Scalar arguments] in capture/scalars.py).
    scalars: list[ScalarGuard] = field(default_factory=list)

    def __post_init__(self) -> None:
        unranged = set(self.symbol_ranges) - set(self.size_symbols)
        if unranged:
            raise ValueError(f"ranges for symbols no input carries: {sorted(unranged)}")


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
    # Hook registrations replayed after the graph, before the return value is built (Note
    # [Hooks on inputs] in capture/hooks.py).
    hooks: list[HookReplay] = field(default_factory=list)
    # `.grad` stores replayed after the hooks (Note [Gradients the graph stores] in
    # capture/grads.py).
    grad_stores: list[GradStore] = field(default_factory=list)
    # The module's own __call__ runs around the compiled forward (torch.compile of a user's
    # module): `call` goes through it, `_forward` is the compiled frame.
    module_call: bool = False
    # Graph inputs Dynamo passes to the graph as tensors (`pass_arg_as_tensor`: a float traced
    # as a SymFloat), converted at the call as its bytecode converts them (Note [Scalar
    # arguments] in capture/scalars.py); indices into `input_sources`.
    as_tensor: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.module_call and not self.is_module:
            raise ValueError("module_call needs is_module")
        if any(not 0 <= i < len(self.input_sources) for i in self.as_tensor):
            raise ValueError(
                f"expected as_tensor indices of the {len(self.input_sources)} inputs, "
                f"got {self.as_tensor}"
            )


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
