"""The CUDA-graph runtime's static memory: what a graph bakes in about its inputs, how a call's
values reach the static buffers, and what a replay hands out (copied into the generated file).

A captured graph reads its inputs from *static* buffers and writes its outputs into *static*
tensors that every replay overwrites in place. These helpers copy each call's inputs into the
static buffers (`_cg_copy_into`, `_cg_static_buffer`) and hand out copies of the static outputs
(`_cg_hand_out`), so nothing a call returned changes behind the caller's back when the graph is
replayed again. Like all of the CUDA-graph runtime (`cudagraph.runtime_source`), they are
emitted verbatim, so they use only `torch` and each other (Note [Runtime helpers are real
code] in source.py).
"""

from __future__ import annotations

import torch

__all__ = ["RUNTIME"]


def _cg_input_key(args):
    """What a captured graph bakes in about its inputs, as a hashable key.

    A CUDA graph records kernel launches with fixed sizes, strides and pointers, and a Python
    scalar passed to a kernel becomes a constant of the recording. So two calls can share a graph
    only if every tensor has the same shape/stride/dtype/device and every non-tensor argument
    (int, float, None, ...) has the same value.
    """
    return tuple(_cg_arg_key(a) for a in args)


def _cg_arg_key(a):
    if isinstance(a, torch.Tensor):
        return ("tensor", tuple(a.shape), tuple(a.stride()), a.dtype, a.device)
    try:
        hash(a)
    except TypeError:
        return ("object", type(a), id(a))
    return ("value", type(a), a)


def _cg_copy_into(dst, src):
    """`dst.copy_(src)` for a static buffer `dst` laid out like `src` (same size and strides).

    Mirrors torch's index_expanded_dims_and_copy_: a dimension of stride 0 (an expanded input)
    holds one value, so only its first slice is copied (copy_ refuses to write a tensor whose
    elements share memory). If `dst` still overlaps itself, the bytes of the strided extent are
    copied verbatim, which reproduces the overlap pattern.
    """
    for d in range(dst.dim()):
        if dst.stride(d) == 0 and dst.size(d) > 1:
            dst = dst.narrow(d, 0, 1)
            src = src.narrow(d, 0, 1)
    has_overlap = getattr(torch, "_debug_has_internal_overlap", None)
    if (
        has_overlap is not None
        and dst.numel() > 0
        and has_overlap(dst) != 0
        and tuple(dst.stride()) == tuple(src.stride())
    ):
        size = dst.element_size()
        nbytes = (
            sum((n - 1) * st for n, st in zip(dst.size(), dst.stride(), strict=True)) + 1
        ) * size
        d0 = dst.storage_offset() * size
        s0 = src.storage_offset() * size
        dst.untyped_storage()[d0 : d0 + nbytes].copy_(src.untyped_storage()[s0 : s0 + nbytes])
        return
    dst.copy_(src)


def _cg_static_buffer(src):
    """A fresh tensor with `src`'s size, strides, dtype and device, holding `src`'s values."""
    buf = torch.empty_strided(src.size(), src.stride(), dtype=src.dtype, device=src.device)
    _cg_copy_into(buf, src)
    return buf


# Note [Empty storages]
# Every storage without memory (a 0-element tensor's) has data_ptr() 0, so an address cannot
# say which input an empty output came from: keyed by address, an empty input handed back
# (e.g. `a0` saved for the backward of `a0 * w`) became a copy, and the caller's version bump
# of `a0` no longer reached the saved tensor (corpus pythonify-divergence.mutation.af8d91b2d2ee:
# the backward ran where torch.compile's raises). Such storages are keyed by identity instead.
def _cg_storage_key(t):
    """Which storage `t` uses: its address, or the storage itself where it has no memory."""
    storage = t.untyped_storage()
    ptr = storage.data_ptr()
    return ptr if ptr != 0 else ("empty", storage._cdata)


def _cg_uncounted(t, write, *args):
    """`write(*args)`, a write into `t`, leaving t's version counter where it was: a CUDA
    graph's replay writes memory without the dispatcher, so no counter moves. A tensor made
    under inference_mode has no counter to keep (reading one raises)."""
    if t.is_inference():
        write(*args)
        return
    with torch.autograd._unsafe_preserve_version_counter(t):
        write(*args)


