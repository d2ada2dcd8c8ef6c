"""Python expressions over the generated file's bound locals: argument paths and structures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["path_expr", "structure"]


def path_expr(path: tuple[Any, ...]) -> tuple[int, str]:
    first = path[0]
    rest = "".join(f"[{k.idx!r}]" if hasattr(k, "idx") else f"[{k.key!r}]" for k in path[1:])
    return (first.idx, rest)  # type: ignore[return-value]


def structure(x: Any, leaf: Callable[[Any], str]) -> str:
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        inner = ", ".join(structure(v, leaf) for v in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, list):
        return "[" + ", ".join(structure(v, leaf) for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {structure(v, leaf)}" for k, v in x.items()) + "}"
    return leaf(x)
