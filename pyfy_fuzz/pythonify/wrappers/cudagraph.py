"""CUDA graphs (cudagraphify / torch._inductor.cudagraph_trees): capture/replay of each compiled
graph, modelled after torch's wrappers, with the runtime the generated file embeds.

The runtime below is ordinary Python in this module (so ruff, mypy and the tests see it), and
`runtime_source()` emits its source verbatim into the generated file. Everything in the runtime
section may therefore use only `torch` and names defined in that section: the generated file
imports torch and nothing else.

What the runtime models is what makes CUDA graphs easy to get wrong, and is what the oracles look
at: a captured graph reads its inputs from *static* buffers and writes its outputs into *static*
tensors that every replay overwrites in place. `_CUDAGraphRunner` copies each call's inputs into
the static buffers and hands out copies of the static outputs, so nothing it returned changes
behind the caller's back when the graph is replayed again. On a machine without a GPU,
`_EmulatedCUDAGraph` stands in for `torch.cuda.CUDAGraph` with the same in-place semantics, so
that the replay logic is exercised (and its bugs are visible) on CPU.
"""

from __future__ import annotations

import re
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from ..meta import CompiledGraph, CUDAGraphPhase, IRNode, PathFacts
from .autograd import AOTAutogradWrapperNode, saved_tensor_indices
from .runtime import RuntimeWrapperNode
from .source import runtime_source as _emitted

__all__ = ["CUDAGraphSetupNode", "build", "paths", "runtime_source", "wrap_source"]


@dataclass
class CUDAGraphSetupNode(IRNode):
    """Capture/replay of one compiled graph (see seeds/001, "CUDA Graph IR Node").

    Wraps the compiled graph callable of its phase. On cpu, the generated file replays against
    an emulation that keeps CUDA-graph semantics (static input buffers, outputs rewritten in
    place at each replay).
    """

    wrapper: ClassVar[str] = "cudagraphify"
    segment: ClassVar[str] = "cudagraph"
    graph_id: str = "inference"  # the compiled graph it captures
    phase: CUDAGraphPhase = CUDAGraphPhase.INFERENCE
    warmup_runs: int = 1  # eager calls per input shape before the capture
    static_input_indices: list[int] = field(default_factory=list)  # used in place (parameters)
    saved_tensor_indices: list[int] = field(default_factory=list)  # outputs/inputs saved for bw
    num_forward_outputs: int | None = None  # forward phase: the returns before saved tensors
    backward_graph_id: str | None = None  # forward phase: the graph replaying its backward
    # None: the first CUDA input's, read at the first call (torch: get_device_index(gm))
    device_index: int | None = None
    # torch's triton.cudagraph_skip_dynamic_graphs on a dynamic graph: never captured.
    # Without it, each new shape gets its own graph (cudagraph trees re-record).
    skip_dynamic_graphs: bool = False
    emulate: bool = True  # replay against _EmulatedCUDAGraph (no GPU needed)
    # Non-static inputs the graph mutates: torch skips CUDA graphs for those, and so do we.
    mutated_input_indices: list[int] = field(default_factory=list)
    # Inputs whose device does not decide the capture: Inductor's placeholders without users
    # (Note [Unread CPU inputs]); empty for an FX graph, whose whole graph torch checks.
    unread_input_indices: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.warmup_runs < 0:
            raise ValueError("warmup_runs must be >= 0")
        if any(i < 0 for i in self.unread_input_indices):
            raise ValueError("unread_input_indices are graph input positions (>= 0)")
        if self.emulate and self.device_index is not None:
            raise ValueError("an emulated CUDA graph has no device index")


# Note [Unread CPU inputs]
# Which input devices stop a capture is decided at compile time, by two rules. Inductor counts
# the device of a placeholder only if a node reads it ("cudagraphs should work with an unused
# CPU input", GraphLowering.placeholder), then skips on any CPU device
# (check_multiple_devices_or_any_cpu_nodes). The cudagraphs backend (aot_eager's
# reduce-overhead on CUDA) counts every node's value, read or not (get_device_node_mapping).
# The difference shows with functionalized RNG: the seed and offset are CPU tensors, and once
# the random op's result is dead, Inductor's passes drop the op and nothing reads them, so
# torch captures; the file must too. The runner checks the device of every input but the
# unread ones (`_cg_device_skip`).


def _unread(graph: CompiledGraph | None) -> list[int]:
    return list(graph.unread_inputs) if graph is not None and graph.kind == "inductor" else []


