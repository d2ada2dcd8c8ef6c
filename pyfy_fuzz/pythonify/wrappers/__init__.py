"""One module per AOTAutograd wrapper, in torch's order, each read beside runtime_wrappers.py.

Each module holds, for its wrapper: the IR node (a dataclass, a comment per field, invariants in
`__post_init__`); `REGISTRATION`, where the node sits in the stack (Note [The wrapper
registry]); `record`, which builds the node from torch's metadata at post_compile time (None
where torch's post_compile returned the compiled function unchanged); `emit`, the code the
generated file gets for it; its runtime helpers as real functions (`RUNTIME`, copied into the
file verbatim: Note [Runtime helpers are real code] in `source.py`); and `paths`, the wrapper
paths a compile through it reaches. `FIELDS` lists the torch attributes `record` reads, checked
before reading so that a torch whose wrapper changed fails with the field named.

    effect_tokens    EffectTokensWrapper               effect tokens
    subclass         AOTDispatchSubclassWrapper        tensor subclasses around a dense graph
    rng              FunctionalizedRngRuntimeWrapper   CUDA RNG state as graph inputs
    fakified_out     FakifiedOutWrapper                fake outputs on the first call
    autograd         AOTDispatchAutograd.post_compile  the compiled autograd.Function
    runtime          RuntimeWrapper                    grad mode, input mutations, aliased outputs
    debug_assert     DebugAssertWrapper                requires_grad checks
    synthetic_base   AOTSyntheticBaseWrapper           mutated arguments that alias each other
    dedupe           AOTDedupeWrapper                  duplicated arguments
    cudagraph        cudagraphify                      CUDA-graph capture and replay

At runtime the outer-most wrapper (dedupe) runs first; the file defines them inner-most first so
that each can name the callable it wraps. `source.py` holds the emitting utilities, and the
`_`-prefixed modules hold code a wrapper module splits off (the CUDA-graph runtime).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from ..meta import SEGMENTS, EmitContext, IRNode, PathFacts, Registration
from ..sourcepin import pin
from .source import runtime_source

__all__ = [
    "MODULES",
    "POST_COMPILE",
    "POST_COMPILE_FIELDS",
    "emit",
    "function_name",
    "paths",
    "registration",
    "runtime_helpers",
    "segments",
]


# Note [The wrapper registry]
# Each wrapper module says where it sits: its `REGISTRATION` (meta.Registration) names its node
# class, its segment of the stack, its place in torch's post_compile order (the wrapper audit,
# seeds/000) and, if it has runtime helpers, where they stand in the file. The registry is
# built from those alone: every module of this package is imported (sorted by name, so the
# same on every machine), those with a REGISTRATION are the wrappers, in `order`; the node ->
# module map, the post_compile wrappers the capture patches, the pipeline's segments and the
# file's helper section all read it. So adding a wrapper is its module (with REGISTRATION),
# its tests, and its paths in the harness's vocabulary (pyfy_fuzz/schema/paths.py ALL_PATHS,
# which a test keeps a superset of what `paths` emits); nothing here lists it. Every module
# is pinned as it is imported (Note [The emitted source is the imported source]).
def _discover() -> tuple[ModuleType, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        pin(module)
        if isinstance(getattr(module, "REGISTRATION", None), Registration):
            found.append(module)
    found.sort(key=lambda m: _reg(m).order)
    orders = [_reg(m).order for m in found]
    if len(set(orders)) != len(orders):
        raise AssertionError(f"expected one wrapper per order, got {orders}")
    helpers = [_reg(m).helpers for m in found if getattr(m, "RUNTIME", ())]
    if None in helpers or len(set(helpers)) != len(helpers):
        raise AssertionError(f"expected a distinct REGISTRATION.helpers per RUNTIME, got {helpers}")
    return tuple(found)


def _reg(module: ModuleType) -> Registration:
    reg: Registration = module.REGISTRATION
    return reg


# The wrapper modules, in torch's post_compile order (inner-most first; cudagraph last: it
# wraps compiled graphs, not the stack).
MODULES: tuple[ModuleType, ...] = _discover()

# The wrapper modules, by the node class they model.
_BY_NODE: dict[type[IRNode], ModuleType] = {_reg(m).node: m for m in MODULES}

# runtime_wrappers class name -> its model, for the classes whose post_compile the capture
# patches (AOTDispatchAutograd records from its compile spec; cudagraph is no AOT wrapper).
POST_COMPILE: dict[str, ModuleType] = {
    _reg(m).node.wrapper: m for m in MODULES if _reg(m).post_compile
}
# ... and the fields each model's `record` reads.
POST_COMPILE_FIELDS: dict[str, tuple[str, ...]] = {n: m.FIELDS for n, m in POST_COMPILE.items()}


def _module(node: IRNode) -> ModuleType:
    return _BY_NODE[type(node)]


def registration(node: IRNode) -> Registration:
    """Where `node`'s wrapper sits in the stack (its module's REGISTRATION)."""
    return _reg(_module(node))


def segments(nodes: Iterable[IRNode | None]) -> dict[str, list[IRNode]]:
    """The recorded nodes by segment (each of meta.SEGMENTS, maybe empty), each segment in
    torch's post_compile order, inner-most first; None (an inactive wrapper) is left out."""
    out: dict[str, list[IRNode]] = {s: [] for s in SEGMENTS}
    for node in sorted((n for n in nodes if n is not None), key=lambda n: registration(n).order):
        out[registration(node).segment].append(node)
    return out


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
    """Every wrapper's runtime helpers (`RUNTIME`), verbatim, each module's where its
    REGISTRATION.helpers puts it. CUDA graphs have none here: their runtime is emitted only
    for a reduce-overhead compile (cudagraph.runtime_source)."""
    with_helpers = [m for m in MODULES if getattr(m, "RUNTIME", ())]
    blocks = []
    for m in sorted(with_helpers, key=lambda m: _reg(m).helpers or 0):  # set: _discover
        where = "wrappers/" + m.__name__.rsplit(".", 1)[-1] + ".py"
        head = f"# -- {_reg(m).node.wrapper} ({where})\n"
        blocks.append(head + runtime_source(m, m.RUNTIME))
    return "\n\n\n".join(blocks)
