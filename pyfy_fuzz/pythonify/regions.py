"""Graph breaks: a function Dynamo splits into regions, pythonified region by region.

Note [Regions]
--------------
Where Dynamo cannot trace a statement (`torch._dynamo.graph_break()`, `print(...)`, an
in-place view op or `set_`/`resize_` on a graph input, a call it cannot inline), it compiles
the statements before it as one graph, runs the statement in Python, and compiles the rest (a
resume function whose arguments are the live locals) as the next graph; each graph gets its
own AOTAutograd wrapper stack. The file does the same, from the function's source:

- *Where* it breaks is Dynamo's own record, not a list of calls: the capture compiles with
  `fullgraph=True`, and Dynamo's `Unsupported` carries the user frames it was tracing
  (`real_stack`). The outermost frame in the function's own file names the line, and the
  top-level statement holding that line becomes a break statement (`Function.statement_at`).
  Each region is compiled as a function of its own whose code keeps the file's name and line
  numbers, so a break inside a region is located the same way, and the split grows until
  every region compiles whole (`api._pythonify_regions`).
- The top-level statements between two breaks are one region, compiled as a function of the
  names it reads that earlier code defined and returning the names later code reads (the
  resume function's arguments); each region is pythonified alone (its own file, with guards,
  wrappers and graphs, embedded verbatim and loaded as a module), and the break statements are
  emitted as written, between the region calls. A region with no tensor work compiles to no
  graph: it is emitted as Python, as torch runs it.
- A break inside an `if`/`with`/`try` statement makes the whole statement Python, and a
  break inside a call Dynamo inlined makes the calling statement Python (Dynamo 2.13 breaks
  at the call and compiles the callee's frame on its own): the values are the same, but the
  file compiles less than torch there (the callee's own graphs, the statement's traceable
  part), never more.

Refused, naming it: a break inside a loop (Dynamo runs the whole frame in Python, so there is
no graph to model: `SkipFrame` "graph break in for loop"), in the `return` statement, a
`return` that is not the last statement, closure cells (a region is a new function over the
same globals), special parameters, an nn.Module.
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys
import textwrap
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import PythonifyUnsupported
from .sourcepin import pin

__all__ = [
    "Function",
    "Region",
    "Split",
    "break_function",
    "generate",
    "load_region",
    "parse",
    "rebind",
    "region_function",
    "segment_function",
    "split",
]

# Statements Dynamo cannot resume inside: a break there skips the whole frame.
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass(frozen=True)
class Function:
    """A plain function's top-level statements, with its file's name and line numbers (so a
    region compiled from them is located by Dynamo's frames as the function itself is)."""

    name: str
    args: tuple[str, ...]
    filename: str  # the code object's co_filename
    statements: tuple[ast.stmt, ...]  # the body without its docstring; the file's line numbers
    globals: dict[str, Any] = field(compare=False, repr=False)  # the function's own

    def __post_init__(self) -> None:
        if not self.statements or not isinstance(self.statements[-1], ast.Return):
            raise ValueError("a function that splits ends with its return statement")

    def statement_at(self, frames: Sequence[tuple[str, int]], where: str) -> int:
        """The top-level statement holding the break Dynamo reported, as (filename, line) user
        frames, outermost first (Note [Regions]); refused where the file cannot place it."""
        first, last = self.statements[0].lineno, self.statements[-1].end_lineno or 0
        line = next(
            (n for f, n in frames if f == self.filename and first <= n <= last),
            None,
        )
        if line is None:
            raise PythonifyUnsupported(
                "a graph break the file cannot place (Dynamo named no line of the function)",
                where,
            )
        k = next(
            i for i, s in enumerate(self.statements) if s.lineno <= line <= (s.end_lineno or 0)
        )
        s = self.statements[k]
        if isinstance(s, ast.Return):
            raise PythonifyUnsupported("a graph break in the return statement", where)
        if any(isinstance(n, _LOOPS) for n in ast.walk(s)):
            raise PythonifyUnsupported(
                "a graph break inside a loop (Dynamo runs the whole frame in Python)", where
            )
        return k


def parse(fn: Callable[..., Any]) -> Function | None:
    """`fn`'s statements where it is a plain function with source; None otherwise (an
    nn.Module, a builtin, code without a file), so the graph break stays refused as such."""
    if not isinstance(fn, types.FunctionType):
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        return None
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    where = fn.__qualname__
    if fn.__code__.co_freevars:
        raise PythonifyUnsupported("a graph break in a function with closure cells", where)
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise PythonifyUnsupported("a graph break in a function with special parameters", where)
    nested = [s for s in body for n in ast.walk(s) if n is not s and isinstance(n, ast.Return)]
    if nested or not body or not isinstance(body[-1], ast.Return):
        raise PythonifyUnsupported("a graph break in a function that returns early", where)
    return Function(
        node.name,
        tuple(x.arg for x in a.args),
        fn.__code__.co_filename,
        tuple(body),
        fn.__globals__,
    )


@dataclass(frozen=True)
class Region:
    """The statements between two breaks, as a function."""

    span: tuple[int, int]  # [start, stop) in Function.statements
    params: tuple[str, ...]  # names it reads that the arguments or earlier code defined
    body: tuple[str, ...]  # its statements' source, dedented
    returns: tuple[str, ...]  # names later code reads; () for the last region (it returns)

    def __post_init__(self) -> None:
        if self.span[0] > self.span[1]:
            raise ValueError(f"a region's span runs forwards, got {self.span}")

    def source(self, name: str) -> str:
        ret = [] if not self.returns else [f"return ({''.join(r + ', ' for r in self.returns)})"]
        lines = [*self.body, *ret] or ["pass"]
        return f"def {name}({', '.join(self.params)}):\n" + textwrap.indent(
            "\n".join(lines), "    "
        )


@dataclass(frozen=True)
class Split:
    """A function cut at its break statements: regions, with a block of statements Dynamo
    runs in Python between each two."""

    name: str  # the function's name
    args: tuple[str, ...]
    regions: tuple[Region, ...]
    breaks: tuple[Region, ...]  # the break block between regions k and k+1, run as Python

    def __post_init__(self) -> None:
        if len(self.breaks) != len(self.regions) - 1 or not self.breaks:
            raise ValueError("a split has one break block between each two regions")
        if self.regions[-1].returns or self.regions[-1].span[0] == self.regions[-1].span[1]:
            raise ValueError("the last region returns the function's value, not names")

    def prefix(self, k: int) -> tuple[Any, ...]:
        """What region k's compile depends on: the regions and breaks up to it."""
        return (self.regions[: k + 1], self.breaks[:k])


def _names(nodes: Sequence[ast.stmt], ctx: type) -> set[str]:
    return {
        n.id
        for s in nodes
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)
    }


