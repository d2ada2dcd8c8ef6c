"""EffectTokensWrapper (runtime_wrappers.py): effect tokens threaded through the graph.

Side-effecting ops (with_effects: prints, custom ops registered as effectful) are ordered in the
graph by tokens: the graph takes one token per effect as leading inputs and returns the new
tokens as leading outputs. Tokens carry no data, so the wrapper passes None and drops as many
leading outputs, as torch's does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..meta import EmitContext, IRNode, PathFacts, Registration

__all__ = [
    "FIELDS",
    "FUNCTION",
    "EffectTokensWrapperNode",
    "REGISTRATION",
    "emit",
    "paths",
    "record",
]

FIELDS: tuple[str, ...] = ()  # reads only ViewAndMutationMeta.tokens
FUNCTION = "_effect_tokens_wrapper"


@dataclass
class EffectTokensWrapperNode(IRNode):
    """Prepends `token_count` None tokens to the args and drops as many leading outputs."""

    wrapper: ClassVar[str] = "EffectTokensWrapper"
    token_count: int = 0  # effect tokens the forward graph threads

    def __post_init__(self) -> None:
        if self.token_count < 0:
            raise ValueError("token_count must be >= 0")


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(node=EffectTokensWrapperNode, segment="forward_inference", order=0)


def record(w: Any, aot_config: Any, meta: Any) -> EffectTokensWrapperNode | None:
    """None without tokens (torch returns the function unchanged)."""
    n = len(meta.tokens)
    return EffectTokensWrapperNode(token_count=n) if n > 0 else None


def emit(node: EffectTokensWrapperNode, ctx: EmitContext) -> str:
    n = node.token_count
    return f'''def _effect_tokens_wrapper(args):
    """EffectTokensWrapper: the graph threads {n} effect token(s) through its side effects.
    Tokens are passed as None and the same number of leading outputs (the new tokens) dropped."""
    outs = {ctx.inner}([{", ".join(["None"] * n)}, *args])
    if outs is None:
        return None
    return list(outs)[{n}:]'''


def paths(node: EffectTokensWrapperNode, facts: PathFacts) -> list[str]:
    return ["tokens/forward"] if node.token_count else []
