"""The spec lives in the torch-free schema (`pyfy_fuzz.schema.spec`, issue 15); the
generators' own modules import it through this name."""

from __future__ import annotations

from pyfy_fuzz.schema.spec import (
    CONTEXTS,
    DTYPES,
    FLOAT_DTYPES,
    GRAD_KINDS,
    INPUT_KINDS,
    LAYOUTS,
    SPEC_VERSION,
    SUBCLASSES,
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
    numel,
    spec_from_dict,
    validate,
)

__all__ = [
    "CONTEXTS",
    "CallPlan",
    "DTYPES",
    "FLOAT_DTYPES",
    "FunctionSpec",
    "GRAD_KINDS",
    "INPUT_KINDS",
    "InputSpec",
    "LAYOUTS",
    "ModuleSpec",
    "OutSpec",
    "ProgramSpec",
    "RootSpec",
    "SPEC_VERSION",
    "SUBCLASSES",
    "SpecError",
    "Stmt",
    "ViewStep",
    "numel",
    "spec_from_dict",
    "validate",
]