def _cg_tensor_over(storage, like):
    """A new tensor over `storage` laid out as `like` (dtype, storage offset, size, stride)
    whose version counter is its own and at 0. cudagraph trees build what a replay hands out
    over the pool's memory with `_construct_CUDA_Tensor_From_Storage_And_Metadata`, no
    in-place op, so its counter starts at 0, as a fresh output's of the un-captured graph;
    `set_` is an in-place op and would count one write (corpus
    pythonify-divergence.user_code.311725f88f0f)."""
    t = torch.empty(0, dtype=like.dtype, device=like.device)
    _cg_uncounted(t, t.set_, storage, like.storage_offset(), like.size(), like.stride())
    return t


def _cg_hand_out(static_outputs, static_inputs, args):
    """The outputs to give the caller after a replay, none of them graph-owned memory.

    A static output lives in memory that the next replay of the same graph overwrites, so
    handing it out directly would let a later call change a value the caller still holds (e.g. a
    tensor the forward saved for the backward). Each output storage is therefore copied once,
    and every output is rebuilt with the same offset, size and stride over its copy, so outputs
    that aliased each other still do; an output that was a view of a graph-internal tensor is
    rebuilt as a view of that tensor's copy (its `_base` stays set, as without CUDA graphs).

    An output whose storage is an input's is not copied: it is rebuilt as the same view of the
    caller's tensor for that input (for a static input, the live parameter itself), which is
    what running the function eagerly returns. A tensor the graph returns twice is handed out
    once, twice; a view of an earlier output is rebuilt as a view of what was handed out for it
    (AOTAutograd regenerates a user's view of an output from that output: its `_base` must be
    the output itself, as without CUDA graphs).

    Storages are told apart by address, and a storage with no memory (0 bytes: its address
    is 0, whatever tensor it backs) by its identity, so that an empty output is still its
    input (Note [Empty storages]).

    Long: emitted verbatim into the file, where one function with its cases in order reads
    like the replay logic it models (input storages, graph-internal bases, earlier outputs).
    """
    input_storage: dict = {}  # storage key -> index of the first input using it
    for i, s in enumerate(static_inputs):
        if isinstance(s, torch.Tensor):
            input_storage.setdefault(_cg_storage_key(s), i)
    copies: dict = {}  # storage key of a static output -> its copy
    handed: dict = {}  # id of a static output tensor -> what was handed out for it
    result = []
    for o in static_outputs:
        if not isinstance(o, torch.Tensor):
            result.append(o)  # a non-tensor output is a constant of the recording
            continue
        if id(o) in handed:  # the graph returned one tensor twice: hand out one tensor twice
            result.append(handed[id(o)])
            continue
        if o._base is not None and id(o._base) in handed:
            # a view of another output (e.g. the base AOTAutograd regenerates a view from)
            # stays a view of what was handed out for it
            out = handed[id(o._base)].as_strided(o.size(), o.stride(), o.storage_offset())
            handed[id(o)] = out
            result.append(out)
            continue
        same = [i for i, s in enumerate(static_inputs) if o is s]
        if same:  # the graph returns an input buffer itself: the caller's tensor, as eager
            result.append(args[same[0]])
            continue
        key = _cg_storage_key(o)
        owner = input_storage.get(key)
        if owner is not None:
            s, a = static_inputs[owner], args[owner]
            offset = a.storage_offset() + o.storage_offset() - s.storage_offset()
            if o.dtype == a.dtype and offset >= 0:
                result.append(a.as_strided(o.size(), o.stride(), offset))
                continue
        if key not in copies:
            copies[key] = o.untyped_storage().clone()
        storage = copies[key]
        if o._base is not None:
            # A view of a graph-internal tensor stays a view (of a copy of that tensor), as
            # the output of the un-captured graph is.
            b = o._base
            base = _cg_tensor_over(storage, b)
            out = base.as_strided(o.size(), o.stride(), o.storage_offset())
        else:
            out = _cg_tensor_over(storage, o)
        handed[id(o)] = out
        result.append(out)
    return result


# What the file gets of this module, in this order (every file with CUDA graphs).
RUNTIME = (
    "_cg_input_key",
    "_cg_arg_key",
    "_cg_copy_into",
    "_cg_static_buffer",
    "_cg_storage_key",
    "_cg_uncounted",
    "_cg_tensor_over",
    "_cg_hand_out",
)
