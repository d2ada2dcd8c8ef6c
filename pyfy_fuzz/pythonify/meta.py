"""torch's wrapper metadata as plain records, and what every wrapper model shares.

AOTAutograd describes a compile with live objects (ViewAndMutationMeta, InputAliasInfo,
OutputAliasInfo, SubclassCreationMeta, ...). The capture copies the part each wrapper's
`post_compile` reads into the frozen records below, made of ints, bools, strings and tuples, so
the IR can be printed, compared and serialised and the generated file cannot lean on
process-local state. `records.py` does the copying; the wrapper models in `wrappers/` hold the
records in their IR nodes.

Also here: `IRNode`, the base of every wrapper's node; `Registration`, where a wrapper module
says its node sits in the stack; `EmitContext`, what a wrapper's `emit` needs to know about its
neighbours; `PathFacts`, what its `paths` needs to know about the compile.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

__all__ = [
    "CUDAGraphPhase",
    "CompiledGraph",
    "EmitContext",
    "FakeOutMeta",
    "FakeOutput",
    "GradStore",
    "HOOK_METHODS",
    "HookReplay",
    "IRNode",
    "InputInfo",
    "MemoryFormat",
    "NON_ALIAS_OUTPUTS",
    "OpaqueLeaf",
    "OutputInfo",
    "PathFacts",
    "PlainMeta",
    "Registration",
    "SCALAR_GUARD_TYPES",
    "SEGMENTS",
    "ScalarGuard",
    "SubclassMeta",
    "TensorMetaRecord",
    "ViewOp",
]


# One of torch's fake first outputs (Note [The fakified first call]): shape, stride, dtype;
# None where the output is not a tensor.
FakeOutput = tuple[tuple[int, ...], tuple[int, ...], str] | None

# The tensor attribute holding each kind of hook -> the method that registers one.
HOOK_METHODS = {
    "_backward_hooks": "register_hook",
    "_post_accumulate_grad_hooks": "register_post_accumulate_grad_hook",
}


@dataclass(frozen=True)
class HookReplay:
    """One hook registration Dynamo replays after the graph (Note [Hooks on inputs] in
    capture/hooks.py)."""

    tensor: str  # the input's source, e.g. "L['x']" or "L['self']._parameters['w']"
    method: str  # a value of HOOK_METHODS
    hook: str  # the hook function's source, e.g. "G['_double_grad']"
    # A hook the function defines (a lambda, a nested def): the module-level factory `hook`
    # calls, its source as the function wrote it (Note [Hooks on inputs]); "" otherwise.
    definition: str = ""

    def __post_init__(self) -> None:
        if self.method not in HOOK_METHODS.values():
            raise ValueError(f"unknown hook method {self.method!r}")


@dataclass(frozen=True)
class GradStore:
    """A `.grad` Dynamo sets on an input after the graph ran (Note [Gradients the graph
    stores] in capture/grads.py)."""

    tensor: str  # the input's source, e.g. "L['x']" or "L['self']._parameters['w']"
    output: int | None  # the index into the compiled outputs of the new .grad; None: None

    def __post_init__(self) -> None:
        if self.output is not None and self.output < 0:
            raise ValueError(f"output index must be >= 0, got {self.output}")


# Dynamo's guards on a Python scalar the file models (Note [Scalar arguments] in
# capture/scalars.py) -> whether the guard holds the value, not the type alone (or, NOT_NAN,
# the ShapeEnv's `not math.isnan(...)` on an unspecialized float).
SCALAR_GUARD_TYPES = {
    "CONSTANT_MATCH": True,
    "EQUALS_MATCH": True,
    "TYPE_MATCH": False,
    "NOT_NAN": False,
}
# The scalar types guarded, by name (the exact type: bool is not int).
_SCALAR_TYPE_NAMES = ("int", "float", "bool", "NoneType", "str")


@dataclass(frozen=True)
class ScalarGuard:
    """One of Dynamo's guards on a Python scalar an argument holds (Note [Scalar arguments] in
    capture/scalars.py): the call must pass that exact type, and under a value guard that
    value (NaN equal to NaN, as Dynamo's float-is-nan guard)."""

    source: str  # Dynamo's source, over the arguments: "L['n']", "L['cfg']['scale']"
    type_name: str  # the exact type guarded: "int", "float", "bool", "NoneType" or "str"
    guard_type: str  # Dynamo's guard, a key of SCALAR_GUARD_TYPES
    value: int | float | bool | str | None  # the value compiled for (read only by value guards)

    def __post_init__(self) -> None:
        if self.guard_type not in SCALAR_GUARD_TYPES:
            raise ValueError(f"expected one of {list(SCALAR_GUARD_TYPES)}, got {self.guard_type!r}")
        if self.type_name not in _SCALAR_TYPE_NAMES:
            raise ValueError(f"expected a type of {_SCALAR_TYPE_NAMES}, got {self.type_name!r}")
        if type(self.value).__name__ != self.type_name:
            raise ValueError(
                f"expected a value of type {self.type_name}, got {type(self.value).__name__}"
            )

    @property
    def holds_value(self) -> bool:
        """The guard holds the value, not only the type."""
        return SCALAR_GUARD_TYPES[self.guard_type]


@dataclass(frozen=True)
class MemoryFormat:
    """MemoryFormatMeta: either a named memory format or an exact size/stride."""

    memory_format: str | None = None  # e.g. "torch.contiguous_format"
    size: tuple[int, ...] | None = None  # exact size, when no named format fits
    stride: tuple[int, ...] | None = None  # exact stride, with `size`


@dataclass(frozen=True)
class PlainMeta:
    """PlainTensorMeta: a dense tensor at `unwrapped_idx` of the flat (unwrapped) list."""

    unwrapped_idx: int  # position in the flat list of inner tensors
    memory_format: MemoryFormat | None = None  # tangents only: the layout the graph expects
    # Per dim, whether the size (stride) is symbolic and travels as a flat leaf after the
    # tensor: only an inner tensor of a subclass, only on torch 2.15+ (Note [Flat positions of
    # subclass leaves]); () elsewhere.
    size_symbols: tuple[bool, ...] = ()
    stride_symbols: tuple[bool, ...] = ()

    @property
    def arg_count(self) -> int:
        """Flat leaves this tensor becomes: itself and its symbolic sizes and strides."""
        return 1 + sum(self.size_symbols) + sum(self.stride_symbols)


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
    attrs: tuple[tuple[str, PlainMeta | SubclassMeta | OpaqueLeaf], ...]  # inner tensors, in order
    outer_size: tuple[int | None, ...]  # None: symbolic
    outer_stride: tuple[int | None, ...]  # None: symbolic
    arg_count: int  # flat leaves this subclass becomes (inner tensors + symbolic sizes)
    included_subclass_symints: bool  # symbolic outer sizes travel as extra flat leaves
    memory_format: MemoryFormat | None = None  # tangents only
    # The inner tensor whose size (stride) the rebuilt outer tensor takes instead of the flat
    # symbolic leaves, which are still consumed (torch 2.15+; None: from the leaves).
    size_from_attr: str | None = None
    stride_from_attr: str | None = None

    def __post_init__(self) -> None:
        if ":" not in self.type_path:
            raise ValueError(f"type_path must be 'module:QualName', got {self.type_path!r}")
        if len(self.outer_size) != len(self.outer_stride):
            raise ValueError("outer_size and outer_stride must have one entry per dim")
        names = {a for a, _ in self.attrs}
        for attr in (self.size_from_attr, self.stride_from_attr):
            if attr is not None and attr not in names:
                raise ValueError(f"{attr!r} is not an inner tensor of {self.type_path}")


TensorMetaRecord = PlainMeta | SubclassMeta


@dataclass(frozen=True)
class InputInfo:
    """InputAliasInfo, reduced to what the runtime epilogue and guards read."""

    is_leaf: bool  # the caller's tensor is a leaf (a data write must hide from autograd)
    mutates_data: bool  # the function writes the input's values
    mutates_metadata: bool  # ... or its size/stride/offset (t_, as_strided_)
    mutates_storage_metadata: bool  # ... or its storage (set_)
    requires_grad: bool  # the input requires grad at compile time
    mutated_out_of_graph: bool  # the write is applied by the runtime epilogue, not the graph


@dataclass(frozen=True)
class ViewOp:
    """One entry of a ViewMeta sequence: an aten view op replayed on a base."""

    op: str  # python expression of the overload, e.g. "torch.ops.aten.slice.Tensor"
    args: tuple[Any, ...]  # positional args after the base
    out_index: int | None = None  # for multi-output views (split, unbind)
    kwargs: tuple[tuple[str, Any], ...] = ()  # keyword-only schema args (expand's implicit)


# Output types that do not alias anything the runtime must regenerate.
NON_ALIAS_OUTPUTS = ("non_alias", "unsafe_view_alias", "custom_function_view")


@dataclass(frozen=True)
class OutputInfo:
    """OutputAliasInfo: how one user output relates to inputs or intermediates."""

    output_type: str  # OutputType name: non_alias, alias_of_input, is_input, ...
    base_idx: int | None  # the input or output it aliases
    requires_grad: bool  # eager's requires_grad for the output
    requires_grad_for_backward: bool  # its tangent reaches the backward graph
    is_tensor: bool  # False for int/SymInt outputs
    view_ops: tuple[ViewOp, ...] | None  # None: replay via _view_func / as_strided

    def __post_init__(self) -> None:
        if self.output_type in ("alias_of_input", "is_input") and self.base_idx is None:
            raise ValueError(f"an {self.output_type} output needs base_idx")


@dataclass(frozen=True)
class FakeOutMeta:
    """One fake (meta) output FakifiedOutWrapper hands out on its first call."""

    shape: tuple[int, ...]  # the compiled graph's output size
    stride: tuple[int, ...]  # ... and stride, which is the point of the wrapper
    dtype: str  # e.g. "torch.float32"
    device: str  # the real output's device (the fake lives on meta)


@dataclass(frozen=True)
class CompiledGraph:
    """One compiled graph (forward, backward or inference) as source text.

    `kind` is "fx" (aot_eager: the FX graph rendered as Python, one line per node annotated with
    its seq_nr) or "inductor" (Inductor's output module embedded verbatim).
    """

    name: str  # "forward" | "backward" | "inference"
    kind: str  # "fx" | "inductor"
    source: str  # the graph's Python source
    seq_nr: tuple[tuple[str, int], ...]  # node name -> seq_nr, for call_function nodes
    grad_acc: tuple[str, ...] = ()  # backward nodes marked is_gradient_acc
    num_inputs: int = 0  # the graph's placeholders
    num_outputs: int = 0  # the graph's outputs (forward: returns + saved for backward)
    # Inductor only: inputs whose alignment the compiled code assumed (cloned when misaligned)
    # and, of those, the mutated ones whose clone is copied back after the call.
    realign_inputs: tuple[int, ...] = ()
    realign_writeback: tuple[int, ...] = ()
    # Inductor only: placeholders no node reads once Inductor's passes ran. Its lowering counts
    # the device of a placeholder with users only (GraphLowering.placeholder), so an unread
    # CPU input does not stop a CUDA-graph capture (see Note [Unread CPU inputs]).
    unread_inputs: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.name not in ("forward", "backward", "inference"):
            raise ValueError(f"graph name must be forward/backward/inference, got {self.name!r}")
        if self.kind not in ("fx", "inductor"):
            raise ValueError(f"graph kind must be 'fx' or 'inductor', got {self.kind!r}")
        if not set(self.realign_writeback) <= set(self.realign_inputs):
            raise ValueError("realign_writeback must be a subset of realign_inputs")


class CUDAGraphPhase(Enum):
    """Which compiled graph a CUDA graph captures."""

    INFERENCE = "inference"
    FORWARD = "forward"
    BACKWARD = "backward"


@dataclass
class IRNode(abc.ABC):  # noqa: B024 - abstract by intent: only the wrappers' nodes are built
    """Base of every wrapper node. `wrapper` names the torch class it mirrors; where the node
    sits in the stack is its module's `REGISTRATION`."""

    wrapper: ClassVar[str] = ""


# The stages of the wrapper stack, in the order the file defines them (inner-most first): the
# wrappers around the compiled forward or inference graph, the autograd assembly, the dispatch
# wrappers; CUDA graphs wrap the compiled graphs themselves. PythonifyIR has a list for each.
SEGMENTS = ("forward_inference", "autograd_assembly", "dispatch", "cudagraph")


@dataclass(frozen=True)
class Registration:
    """What a wrapper module declares about itself (its `REGISTRATION`), from which
    `wrappers/__init__.py` builds the registry and the pipeline orders the stack (Note [The
    wrapper registry] there)."""

    node: type[IRNode]  # the IR node the module models
    segment: str  # the stage of the stack it belongs to, one of SEGMENTS
    # Its place in torch's post_compile order over the whole stack, inner-most first (the
    # wrapper audit, seeds/000): the pipeline orders each segment by it, the registry MODULES.
    order: int
    # Where its runtime helpers (`RUNTIME`) stand among the wrappers' in the file's helper
    # section (the order generated files have always had); None: the module has none.
    helpers: int | None = None
    # The capture patches the torch class's post_compile and builds the node with
    # `record(w, aot_config, meta)`; False: recorded another way (AOTDispatchAutograd, from
    # its compile spec) or no AOTAutograd wrapper at all (CUDA graphs).
    post_compile: bool = True

    def __post_init__(self) -> None:
        if self.segment not in SEGMENTS:
            raise ValueError(f"expected a segment of {SEGMENTS}, got {self.segment!r}")
        if not self.node.wrapper:
            raise ValueError(f"expected {self.node.__name__}.wrapper set, got ''")


@dataclass(frozen=True)
class EmitContext:
    """What a wrapper's `emit` needs from the rest of the file."""

    inner: str  # the callable this wrapper wraps (the next wrapper in, or the compiled graph)
    backward: str = "compiled_backward"  # what the autograd node's backward calls


@dataclass(frozen=True)
class PathFacts:
    """What a wrapper's `paths` needs to know about the compile beyond its own node."""

    training: bool  # the compile has a backward graph
    forward_outputs: int = 0  # the forward graph's output count (saved-tensor slices)
    input_ndims: dict[int, int] = field(default_factory=dict)  # tensor input -> its rank
