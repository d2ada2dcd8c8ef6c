"""The public strategy factories: argument checks up front, and how each one shrinks.

Every strategy yields `ProgramSpec`s. Examples shrink toward fewer arguments, fewer
statements, smaller and fewer dimensions, float32 over other dtypes, contiguous over other
layouts, no grad over grad, and a one-call plan; the structure the family forces (e.g. the
mutated duplicate for dedupe) stays, since without it the family would not be exercised.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ._families import DECLARATIONS, FAMILIES
from ._spec import ProgramSpec
from ._strategy import family_strategy

# The public factories, programs() and one per family: generators re-exports this list.
__all__ = [
    "autograd_function_programs",
    "cudagraph_programs",
    "dedupe_programs",
    "effects_programs",
    "input_mutation_programs",
    "later_aliasing_programs",
    "module_programs",
    "output_aliasing_programs",
    "programs",
    "rng_programs",
    "subclass_programs",
    "synthetic_base_programs",
]


def _check(max_ops: int, max_inputs: int) -> None:
    if not isinstance(max_ops, int) or not 0 <= max_ops <= 64:
        raise InvalidArgument(f"max_ops must be an int in [0, 64], got {max_ops!r}")
    if not isinstance(max_inputs, int) or not 1 <= max_inputs <= 8:
        raise InvalidArgument(f"max_inputs must be an int in [1, 8], got {max_inputs!r}")


def programs(
    wrappers: Iterable[str] | None = None, *, max_ops: int = 5, max_inputs: int = 3
) -> st.SearchStrategy[ProgramSpec]:
    """Programs from the given families (all by default), each family drawn with equal odds.

    `wrappers` names families from `FAMILIES` ({families}).
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


class FamilyFactory(Protocol):
    """A `<family>_programs` strategy factory."""

    def __call__(
        self, *, max_ops: int = 5, max_inputs: int = 3
    ) -> st.SearchStrategy[ProgramSpec]: ...


def _factory(name: str) -> FamilyFactory:
    """The factory of family `name`: its docstring is the family's declared `doc`."""

    def factory(*, max_ops: int = 5, max_inputs: int = 3) -> st.SearchStrategy[ProgramSpec]:
        _check(max_ops, max_inputs)
        return family_strategy(name, max_ops, max_inputs)

    factory.__name__ = f"{name}_programs"
    factory.__qualname__ = factory.__name__
    factory.__doc__ = (
        DECLARATIONS[name].doc
        + "\n\nExamples shrink as `programs()` does, keeping the forced structure."
    )
    return factory


# The family list in programs()'s docstring is read off the declarations.
programs.__doc__ = (programs.__doc__ or "").replace("{families}", ", ".join(FAMILIES))


# One factory per declared family (tests/generators/test_public.py checks that none is missing).
dedupe_programs = _factory("dedupe")
synthetic_base_programs = _factory("synthetic_base")
input_mutation_programs = _factory("input_mutation")
output_aliasing_programs = _factory("output_aliasing")
subclass_programs = _factory("subclass")
effects_programs = _factory("effects")
rng_programs = _factory("rng")
autograd_function_programs = _factory("autograd_function")
module_programs = _factory("module")
later_aliasing_programs = _factory("later_aliasing")
cudagraph_programs = _factory("cudagraph")
