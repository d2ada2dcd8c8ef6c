"""Hooks that live outside the graph: the ones the file replays, and the ones it refuses.

Module hooks need nothing here: the file runs the module's own `__call__` around the graph,
as torch.compile does (`_call_module` in file_runtime.py).

Note [Hooks on inputs]
----------------------
`x.register_hook(h)` or `x.register_post_accumulate_grad_hook(h)` inside the compiled
function, on a tensor Dynamo has a source for (an argument, a parameter, a global), adds
nothing to the graph: Dynamo records it as a side effect and its resume bytecode calls
`<source>.register_hook(<h>)` after the graph ran and before the return value is built
(`SideEffects.codegen_hooks`). The file does the same, in the same place: each hook the
capture's call left on an input is replayed as `<input source>.<method>(<hook source>)`,
where the hook is named by identity among the function's bound locals (arguments, closure
cells) and globals. A hook the file cannot name (a lambda or nested function, which Dynamo
rebuilds from its code at every call) is refused, naming it: dropping it would change
gradients silently. A hook on an intermediate needs nothing: Dynamo traces it into the graph
(`higher_order.register_hook`) and AOTAutograd inlines it into the backward graph.
Hooks registered by the caller before the call (on an input, or on a non-leaf input's
`grad_fn`) are not the compiled function's business: autograd runs them, as it does for
torch.compile.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree

from ..errors import PythonifyUnsupported
from ..meta import HOOK_METHODS, HookReplay
from .exprs import path_expr

__all__ = [
    "hook_snapshot",
    "input_hook_replays",
]


def _hooks(t: torch.Tensor) -> list[tuple[str, Any]]:
    """(method, hook) for each hook on `t`, in registration order per kind."""
    out = []
    for attr, method in HOOK_METHODS.items():
        for h in (getattr(t, attr, None) or {}).values():
            out.append((method, h))
    return out


def hook_snapshot(fn: Any) -> dict[int, int]:
    """How many hooks each parameter of a module carries before the capture's call: the
    call's own registrations are the ones after these."""
    if not isinstance(fn, torch.nn.Module):
        return {}
    return {id(p): len(_hooks(p)) for p in fn.parameters()}


def input_hook_replays(
    fn: Any,
    arg_names: list[str],
    copies: tuple[Any, ...],
    input_sources: dict[int, str],
    bound: dict[str, Any],
    before: dict[int, int],
) -> list[HookReplay]:
    """The hooks the capture's call registered on its inputs, as replays (Note [Hooks on
    inputs]). `input_sources` maps id(tensor) -> source for the graph's inputs; `bound` is the
    function's bound locals."""
    targets: list[tuple[str, torch.Tensor, int]] = []
    for path, leaf in pytree.tree_flatten_with_path(copies)[0]:
        if isinstance(leaf, torch.Tensor):
            first, rest = path_expr(path)
            targets.append((f"L[{arg_names[first]!r}]{rest}", leaf, 0))
    if isinstance(fn, torch.nn.Module):
        for name, p in fn.named_parameters():
            targets.append((input_sources.get(id(p), f"self.{name}"), p, before.get(id(p), 0)))
    target = type(fn).forward if isinstance(fn, torch.nn.Module) else fn
    globals_ = getattr(target, "__globals__", {})
    out = []
    for source, t, skip in targets:
        for method, h in _hooks(t)[skip:]:
            if source.startswith("self."):
                raise PythonifyUnsupported("a hook on a parameter the graph does not use", source)
            out.append(HookReplay(source, method, _hook_source(h, bound, globals_, source)))
    return out


def _hook_source(h: Any, bound: dict[str, Any], globals_: dict[str, Any], where: str) -> str:
    for k, v in bound.items():
        if v is h:
            return f"L[{k!r}]"
    for k, v in globals_.items():
        if v is h:
            return f"G[{k!r}]"
    name = getattr(h, "__qualname__", type(h).__name__)
    raise PythonifyUnsupported(
        f"a hook the file cannot name ({name}: not a global or a bound local)", where
    )