def build(
    runtime: RuntimeWrapperNode,
    autograd: AOTAutogradWrapperNode | None,
    graphs: dict[str, CompiledGraph],
    *,
    static_input_indices: list[int],
    device: str,
    dynamic: bool,
) -> list[CUDAGraphSetupNode]:
    """The CUDA graphs a mode="reduce-overhead" compile replays: one for inference, or a
    forward and a backward for training. Emulated where the compile's device is not cuda.
    A dynamic graph is skipped where torch's config says so at the capture (its default
    re-records each new shape).

    Long: the three nodes (inference; forward and backward) are built in full, a field a line,
    so each reads as the node it makes."""
    import torch._inductor.config as iconfig

    emulate = device != "cuda"
    # Only a write inside the graph stops a capture: a mutation the runtime epilogue applies
    # (training graphs return the new values) never touches the graph's static buffers, and
    # torch records such graphs too (its check reads the graph: find_input_mutations).
    mutated = [
        i
        for i, info in enumerate(runtime.input_info)
        if (info.mutates_data or info.mutates_metadata) and not info.mutated_out_of_graph
    ]
    common: dict[str, Any] = dict(
        warmup_runs=1,
        skip_dynamic_graphs=dynamic and bool(iconfig.triton.cudagraph_skip_dynamic_graphs),
        emulate=emulate,
    )
    if autograd is None:
        return [
            CUDAGraphSetupNode(
                graph_id="inference",
                phase=CUDAGraphPhase.INFERENCE,
                static_input_indices=list(static_input_indices),
                mutated_input_indices=mutated,
                unread_input_indices=_unread(graphs.get("inference")),
                **common,
            )
        ]
    saved = saved_tensor_indices(autograd, graphs["forward"].num_outputs)
    fw = CUDAGraphSetupNode(
        graph_id="forward",
        phase=CUDAGraphPhase.FORWARD,
        static_input_indices=list(static_input_indices),
        saved_tensor_indices=saved,
        num_forward_outputs=autograd.num_forward_returns,
        backward_graph_id="backward",
        mutated_input_indices=mutated,
        unread_input_indices=_unread(graphs.get("forward")),
        **common,
    )
    nsym = autograd.num_symints_saved_for_bw
    bw = CUDAGraphSetupNode(
        graph_id="backward",
        phase=CUDAGraphPhase.BACKWARD,
        static_input_indices=[],
        saved_tensor_indices=list(range(nsym, nsym + len(saved))),
        unread_input_indices=_unread(graphs.get("backward")),
        **common,
    )
    return [fw, bw]


def paths(node: CUDAGraphSetupNode, facts: PathFacts) -> list[str]:
    out = [f"cudagraph/{'inference' if node.phase is CUDAGraphPhase.INFERENCE else 'training'}"]
    if node.mutated_input_indices:
        out.append("cudagraph/skipped_input_mutation")
    if node.static_input_indices:
        out.append("cudagraph/static_inputs")
    if node.skip_dynamic_graphs:
        out.append("cudagraph/skip_dynamic")
    return out


# =========================================================================== runtime (emitted)
# Everything from here to the "end of runtime" marker is copied into the generated file.
# Keep it free of type hints, imports and module names other than `torch`.


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
            base = torch.empty(0, dtype=b.dtype, device=b.device)
            base.set_(storage, b.storage_offset(), b.size(), b.stride())
            out = base.as_strided(o.size(), o.stride(), o.storage_offset())
        else:
            out = torch.empty(0, dtype=o.dtype, device=o.device)
            out.set_(storage, o.storage_offset(), o.size(), o.stride())
        handed[id(o)] = out
        result.append(out)
    return result


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
                _cg_copy_into(old, new)
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


# Note [One memory pool per device]
# cudagraph trees allocate every graph of a device (forward, backward, each recorded shape)
# from one memory pool, so memory a graph freed at the end of its capture is reused by the
# next capture instead of being held twice. The file does the same: all of its runners share
# one pool and one capture stream per device. That is safe because replays never overlap
# and every output leaves the graph as a copy (`_cg_hand_out`): a later replay may write
# over an earlier graph's static outputs, never over what a caller holds.
_CG_DEVICE_STATE: dict = {}  # device index -> (memory pool handle, capture stream)


