"""What one capture produces: the graph inputs with their sources and snapshots, and `Capture`.

Plain data apart from `Capture.compiled` (the reference torch.compile callable) and each input's
example value (kept for identity: outputs are mapped back to inputs by object identity).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..graph_render import FxNodeMeta, RenderContext
from ..meta import CompiledGraph, FakeOutput, GradStore, HookReplay, IRNode, ScalarGuard

__all__ = [
    "BACKENDS",
    "FRONTENDS",
    "Capture",
    "GraphInputRecord",
    "InputSnapshot",
    "snapshot",
]

BACKENDS = ("aot_eager", "inductor")
FRONTENDS = ("dynamo", "aot")


@dataclass
class GraphInputRecord:
    """One input of the compiled graph: where it comes from and what it looked like."""

    source: str  # expression over L / G, e.g. "L['x']" or "L['self']._parameters['w']"
    example: Any  # the (copied) example value; identity is used to map outputs back
    dynamic_dims: tuple[int, ...] = ()
    snapshot: InputSnapshot | None = None  # taken before the capture call mutates anything
    # The size symbol of each dynamic dim (aligned with dynamic_dims), or of a SymInt input
    # (one entry), as the ShapeEnv left it after the compile: inputs that share a symbol must
    # share the size (Note [Size symbols] in capture/dynamo.py).
    symbols: tuple[str, ...] = ()
    # With dynamic dims: each dim's stride where the compile saw a number (Dynamo guards it),
    # None where it is an expression of the size symbols; () when no dim is dynamic.
    static_strides: tuple[int | None, ...] = ()
    # Dynamo passes this input to the graph as a tensor it makes at each call from a Python
    # scalar (`GraphArg.pass_arg_as_tensor`: a float traced as a SymFloat); `source` names the
    # scalar, `example` is the tensor (Note [Scalar arguments] in capture/scalars.py).
    pass_arg_as_tensor: bool = False


@dataclass(frozen=True)
class InputSnapshot:
    """A graph input as the compile saw it, before the capture run could mutate it."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    device: str
    requires_grad: bool
    cls: type
    obj_id: int
    storages: frozenset[tuple[int, str]]
    is_leaf: bool = True  # for an input requiring grad: a leaf, or a node's output
    is_inference: bool = False  # made under inference_mode
    # where it lies in its storage, and whether it is a view (Note [Aliased input layout])
    storage_offset: int = 0
    is_view: bool = False


def snapshot(x: Any) -> InputSnapshot | None:
    if not isinstance(x, torch.Tensor):
        return None
    return InputSnapshot(
        shape=tuple(int(s) for s in x.shape),
        stride=tuple(int(s) for s in x.stride()),
        dtype=str(x.dtype),
        device=str(x.device),
        requires_grad=bool(x.requires_grad),
        cls=type(x),
        obj_id=id(x),
        storages=frozenset(_storage_keys(x)),
        is_leaf=bool(x.is_leaf),
        is_inference=bool(x.is_inference()),
        storage_offset=_offset(x),
        is_view=x._base is not None,
    )


def _offset(x: torch.Tensor) -> int:
    try:
        return int(x.storage_offset())
    except (RuntimeError, NotImplementedError, TypeError):  # a subclass without one
        return 0


def _storage_keys(t: torch.Tensor) -> list[tuple[int, str]]:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if is_traceable_wrapper_subclass(t):
        attrs, _ = t.__tensor_flatten__()
        out: list[tuple[int, str]] = []
        for a in attrs:
            out += _storage_keys(getattr(t, a))
        return out
    try:
        return [(t.untyped_storage()._cdata, str(t.device))]
    except (RuntimeError, NotImplementedError):
        return []


@dataclass
class Capture:
    """One compile, recorded: everything pipeline.build_ir needs, and the reference callable."""

    backend: str
    frontend: str
    dynamic: bool
    mode: str | None
    device: str
    compiled: Callable[..., Any]
    inputs: list[GraphInputRecord]
    output_expr: str
    arg_names: list[str]
    is_module: bool
    # Hooks the call registered on its inputs, replayed after the graph (Note [Hooks on inputs]).
    hooks: list[HookReplay] = field(default_factory=list)
    # `.grad` stores Dynamo made after the graph (Note [Gradients the graph stores]).
    grad_stores: list[GradStore] = field(default_factory=list)
    # A module whose own __call__ (its hooks) runs around the compiled forward (Note [The
    # forward frame of a module] in dynamo.py).
    module_call: bool = False
    # With fakify_first_call: torch's fake first outputs (Note [The fakified first call]).
    fake_first_outputs: list[FakeOutput] = field(default_factory=list)
    # torch wrapper name -> its recorded node (None: the wrapper returned the function as is)
    wrappers: dict[str, IRNode | None] = field(default_factory=dict)
    graphs: dict[str, CompiledGraph] = field(default_factory=dict)
    render: RenderContext = field(default_factory=RenderContext)
    grad_enabled: bool = True
    # the code of the GraphModule saved-tensor hooks the compile inlined (pack, unpack), or None
    saved_hooks: tuple[str, str] | None = None
    inference_mode: bool = False  # torch.is_inference_mode_enabled() at the compile
    # Tensor leaves of the call's arguments (source, snapshot): Dynamo guards on how they alias
    # even when it dedupes them before AOTAutograd sees them.
    arg_leaves: list[tuple[str, InputSnapshot]] = field(default_factory=list)
    static_input_indices: list[int] = field(default_factory=list)
    # Graph name (inference / forward / backward) -> torch's node metadata for that graph.
    fx_meta: dict[str, tuple[FxNodeMeta, ...]] = field(default_factory=dict)
    # Each size symbol's value range (lower, upper or None), Note [Size symbols].
    symbol_ranges: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    # Dynamo's guards on the Python scalars the arguments hold (Note [Scalar arguments] in
    # capture/scalars.py); none under frontend="aot", which has no guards.
    scalar_guards: list[ScalarGuard] = field(default_factory=list)
