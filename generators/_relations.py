"""A later call's relationships to call 0 (Note [Call relationships] in
pyfy_fuzz/schema/spec.py), as real functions.

The rendered program defines them (their source, through `inspect.getsource`), and so does a
repro.py: eager, torch.compile, the pythonified file and a pasted repro build a later call's
arguments with this one implementation. Written as the program shows them: no annotations
(the program imports only torch), and only `torch` and each other by name; this module
never calls them (nor imports torch), so the torch-free repro writer can use it. Shape, dtype and
"relation" change the roots as they are drawn (`_root` in the program); "aliasing" is the
program's own `make_inputs` branch (it knows which arguments the spec aliased).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import emitted_source

if TYPE_CHECKING:  # the program imports torch; here they are source, never called
    import torch

__all__ = [
    "RELATE_FUNCTIONS",
    "RELATE_TOKENS",
    "RELATION_FUNCTIONS",
    "detached",
    "relate",
    "relations_source",
    "to_leaf",
    "to_nonleaf",
    "to_other_scalars",
    "to_overlapping",
    "to_shared",
    "to_shifted",
    "to_strided",
    "variant_context",
]


def to_overlapping(args):  # type: ignore[no-untyped-def]
    """overlap: two arguments that share memory with no other and need no grad become views
    of one storage, the second shifted by one element (a partial overlap), with call 0's
    values."""
    args = list(args)
    ptrs = [a.untyped_storage().data_ptr() if type(a) is torch.Tensor else 0 for a in args]
    free = [
        i
        for i, a in enumerate(args)
        if type(a) is torch.Tensor
        and not a.requires_grad
        and a.numel() >= 2
        and a._base is None
        and ptrs.count(ptrs[i]) == 1
    ]
    pairs = [(i, j) for i in free for j in free if i < j and args[i].dtype == args[j].dtype]
    if pairs:
        i, j = pairs[0]
        a, b = args[i], args[j]
        store = torch.empty(max(a.numel(), b.numel() + 1), dtype=a.dtype, device=a.device)
        store[: a.numel()].copy_(a.reshape(-1))
        store[1 : b.numel() + 1].copy_(b.reshape(-1))
        args[i] = store[: a.numel()].view(a.shape)
        args[j] = store[1 : b.numel() + 1].view(b.shape)
    return tuple(args)


def to_nonleaf(args):  # type: ignore[no-untyped-def]
    """nonleaf: leaf arguments requiring grad become clones of such a leaf."""
    return tuple(
        a.detach().requires_grad_().clone()
        if type(a) is torch.Tensor and a.requires_grad and a.is_leaf
        else a
        for a in args
    )


def to_leaf(args):  # type: ignore[no-untyped-def]
    """leaf: non-leaf arguments requiring grad become leaves requiring grad."""
    return tuple(
        a.detach().requires_grad_()
        if type(a) is torch.Tensor and a.requires_grad and not a.is_leaf
        else a
        for a in args
    )


def detached(args):  # type: ignore[no-untyped-def]
    """no_requires_grad: arguments requiring grad are detached."""
    return tuple(a.detach() if type(a) is torch.Tensor and a.requires_grad else a for a in args)


def to_strided(args):  # type: ignore[no-untyped-def]
    """strided: contiguous leaf arguments sharing memory with no other argument become leaves
    over every other element of a storage twice as long (same values, same requires_grad).
    An empty tensor's data_ptr is 0: it shares memory with nothing (`or id(a)`); a subclass
    argument (False) is never made strided."""
    ptrs = [type(a) is torch.Tensor and (a.untyped_storage().data_ptr() or id(a)) for a in args]
    out = []
    for a, ptr in zip(args, ptrs, strict=True):
        if type(a) is torch.Tensor and a.dim() and a.is_contiguous() and a.is_leaf:
            if a._base is None and ptrs.count(ptr) == 1:
                wide = a.new_zeros(a.shape[:-1] + (2 * a.shape[-1],))  # dtype, device
                b = wide[..., ::2].detach()  # a leaf of its own
                a = b.copy_(a.detach()).requires_grad_(a.requires_grad)
        out.append(a)
    return tuple(out)


def to_shared(args):  # type: ignore[no-untyped-def]
    """share: the first two plain arguments of one shape and dtype that share memory with no
    other become two views of one new storage with the first's values: distinct objects, the
    same memory, each keeping its requires_grad and leafness."""
    args = list(args)
    ptrs = [a.untyped_storage().data_ptr() if type(a) is torch.Tensor else 0 for a in args]
    free = [
        i
        for i, a in enumerate(args)
        if type(a) is torch.Tensor and a.numel() >= 1 and ptrs.count(ptrs[i]) == 1
    ]
    pairs = [
        (i, j)
        for i in free
        for j in free
        if i < j and args[i].dtype == args[j].dtype and args[i].shape == args[j].shape
    ]

    def like(view, a):  # a leaf can share memory: detach() keeps the storage
        if not a.requires_grad:
            return view
        leaf = view.detach().requires_grad_()
        return leaf if a.is_leaf else leaf.view(a.shape)

    if pairs:
        i, j = pairs[0]
        a = args[i]
        store = a.detach().clone().reshape(-1)
        args[i] = like(store.view(a.shape), a)
        args[j] = like(store.view(a.shape), args[j])
    return tuple(args)


def to_shifted(args):  # type: ignore[no-untyped-def]
    """shift: plain arguments that share memory become views of a copy of their storage one
    element longer, every one but the first of each group one element further on (another
    overlap than call 0's); a group with an argument requiring grad gets views of a leaf
    requiring grad. An empty view of a storage with elements is in its storage's group (its
    offset moves); an empty root has no memory (data_ptr 0) and no group."""
    args = list(args)
    ptrs = [a.untyped_storage().data_ptr() if type(a) is torch.Tensor else 0 for a in args]
    for ptr in sorted(set(ptrs) - {0}):
        members = [k for k, p in enumerate(ptrs) if p == ptr]
        if len(members) < 2:
            continue
        first = args[members[0]]
        old = first.untyped_storage()
        n = old.nbytes() // first.element_size()
        store = torch.zeros(n + 1, dtype=first.dtype, device=first.device)
        store[:n].copy_(torch.empty(0, dtype=first.dtype, device=first.device).set_(old))
        if any(args[k].requires_grad for k in members):
            store.requires_grad_()
        for shift, k in enumerate(members):
            a = args[k]
            offset = a.storage_offset() + min(shift, 1)
            args[k] = store.as_strided(a.shape, a.stride(), offset)
    return tuple(args)


def to_other_scalars(args):  # type: ignore[no-untyped-def]
    """scalars: each Python int argument one more, each float times two plus a quarter: values
    the compile of call 0 may have specialized on, of the same type (an int stays an int, so
    Dynamo's type guard holds and only its value guard, or its dynamic symbol, decides)."""
    return tuple(a + 1 if type(a) is int else a * 2 + 0.25 if type(a) is float else a for a in args)


def relate(args, variant):  # type: ignore[no-untyped-def]
    """Call 0's arguments (fresh ones of this call's seed) changed as `variant` says; an
    argument a relationship does not apply to stays as it is."""
    tokens = variant.split("+") if variant else []
    for token, change in (
        ("overlap", to_overlapping),
        ("nonleaf", to_nonleaf),
        ("leaf", to_leaf),
        ("no_requires_grad", detached),
        ("strided", to_strided),
        ("share", to_shared),
        ("shift", to_shifted),
        ("scalars", to_other_scalars),
    ):
        if token in tokens:
            args = change(args)
    return tuple(args)


def variant_context(variant):  # type: ignore[no-untyped-def]
    """The context a variant call runs under: "no_grad", "inference_mode", or None."""
    tokens = variant.split("+") if variant else []
    for context in ("no_grad", "inference_mode"):
        if context in tokens:
            return context
    return None


RELATION_FUNCTIONS = (
    to_overlapping,
    to_nonleaf,
    to_leaf,
    detached,
    to_strided,
    to_shared,
    to_shifted,
    to_other_scalars,
    relate,
    variant_context,
)
# Each relationship relate() makes -> the function that makes it (a repro calls them directly).
RELATE_FUNCTIONS = {
    "overlap": to_overlapping,
    "nonleaf": to_nonleaf,
    "leaf": to_leaf,
    "no_requires_grad": detached,
    "strided": to_strided,
    "share": to_shared,
    "shift": to_shifted,
    "scalars": to_other_scalars,
}


# The relationships relate() makes; the others change the roots (_root) or the call's context.
RELATE_TOKENS = tuple(RELATE_FUNCTIONS)


def relations_source() -> str:
    """The functions' source, as the rendered program and a repro define them."""
    return emitted_source(*RELATION_FUNCTIONS)


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