def _cg_pool_and_stream(device_index):
    """The memory pool and capture stream every graph of `device_index` uses."""
    state = _CG_DEVICE_STATE.get(device_index)
    if state is None:
        with torch.cuda.device(device_index):
            state = (torch.cuda.graph_pool_handle(), torch.cuda.Stream())
        _CG_DEVICE_STATE[device_index] = state
    return state


def _cg_device_skip(args, unread):
    """Why `args` stop a capture, or None: an input the graph reads that is not on a CUDA
    device (torch decides this at compile time from the graph; unread inputs do not count)."""
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.device.type != "cuda" and i not in unread:
            return f"input {i} is on {a.device}, not on a CUDA device"
    return None


def _cg_device_index(args):
    """The device of the first CUDA tensor argument, or None (torch reads it off the graph's
    first CUDA value: get_device_index)."""
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_cuda:
            return a.device.index if a.device.index is not None else torch.cuda.current_device()
    return None


class _CUDAGraphEntry:
    """One captured graph: its input key, the graph object and its static inputs/outputs."""

    def __init__(self, key, graph, static_inputs, static_outputs):
        self.key = key
        self.graph = graph
        self.static_inputs = static_inputs
        self.static_outputs = static_outputs


class _CUDAGraphRunner:
    """Runs a boxed callable (`fn(list) -> list`) through CUDA-graph capture and replay.

    Per input key (see `_cg_input_key`, plus the addresses of the static inputs, which a
    recording bakes in), the first `warmup_runs` calls run `fn` eagerly (warm-up lets lazy
    initialisation and autotuning happen outside capture), the next call captures a graph and
    every later call replays it:

    - each non-static input is copied into the graph's static buffer (a clone made at capture);
      a static input (parameter/buffer) IS its own buffer, never copied, so in-place updates to
      it are seen by later replays;
    - the outputs handed back are copies of the static outputs (`_cg_hand_out`), because the next
      replay overwrites the static ones.

    A call whose key differs from the captured one gets its own graph (one graph per shape, like
    cudagraph trees). With `skip_dynamic_graphs` (torch's triton.cudagraph_skip_dynamic_graphs
    on a dynamic graph) the runner never captures. If `fn` mutates an input that is not
    static, a replay would mutate the static buffer rather than the caller's tensor, so (as
    torch does) the runner never captures and always runs `fn` eagerly.

    Introspection for tests and oracles: num_captures, num_replays, num_eager_runs,
    skipped_reason, graph_id, phase, and `graphs` (input key -> _CUDAGraphEntry).
    """

    def __init__(
        self,
        fn,
        *,
        graph_id,
        phase,
        warmup_runs,
        static_input_indices,
        skip_dynamic_graphs,
        mutated_input_indices,
        emulate,
        device_index,
        unread_input_indices=(),
    ):
        self.fn = fn
        self.graph_id = graph_id
        self.phase = getattr(phase, "value", phase)
        self.warmup_runs = int(warmup_runs)
        self.static_input_indices = sorted(set(static_input_indices))
        self.skip_dynamic_graphs = bool(skip_dynamic_graphs)
        self.mutated_input_indices = sorted(set(mutated_input_indices))
        self.emulate = bool(emulate)
        self.device_index = device_index
        self.unread_input_indices = frozenset(unread_input_indices)
        self.graphs = {}
        self.num_captures = 0
        self.num_replays = 0
        self.num_eager_runs = 0
        self.skipped_reason = None
        self.pool = None  # the memory pool the graphs were captured into (real CUDA only)
        self._static = frozenset(self.static_input_indices)
        self._warmups_done = {}
        if self.emulate and "_EmulatedCUDAGraph" not in globals():
            raise RuntimeError("emulate=True, but this file was generated without the emulation")
        mutated = [i for i in self.mutated_input_indices if i not in self._static]
        if self.skip_dynamic_graphs:
            self.skipped_reason = (
                "graph with symbolic shape inputs (triton.cudagraph_skip_dynamic_graphs)"
            )
        elif mutated:
            self.skipped_reason = (
                f"graph mutates non-static inputs {mutated}: a replay would mutate the static "
                "input buffers, not the caller's tensors"
            )

    def __call__(self, args):
        if self.skipped_reason is not None:
            return self._run_eager(args)
        if not self.emulate:
            reason = _cg_device_skip(args, self.unread_input_indices)
            if reason is not None:
                self.skipped_reason = reason
                return self._run_eager(args)
            index = _cg_device_index(args)
            if self.device_index is None:
                self.device_index = index
            elif index is not None and index != self.device_index:
                self.skipped_reason = (
                    f"inputs on cuda:{index}, graphs recorded on cuda:{self.device_index}"
                )
                return self._run_eager(args)
        shape_key = _cg_input_key(args)
        static_ptrs = tuple(
            (i, args[i].data_ptr())
            for i in self.static_input_indices
            if i < len(args) and isinstance(args[i], torch.Tensor)
        )
        key = (shape_key, static_ptrs)
        entry = self.graphs.get(key)
        if entry is None:
            done = self._warmups_done.get(key, 0)
            if done < self.warmup_runs:
                self._warmups_done[key] = done + 1
                return self._run_eager(args, warmup=True)
            entry = self._capture(key, args)
            if entry is None:  # the capture failed: this runner runs eagerly from now on
                return self._run_eager(args)
        return self._replay(entry, args)

    def _device(self):
        return torch.cuda.device(self.device_index)

    def _run_eager(self, args, warmup=False):
        self.num_eager_runs += 1
        if self.emulate or not warmup:
            outs = self.fn(args)
            return list(outs) if isinstance(outs, (list, tuple)) else [outs]
        # torch's recipe: warm up on a side stream so that lazy initialisation does not land in
        # the capture stream's history.
        with self._device():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                outs = self.fn(args)
            torch.cuda.current_stream().wait_stream(s)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            for o in outs:
                if isinstance(o, torch.Tensor) and o.is_cuda:
                    o.record_stream(torch.cuda.current_stream())
        return outs

    def _capture(self, key, args):
        with torch.no_grad():
            static_inputs = [
                _cg_static_buffer(a) if isinstance(a, torch.Tensor) and i not in self._static else a
                for i, a in enumerate(args)
            ]
        if self.emulate:
            graph, static_outputs = self._record_emulated(static_inputs)
        else:
            try:
                graph, static_outputs = self._record_cuda(static_inputs)
            except RuntimeError as exc:
                # A graph that cannot be captured (a host sync, a CPU op) runs eagerly, as
                # torch runs a graph it skips; the reason is reported, and the oracle compares
                # it with what torch did (oracles/cudagraph.py).
                first = str(exc).splitlines()[0] if str(exc) else ""
                self.skipped_reason = f"capture failed: {type(exc).__name__}: {first}"
                return None
        entry = _CUDAGraphEntry(key, graph, static_inputs, static_outputs)
        self.graphs[key] = entry
        self.num_captures += 1
        return entry

    def _record_emulated(self, static_inputs):
        graph = _EmulatedCUDAGraph()
        with _emulated_graph(graph):
            static_outputs = graph.capture(self.fn, static_inputs)
        return graph, static_outputs

    def _record_cuda(self, static_inputs):
        """Capture on the device's capture stream into its shared pool (Note [One memory pool
        per device]), after the warm-up's work has finished, as cudagraph trees do."""
        pool, stream = _cg_pool_and_stream(self.device_index)
        self.pool = pool
        with self._device():
            torch.cuda.synchronize()
            caller_stream = torch.cuda.current_stream()
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(
                    graph, pool=pool, stream=stream, capture_error_mode="thread_local"
                ):
                    static_outputs = self.fn(list(static_inputs))
            except BaseException:
                # A capture that fails can leave its stream current (torch.cuda.graph ends the
                # capture before it restores the stream) and its pool unusable: put the
                # caller's stream back and give the next capture a fresh pool and stream.
                torch.cuda.set_stream(caller_stream)
                _CG_DEVICE_STATE.pop(self.device_index, None)
                raise
        if not isinstance(static_outputs, (list, tuple)):
            static_outputs = [static_outputs]
        return graph, list(static_outputs)

    def _replay(self, entry, args):
        with torch.no_grad():
            for i, (buf, a) in enumerate(zip(entry.static_inputs, args, strict=True)):
                if i not in self._static and isinstance(buf, torch.Tensor) and buf is not a:
                    _cg_copy_into(buf, a)
        if self.emulate:
            entry.graph.replay()
        else:
            with self._device():
                entry.graph.replay()
        self.num_replays += 1
        return _cg_hand_out(entry.static_outputs, entry.static_inputs, args)


