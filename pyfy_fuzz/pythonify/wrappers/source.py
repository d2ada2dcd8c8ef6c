"""Emitting the generated file's code: runtime helpers copied from real modules, and the small
text utilities every wrapper's `emit` uses.

Note [Runtime helpers are real code]
------------------------------------
A wrapper's runtime helper (alias regeneration, synthetic bases, tangent coercion, CUDA-graph
replay, ...) is an ordinary function or class in that wrapper's module, so ruff, mypy
(check_untyped_defs) and the unit tests see it. `runtime_source` copies its definition verbatim
into the generated file. The file imports torch and nothing of pyfy_fuzz, so a helper may use
only `torch`, the standard-library modules the file's header imports, other emitted helpers,
and the names the file itself defines (its guard tables, ARG_NAMES, ...; a module declares
those in a block that is never emitted). Helpers carry no annotations: the file does not import
`typing`.
"""

from __future__ import annotations

import ast
import functools
import inspect
import types
from typing import Any

__all__ = ["Emitter", "indent", "literal", "runtime_source", "type_var"]


@functools.cache
def _definitions(module: types.ModuleType) -> dict[str, str]:
    """Top-level name -> its source (with the comment lines right above it) in `module`."""
    source = inspect.getsource(module)
    lines = source.splitlines()
    out: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = [node.name]
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            start = node.lineno
        else:
            continue
        first = start - 1
        while first > 0 and lines[first - 1].startswith("#"):
            first -= 1
        assert node.end_lineno is not None
        text = "\n".join(lines[first : node.end_lineno])
        for name in names:
            out[name] = text
    return out


def runtime_source(module: types.ModuleType, names: tuple[str, ...]) -> str:
    """The definitions of `names` in `module`, verbatim, two blank lines apart."""
    defs = _definitions(module)
    missing = [n for n in names if n not in defs]
    if missing:
        raise AssertionError(f"{module.__name__} defines no top-level {missing}")
    return "\n\n\n".join(defs[n] for n in names)


def type_var(path: str) -> str:
    """The module-level name under which a generated file holds an imported subclass type."""
    mod, _, qual = path.partition(":")
    return "_T_" + "".join(c if c.isalnum() else "_" for c in f"{mod}_{qual}")


def indent(src: str, n: int = 1) -> str:
    pad = "    " * n
    return "\n".join(pad + line if line else line for line in src.splitlines())


def literal(a: Any) -> str:
    """Python source for a recorded view-op argument (dtypes, devices, nested sequences)."""
    import torch

    if isinstance(a, torch.dtype | torch.layout | torch.memory_format):
        return str(a)
    if isinstance(a, torch.device):
        return f"torch.device({str(a)!r})"
    if isinstance(a, list):
        return "[" + ", ".join(literal(x) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + ", ".join(literal(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    return repr(a)


class Emitter:
    """Straight-line code with fresh names, for bodies built statement by statement."""

    def __init__(self, indent: int = 1) -> None:
        self.lines: list[str] = []
        self.indent = indent
        self.counter = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"
