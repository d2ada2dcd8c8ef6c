"""mode="reduce-overhead": the generated file captures and replays CUDA graphs (emulated on CPU)."""

from __future__ import annotations

import pytest
import torch

from pyfy_fuzz.pythonify import load, pythonify


def test_inference_replay_matches_and_old_outputs_survive(tmp_path):
    w = torch.randn(4, 4)

    def f(x):
        return (x @ w).relu(), x * 2

    res = pythonify(f, (torch.randn(3, 4),), tmp_path / "p.py", mode="reduce-overhead")
    src = res.path.read_text()
    assert "_cudagraph_inference = _CUDAGraphRunner(" in src and "emulate=True" in src
    mod = load(res.path, bind=f)
    xs = [torch.randn(3, 4) for _ in range(4)]
    outs = [mod.call(x) for x in xs]
    runner = mod._cudagraph_inference
    assert runner.num_captures == 1 and runner.num_replays >= 2
    # Outputs of earlier replays are not overwritten by later ones, and match eager.
    for x, out in zip(xs, outs, strict=True):
        torch.testing.assert_close(out[0], f(x)[0], rtol=0, atol=0)
        torch.testing.assert_close(out[1], x * 2, rtol=0, atol=0)


def test_a_replay_under_inference_mode_writes_outputs_without_a_version_counter(tmp_path):
    """Called under inference_mode, the captured outputs are inference tensors, which have no
    version counter to keep: the replay still writes them (the 12-07 campaign's 57cc1458cb56
    raised "Inference tensors do not track version counter" on the second call)."""
    w = torch.randn(3)

    def f(x):
        return x * w

    with torch.inference_mode():
        res = pythonify(f, (torch.randn(3),), tmp_path / "p.py", mode="reduce-overhead")
        mod = load(res.path, bind=f)
        xs = [torch.randn(3) for _ in range(3)]
        outs = [mod.call(x) for x in xs]
    assert mod._cudagraph_inference.num_replays >= 1
    for x, out in zip(xs, outs, strict=True):
        torch.testing.assert_close(out, x * w, rtol=0, atol=0)