# =========================================================================== end of runtime

_RUNTIME_COMMON = (
    "_cg_input_key",
    "_cg_arg_key",
    "_cg_copy_into",
    "_cg_static_buffer",
    "_cg_storage_key",
    "_cg_hand_out",
)
_RUNTIME_EMULATION = ("_cg_poison", "_EmulatedCUDAGraph", "_emulated_graph")
_RUNTIME_RUNNER = (
    "_CG_DEVICE_STATE",
    "_cg_pool_and_stream",
    "_cg_device_skip",
    "_cg_device_index",
    "_CUDAGraphEntry",
    "_CUDAGraphRunner",
)

_RUNTIME_HEADER = """\
# ---------------------------------------------------------------------------- CUDA graphs
# Capture/replay of the compiled graphs. A captured graph reads its inputs from static buffers
# and writes its outputs into static tensors that every replay overwrites; the runner copies
# each call's inputs in and hands out copies of the outputs.
"""


def runtime_source(emulate: bool) -> str:
    """Module-level source of the CUDA-graph runtime for the generated file (uses only `torch`).

    With `emulate`, the file also gets `_EmulatedCUDAGraph`/`_emulated_graph`, the CPU stand-in
    that runners built with `emulate=True` replay against; without it the file needs a GPU.
    """
    names = (*_RUNTIME_COMMON, *(_RUNTIME_EMULATION if emulate else ()), *_RUNTIME_RUNNER)
    return _RUNTIME_HEADER + "\n\n" + _emitted(sys.modules[__name__], names) + "\n"


