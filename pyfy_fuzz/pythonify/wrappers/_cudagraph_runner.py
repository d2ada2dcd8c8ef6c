"""The CUDA-graph runtime's runner: warm-up, capture and replay of one compiled graph
(copied into the generated file).

`_CUDAGraphRunner` wraps a boxed compiled callable as torch's cudagraphify / cudagraph trees
do: per input shape, eager warm-up calls, one capture, then replays that copy each call's
inputs into the static buffers and hand out copies of the static outputs
(`_cudagraph_buffers.py`). It captures on the GPU, or against `_EmulatedCUDAGraph`
(`_cudagraph_emulation.py`) where the file emulates. Emitted verbatim: it uses only `torch`
and the other runtime helpers.
"""

from __future__ import annotations

import torch

from ._cudagraph_buffers import _cg_copy_into, _cg_hand_out, _cg_input_key, _cg_static_buffer
from ._cudagraph_emulation import _emulated_graph, _EmulatedCUDAGraph

__all__ = ["RUNTIME"]


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


# What the file gets of this module, in this order (every file with CUDA graphs).
RUNTIME = (
    "_CG_DEVICE_STATE",
    "_cg_pool_and_stream",
    "_cg_device_skip",
    "_cg_device_index",
    "_CUDAGraphEntry",
    "_CUDAGraphRunner",
)
