"""Observation records: what one subject did with one program, as plain data.

The case layer (`pyfy_fuzz.case.observe`) makes them by driving a subject; the oracles only
read them. They sit in the schema so that the oracles need nothing that drives torch: a
`TensorObs` holds values as detached tensors, but this module never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = [
    "CUDAGRAPH_RUNNERS",
    "PROMISED_PAIRS",
    "AliasObs",
    "CallObs",
    "ExcObs",
    "ProbeObs",
    "Received",
    "SubjectObs",
    "TensorObs",
    "UserCall",
    "function_of",
    "is_function_callee",
]


# The CUDA-graph runners a pythonified file may hold, by attribute name; a subject's `extra()`
# reports their capture and replay counters (pyfy_fuzz.case.subjects.pythonified).
CUDAGRAPH_RUNNERS = ("_cudagraph_inference", "_cudagraph_forward", "_cudagraph_backward")


@dataclass(frozen=True)
class ExcObs:
    """An exception a subject raised: its type (with the names of its bases) and where."""

    type_name: str
    type_mro: tuple[str, ...]
    message: str
    phase: str  # compile | call | backward | probe | probe-call | inputs | load
    traceback_tail: str = ""
    inner_mro: tuple[str, ...] = ()  # BackendCompilerFailed: what the compiler raised
    # The innermost frame inside torch's package it was raised from, "torch/<file>:<function>"
    # ("" when none): part of a crash's identity (oracles/identity.py).
    frame: str = ""

    @property
    def short_type(self) -> str:
        return self.type_name.split("(")[0].rsplit(".", 1)[-1] + (
            "(" + self.type_name.split("(", 1)[1] if "(" in self.type_name else ""
        )

    def is_a(self, other: ExcObs) -> bool:
        """Whether this exception is an instance of other's type (by qualified name).

        torch._dynamo's own exceptions (BackendCompilerFailed, InternalTorchDynamoError)
        subclass RuntimeError, so a compiler crash is not "the same error" as eager's by its
        own type; BackendCompilerFailed is judged by what the compiler raised (AOTAutograd
        tracing the program into eager's own RuntimeError is the same error)."""
        dynamo = "torch._dynamo.exc."
        if self.type_name.startswith(dynamo) and not other.type_name.startswith(dynamo):
            return other.type_name in self.inner_mro
        return other.type_name in self.type_mro


@dataclass(frozen=True)
class TensorObs:
    type_name: str
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...] | None  # None for wrapper subclasses
    offset: int | None
    values: torch.Tensor | None  # plain tensors only
    inner: tuple[tuple[str, TensorObs], ...] = ()
    requires_grad: bool = False
    is_leaf: bool = True
    grad_fn: str | None = None
    is_inference: bool = False

    def plain_values(self) -> list[torch.Tensor]:
        """The values that hold this tensor's data: itself, or its inner tensors'."""
        if self.values is not None:
            return [self.values]
        return [v for _, t in self.inner for v in t.plain_values()]


@dataclass(frozen=True)
class AliasObs:
    """How output `index` relates to the inputs (by name) and the other outputs."""

    index: int
    is_input: tuple[str, ...]
    base: str  # none | input:<name> | base_of:<name> | output:<k> | other
    shares_storage_with_inputs: tuple[str, ...]
    shares_storage_with_outputs: tuple[int, ...]


@dataclass(frozen=True)
class ProbeObs:
    """Output `index` mutated in place after the call: what raised, or what else changed."""

    index: int
    raised: ExcObs | None
    changed_inputs: tuple[str, ...] = ()
    changed_outputs: tuple[int, ...] = ()


# What user code received for one argument: None, or (shape, dtype, requires_grad, version),
# version None for an inference tensor.
Received = tuple[tuple[int, ...], str, bool, int | None] | None


@dataclass(frozen=True)
class UserCall:
    """One run of user code torch called during a call and its backward (a hook; a custom
    Function's forward, setup_context or backward), and what torch handed it: per
    tensor-or-None argument, in order (Note [What user code receives] in generators/_hooks.py)."""

    callee: str  # "a", "node pre", "module", "Fn0.backward", ...
    received: tuple[Received, ...] = ()


# Hooks whose relative order torch promises, by the name of the group (Note [Which order is
# promised to user code] in oracles/user_code.py): a module's backward pre-hook runs before
# its hook, a grad_fn's pre-hook before its hook.
PROMISED_PAIRS = {"module": ("module pre", "module"), "node": ("node pre", "node")}


def is_function_callee(callee: str) -> bool:
    """Whether a HOOK_LOG callee is a custom Function's method ("Fn0.backward"), not a hook."""
    return "." in callee


def function_of(callee: str) -> str:
    """The custom Function a method callee belongs to ("Fn0.backward" -> "Fn0"); "" for a hook."""
    return callee.split(".", 1)[0] if is_function_callee(callee) else ""


@dataclass(frozen=True)
class CallObs:
    seed: int
    variant: str | None
    raised: ExcObs | None = None
    structure: str = ""
    outputs: list[TensorObs | str] = field(default_factory=list)  # str: repr of a non-tensor
    inputs_after: list[tuple[str, TensorObs]] = field(default_factory=list)
    aliasing: list[AliasObs] = field(default_factory=list)
    grad_enabled_after: bool = True
    leaves: tuple[str, ...] = ()
    grads: list[TensorObs | None] | None = None
    second: list[TensorObs | None] | ExcObs | None = None
    outputs_later: list[TensorObs | str] | None = None  # re-read after all calls
    # Dynamo compiled a new graph during this call (its guards rejected the inputs), and the
    # guard failures it gave; only torch.compile compiles, so empty for the other subjects.
    recompiled: bool = False
    recompile_reasons: tuple[str, ...] = ()
    # The hooks that ran during the call and its backward, by name, in order (the program's
    # HOOK_LOG less the custom Functions' entries: the grads oracle's).
    hooks: tuple[str, ...] = ()
    # Every entry of the program's HOOK_LOG, in order: which user code ran and what it
    # received (the user_code oracle's).
    user_calls: tuple[UserCall, ...] = ()
    # The inputs (names of `inputs_after`) whose version counter the call itself moved, read
    # right before and after the subject's call (before backward); None where the call raised.
    # Whether it moved is compared, not by how much (Note [Version counters] in
    # oracles/versions.py).
    versions_moved: tuple[str, ...] | None = None
    # The inputs whose geometry and values the call left exactly as they were (a write of the
    # same values, in-place metadata changes that cancel out); None where the call raised.
    unchanged: tuple[str, ...] | None = None
    # Under the plan's saved-tensor hooks: (tensors packed, packed tensors never unpacked,
    # unpacks of objects no pack returned), over the call and its backwards; None without the
    # hooks (Note [Saved-tensor hook contract] in generators/_saved_hooks.py).
    saved_hooks: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class SubjectObs:
    """Everything one subject did with one program. Frozen, like the Evidence that holds it:
    the oracles only read it, and a stage that wants another view (a run without its variant
    call) makes one with `dataclasses.replace`."""

    subject: str
    setup_error: ExcObs | None = None
    calls: list[CallObs] = field(default_factory=list)
    mutation_probe: list[ProbeObs] | ExcObs | None = None
    version_probe: ExcObs | str | None = None  # exception, "ok", or None (not run)
    # Backward through products saved by autograd *before* the call, after it: raises where
    # the call mutated a saved argument ("ok", an exception, or None: not run or nothing saved)
    saved_probe: ExcObs | str | None = None
    variant: CallObs | None = None
    # The plan's sequence: calls after the variant call, each with its own relationships.
    sequence: list[CallObs] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
