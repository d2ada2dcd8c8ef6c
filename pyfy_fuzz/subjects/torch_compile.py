"""torch.compile: the stock compile of a fresh copy (compile_once.plain_compile)."""

from __future__ import annotations

from pyfy_fuzz.observe import Target

from .compile_once import CompileOnce

__all__ = [
    "torch_compile_target",
]


def torch_compile_target(once: CompileOnce) -> Target:
    return Target("torch.compile", once.compiled, once.compiled_module)
