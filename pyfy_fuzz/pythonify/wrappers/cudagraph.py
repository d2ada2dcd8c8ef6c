"""CUDA graphs (cudagraphify / torch._inductor.cudagraph_trees): capture/replay of each compiled
graph, modelled after torch's wrappers: the node, which graphs a compile captures (`build`),
and the code the generated file gets for them (`runtime_source`, `wrap_source`).

The runtime the file embeds is ordinary Python in three private modules beside this one, by
job (so ruff, mypy and the tests see it): `_cudagraph_buffers.py` (the static input buffers
and what a replay hands out), `_cudagraph_emulation.py` (the CPU stand-in for a CUDA graph)
and `_cudagraph_runner.py` (warm-up, capture and replay). `runtime_source()` emits their
source verbatim into the generated file, so they may use only `torch` and each other's
names: the generated file imports torch and nothing else.

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
import textwrap
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..meta import CompiledGraph, CUDAGraphPhase, IRNode, PathFacts, Registration
from . import _cudagraph_buffers, _cudagraph_emulation, _cudagraph_runner
from .autograd import AOTAutogradWrapperNode, saved_tensor_indices
from .runtime import RuntimeWrapperNode
from .source import runtime_source as _emitted

__all__ = ["CUDAGraphSetupNode", "REGISTRATION", "build", "paths", "runtime_source", "wrap_source"]


@dataclass
class CUDAGraphSetupNode(IRNode):
    """Capture/replay of one compiled graph (see seeds/001, "CUDA Graph IR Node").

    Wraps the compiled graph callable of its phase. On cpu, the generated file replays against
    an emulation that keeps CUDA-graph semantics (static input buffers, outputs rewritten in
    place at each replay).
    """

    wrapper: ClassVar[str] = "cudagraphify"
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


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(
    node=CUDAGraphSetupNode, segment="cudagraph", order=9, post_compile=False
)


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
    parts = [
        _cudagraph_buffers,
        *([_cudagraph_emulation] if emulate else []),
        _cudagraph_runner,
    ]
    code = "\n\n\n".join(_emitted(m, m.RUNTIME) for m in parts)
    return _RUNTIME_HEADER + "\n\n" + code + "\n"


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