def split(fn: Function, at: frozenset[int]) -> Split:
    """`fn` cut at the statements `at` (Note [Regions]); consecutive break statements are one
    block, and a region may be empty (a break first, or two blocks apart by nothing)."""
    if not at or max(at) >= len(fn.statements) - 1:
        raise ValueError(f"breaks {sorted(at)} must be statements before the return")
    spans: list[tuple[int, int]] = []
    blocks: list[tuple[int, int]] = []
    start = 0
    k = 0
    while k < len(fn.statements):
        if k in at:
            stop = k
            while stop in at:
                stop += 1
            spans.append((start, k))
            blocks.append((k, stop))
            start = k = stop
        else:
            k += 1
    spans.append((start, len(fn.statements)))
    regions: list[Region] = []
    breaks: list[Region] = []
    defined = set(fn.args)
    for j, (a, b) in enumerate(spans):
        seg = fn.statements[a:b]
        later = fn.statements[b:]
        params = tuple(sorted(_names(seg, ast.Load) & defined))
        stores = _names(seg, ast.Store)
        last = j == len(spans) - 1
        returns = tuple(sorted(stores & _names(later, ast.Load)))
        defined |= stores
        regions.append(_segment(fn, (a, b), params, () if last else returns))
        if not last:  # the break block after it: Python, over the names defined so far
            c, d = blocks[j]
            block = fn.statements[c:d]
            after = _names(fn.statements[d:], ast.Load)
            stores = _names(block, ast.Store)
            breaks.append(
                _segment(
                    fn,
                    (c, d),
                    tuple(sorted(_names(block, ast.Load) & defined)),
                    tuple(sorted(stores & after)),
                )
            )
            defined |= stores
    return Split(fn.name, fn.args, tuple(regions), tuple(breaks))


def _segment(
    fn: Function, span: tuple[int, int], params: tuple[str, ...], returns: tuple[str, ...]
) -> Region:
    body = tuple(
        line for s in fn.statements[span[0] : span[1]] for line in ast.unparse(s).splitlines()
    )
    return Region(span, params, body, returns)


