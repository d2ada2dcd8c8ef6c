"""DebugAssertWrapper (runtime_wrappers.py): functorch config.debug_assert's input checks.

Inputs compiled as not requiring grad must still not require grad at call time, and non-tensor
inputs must still not be tensors: the graph was partitioned on those facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..meta import EmitContext, IRNode, PathFacts, Registration

__all__ = [
    "FIELDS",
    "FUNCTION",
    "DebugAssertWrapperNode",
    "REGISTRATION",
    "emit",
    "paths",
    "record",
]

# Fields of torch's DebugAssertWrapper that `record` reads.
FIELDS = ("flat_requires_grad",)
FUNCTION = "_debug_assert_wrapper"


@dataclass
class DebugAssertWrapperNode(IRNode):
    """config.debug_assert: inputs compiled as not requiring grad must not require grad."""

    wrapper: ClassVar[str] = "DebugAssertWrapper"
    flat_requires_grad: list[bool | None] = field(default_factory=list)  # None: not a tensor


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(node=DebugAssertWrapperNode, segment="autograd_assembly", order=6)


def record(w: Any, aot_config: Any, meta: Any) -> DebugAssertWrapperNode:
    """torch applies it only under config.debug_assert; its post_compile runs only then."""
    return DebugAssertWrapperNode(flat_requires_grad=list(w.flat_requires_grad))


def emit(node: DebugAssertWrapperNode, ctx: EmitContext) -> str:
    checks = []
    for i, rg in enumerate(node.flat_requires_grad):
        if rg is None:
            checks.append(
                f"    if isinstance(args[{i}], torch.Tensor):\n"
                f"        raise AssertionError('expected non-Tensor for arg {i}, got Tensor')"
            )
        elif not rg:
            checks.append(
                f"    if args[{i}].requires_grad:\n"
                f"        raise AssertionError('input {i} would not require grad')"
            )
    body = "\n".join(checks)
    return f'''def _debug_assert_wrapper(args):
    """DebugAssertWrapper (functorch config.debug_assert): inputs compiled as not requiring grad
    must still not require grad."""
{body}
    return {ctx.inner}(args)'''


def paths(node: DebugAssertWrapperNode, facts: PathFacts) -> list[str]:
    return ["debug_assert/requires_grad"]
