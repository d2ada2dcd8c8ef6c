"""Running one wrapper's emitted code on its own, with the callable it wraps stubbed."""

from __future__ import annotations

from typing import Any

import torch

from pyfy_fuzz.pythonify.meta import EmitContext

__all__ = ["INNER", "exec_helper"]

# The wrapped callable is named `inner` in the emitted code; tests pass it as a stub.
INNER = EmitContext(inner="inner")


def exec_helper(src: str, **env: Any) -> dict[str, Any]:
    ns: dict[str, Any] = {"torch": torch, **env}
    exec(compile(src, "<helper>", "exec"), ns)
    return ns
