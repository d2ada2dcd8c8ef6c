"""FakifiedOutWrapper (runtime_wrappers.py): fake outputs with the compiled graph's strides.

When the first call after compile happens under fake tensors (DDPOptimizer's
fakify_first_call), torch returns fake outputs whose strides are those the compiled graph
produces, not those eager would. That call happened during capture (Note [The fakified first
call] in capture/dynamo.py: the capture spends it as DDPOptimizer does), so the file's wrapper
starts disarmed; setting `_fakified_state["pending"]` re-arms it, and the next call returns meta
tensors of exactly the fake outputs' geometry (checked against torch's:
`test_fakified_first_call`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .. import records as R
from ..meta import EmitContext, FakeOutMeta, IRNode, PathFacts, Registration

__all__ = [
    "FIELDS",
    "FUNCTION",
    "FakifiedOutWrapperNode",
    "REGISTRATION",
    "emit",
    "paths",
    "record",
]

# Fields of torch's FakifiedOutWrapper that `record` reads.
FIELDS = ("out_metas", "fwd_output_strides", "needs_post_compile")
FUNCTION = "_fakified_out_wrapper"


@dataclass
class FakifiedOutWrapperNode(IRNode):
    """On the first call, returns fake (meta) outputs with the compiled graph's strides."""

    wrapper: ClassVar[str] = "FakifiedOutWrapper"
    out_metas: list[FakeOutMeta | None] = field(default_factory=list)  # None: not a tensor


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(node=FakifiedOutWrapperNode, segment="forward_inference", order=3)


def record(w: Any, aot_config: Any, meta: Any) -> FakifiedOutWrapperNode | None:
    """None unless torch will fakify the first call. May run twice in one compile (the last
    record wins)."""
    if not w.needs_post_compile:
        return None
    return FakifiedOutWrapperNode(out_metas=R.fake_out_metas(w.out_metas, w.fwd_output_strides))


def emit(node: FakifiedOutWrapperNode, ctx: EmitContext) -> str:
    metas = [None if m is None else (m.shape, m.stride, m.dtype, m.device) for m in node.out_metas]
    return f"""# FakifiedOutWrapper: the first call after compile returns fake outputs with the compiled
# graph's strides (torch makes that call under fake tensors, e.g. in DDPOptimizer). That call
# happened during capture, so `pending` starts False; set it to re-arm the wrapper.
_FAKIFIED_OUT_METAS = {metas!r}
_fakified_state = {{"pending": False}}


def _fakified_out_wrapper(args):
    if _fakified_state["pending"]:
        _fakified_state["pending"] = False
        return [
            None if m is None else torch.empty_strided(m[0], m[1], dtype=_dtype(m[2]), device="meta")
            for m in _FAKIFIED_OUT_METAS
        ]
    return {ctx.inner}(args)"""


def paths(node: FakifiedOutWrapperNode, facts: PathFacts) -> list[str]:
    return ["fakified_out/first_call"]
