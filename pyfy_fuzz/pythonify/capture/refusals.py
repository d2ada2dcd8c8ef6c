"""What the capture refuses to model, checked before or after the compile: hooks that live
outside the graph. Each refusal is a PythonifyUnsupported naming what and where."""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree

from ..errors import PythonifyUnsupported

__all__ = ["hook_counts", "refuse_backward_module_hooks", "refuse_input_hooks"]


def refuse_backward_module_hooks(m: torch.nn.Module) -> None:
    """Full backward hooks wrap the module's inputs and outputs in BackwardHookFunction views
    outside the graph; the file does not replay that wrapping (an output returned as the input
    itself, where torch.compile returns a view of it, was found by the aliasing oracle)."""
    for name, sub in m.named_modules():
        if sub._backward_hooks or sub._backward_pre_hooks:
            raise PythonifyUnsupported("nn.Module full backward hooks", name or type(m).__name__)


def hook_counts(fn: Any) -> dict[int, int]:
    if not isinstance(fn, torch.nn.Module):
        return {}
    return {id(p): len(getattr(p, "_backward_hooks", None) or {}) for p in fn.parameters()}


def refuse_input_hooks(
    arg_names: list[str], copies: tuple[Any, ...], fn: Any, hooks_before: dict[int, int]
) -> None:
    """A hook the function registers on an input or parameter (`x.register_hook(h)`) is a side
    effect Dynamo replays after the graph; the file does not model it, and dropping it would
    change gradients silently (found by the grads oracle), so refuse."""
    named = [(n, t) for n, t in zip(arg_names, copies, strict=True)]
    if isinstance(fn, torch.nn.Module):
        named += [
            (f"self.{n}", p)
            for n, p in fn.named_parameters()
            if len(getattr(p, "_backward_hooks", None) or {}) > hooks_before.get(id(p), 0)
        ]
    for name, t in named:
        for leaf in pytree.tree_leaves(t):
            if isinstance(leaf, torch.Tensor) and getattr(leaf, "_backward_hooks", None):
                raise PythonifyUnsupported(
                    "a tensor hook registered on an input (register_hook)", name
                )
