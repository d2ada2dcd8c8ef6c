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

from ._families import FAMILIES
from ._program import Program, materialize
from ._public import (
    autograd_function_programs,
    cudagraph_programs,
    dedupe_programs,
    effects_programs,
    input_mutation_programs,
    later_aliasing_programs,
    module_programs,
    output_aliasing_programs,
    programs,
    rng_programs,
    subclass_programs,
    synthetic_base_programs,
)
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

__all__ = [
    "FAMILIES",
    "INPLACE",
    "SPEC_VERSION",
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
    "autograd_function_programs",
    "cudagraph_programs",
    "later_aliasing_programs",
    "dedupe_programs",
    "effects_programs",
    "input_mutation_programs",
    "materialize",
    "module_programs",
    "output_aliasing_programs",
    "programs",
    "render",
    "rng_programs",
    "spec_from_dict",
    "subclass_programs",
    "synthetic_base_programs",
]
for _name in __all__:
    assert _name in globals(), _name
