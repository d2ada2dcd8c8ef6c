"""Copy example inputs without losing how they alias each other.

Capture compiles on copies so that the caller's tensors are never mutated; but the wrapper stack
depends on aliasing (a duplicated argument, views of one base, storages shared through set_), so
the copies must alias exactly as the originals do: the same object where the originals were the
same object, views of one copied base where they were views of one base, one copied storage where
they shared a storage.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

__all__ = [
    "clone_preserving_aliasing",
]


# The attributes torch._dynamo.mark_dynamic / maybe_mark_dynamic / mark_static set on a tensor.
_DYNAMO_MARKS = (
    "_dynamo_dynamic_indices",
    "_dynamo_weak_dynamic_indices",
    "_dynamo_static_indices",
    "_dynamo_unbacked_indices",
)


class _Copier:
    def __init__(self) -> None:
        self.by_id: dict[int, torch.Tensor] = {}
        self.storages: dict[tuple[int, str], torch.UntypedStorage] = {}

    def storage(self, t: torch.Tensor) -> torch.UntypedStorage:
        st = t.untyped_storage()
        # The StorageImpl's identity, not data_ptr: every empty storage has data_ptr 0, and
        # keying on it made unrelated zero-size inputs share one copied storage.
        key = (st._cdata, str(st.device))
        if key not in self.storages:
            with torch.no_grad():
                self.storages[key] = st.clone()
        return self.storages[key]

    def raw(self, t: torch.Tensor) -> torch.Tensor:
        """A tensor over the copied storage with t's geometry, no autograd history."""
        new = torch.empty(0, dtype=t.dtype, device=t.device)
        with torch.no_grad():
            new.set_(self.storage(t), t.storage_offset(), t.size(), t.stride())
        return new

    def with_grad(self, new: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """Give `new` like's autograd state without changing its storage or values."""
        if not like.requires_grad:
            return new
        if like.is_leaf:
            return new.requires_grad_(True)
        # A non-leaf: an in-place multiply by a grad-requiring 1 gives it a grad_fn in place.
        one = torch.ones((), dtype=like.dtype, device=like.device, requires_grad=True)
        return new.mul_(one)

    def copy(self, t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        if id(t) in self.by_id:
            return self.by_id[id(t)]
        # Each copy is an inference tensor exactly where its original is (Note [Inference
        # tensors among the inputs]).
        with torch.inference_mode(bool(t.is_inference())):
            new = self._fresh(t)
        self.by_id[id(t)] = new
        return new

    def _fresh(self, t: torch.Tensor) -> torch.Tensor:
        if t._base is not None:  # a view (a subclass's too): a view of the copied base
            base = self.copy(t._base)
            new = base.as_strided(t.size(), t.stride(), t.storage_offset())
            if t.requires_grad and not new.requires_grad:
                new.requires_grad_(True)
        elif is_traceable_wrapper_subclass(t):
            attrs, ctx = t.__tensor_flatten__()
            inner = {a: self.copy(getattr(t, a)) for a in attrs}
            new = self.with_grad(type(t).__tensor_unflatten__(inner, ctx, t.size(), t.stride()), t)
        elif isinstance(t, torch.nn.Parameter):
            new = torch.nn.Parameter(self.raw(t), requires_grad=t.requires_grad)
        else:
            new = self.with_grad(self.raw(t), t)
        for mark in _DYNAMO_MARKS:  # mark_dynamic and friends: the compile reads them
            if hasattr(t, mark) and not hasattr(new, mark):
                setattr(new, mark, set(getattr(t, mark)))
        if getattr(t, "_has_dynamo_dim_marking", False):
            new._has_dynamo_dim_marking = True  # type: ignore[attr-defined]
        return new


def clone_preserving_aliasing(args: Any) -> Any:
    """Deep-copy every tensor in `args` (a pytree), keeping identity, view and storage sharing.

    The copies keep the originals' autograd state whatever mode the caller is in: pythonify
    may be called under torch.no_grad() or torch.inference_mode(), as the compiled function
    will be (a drawn call-site configuration), and a copy made there would lose its
    requires_grad, or become an inference tensor, so the file would guard on the wrong
    metadata. Copies are inference tensors exactly where the originals are.

    Note [Inference tensors among the inputs]
    Dynamo's TENSOR_MATCH guard holds each input's dispatch keys, and an inference tensor has
    no autograd key, so whether an input is one is guarded per input. A region after a graph
    break run under inference_mode takes normal tensors (the caller's arguments) beside
    inference tensors (values the region before computed there). The copies once took one
    mode for all -- inference only where every original was one -- so such a region was
    captured for a normal tensor where the call passes an inference one, and the file refused
    every real call where torch.compile ran (a PythonifyGuardError "compiled for a
    non-inference tensor", found by issue 30's smoke campaigns)."""
    copier = _Copier()
    with torch.enable_grad():
        return pytree.tree_map(copier.copy, args)
