"""The public strategy factories: argument checks up front, and how each one shrinks.

Every strategy yields `ProgramSpec`s. Examples shrink toward fewer arguments, fewer
statements, smaller and fewer dimensions, float32 over other dtypes, contiguous over other
layouts, no grad over grad, and a one-call plan; the structure the family forces (e.g. the
mutated duplicate for dedupe) stays, since without it the family would not be exercised.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ._families import FAMILIES, family_strategy
from ._spec import ProgramSpec


def _check(max_ops: int, max_inputs: int) -> None:
    if not isinstance(max_ops, int) or not 0 <= max_ops <= 64:
        raise InvalidArgument(f"max_ops must be an int in [0, 64], got {max_ops!r}")
    if not isinstance(max_inputs, int) or not 1 <= max_inputs <= 8:
        raise InvalidArgument(f"max_inputs must be an int in [1, 8], got {max_inputs!r}")


def programs(
    wrappers: Iterable[str] | None = None, *, max_ops: int = 5, max_inputs: int = 3
) -> st.SearchStrategy[ProgramSpec]:
    """Programs from the given families (all by default), each family drawn with equal odds.

    `wrappers` names families from `FAMILIES` (dedupe, synthetic_base, input_mutation,
    output_aliasing, subclass, effects, rng, autograd_function, module, cudagraph,
    later_aliasing).
    Examples shrink as each family shrinks; Hypothesis rarely moves a failing example to
    another family, and prefers fewer choices (e.g. no backward) over family order.
    """
    _check(max_ops, max_inputs)
    names = list(FAMILIES if wrappers is None else wrappers)
    if isinstance(wrappers, str):
        raise InvalidArgument(
            f"wrappers must be a list of family names, got the string {wrappers!r}"
        )
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        choices = ", ".join(FAMILIES)
        raise InvalidArgument(
            f"unknown or no wrapper families {unknown or names!r}; choose from {choices}"
        )
    return st.one_of(*(family_strategy(n, max_ops, max_inputs) for n in names))


def _family(name: str, doc: str) -> object:
    def factory(*, max_ops: int = 5, max_inputs: int = 3) -> st.SearchStrategy[ProgramSpec]:
        _check(max_ops, max_inputs)
        return family_strategy(name, max_ops, max_inputs)

    factory.__name__ = f"{name}_programs"
    factory.__qualname__ = factory.__name__
    factory.__doc__ = (
        doc + "\n\nExamples shrink as `programs()` does, keeping the forced structure."
    )
    return factory


dedupe_programs = _family(
    "dedupe",
    "The same tensor passed twice and mutated in place, through the AOT front-end "
    "(Dynamo dedupes repeated arguments itself): AOTDedupeWrapper.",
)
synthetic_base_programs = _family(
    "synthetic_base",
    "Mutually aliased arguments (base and view, two views, set_-shared storage; 1-D or n-D; "
    "overlapping or disjoint), one of them mutated: AOTSyntheticBaseWrapper.",
)
input_mutation_programs = _family(
    "input_mutation",
    "Data and metadata mutation of arguments, under no_grad/inference_mode, and grad-mode "
    "changes inside the function: RuntimeWrapper's mutation epilogue.",
)
output_aliasing_programs = _family(
    "output_aliasing",
    "Outputs that are an input, views of inputs or of intermediates, or one tensor twice: "
    "RuntimeWrapper's output alias regeneration.",
)
subclass_programs = _family(
    "subclass",
    "TwoTensor, TwoTensor of TwoTensors and MirrorTensor (a one-tensor traceable wrapper "
    "subclass) arguments: "
    "AOTDispatchSubclassWrapper.",
)
effects_programs = _family(
    "effects",
    "aten._print, the print higher-order op and an ORDERED effectful custom op: "
    "EffectTokensWrapper.",
)
rng_programs = _family(
    "rng",
    "rand_like, randn_like, dropout, bernoulli under a fixed seed "
    "(FunctionalizedRngRuntimeWrapper on CUDA; eager parity on CPU).",
)
autograd_function_programs = _family(
    "autograd_function",
    "Custom autograd.Functions (ctx and setup_context styles; save_for_backward, mark_dirty, "
    "mark_non_differentiable, set_materialize_grads, once_differentiable, view outputs, an "
    "effect in backward) and tensor hooks: AOTDispatchAutograd.",
)
module_programs = _family(
    "module",
    "nn.Modules with parameters, buffers, tied parameters and BatchNorm running stats.",
)
later_aliasing_programs = _family(
    "later_aliasing",
    "Arguments distinct in call 0 that a later call aliases (one tensor twice, two views of "
    "one storage, a partial overlap), or aliased ones it overlaps otherwise, one written and "
    "another read: the guards, and every wrapper's aliasing assumptions.",
)
cudagraph_programs = _family(
    "cudagraph",
    "Programs compiled with mode='reduce-overhead' and called several times: CUDA-graph "
    "capture and replay (emulated on CPU).",
)
