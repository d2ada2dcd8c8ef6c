"""Hypothesis strategies that generate test programs for the fuzzer, as data.

    from generators import programs, materialize
    @given(programs(wrappers=["synthetic_base"]))
    def test_mine(spec):
        program = materialize(spec)          # render(spec) imported as a module
        fn, args = program.make_fn(), program.make_inputs(seed=0)

A strategy yields a `ProgramSpec` (plain, versioned, JSON-serialisable data); `render(spec)`
gives standalone source (torch only); `materialize(spec)` imports it. Internals live in the
private modules; this module only re-exports.
"""

from . import _public
from ._determinism import pin_hypothesis_constants
from ._families import FAMILIES, FAMILY_TARGETS, reached
from ._inductor import INDUCTOR_REASONS, inductor_reasons
from ._program import Program, materialize
from ._public import *  # noqa: F403  (programs() and a factory per family: _public.__all__)
from ._render import render
from ._spec import (
    SPEC_VERSION,
    CallPlan,
    FunctionSpec,
    InputSpec,
    ModuleSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    SpecError,
    Stmt,
    ViewStep,
    spec_from_dict,
)
from ._stmts import INPLACE
from ._stmts_aten import aten_class, pure_aten, rounds
from ._vocabulary import TABLES_DIR as VOCABULARY_DIR
from ._vocabulary import installed_release

pin_hypothesis_constants()  # Note [Draws that depend on what the process imported]

__all__ = [
    "FAMILIES",
    "FAMILY_TARGETS",
    "INDUCTOR_REASONS",
    "INPLACE",
    "SPEC_VERSION",
    "VOCABULARY_DIR",
    "CallPlan",
    "FunctionSpec",
    "InputSpec",
    "ModuleSpec",
    "OutSpec",
    "Program",
    "ProgramSpec",
    "RootSpec",
    "SpecError",
    "Stmt",
    "ViewStep",
    "materialize",
    "reached",
    "inductor_reasons",
    "installed_release",
    "aten_class",
    "pure_aten",
    "render",
    "rounds",
    "spec_from_dict",
]
__all__ += _public.__all__  # programs() and a factory per family
for _name in __all__:
    assert _name in globals(), _name
