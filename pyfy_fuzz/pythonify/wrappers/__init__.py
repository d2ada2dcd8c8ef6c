"""One module per AOTAutograd wrapper, in torch's order, each read beside runtime_wrappers.py.

Each module holds, for its wrapper: the IR node (a dataclass, a comment per field, invariants in
`__post_init__`); `record`, which builds the node from torch's metadata at post_compile time
(None where torch's post_compile returned the compiled function unchanged); `emit`, the code the
generated file gets for it; its runtime helpers as real functions (`RUNTIME`, copied into the
file verbatim: Note [Runtime helpers are real code] in `_source.py`); and `paths`, the wrapper
paths a compile through it reaches. `FIELDS` lists the torch attributes `record` reads, checked
before reading so that a torch whose wrapper changed fails with the field named.

    dedupe           AOTDedupeWrapper                  duplicated arguments
    synthetic_base   AOTSyntheticBaseWrapper           mutated arguments that alias each other
    runtime          RuntimeWrapper                    grad mode, input mutations, aliased outputs
    autograd         AOTDispatchAutograd.post_compile  the compiled autograd.Function
    subclass         AOTDispatchSubclassWrapper        tensor subclasses around a dense graph
    effect_tokens    EffectTokensWrapper               effect tokens
    rng              FunctionalizedRngRuntimeWrapper   CUDA RNG state as graph inputs
    fakified_out     FakifiedOutWrapper                fake outputs on the first call
    debug_assert     DebugAssertWrapper                requires_grad checks
    cudagraph        cudagraphify                      CUDA-graph capture and replay

At runtime the outer-most wrapper (dedupe) runs first; the file defines them inner-most first so
that each can name the callable it wraps.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..meta import EmitContext, IRNode, PathFacts
from ..sourcepin import pin
from . import (
    autograd,
    cudagraph,
    debug_assert,
    dedupe,
    effect_tokens,
    fakified_out,
    rng,
    runtime,
    subclass,
    synthetic_base,
)
from .autograd import AOTAutogradWrapperNode
from .cudagraph import CUDAGraphSetupNode
from .debug_assert import DebugAssertWrapperNode
from .dedupe import AOTDedupeWrapperNode
from .effect_tokens import EffectTokensWrapperNode
from .fakified_out import FakifiedOutWrapperNode
from .rng import FunctionalizedRngRuntimeWrapperNode
from .runtime import RuntimeWrapperNode
from .source import runtime_source
from .subclass import AOTDispatchSubclassWrapperNode
from .synthetic_base import AOTSyntheticBaseWrapperNode

__all__ = [
    "AOTAutogradWrapperNode",
    "AOTDedupeWrapperNode",
    "AOTDispatchSubclassWrapperNode",
    "AOTSyntheticBaseWrapperNode",
    "CUDAGraphSetupNode",
    "DebugAssertWrapperNode",
    "EffectTokensWrapperNode",
    "FakifiedOutWrapperNode",
    "FunctionalizedRngRuntimeWrapperNode",
    "MODULES",
    "POST_COMPILE",
    "POST_COMPILE_FIELDS",
    "RuntimeWrapperNode",
    "emit",
    "function_name",
    "paths",
    "runtime_helpers",
]

# torch's order (the wrapper audit); cudagraph wraps compiled graphs, not the stack.
MODULES: tuple[ModuleType, ...] = (
    dedupe,
    synthetic_base,
    runtime,
    autograd,
    subclass,
    effect_tokens,
    rng,
    fakified_out,
    debug_assert,
    cudagraph,
)
for _m in MODULES:  # Note [The emitted source is the imported source]
    pin(_m)

# The wrapper stack's modules, by the node class they model.
_BY_NODE: dict[type[IRNode], ModuleType] = {
    AOTDedupeWrapperNode: dedupe,
    AOTSyntheticBaseWrapperNode: synthetic_base,
    RuntimeWrapperNode: runtime,
    AOTAutogradWrapperNode: autograd,
    AOTDispatchSubclassWrapperNode: subclass,
    EffectTokensWrapperNode: effect_tokens,
    FunctionalizedRngRuntimeWrapperNode: rng,
    FakifiedOutWrapperNode: fakified_out,
    DebugAssertWrapperNode: debug_assert,
    CUDAGraphSetupNode: cudagraph,
}

# runtime_wrappers class name -> its model, for the classes whose post_compile the capture
# patches (AOTDispatchAutograd records from its compile spec; cudagraph is no AOT wrapper).
POST_COMPILE: dict[str, ModuleType] = {
    node.wrapper: m for node, m in _BY_NODE.items() if m not in (autograd, cudagraph)
}
# ... and the fields each model's `record` reads.
POST_COMPILE_FIELDS: dict[str, tuple[str, ...]] = {n: m.FIELDS for n, m in POST_COMPILE.items()}


def _module(node: IRNode) -> ModuleType:
    return _BY_NODE[type(node)]


def emit(node: IRNode, ctx: EmitContext) -> str:
    """The generated file's code for one wrapper of the stack."""
    fn: Callable[[Any, EmitContext], str] = _module(node).emit
    return fn(node, ctx)


def function_name(node: IRNode) -> str:
    """The name the generated file binds a stack wrapper to (what the next one out calls)."""
    name: str = _module(node).FUNCTION
    return name


def paths(node: IRNode, facts: PathFacts) -> list[str]:
    """The wrapper paths a compile through `node` reaches."""
    fn: Callable[[Any, PathFacts], list[str]] = _module(node).paths
    return fn(node, facts)


def runtime_helpers() -> str:
    """Every wrapper's runtime helpers (`RUNTIME`), verbatim, in torch's order. CUDA graphs
    have none here: their runtime is emitted only for a reduce-overhead compile
    (cudagraph.runtime_source)."""
    wrapper_of = {m: cls.wrapper for cls, m in _BY_NODE.items()}
    blocks = []
    for m in MODULES:
        names = getattr(m, "RUNTIME", ())
        if names:
            where = "wrappers/" + m.__name__.rsplit(".", 1)[-1] + ".py"
            blocks.append(f"# -- {wrapper_of[m]} ({where})\n" + runtime_source(m, names))
    return "\n\n\n".join(blocks)
