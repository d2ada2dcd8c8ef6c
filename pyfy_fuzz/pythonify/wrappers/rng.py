"""FunctionalizedRngRuntimeWrapper (runtime_wrappers.py): CUDA RNG state as graph inputs.

With torch._functorch.config.functionalize_rng_ops (CUDA only), random ops in the graph read an
explicit (seed, offset) pair instead of the global generator. The wrapper passes the CUDA
generator's state in and advances its offset by the graph's offset output, so the caller's
generator moves as eager's would. The backward does the same (autograd.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from ..meta import EmitContext, IRNode, PathFacts, Registration

__all__ = [
    "FIELDS",
    "FUNCTION",
    "FunctionalizedRngRuntimeWrapperNode",
    "REGISTRATION",
    "RUNTIME",
    "emit",
    "paths",
    "record",
]

# Fields of torch's FunctionalizedRngRuntimeWrapper that `record` reads.
FIELDS = ("return_new_outs",)
FUNCTION = "_functionalized_rng_wrapper"


@dataclass
class FunctionalizedRngRuntimeWrapperNode(IRNode):
    """Appends the CUDA (seed, offset) to the args and advances the offset from an output.

    Only active when torch._functorch.config.functionalize_rng_ops (CUDA only).
    """

    wrapper: ClassVar[str] = "FunctionalizedRngRuntimeWrapper"
    num_forward_returns: int = 0  # the offset output follows the forward's returns
    return_new_outs: bool = True  # drop the offset output from what the caller sees

    def __post_init__(self) -> None:
        if self.num_forward_returns < 0:
            raise ValueError("num_forward_returns must be >= 0")


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(
    node=FunctionalizedRngRuntimeWrapperNode, segment="forward_inference", order=2, helpers=4
)


def record(w: Any, aot_config: Any, meta: Any) -> FunctionalizedRngRuntimeWrapperNode | None:
    """None unless the compile functionalized RNG ops."""
    if not meta.is_rng_op_functionalized:
        return None
    return FunctionalizedRngRuntimeWrapperNode(
        num_forward_returns=int(meta.num_forward_returns), return_new_outs=bool(w.return_new_outs)
    )


# --------------------------------------------------------------------------- runtime (emitted)


def _cuda_rng_state_as_tuple():
    """(seed, offset) of the CUDA generator, as FunctionalizedRngRuntimeWrapper passes them."""
    return (
        torch.tensor(torch.cuda.initial_seed()),
        torch.tensor(torch.cuda._get_rng_state_offset()),
    )


def _cuda_set_rng_offset(offset):
    torch.cuda._set_rng_state_offset(int(offset.item()))


RUNTIME = ("_cuda_rng_state_as_tuple", "_cuda_set_rng_offset")


def emit(node: FunctionalizedRngRuntimeWrapperNode, ctx: EmitContext) -> str:
    k = node.num_forward_returns
    ret = (
        f"return list(outs[:{k}]) + list(outs[{k + 1}:])" if node.return_new_outs else "return outs"
    )
    return f'''def _functionalized_rng_wrapper(args):
    """FunctionalizedRngRuntimeWrapper: pass the CUDA RNG (seed, offset) in, then advance the
    global offset by the graph's offset output (output {k})."""
    seed, offset = _cuda_rng_state_as_tuple()
    outs = {ctx.inner}([*args, seed, offset])
    _cuda_set_rng_offset(outs[{k}])
    {ret}'''


def paths(node: FunctionalizedRngRuntimeWrapperNode, facts: PathFacts) -> list[str]:
    return ["rng/functionalized"]