def segment_function(fn: Function, segment: Region, name: str) -> Callable[..., Any]:
    """A region or break block as a function over `fn`'s globals (without adding to them),
    compiled with the file's name and line numbers (Note [Regions])."""
    a, b = segment.span
    stmts = [copy.deepcopy(s) for s in fn.statements[a:b]]
    anchor = stmts[0] if stmts else fn.statements[a]
    if segment.returns:
        names: list[ast.expr] = [ast.Name(n, ast.Load()) for n in segment.returns]
        stmts.append(ast.copy_location(ast.Return(ast.Tuple(names, ast.Load())), stmts[-1]))
    if not stmts:
        stmts = [ast.copy_location(ast.Pass(), anchor)]
    fdef = ast.parse(f"def {name}({', '.join(segment.params)}):\n    pass").body[0]
    assert isinstance(fdef, ast.FunctionDef)
    ast.increment_lineno(fdef, anchor.lineno - 1)
    fdef.body = stmts
    tree = ast.fix_missing_locations(ast.Module([fdef], type_ignores=[]))
    code = compile(tree, fn.filename, "exec")
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(inner, fn.globals, name)


def region_function(fn: Function, sp: Split, k: int) -> Callable[..., Any]:
    """Region k (Note [Regions])."""
    return segment_function(fn, sp.regions[k], f"_{sp.name}_region_{k}")


def break_function(fn: Function, sp: Split, k: int) -> Callable[..., Any]:
    """Break block k: what Dynamo runs in Python between regions k and k+1."""
    return segment_function(fn, sp.breaks[k], f"_{sp.name}_break_{k}")


def rebind(names, fn):
    """The file's Python segments, rebuilt over `fn`'s globals: a break block calls what the
    function's module defines, as it does under torch.compile."""
    module = globals()
    for name in names:
        old = module[name]
        module[name] = types.FunctionType(old.__code__, fn.__globals__, old.__name__)


def load_region(source, index):
    """Region `index`'s file, embedded verbatim, as a module of its own."""
    module = types.ModuleType(f"{__name__}.region_{index}")
    exec(compile(source, f"<region {index} of {__name__}>", "exec"), module.__dict__)
    return module


def generate(sp: Split, files: list[str | None], header: str) -> str:
    """The file: each compiled region's file embedded and loaded, each region without a graph
    and each break block as its Python, and `call` running them in order (Note [Regions]).

    Long: the file's text is one template whose parts follow the split's shape."""
    from .gen_python import triple_quoted
    from .wrappers.source import runtime_source

    parts = [
        f'''"""Generated by pyfy-fuzz pythonify: a standalone reproduction of one torch.compile
of `{sp.name}`, which Dynamo splits into {len(sp.regions)} regions at graph breaks.

{header}

Each region with a graph is the file pythonify writes for it alone, embedded verbatim and
loaded as a module; `call(*args)` runs the regions in order with the statements Dynamo could not
trace between them (`_break_<k>`), in Python, as torch.compile does.
"""

import types

import torch  # noqa: F401 - the statements between regions may use it''',
        runtime_source(sys.modules[__name__], ("load_region", "rebind")),
    ]
    calls = []
    python: list[str] = []  # the Python segments `bind` rebuilds over the function's globals

    def call(segment: Region, target: str, last: bool) -> None:
        names = "".join(r + ", " for r in segment.returns)
        outs = "return " if last else (f"{names}= " if names else "")
        calls.append(f"    {outs}{target}({', '.join(segment.params)})")

    for k, (region, file) in enumerate(zip(sp.regions, files, strict=True)):
        last = k == len(sp.breaks)
        if not region.body and not last:
            pass  # nothing before the break: no region to call
        elif file is None:
            parts.append(f"# Region {k}: no tensor work, so no graph: it runs as Python.")
            parts.append(region.source(f"_region_{k}"))
            python.append(f"_region_{k}")
            call(region, f"_region_{k}", last)
        else:
            parts.append(
                f"# Region {k}: its own pythonified file.\n_REGION_{k} = load_region("
                f"{triple_quoted(file)}, {k})"
            )
            call(region, f"_REGION_{k}.call", last)
        if not last:
            parts.append(f"# Graph break {k}: Dynamo runs this in Python, between graphs.")
            parts.append(sp.breaks[k].source(f"_break_{k}"))
            python.append(f"_break_{k}")
            call(sp.breaks[k], f"_break_{k}", False)
    compiled = [f"_REGION_{k}" for k, f in enumerate(files) if f is not None]
    parts.append(
        "def bind(fn):\n"
        '    """Resolve each region\'s globals, and the Python between them, against `fn`."""\n'
        f"    for region in ({''.join(c + ', ' for c in compiled)}):\n"
        "        region.bind(fn)\n"
        f"    rebind({tuple(python)!r}, fn)"
    )
    parts.append(f"def call({', '.join(sp.args)}):\n" + "\n".join(calls))
    return "\n\n\n".join(parts) + "\n"


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
