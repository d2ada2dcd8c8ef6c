"""The CUDA-graph runtime's CPU stand-in for `torch.cuda.CUDAGraph` (copied into the file).

On a machine without a GPU, `_EmulatedCUDAGraph` stands in for `torch.cuda.CUDAGraph` with the
same in-place semantics (static inputs, static outputs rewritten at each replay), so that the
file's replay logic is exercised, and its bugs are visible, on CPU. Emitted only into a file
whose CUDA graphs are emulated (`cudagraph.runtime_source(emulate=True)`), verbatim: it uses
only `torch` and the static-memory helpers (`_cudagraph_buffers.py`).
"""

from __future__ import annotations

import torch

from ._cudagraph_buffers import _cg_copy_into, _cg_static_buffer, _cg_storage_key, _cg_uncounted

__all__ = ["RUNTIME"]


def _cg_poison(t):
    """Fill a freshly captured output with garbage: a captured graph has not computed anything
    yet, so reading a static output before the first replay is a bug the emulation should show.
    """
    if t.is_floating_point() or t.is_complex():
        value = float("nan")
    elif t.dtype == torch.bool:
        value = True
    else:
        try:
            value = torch.iinfo(t.dtype).max
        except TypeError:
            return
    try:
        with torch.no_grad():
            t.fill_(value)
    except RuntimeError:
        pass


class _EmulatedCUDAGraph:
    """A CPU stand-in for `torch.cuda.CUDAGraph` that keeps CUDA-graph memory semantics.

    It exists so that the file's capture/replay logic runs, and can be tested, without a GPU.
    A real graph replays recorded kernels against fixed addresses; this records the callable and
    the static input tensors, and `replay()` re-runs the callable on those SAME input tensors and
    writes each result into the SAME static output tensor with `copy_` (storage reused). So
    exactly as on a GPU: new values reach the graph only by being copied into its static input
    buffers, a caller holding a static output sees it change at every replay, and capture itself
    computes nothing (inputs are restored afterwards, outputs hold NaN/garbage until replayed,
    the CPU generator is where it was: a capture draws no random numbers, so each call of the
    file draws exactly one call's numbers, as torch.compile does where it ignores the mode).
    The callable runs on `.data` aliases of the inputs, so, like a replayed kernel, it changes
    memory without bumping autograd version counters.

    Not emulated: memory pools (outputs are fresh allocations copied into the static ones),
    stream capture and its errors (syncs, host reads, CPU tensors or allocator calls inside
    capture all "work" here), kernel-level restrictions, graph-safe RNG (random ops draw new
    numbers from the CPU generator at each replay), and Python-side effects of the callable,
    which a real replay skips but the emulation repeats.
    """

    def __init__(self):
        self.fn = None
        self.static_inputs = []
        self.static_outputs = []
        self.num_replays = 0
        self._memory_inputs = []
        self._capturing = False

    def capture(self, fn, static_inputs):
        """Record `fn(static_inputs)`; call inside `with _emulated_graph(g):`. Returns the static
        outputs, which hold garbage until the first `replay()`."""
        if not self._capturing:
            raise RuntimeError("_EmulatedCUDAGraph.capture() runs inside `with _emulated_graph(g)`")
        if self.fn is not None:
            raise RuntimeError("this _EmulatedCUDAGraph has already been captured")
        static_inputs = list(static_inputs)
        memory = [x.data if isinstance(x, torch.Tensor) else x for x in static_inputs]
        with torch.no_grad():
            before = [_cg_static_buffer(x) if isinstance(x, torch.Tensor) else None for x in memory]
        with torch.random.fork_rng(devices=[]):  # capture draws no random numbers
            outs = fn(list(memory))
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        with torch.no_grad():  # capture records, it does not compute: undo any writes
            for x, saved in zip(memory, before, strict=True):
                if saved is not None:
                    _cg_copy_into(x, saved)
        input_storages = {_cg_storage_key(x) for x in memory if isinstance(x, torch.Tensor)}
        for j, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                continue
            same = [k for k, x in enumerate(memory) if x is o]
            if same:
                outs[j] = static_inputs[same[0]]  # the graph returns its input buffer itself
            elif _cg_storage_key(o) not in input_storages:
                _cg_poison(o)
        self.fn = fn
        self.static_inputs = static_inputs
        self._memory_inputs = memory
        self.static_outputs = outs
        return list(outs)

    def replay(self):
        """Re-run the recorded callable on the static inputs; write results into the static
        outputs in place."""
        if self.fn is None:
            raise RuntimeError("_EmulatedCUDAGraph.replay() before capture")
        fresh = self.fn(list(self._memory_inputs))
        fresh = list(fresh) if isinstance(fresh, (list, tuple)) else [fresh]
        if len(fresh) != len(self.static_outputs):
            raise RuntimeError(
                f"emulated CUDA graph replay returned {len(fresh)} outputs, "
                f"captured {len(self.static_outputs)}"
            )
        with torch.no_grad():
            for j, (old, new) in enumerate(zip(self.static_outputs, fresh, strict=True)):
                if not isinstance(old, torch.Tensor):
                    continue  # non-tensor outputs are constants of the recording
                if not isinstance(new, torch.Tensor) or new.shape != old.shape:
                    raise RuntimeError(
                        f"emulated CUDA graph replay: output {j} is "
                        f"{getattr(new, 'shape', type(new))}, captured {tuple(old.shape)}; "
                        "a real graph cannot change its outputs' shapes"
                    )
                if new.data_ptr() == old.data_ptr() and new.stride() == old.stride():
                    continue  # same memory (an output aliasing an input): already written
                _cg_uncounted(old, _cg_copy_into, old, new)
        self.num_replays += 1


class _emulated_graph:
    """Context manager standing in for `torch.cuda.graph(g)`.

    A real capture records every kernel launched inside the block; the emulation cannot see
    kernels, so the block calls `g.capture(fn, static_inputs)` explicitly.
    """

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        if self.graph._capturing:
            raise RuntimeError("nested capture into the same _EmulatedCUDAGraph")
        self.graph._capturing = True
        return self.graph

    def __exit__(self, exc_type, exc, tb):
        self.graph._capturing = False
        if exc_type is None and self.graph.fn is None:
            raise RuntimeError("nothing was captured inside _emulated_graph(g)")
        return False


# What the file gets of this module, in this order (files that emulate CUDA graphs).
RUNTIME = ("_cg_poison", "_EmulatedCUDAGraph", "_emulated_graph")
