"""The CUDA-graph runtime the generated file embeds, run on CPU against its emulation.

Every test execs `runtime_source(...)` into a fresh namespace (exactly the code a generated file
carries) and drives `_CUDAGraphRunner` with small hand-written boxed functions. The emulated
graph keeps CUDA-graph memory semantics (static outputs rewritten in place at every replay), so
these tests show both that the semantics are there and that the runner compensates for them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pyfy_fuzz.pythonify import load, pythonify
from pyfy_fuzz.pythonify.ir import CUDAGraphPhase, CUDAGraphSetupNode
from pyfy_fuzz.pythonify.wrappers.cudagraph import runtime_source, wrap_source

Boxed = Callable[[list[Any]], list[Any]]


def _namespace(emulate: bool = True) -> dict[str, Any]:
    ns: dict[str, Any] = {"torch": torch}
    exec(compile(runtime_source(emulate=emulate), "<cudagraph runtime>", "exec"), ns)
    return ns


@pytest.fixture
def rt() -> dict[str, Any]:
    return _namespace(emulate=True)


def _runner(rt: dict[str, Any], fn: Boxed, **overrides: Any) -> Any:
    kwargs: dict[str, Any] = {
        "graph_id": "inference",
        "phase": "inference",
        "warmup_runs": 1,
        "static_input_indices": [],
        "skip_dynamic_graphs": False,
        "mutated_input_indices": [],
        "emulate": True,
        "device_index": None,
    }
    kwargs.update(overrides)
    return rt["_CUDAGraphRunner"](fn, **kwargs)


def _only_entry(runner: Any) -> Any:
    assert len(runner.graphs) == 1
    return next(iter(runner.graphs.values()))


def _counters(runner: Any) -> tuple[int, int, int]:
    return runner.num_eager_runs, runner.num_captures, runner.num_replays


# --------------------------------------------------------------------------- the emitted source


def test_runtime_source_imports_nothing_and_emulation_is_optional() -> None:
    for emulate in (True, False):
        tree = ast.parse(runtime_source(emulate=emulate))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert "_EmulatedCUDAGraph" in _namespace(emulate=True)
    gpu_only = _namespace(emulate=False)
    assert "_EmulatedCUDAGraph" not in gpu_only and "_CUDAGraphRunner" in gpu_only
    with pytest.raises(RuntimeError, match="without the emulation"):
        _runner(gpu_only, lambda args: [args[0]], emulate=True)


# --------------------------------------------------------------------------- the emulated graph


def test_emulated_graph_rewrites_its_static_outputs_in_place(rt: dict[str, Any]) -> None:
    static_x = torch.tensor([1.0, 2.0])
    g = rt["_EmulatedCUDAGraph"]()
    with rt["_emulated_graph"](g):
        (static_out,) = g.capture(lambda args: [args[0] * 3], [static_x])
    # Capture computes nothing: the output holds garbage until the first replay.
    assert torch.isnan(static_out).all()
    ptr, version = static_out.data_ptr(), static_out._version
    g.replay()
    assert torch.equal(static_out, torch.tensor([3.0, 6.0]))
    static_x.copy_(torch.tensor([5.0, 7.0]))  # new values reach the graph only via its buffers
    g.replay()
    assert torch.equal(static_out, torch.tensor([15.0, 21.0]))  # the held tensor changed
    assert static_out.data_ptr() == ptr and g.static_outputs[0] is static_out
    assert g.num_replays == 2
    # a real replay writes memory without the dispatcher: no version counter moves (the
    # issue-36 triage's b2d6: a hook saw version 1 in the file, 0 in torch)
    assert static_out._version == version


def test_emulated_capture_has_no_memory_effect(rt: dict[str, Any]) -> None:
    """Like a real capture, recording does not run the writes; each replay runs them once."""
    counter = torch.zeros(2)

    def bump(args: list[Any]) -> list[Any]:
        args[0].add_(1)
        return [args[0] * 10]

    g = rt["_EmulatedCUDAGraph"]()
    with rt["_emulated_graph"](g):
        g.capture(bump, [counter])
    assert torch.equal(counter, torch.zeros(2))
    version = counter._version
    g.replay()
    g.replay()
    assert torch.equal(counter, torch.full((2,), 2.0))
    assert torch.equal(g.static_outputs[0], torch.full((2,), 20.0))
    assert counter._version == version  # a replayed kernel does not bump version counters


def test_emulated_graph_misuse_raises(rt: dict[str, Any]) -> None:
    g = rt["_EmulatedCUDAGraph"]()
    with pytest.raises(RuntimeError, match="before capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="inside"):
        g.capture(lambda args: [args[0]], [torch.ones(1)])
    with pytest.raises(RuntimeError, match="nothing was captured"):
        with rt["_emulated_graph"](g):
            pass


# --------------------------------------------------------------------------- replay


def test_replay_follows_inputs_and_uses_static_inputs_in_place(rt: dict[str, Any]) -> None:
    weight = torch.tensor([1.0, 10.0])
    calls = []

    def fn(args: list[Any]) -> list[Any]:
        calls.append(1)
        return [args[0] * args[1]]

    runner = _runner(rt, fn, static_input_indices=[1])
    for k in range(1, 5):
        x = torch.full((2,), float(k))
        (out,) = runner([x, weight])
        assert torch.equal(out, torch.tensor([k, 10.0 * k]))
    assert _counters(runner) == (1, 1, 3)

    entry = _only_entry(runner)
    assert entry.static_inputs[1] is weight  # a parameter is its own static buffer
    assert entry.static_inputs[0] is not x  # an activation is copied into a clone
    weight.mul_(2)  # an optimizer step, in place
    (out,) = runner([torch.full((2,), 3.0), weight])
    assert torch.equal(out, torch.tensor([6.0, 60.0]))
    assert runner.num_replays == 4
    # warm-up, capture (the emulation records by calling), and one call per replay
    assert len(calls) == 1 + 1 + 4


def test_outputs_handed_out_are_not_overwritten_by_later_replays(rt: dict[str, Any]) -> None:
    runner = _runner(rt, lambda args: [args[0] + 1], warmup_runs=0)
    (first,) = runner([torch.tensor([1.0, 1.0])])
    static_out = _only_entry(runner).graph.static_outputs[0]
    assert torch.equal(static_out, torch.tensor([2.0, 2.0]))
    (second,) = runner([torch.tensor([5.0, 6.0])])
    # The graph's own output tensor was rewritten in place (CUDA-graph semantics) ...
    assert _only_entry(runner).graph.static_outputs[0] is static_out
    assert torch.equal(static_out, torch.tensor([6.0, 7.0]))
    # ... while what the runner handed out earlier kept its value.
    assert torch.equal(first, torch.tensor([2.0, 2.0]))
    assert torch.equal(second, torch.tensor([6.0, 7.0]))
    assert first.untyped_storage().data_ptr() != static_out.untyped_storage().data_ptr()
    assert second.untyped_storage().data_ptr() != static_out.untyped_storage().data_ptr()


@pytest.mark.parametrize("warmup_runs", [0, 1, 3])
def test_warmup_then_one_capture_then_replays(rt: dict[str, Any], warmup_runs: int) -> None:
    runner = _runner(rt, lambda args: [args[0] - 1], warmup_runs=warmup_runs)
    for k in range(1, warmup_runs + 4):
        (out,) = runner([torch.tensor([float(k)])])
        assert out.item() == k - 1
        eager = min(k, warmup_runs)
        assert _counters(runner) == (eager, int(k > warmup_runs), k - eager)
    assert runner.skipped_reason is None


def test_boxed_callee_may_clear_its_argument_list(rt: dict[str, Any]) -> None:
    def fn(args: list[Any]) -> list[Any]:
        (x,) = args
        args.clear()  # the boxed convention lets the callee free its inputs
        return [x * 2]

    runner = _runner(rt, fn)
    for k in range(4):
        (out,) = runner([torch.tensor([float(k)])])
        assert out.item() == 2 * k
    assert runner.num_replays == 3


def test_expanded_input_is_copied_into_its_static_buffer(rt: dict[str, Any]) -> None:
    runner = _runner(rt, lambda args: [args[0] * 1.0], warmup_runs=0)
    for k in range(3):
        x = torch.tensor([float(k)]).expand(4)  # stride 0
        (out,) = runner([x])
        assert torch.equal(out, torch.full((4,), float(k)))
    assert _only_entry(runner).static_inputs[0].stride() == (0,)
    assert runner.num_replays == 3


# --------------------------------------------------------------------------- aliasing outputs


def test_outputs_aliasing_inputs_alias_the_callers_tensors(rt: dict[str, Any]) -> None:
    weight = torch.arange(4.0)
    runner = _runner(
        rt,
        lambda args: [args[0][1:], args[1], args[0] + 0],
        warmup_runs=0,
        static_input_indices=[1],
    )
    for k in range(2):
        x = torch.arange(3.0) + 10 * k
        view, w, fresh = runner([x, weight])
        assert torch.equal(view, x[1:]) and view.data_ptr() == x[1:].data_ptr()
        assert w is weight
        assert torch.equal(fresh, x) and fresh.data_ptr() != x.data_ptr()
    x.add_(100)  # the view follows the caller's tensor, as an eager call's would
    assert torch.equal(view, x[1:])


def test_empty_outputs_aliasing_inputs_are_the_callers_tensors(rt: dict[str, Any]) -> None:
    """Every 0-element storage has address 0 (Note [Empty storages]): an empty input the
    graph returns (a tensor saved for backward) is still the caller's tensor, a view of it
    still a view, and an empty graph-internal output still a copy."""
    weight = torch.empty(0)
    runner = _runner(
        rt,
        lambda args: [args[0], args[0][0:0], args[1], args[0] * args[1]],
        warmup_runs=0,
        static_input_indices=[1],
    )
    for _ in range(2):  # capture + replay, then a replay
        x = torch.empty(0)
        same, view, w, fresh = runner([x, weight])
        assert same is x and w is weight
        assert view._base is x or view.untyped_storage()._cdata == x.untyped_storage()._cdata
        assert fresh.untyped_storage()._cdata not in {
            x.untyped_storage()._cdata,
            _only_entry(runner).static_inputs[0].untyped_storage()._cdata,
        }
    assert runner.num_replays == 2


def test_outputs_aliasing_each_other_keep_aliasing(rt: dict[str, Any]) -> None:
    def fn(args: list[Any]) -> list[Any]:
        base = args[0] * 2
        return [base, base[1:]]

    runner = _runner(rt, fn, warmup_runs=0)
    runner([torch.zeros(3)])
    base, tail = runner([torch.tensor([1.0, 2.0, 3.0])])
    assert torch.equal(base, torch.tensor([2.0, 4.0, 6.0])) and torch.equal(tail, base[1:])
    assert tail.data_ptr() == base.data_ptr() + base.element_size()
    base.fill_(0)
    assert torch.equal(tail, torch.zeros(2))


# --------------------------------------------------------------------------- shapes and scalars


def test_skip_dynamic_graphs_never_captures(rt: dict[str, Any]) -> None:
    """torch's triton.cudagraph_skip_dynamic_graphs skips a graph with symbolic inputs
    outright (compile_fx: "graph with symbolic shapes inputs"), every shape alike."""
    runner = _runner(rt, lambda args: [args[0] * 2], skip_dynamic_graphs=True)
    for x in (torch.ones(4), torch.ones(4), torch.arange(5.0), torch.full((4,), 3.0)):
        (out,) = runner([x])
        assert torch.equal(out, x * 2)
    assert _counters(runner) == (4, 0, 0)
    assert "cudagraph_skip_dynamic_graphs" in runner.skipped_reason


def test_a_dynamic_graph_follows_torchs_skip_config(tmp_path: Path) -> None:
    """Re-recorded per shape by default (cudagraph trees), skipped under the config."""
    import torch._inductor.config as iconfig

    def f(x):
        return x.sin() * 2

    for skip in (False, True):
        torch._dynamo.reset()
        with iconfig.patch({"triton.cudagraph_skip_dynamic_graphs": skip}):
            res = pythonify(
                f, (torch.randn(4),), tmp_path / f"p{skip}.py", dynamic=True, mode="reduce-overhead"
            )
        mod = load(res.path, bind=f)
        for n in (4, 4, 5, 5, 5):
            x = torch.randn(n)
            assert torch.equal(mod.call(x), f(x))
        runner = mod._cudagraph_inference
        assert (runner.skipped_reason is not None) == skip
        assert runner.num_captures == (0 if skip else 2)


def test_new_shape_without_skip_captures_one_graph_per_shape(rt: dict[str, Any]) -> None:
    runner = _runner(rt, lambda args: [args[0] * 2], skip_dynamic_graphs=False)
    runner([torch.ones(4)])
    runner([torch.ones(4)])
    assert _counters(runner) == (1, 1, 1)
    for k in range(3):  # warm-up for the new shape, then its own capture
        (out,) = runner([torch.arange(5.0) + k])
        assert torch.equal(out, (torch.arange(5.0) + k) * 2)
    assert _counters(runner) == (2, 2, 3)
    assert len(runner.graphs) == 2
    (out,) = runner([torch.full((4,), 3.0)])
    assert torch.equal(out, torch.full((4,), 6.0))
    assert _counters(runner) == (2, 2, 4)


def test_non_tensor_inputs_are_part_of_the_key(rt: dict[str, Any]) -> None:
    """A replay cannot change a Python scalar baked into the recording: a new one re-captures."""
    runner = _runner(rt, lambda args: [args[0] * args[1], args[2]], warmup_runs=0)
    for scale in (2, 2, 3, 3):
        out, none = runner([torch.ones(2), scale, None])
        assert torch.equal(out, torch.full((2,), float(scale))) and none is None
    assert _counters(runner) == (0, 2, 4)


def test_replaced_static_input_gets_a_new_graph(rt: dict[str, Any]) -> None:
    """A recording reads a parameter at a fixed address; a new parameter object cannot replay it."""
    runner = _runner(rt, lambda args: [args[0] + args[1]], static_input_indices=[1])
    w1, w2 = torch.ones(2), torch.full((2,), 5.0)
    for w in (w1, w1, w1, w2, w2, w1):
        (out,) = runner([torch.zeros(2), w])
        assert torch.equal(out, w)
    assert len(runner.graphs) == 2 and runner.num_captures == 2


# --------------------------------------------------------------------------- mutations


def test_mutated_non_static_input_is_never_captured(rt: dict[str, Any]) -> None:
    def fn(args: list[Any]) -> list[Any]:
        args[0].add_(1)
        return [args[0] * 2]

    runner = _runner(rt, fn, mutated_input_indices=[0])
    assert runner.skipped_reason is not None and "[0]" in runner.skipped_reason
    x = torch.zeros(3)
    for k in range(1, 4):
        (out,) = runner([x])
        assert torch.equal(x, torch.full((3,), float(k)))  # the caller sees the mutation
        assert torch.equal(out, torch.full((3,), 2.0 * k))
    assert _counters(runner) == (3, 0, 0)
    assert runner.graphs == {}


def test_mutated_static_input_is_captured_and_mutated_once_per_call(rt: dict[str, Any]) -> None:
    running = torch.zeros(2)  # a buffer such as BatchNorm's running mean

    def fn(args: list[Any]) -> list[Any]:
        args[1].add_(args[0])
        return [args[1] * 1.0]

    runner = _runner(rt, fn, static_input_indices=[1], mutated_input_indices=[1])
    for k in range(1, 5):
        (out,) = runner([torch.ones(2), running])
        assert torch.equal(running, torch.full((2,), float(k)))
        assert torch.equal(out, running)
    assert runner.skipped_reason is None
    assert _counters(runner) == (1, 1, 3)


# --------------------------------------------------------------------------- training


def test_saved_tensors_survive_a_second_forward_replay(rt: dict[str, Any]) -> None:
    weight = torch.tensor([2.0, 3.0])

    def forward(args: list[Any]) -> list[Any]:
        x, w = args
        saved = x * w  # an activation the backward needs
        return [saved.sum(), saved]

    def backward(args: list[Any]) -> list[Any]:
        saved, grad = args
        return [saved * grad]

    fw = _runner(rt, forward, graph_id="forward", phase="forward", static_input_indices=[1])
    bw = _runner(rt, backward, graph_id="backward", phase=CUDAGraphPhase.BACKWARD)
    assert (fw.phase, bw.phase, fw.graph_id, bw.graph_id) == (
        "forward",
        "backward",
        "forward",
        "backward",
    )
    fw([torch.zeros(2), weight])  # warm-up
    _, saved1 = fw([torch.tensor([1.0, 1.0]), weight])
    _, saved2 = fw([torch.tensor([10.0, 100.0]), weight])
    assert fw.num_replays == 2
    # The forward graph's own saved output now holds the second call's values ...
    assert torch.equal(_only_entry(fw).static_outputs[1], torch.tensor([20.0, 300.0]))
    # ... but the tensor saved by the first call did not change.
    assert torch.equal(saved1, torch.tensor([2.0, 3.0]))

    grad = torch.tensor([1.0, -1.0])
    bw([torch.zeros(2), grad])  # warm-up
    (grad_1,) = bw([saved1, grad])
    (grad_2,) = bw([saved2, grad])
    assert torch.equal(grad_1, torch.tensor([2.0, -3.0]))
    assert torch.equal(grad_2, torch.tensor([20.0, -300.0]))
    assert torch.equal(grad_1, torch.tensor([2.0, -3.0]))  # still, after the next replay
    assert _counters(bw) == (1, 1, 2)
    assert _only_entry(bw).static_inputs[0] is not saved1  # copied into the static buffer


# --------------------------------------------------------------------------- wrap_source


def test_wrap_source_builds_a_working_runner(rt: dict[str, Any]) -> None:
    node = CUDAGraphSetupNode(
        graph_id="forward",
        phase=CUDAGraphPhase.FORWARD,
        warmup_runs=2,
        static_input_indices=[1],
        saved_tensor_indices=[1],
        backward_graph_id="backward",
    )
    name, source = wrap_source(node, "compiled_forward")
    assert name.isidentifier() and name not in rt
    assert source.lstrip().startswith("#")
    assert all(len(line) <= 100 for line in source.splitlines())

    rt["compiled_forward"] = lambda args: [args[0] + args[1], args[0] * 2]
    exec(compile(source, "<wrap_source>", "exec"), rt)
    runner = rt[name]
    assert isinstance(runner, rt["_CUDAGraphRunner"])
    assert (runner.graph_id, runner.phase, runner.warmup_runs) == ("forward", "forward", 2)
    assert runner.static_input_indices == [1] and not runner.skip_dynamic_graphs
    assert runner.emulate and runner.device_index is None

    bias = torch.tensor([100.0])
    held = []
    for k in range(5):
        out, saved = runner([torch.tensor([float(k)]), bias])
        held.append(saved)
        assert out.item() == k + 100
    assert _counters(runner) == (2, 1, 3)
    assert [t.item() for t in held] == [0.0, 2.0, 4.0, 6.0, 8.0]
    for _ in range(3):  # another shape: its own warm-ups, then its own graph
        runner([torch.ones(3), bias])
    assert _counters(runner) == (4, 2, 4)


def test_wrap_source_mutated_inputs_and_odd_graph_ids(rt: dict[str, Any]) -> None:
    node = CUDAGraphSetupNode(graph_id="fw-0.graph", warmup_runs=0)
    node.mutated_input_indices = [0]  # type: ignore[attr-defined]  # optional attribute
    name, source = wrap_source(node, "compiled_inference")
    assert name.isidentifier()
    assert "mutated_input_indices=[0]" in source and "never captured" in source

    def fn(args: list[Any]) -> list[Any]:
        args[0].mul_(2)
        return [args[0]]

    rt["compiled_inference"] = fn
    exec(source, rt)
    runner = rt[name]
    x = torch.ones(2)
    runner([x])
    runner([x])
    assert torch.equal(x, torch.full((2,), 4.0))
    assert runner.num_captures == 0 and runner.skipped_reason is not None

    plain_name, plain = wrap_source(CUDAGraphSetupNode(graph_id="inference"), "f")
    assert plain_name == "_cudagraph_inference" and "mutated_input_indices=[]" in plain


# --------------------------------------------------------------------------- real CUDA


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_real_cuda_graph_replay() -> None:
    rt = _namespace(emulate=False)
    weight = torch.tensor([1.0, 10.0], device="cuda")
    runner = _runner(
        rt,
        lambda args: [args[0] * args[1] + 1],
        static_input_indices=[1],
        emulate=False,
        device_index=torch.cuda.current_device(),
    )
    outs = []
    for k in range(5):
        (out,) = runner([torch.full((2,), float(k), device="cuda"), weight])
        outs.append(out)
    torch.cuda.synchronize()
    assert _counters(runner) == (1, 1, 4)
    assert isinstance(_only_entry(runner).graph, torch.cuda.CUDAGraph)
    for k, out in enumerate(outs):  # earlier outputs were not overwritten by later replays
        assert out.tolist() == [k + 1.0, 10.0 * k + 1.0]
    weight.mul_(2)
    (out,) = runner([torch.full((2,), 1.0, device="cuda"), weight])
    assert out.tolist() == [3.0, 21.0]
    cpu_runner = _runner(rt, lambda args: [args[0] + 1], emulate=False)
    (out,) = cpu_runner([torch.zeros(1)])
    assert out.item() == 1.0 and cpu_runner.skipped_reason is not None


def test_a_capture_that_fails_runs_eagerly_and_says_why() -> None:
    """A graph that cannot be captured (a host sync, a CPU op inside it) runs eagerly from
    then on, as torch runs a graph it skips, and the reason is reported for the oracle
    (Note [Where the file replays, torch replays]). The real capture needs a GPU; its failure
    path is driven here through `_record_cuda`."""
    rt = _namespace(emulate=False)
    runner = _runner(rt, lambda args: [args[0] * 2], emulate=False)

    def refuse(static_inputs: list[Any]) -> Any:
        raise RuntimeError("operation not permitted when stream is capturing\nmore")

    runner._record_cuda = refuse
    x = torch.ones(3)
    assert runner._capture(("k",), [x]) is None
    assert runner.skipped_reason == (
        "capture failed: RuntimeError: operation not permitted when stream is capturing"
    )
    assert runner.num_captures == 0 and runner.graphs == {}
    (out,) = runner([x])  # every later call: eager, without a capture attempt
    assert torch.equal(out, x * 2) and runner.num_eager_runs == 1


def test_an_emulated_capture_draws_no_random_numbers(rt: dict[str, Any]) -> None:
    """A capture computes nothing, random draws included: each call of the file draws one
    call's numbers, as eager and torch.compile (which ignores the mode on aot_eager) do. Found
    by the campaign: pythonify-divergence.outputs.e51b, randn_like drawn once more before the
    first replay."""

    def boxed(args: list[Any]) -> list[Any]:
        return [torch.randn_like(args[0]) + args[0]]

    runner = _runner(rt, boxed, warmup_runs=1)
    x = torch.zeros(3)
    torch.manual_seed(0)
    got = [runner([x])[0].clone() for _ in range(4)]  # warm-up, capture + replay, replays
    torch.manual_seed(0)
    want = [torch.randn_like(x) for _ in range(4)]
    assert _counters(runner) == (1, 1, 3)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_the_file_under_reduce_overhead_on_cpu_draws_what_torch_compile_draws(
    tmp_path: Path,
) -> None:
    """aot_eager on CPU ignores mode="reduce-overhead"; the file emulates the replay, and must
    still give torch.compile's random numbers, call by call."""

    def f(x):
        return torch.randn_like(x) * x

    torch._dynamo.reset()
    res = pythonify(f, (torch.ones(4),), tmp_path / "rng.py", mode="reduce-overhead")
    mod = load(res.path, bind=f)
    compiled = torch.compile(f, backend="aot_eager", mode="reduce-overhead")
    torch.manual_seed(7)
    want = [compiled(torch.ones(4)) for _ in range(4)]
    torch.manual_seed(7)
    got = [mod.call(torch.ones(4)).clone() for _ in range(4)]
    assert mod._cudagraph_inference.num_replays >= 1
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_the_file_under_reduce_overhead_saves_an_empty_input_itself(tmp_path: Path) -> None:
    """pythonify-divergence.mutation.af8d91b2d2ee: `a0 * w` with 0-element tensors saves a0;
    once the forward replays, a version bump of a0 must still make backward raise, as
    torch.compile's does (on CPU it ignores mode="reduce-overhead")."""

    class Program(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p0 = torch.nn.Parameter(torch.randn(0))

        def forward(self, a0: torch.Tensor) -> torch.Tensor:
            return a0 * self.p0

    def bumped_backward(fn: Callable[..., Any]) -> str:
        for _ in range(2):  # a warm-up, then a capture and replay (the file)
            fn(torch.randn(0))
        a0 = torch.randn(0)
        out = fn(a0)
        torch.autograd.graph.increment_version(a0)
        try:
            out.backward(torch.ones_like(out))
        except RuntimeError as e:
            return "raised" if "modified by an inplace operation" in str(e) else str(e)
        return "ran"

    m = Program()
    torch._dynamo.reset()
    res = pythonify(m, (torch.randn(0),), tmp_path / "empty.py", mode="reduce-overhead")
    mod = load(res.path, bind=m)
    compiled = torch.compile(Program(), backend="aot_eager", mode="reduce-overhead")
    assert bumped_backward(compiled) == "raised"
    assert bumped_backward(mod.call) == "raised"
    assert mod._cudagraph_forward.num_replays >= 2


def test_outputs_handed_out_after_a_replay_have_counters_of_their_own_at_zero(
    rt: dict[str, Any],
) -> None:
    """cudagraph trees build what a replay hands out over the pool's memory without an in-place
    op (`_construct_CUDA_Tensor_From_Storage_And_Metadata`): version 0, as a fresh output of the
    graph uncaptured. The file built its copies with `set_`, one write: a backward returning
    one zeros buffer twice gave a module hook its gradient at version 1 (the 12-07 unsteered
    run's 311725f88f0f)."""

    def fn(args: list[Any]) -> list[Any]:
        buf = torch.zeros_like(args[0])  # a graph-internal output, returned twice
        inner = args[0] * 2
        return [buf, buf, inner[1:]]  # and a view of a graph-internal tensor

    runner = _runner(rt, fn)
    for k in range(3):  # warm-up, capture and replay, replay
        a, b, tail = runner([torch.arange(3.0) + k])
        assert a is b
        assert (a._version, tail._version) == (0, 0), (k, a._version, tail._version)
        assert torch.equal(tail, (torch.arange(3.0) + k)[1:] * 2)
    assert runner.num_replays == 2
