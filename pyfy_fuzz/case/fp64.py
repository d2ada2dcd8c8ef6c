"""A float64 copy of a program's inputs (and module) for the tolerance scheme's reference run.

Floating tensors become float64 over float64 copies of their storages, so tensors that shared
memory still do (a write through one is seen by the other); integer, bool and subclass tensors
pass through. Copies stay on the original's device (set_ refuses a storage on another device).
Leaves keep requires_grad; non-leaves get a grad_fn in place. The scheme is that
of pythonify's input copies, kept apart on purpose: the reference must not share code with the
subject under test.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

__all__ = [
    "fp64_fn",
    "to_fp64",
]


def to_fp64(args: tuple[Any, ...]) -> tuple[Any, ...]:
    storages: dict[int, torch.UntypedStorage] = {}
    memo: dict[int, torch.Tensor] = {}

    def conv(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return t
        if is_traceable_wrapper_subclass(t) or t.is_inference():
            return t
        if id(t) in memo:
            return memo[id(t)]
        st = t.untyped_storage()
        key = st._cdata  # the storage's identity: every empty storage has data_ptr 0
        with torch.no_grad():
            if key not in storages:
                flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(st)
                storages[key] = flat.double().untyped_storage()
            new = torch.empty(0, dtype=torch.float64, device=t.device)
            new.set_(storages[key], t.storage_offset(), t.size(), t.stride())
        if t.requires_grad:
            if t.is_leaf:
                new.requires_grad_()
            else:
                one = torch.ones((), dtype=torch.float64, device=t.device, requires_grad=True)
                new = new.mul_(one)
        memo[id(t)] = new
        return new

    return tuple(pytree.tree_map(conv, a) for a in args)


def fp64_fn(fn: Any) -> Any:
    """The module in float64 (a fresh copy from the program), or the function unchanged."""
    if isinstance(fn, torch.nn.Module):
        return fn.double()
    return fn
