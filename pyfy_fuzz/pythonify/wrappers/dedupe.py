"""AOTDedupeWrapper (runtime_wrappers.py): the compiled graph saw each duplicated argument once.

`f(x, x)` is traced with one `x`: torch.compile's dedupe drops the repeats before the graph and
the file's wrapper does the same at every call. The guards (`_SAME_OBJECT`) make sure a later
call repeats the same arguments; the wrapper itself trusts them, as torch's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..meta import EmitContext, IRNode, PathFacts, Registration

__all__ = ["AOTDedupeWrapperNode", "FIELDS", "FUNCTION", "REGISTRATION", "emit", "paths", "record"]

# Fields of torch's AOTDedupeWrapper that `record` reads.
FIELDS = ("keep_arg_mask", "add_dupe_map", "needs_post_compile")
# The name the file binds the wrapper to.
FUNCTION = "_dedupe_wrapper"


@dataclass
class AOTDedupeWrapperNode(IRNode):
    """Drops duplicated arguments (the compiled graph saw each tensor once)."""

    wrapper: ClassVar[str] = "AOTDedupeWrapper"
    keep_arg_mask: list[bool] = field(default_factory=list)  # per original arg: kept
    add_dupe_map: list[int] = field(default_factory=list)  # original arg -> kept arg it repeats

    def __post_init__(self) -> None:
        if self.add_dupe_map and len(self.add_dupe_map) != len(self.keep_arg_mask):
            raise ValueError("add_dupe_map needs one entry per original argument")


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(node=AOTDedupeWrapperNode, segment="dispatch", order=8)


def record(w: Any, aot_config: Any, meta: Any) -> AOTDedupeWrapperNode | None:
    """None when torch's post_compile returned the compiled function unchanged."""
    if not w.needs_post_compile:
        return None
    return AOTDedupeWrapperNode(
        keep_arg_mask=list(w.keep_arg_mask), add_dupe_map=list(w.add_dupe_map)
    )


def emit(node: AOTDedupeWrapperNode, ctx: EmitContext) -> str:
    keep = [i for i, k in enumerate(node.keep_arg_mask) if k]
    return f'''def _dedupe_wrapper(args):
    """AOTDedupeWrapper: the graph saw each duplicated tensor once.
    keep_arg_mask={node.keep_arg_mask!r}, add_dupe_map={node.add_dupe_map!r}."""
    return {ctx.inner}([{", ".join(f"args[{i}]" for i in keep)}])'''


def paths(node: AOTDedupeWrapperNode, facts: PathFacts) -> list[str]:
    return [] if all(node.keep_arg_mask) else ["dedupe/duplicate_args"]
