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
cells) and globals. A hook the function defines itself (a lambda, a nested def: the most
common way to write one) has no name to find: Dynamo rebuilds it from its code at every call,
over the frame's cells. The file does the same from the function's source: the definition is
wrapped in a module-level factory whose parameters are the hook's free variables, rebuilt
over the function's globals (`_over_globals`) and called with the current values, e.g.
`_over_globals(_hook_0, G)(L['scale'])`. A free variable must be a value the file has (an
argument or a closure cell of the function, unchanged); one the function computes, or a
definition the source does not single out (two on one line), is refused by name: dropping
the hook would change gradients silently.
A hook on an intermediate needs nothing: Dynamo traces it into the graph
(`higher_order.register_hook`) and AOTAutograd inlines it into the backward graph.
Hooks registered by the caller before the call (on an input, or on a non-leaf input's
`grad_fn`) are not the compiled function's business: autograd runs them, as it does for
torch.compile.
"""

from __future__ import annotations

import ast
import linecache
import textwrap
import types
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
    out: list[HookReplay] = []
    for source, t, skip in targets:
        for method, h in _hooks(t)[skip:]:
            if source.startswith("self."):
                raise PythonifyUnsupported("a hook on a parameter the graph does not use", source)
            expr, definition = _hook_source(h, bound, globals_, source, target, len(out))
            out.append(HookReplay(source, method, expr, definition))
    return out


def _hook_source(
    h: Any, bound: dict[str, Any], globals_: dict[str, Any], where: str, fn: Any, k: int
) -> tuple[str, str]:
    """The hook as an expression the file evaluates (with L, G), and the factory definition
    it calls where the function defines the hook itself (Note [Hooks on inputs])."""
    for name, v in bound.items():
        if v is h:
            return f"L[{name!r}]", ""
    for name, v in globals_.items():
        if v is h:
            return f"G[{name!r}]", ""
    qualname = getattr(h, "__qualname__", type(h).__name__)
    node = _definition(h, fn)
    if node is None:
        raise PythonifyUnsupported(
            f"a hook the file cannot name ({qualname}: not a global, a bound local or a "
            "definition in the function's source)",
            where,
        )
    free = h.__code__.co_freevars
    for name, cell in zip(free, h.__closure__ or (), strict=True):
        try:
            value = cell.cell_contents
        except ValueError:
            value = None
        if name not in bound or bound[name] is not value:
            raise PythonifyUnsupported(
                f"a hook closing over a value the function computes ({qualname}: {name})", where
            )
    factory = f"_hook_{k}"
    if isinstance(node, ast.Lambda):
        body = f"return {ast.unparse(node)}"
    else:
        body = f"{ast.unparse(node)}\nreturn {node.name}"
    definition = f"def {factory}({', '.join(free)}):\n" + textwrap.indent(body, "    ")
    args = ", ".join(f"L[{name!r}]" for name in free)
    return f"_over_globals({factory}, G)({args})", definition


def _definition(h: Any, fn: Any) -> ast.Lambda | ast.FunctionDef | None:
    """The lambda or nested def in `fn`'s source that `h` was made from: the one definition
    of its kind on its first line; None where there is not exactly one."""
    code = getattr(h, "__code__", None)
    if not isinstance(code, types.CodeType) or not _nested_in(code, getattr(fn, "__code__", None)):
        return None
    # The whole file, not inspect.getsource(fn): a region of a split function (Note [Regions])
    # is compiled from the function's statements with the file's line numbers, but is no
    # `def` there of its own.
    try:
        tree = ast.parse("".join(linecache.getlines(code.co_filename)))
    except (SyntaxError, ValueError):
        return None
    kinds: tuple[type, ...] = (
        (ast.Lambda,) if code.co_name == "<lambda>" else (ast.FunctionDef, ast.AsyncFunctionDef)
    )
    found = [
        n
        for n in ast.walk(tree)
        if isinstance(n, kinds)
        and (getattr(n, "decorator_list", None) or [n])[0].lineno == code.co_firstlineno
        and getattr(n, "name", "<lambda>") == code.co_name
    ]
    if len(found) != 1 or getattr(found[0], "decorator_list", None):
        return None
    node = found[0]
    return node if isinstance(node, ast.Lambda | ast.FunctionDef) else None


def _nested_in(code: types.CodeType, outer: types.CodeType | None) -> bool:
    """`code` is a constant of `outer`'s, at any depth: the function defines it. Compared by
    place and bytecode, not identity: the hook Dynamo rebuilt may come from another import
    of the same file (a program module loaded twice in one process)."""
    if outer is None:
        return False
    key = (code.co_filename, code.co_firstlineno, code.co_name, code.co_code)
    return any(
        isinstance(c, types.CodeType)
        and ((c.co_filename, c.co_firstlineno, c.co_name, c.co_code) == key or _nested_in(code, c))
        for c in outer.co_consts
    )