def test_training_forward_and_backward_graphs(tmp_path):
    def f(x, w):
        return (x @ w).sin().sum()

    def make(seed):
        g = torch.Generator().manual_seed(seed)
        return (
            torch.randn(3, 4, generator=g, requires_grad=True),
            torch.randn(4, 2, generator=g, requires_grad=True),
        )

    res = pythonify(f, make(0), tmp_path / "p.py", mode="reduce-overhead")
    mod = load(res.path, bind=f)
    losses, grads = [], []
    for seed in range(3):
        args = make(seed)
        losses.append(mod.call(*args))
        grads.append(args)
    for loss in reversed(losses):  # backward in the opposite order of the forwards
        loss.backward()
    for seed, (x, w) in enumerate(grads):
        ex, ew = make(seed)
        f(ex, ew).backward()
        torch.testing.assert_close(x.grad, ex.grad, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(w.grad, ew.grad, rtol=1e-6, atol=1e-6)
    assert mod._cudagraph_forward.num_captures == 1
    assert mod._cudagraph_backward.num_captures == 1


def test_mutated_input_skips_cudagraphs_and_keeps_mutation(tmp_path):
    def f(x):
        x.add_(1)
        return x * 2

    res = pythonify(f, (torch.randn(4),), tmp_path / "p.py", mode="reduce-overhead")
    mod = load(res.path, bind=f)
    x = torch.zeros(4)
    for _ in range(3):
        mod.call(x)
    assert torch.equal(x, torch.full((4,), 3.0))
    assert mod._cudagraph_inference.skipped_reason is not None
    assert mod._cudagraph_inference.num_captures == 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_parity_with_reduce_overhead(tmp_path):  # pragma: no cover - GPU only
    def f(x):
        return (x * 2).sin()

    x = torch.randn(8, device="cuda")
    res = pythonify(f, (x,), tmp_path / "p.py", backend="inductor", mode="reduce-overhead")
    mod = load(res.path, bind=f)
    ref = torch.compile(f, mode="reduce-overhead")
    for _ in range(4):
        y = torch.randn(8, device="cuda")
        torch.testing.assert_close(mod.call(y), ref(y).clone())


def test_replayed_view_of_an_intermediate_stays_a_view(tmp_path):
    """Found by the aliasing oracle: replays handed out an output that is a view of a
    graph-internal tensor (bmm then view) as a plain tensor, where torch.compile and the
    file's own warm-up call return a view."""

    def f(a0):
        v1 = a0.to(torch.float32)
        return (v1 @ v1.mT,)

    def make(seed):
        return (torch.randn(3, 4, 1, generator=torch.Generator().manual_seed(seed)),)

    res = pythonify(f, make(0), tmp_path / "p.py", mode="reduce-overhead")
    mod = load(res.path, bind=f)
    outs = [mod.call(*make(k))[0] for k in range(4)]
    assert mod._cudagraph_inference.num_replays >= 1
    for k, out in enumerate(outs):
        assert out._base is not None, f"call {k}"
        assert (out._base is not None) == (res.compiled(*make(k))[0]._base is not None)
        torch.testing.assert_close(out, f(*make(k))[0], rtol=0, atol=0)


def test_a_user_view_of_an_output_stays_a_view_of_that_output_on_replay(tmp_path):
    """Found by the 20-minute campaign (pythonify-divergence.aliasing.13551d5901c6): the graph
    returns v0 twice (the user's output and the base AOTAutograd regenerates v2 from); replay
    handed out two tensors over one storage copy, so v2._base was not the output v0."""

    def f(a0):
        v0 = a0.cos()
        return v0, v0.view((2,))

    r = pythonify(f, (torch.randn(1, 2),), tmp_path / "f.py", mode="reduce-overhead")
    mod = load(r.path, bind=f)
    for seed in range(3):  # warm-up, capture, replays
        x = torch.randn(1, 2, generator=torch.Generator().manual_seed(seed))
        got, want = mod.call(x.clone()), r.compiled(x.clone())
        assert got[1]._base is got[0] and want[1]._base is want[0]
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert mod._cudagraph_inference.num_replays >= 1


# -- Note [Unread CPU inputs] ----------------------------------------------------------------


def test_an_unread_cpu_input_does_not_stop_a_capture():
    """The file's device rule (the GPU campaign's cudagraph.c968: functionalized RNG's CPU seed
    and offset, dead after Inductor's passes, made the file skip where torch captured)."""
    from pyfy_fuzz.pythonify.wrappers._cudagraph_runner import _cg_device_skip

    seed, x = torch.tensor(7), torch.randn(3)
    assert _cg_device_skip([x, seed], frozenset({0, 1})) is None
    assert _cg_device_skip([x, seed], frozenset({0})) == "input 1 is on cpu, not on a CUDA device"
    assert _cg_device_skip([x, seed], frozenset()) == "input 0 is on cpu, not on a CUDA device"
    assert _cg_device_skip([3, None], frozenset()) is None  # only tensors have a device


def test_unread_placeholders_are_those_whose_device_inductor_does_not_count():
    """Against torch's own rule: the placeholders Inductor's lowering registers a device for
    (GraphLowering.add_device_info while it is at a placeholder) are exactly the read ones.
    A placeholder read only by a dead node still counts: torch reads users, not liveness."""
    from torch._inductor import graph as inductor_graph
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.virtualized import V
    from torch.fx.experimental.proxy_tensor import make_fx

    from pyfy_fuzz.pythonify.capture.recorder import unread_placeholders

    def unread(x, unused, y):
        return (x * 2 + y,)

    def dead_reader(x, unused, y):
        unused.sin()
        return (x * 2 + y,)

    orig = inductor_graph.GraphLowering.add_device_info
    for g, expected in ((unread, (1,)), (dead_reader, ())):
        args = [torch.randn(3), torch.randn(3), torch.randn(3)]
        gm = make_fx(g)(*args)
        names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        counted: set[str] = set()

        def spy(self, device, counted=counted):
            node = V.graph.current_node
            if node is not None and node.op == "placeholder":
                counted.add(node.name)
            return orig(self, device)

        with (
            pytest.MonkeyPatch.context() as mp,
            torch._inductor.config.patch(fx_graph_cache=False),
        ):
            mp.setattr(inductor_graph.GraphLowering, "add_device_info", spy)
            compile_fx_inner(gm, args)
        assert unread_placeholders(gm) == expected, g.__name__
        assert counted == {n for i, n in enumerate(names) if i not in expected}, g.__name__


def test_cudagraph_nodes_take_unread_inputs_from_inductor_graphs_only():
    from pyfy_fuzz.pythonify.meta import CompiledGraph
    from pyfy_fuzz.pythonify.wrappers import cudagraph
    from pyfy_fuzz.pythonify.wrappers.runtime import RuntimeWrapperNode

    def graph(kind: str) -> CompiledGraph:
        return CompiledGraph("inference", kind, "", (), unread_inputs=(0, 2))

    for kind, expected in (("inductor", [0, 2]), ("fx", [])):
        (node,) = cudagraph.build(
            RuntimeWrapperNode(),
            None,
            {"inference": graph(kind)},
            static_input_indices=[],
            device="cuda",
            dynamic=False,
        )
        assert node.unread_input_indices == expected
        _, src = cudagraph.wrap_source(node, "compiled_inference")
        assert ("unread_input_indices=[0, 2]" in src) == bool(expected)