def _identifier(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    return name if name and not name[0].isdigit() else f"_{name}"


def wrap_source(node: CUDAGraphSetupNode, inner: str) -> tuple[str, str]:
    """`(name, source)`: module-level code binding `name` to a `_CUDAGraphRunner` over `inner`.

    `inner` names the boxed compiled callable the node wraps (e.g. "compiled_forward").
    """
    phase: Any = node.phase
    phase_value = phase.value if isinstance(phase, CUDAGraphPhase) else str(phase)
    name = f"_cudagraph_{_identifier(node.graph_id)}"
    static = sorted(node.static_input_indices)
    mutated = sorted(getattr(node, "mutated_input_indices", None) or [])
    unread = sorted(node.unread_input_indices)
    mode = "emulated on CPU" if node.emulate else "on the GPU"
    head = f"CUDA graph {node.graph_id!r} ({phase_value} phase, {mode}):"
    mutated_non_static = [i for i in mutated if i not in static]
    if mutated_non_static:
        text = [
            f"{head} never captured; every call runs {inner} eagerly, because the graph mutates",
            f"non-static inputs {mutated_non_static} (a replay would mutate static copies).",
        ]
    else:
        text = [
            f"{head} {node.warmup_runs} eager warm-up call(s) per input shape, then one",
            f"capture, then replays. Static inputs {static} (parameters/buffers) are used in",
            "place; the other tensor inputs are copied into the graph's static buffers before",
            "each replay.",
        ]
    if node.saved_tensor_indices:
        which = "outputs" if phase_value == "forward" else "inputs"
        text.append(f"{which.capitalize()} {sorted(node.saved_tensor_indices)} are saved tensors.")
    if node.backward_graph_id is not None:
        text.append(f"The backward is replayed by graph {node.backward_graph_id!r}.")
    if unread:
        text.append(f"Inputs {unread} are never read, so their device does not stop a capture.")
    if node.skip_dynamic_graphs:
        text = [f"{head} never captured: a dynamic graph, and cudagraph_skip_dynamic_graphs."]
    elif not mutated_non_static:
        text.append("Each new input shape gets its own warm-up and graph.")
    comment = textwrap.wrap(" ".join(text), width=98, break_on_hyphens=False)
    comment = ["# " + line for line in comment]
    source = "\n".join(comment) + (
        f"\n{name} = _CUDAGraphRunner(\n"
        f"    {inner},\n"
        f"    graph_id={node.graph_id!r},\n"
        f"    phase={phase_value!r},\n"
        f"    warmup_runs={int(node.warmup_runs)!r},\n"
        f"    static_input_indices={static!r},\n"
        f"    skip_dynamic_graphs={bool(node.skip_dynamic_graphs)!r},\n"
        f"    mutated_input_indices={mutated!r},\n"
        f"    emulate={bool(node.emulate)!r},\n"
        f"    device_index={node.device_index!r},\n"
        + (f"    unread_input_indices={unread!r},\n" if unread else "")
        + ")\n"
    )
    return name, source
