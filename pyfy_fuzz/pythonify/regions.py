"""Graph breaks: a function Dynamo splits into regions, pythonified region by region.

Note [Regions]
--------------
Where Dynamo cannot trace a statement (`torch._dynamo.graph_break()`, `print(...)`), it
compiles the statements before it as one graph, runs the statement in Python, and compiles the
rest (a resume function whose arguments are the live locals) as the next graph; each graph
gets its own AOTAutograd wrapper stack. The file does the same, from the function's source:
the top-level statements between two breaks are one region, compiled as a function of the
names it reads that earlier code defined and returning the names later code reads (the
resume function's arguments); each region is pythonified alone (its own file, with guards,
wrappers and graphs, embedded verbatim and loaded as a module), and the break statements are
emitted as written, between the region calls. A region with no tensor work compiles to no
graph: it is emitted as Python, as torch runs it. Refused, naming it: a break inside a
compound statement or an expression, a `return` that is not the last statement, closure
cells (a region is a new function over the same globals), an nn.Module.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..sourcepin import pin
from .errors import PythonifyUnsupported

__all__ = [
    "BREAK_CALLS",
    "Region",
    "Split",
    "generate",
    "load_region",
    "region_function",
    "split",
]

# Calls that Dynamo graph-breaks on, as a statement of their own: where the file splits.
BREAK_CALLS = ("torch._dynamo.graph_break", "print")


@dataclass(frozen=True)
class Region:
    """The statements between two breaks, as a function."""

    params: tuple[str, ...]  # names it reads that the arguments or earlier regions defined
    body: tuple[str, ...]  # its statements' source, dedented
    returns: tuple[str, ...]  # names later code reads; () for the last region (it returns)

    def source(self, name: str) -> str:
        ret = [] if not self.returns else [f"return ({''.join(r + ', ' for r in self.returns)})"]
        lines = [*self.body, *ret] or ["pass"]
        return f"def {name}({', '.join(self.params)}):\n" + textwrap.indent(
            "\n".join(lines), "    "
        )


@dataclass(frozen=True)
class Split:
    """A function cut at its top-level break statements."""

    name: str  # the function's name
    args: tuple[str, ...]
    regions: tuple[Region, ...]
    breaks: tuple[str, ...]  # the statement between regions k and k+1, as written

    def __post_init__(self) -> None:
        if len(self.breaks) != len(self.regions) - 1 or len(self.regions) < 2:
            raise ValueError("a split has one break between each two regions")
        if self.regions[-1].returns:
            raise ValueError("the last region returns the function's value, not names")


def _is_break(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and ast.unparse(stmt.value.func) in BREAK_CALLS
    )


def _names(nodes: list[ast.stmt], ctx: type) -> set[str]:
    return {
        n.id
        for s in nodes
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)
    }


def split(fn: Callable[..., Any]) -> Split | None:
    """`fn` cut at its top-level break statements (Note [Regions]); None where it has none,
    so the graph break is elsewhere and stays refused as such."""
    if not isinstance(fn, types.FunctionType):
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        return None
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not any(_is_break(s) for s in body):
        return None
    where = fn.__qualname__
    if fn.__code__.co_freevars:
        raise PythonifyUnsupported("a graph break in a function with closure cells", where)
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise PythonifyUnsupported("a graph break in a function with special parameters", where)
    nested = [s for s in body for n in ast.walk(s) if n is not s and isinstance(n, ast.Return)]
    if nested or not isinstance(body[-1], ast.Return):
        raise PythonifyUnsupported("a graph break in a function that returns early", where)
    segments: list[list[ast.stmt]] = [[]]
    breaks: list[ast.stmt] = []
    for s in body:
        if _is_break(s):
            breaks.append(s)
            segments.append([])
        else:
            segments[-1].append(s)
    args = tuple(x.arg for x in a.args)
    regions = []
    defined = set(args)
    for k, seg in enumerate(segments):
        later = [*breaks[k:], *(s for later_seg in segments[k + 1 :] for s in later_seg)]
        params = tuple(sorted(_names(seg, ast.Load) & defined))
        stores = _names(seg, ast.Store)
        last = k == len(segments) - 1
        returns = () if last else tuple(sorted(stores & _names(later, ast.Load)))
        defined |= stores
        body_src = tuple(line for s in seg for line in ast.unparse(s).splitlines())
        regions.append(Region(params, body_src, returns))
    return Split(node.name, args, tuple(regions), tuple(ast.unparse(b) for b in breaks))


def region_function(sp: Split, k: int, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Region k as a function over `fn`'s globals (without adding to them)."""
    name = f"_{sp.name}_region_{k}"
    module = compile(sp.regions[k].source(name), f"<{name}>", "exec")
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(code, fn.__globals__, name)  # type: ignore[attr-defined]


def load_region(source, index):
    """Region `index`'s file, embedded verbatim, as a module of its own."""
    module = types.ModuleType(f"{__name__}.region_{index}")
    exec(compile(source, f"<region {index} of {__name__}>", "exec"), module.__dict__)
    return module


def generate(sp: Split, files: list[str | None], header: str) -> str:
    """The file: each compiled region's file embedded and loaded, each region without a graph
    as its Python, and `call` running them with the break statements between (Note [Regions])."""
    from .gen_python import triple_quoted
    from .wrappers.source import runtime_source

    parts = [
        f'''"""Generated by pyfy-fuzz pythonify: a standalone reproduction of one torch.compile
of `{sp.name}`, which Dynamo splits into {len(sp.regions)} regions at graph breaks.

{header}

Each region with a graph is the file pythonify writes for it alone, embedded verbatim and
loaded as a module; `call(*args)` runs the regions in order with the statements Dynamo could not
trace between them, in Python, as torch.compile does.
"""

import types

import torch  # noqa: F401 - the statements between regions may use it''',
        runtime_source(sys.modules[__name__], ("load_region",)),
    ]
    calls = []
    for k, (region, file) in enumerate(zip(sp.regions, files, strict=True)):
        if file is None:
            parts.append(f"# Region {k}: no tensor work, so no graph: it runs as Python.")
            parts.append(region.source(f"_region_{k}"))
            target = f"_region_{k}"
        else:
            parts.append(
                f"# Region {k}: its own pythonified file.\n_REGION_{k} = load_region("
                f"{triple_quoted(file)}, {k})"
            )
            target = f"_REGION_{k}.call"
        names = "".join(r + ", " for r in region.returns)
        outs = "return " if k == len(sp.breaks) else (f"{names}= " if names else "")
        calls.append(f"    {outs}{target}({', '.join(region.params)})")
        if k < len(sp.breaks):
            calls.append(f"    {sp.breaks[k]}  # the graph break: Python, between regions")
    compiled = [f"_REGION_{k}" for k, f in enumerate(files) if f is not None]
    parts.append(
        "def bind(fn):\n"
        '    """Resolve each region\'s globals against `fn`."""\n'
        f"    for region in ({''.join(c + ', ' for c in compiled)}):\n"
        "        region.bind(fn)"
    )
    parts.append(f"def call({', '.join(sp.args)}):\n" + "\n".join(calls))
    return "\n\n\n".join(parts) + "\n"


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
