"""What only a GPU can show (issue 18): torch's cudagraph trees as the torch.compile subject,
the file's real capture (warm-up, shared pool, device index), FunctionalizedRngRuntimeWrapper,
and whole cases in the CUDA mix. Skipped without a GPU (conftest); the logic they rest on is
tested on CPU against the emulation (tests/pythonify/test_cudagraph_emulation.py) and on
synthetic observations (tests/oracles/test_cudagraph_oracle.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from generators import CallPlan, InputSpec, ModuleSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from oracles.cudagraph import OVERWRITTEN
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.case.subjects import plain_compile
from pyfy_fuzz.pythonify import load, pythonify

pytestmark = pytest.mark.cuda

REDUCE = CallPlan(calls=3, backward=False, mode="reduce-overhead")


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_the_reduce_overhead_reference_is_cudagraph_trees(backend: str) -> None:
    """Both backends' reference replays under cudagraph trees: an output read after a later
    replay raises their documented error (by_design: cudagraph-overwritten-output)."""

    def f(x: torch.Tensor) -> torch.Tensor:
        return x.sin() * 2

    compiled = plain_compile(f, backend, REDUCE, "cuda")
    outs = [compiled(torch.randn(8, device="cuda")) for _ in range(4)]
    with pytest.raises(RuntimeError, match=OVERWRITTEN):
        outs[1].sum().item()
    assert torch.equal(outs[-1], outs[-1])  # the latest output is still readable


def test_the_file_captures_on_the_inputs_device_with_one_pool(tmp_path: Path) -> None:
    """Training under reduce-overhead: the forward and the backward graphs are captured on
    the inputs' device, from one memory pool and capture stream, and replay eager's values."""

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (x * w).sin().sum(0)

    def make(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(4, 3, device="cuda", generator=g)
        w = torch.randn(3, device="cuda", generator=g, requires_grad=True)
        return x, w

    res = pythonify(f, make(0), tmp_path / "p.py", backend="inductor", mode="reduce-overhead")
    mod = load(res.path, bind=f)
    for seed in range(4):
        x, w = make(seed)
        out = mod.call(x, w)
        out.sum().backward()
        x2, w2 = make(seed)
        ref = f(x2, w2)
        ref.sum().backward()
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(w.grad, w2.grad)
    fw, bw = mod._cudagraph_forward, mod._cudagraph_backward
    assert fw.num_captures == 1 and bw.num_captures == 1, (fw.skipped_reason, bw.skipped_reason)
    assert fw.num_replays >= 2 and bw.num_replays >= 2
    assert fw.device_index == bw.device_index == x.device.index
    assert fw.pool is not None and fw.pool is bw.pool  # the forward's and backward's pool
    assert list(mod._CG_DEVICE_STATE) == [fw.device_index]  # one pool and stream per device


def test_functionalized_rng_matches_torch_compile(tmp_path: Path) -> None:
    """FunctionalizedRngRuntimeWrapper (CUDA only): the file threads the generator's seed and
    offset as torch.compile does, so both draw the same numbers and leave the generator at
    the same offset."""
    import torch._functorch.config as fconfig

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x, 0.5) + torch.rand_like(x)

    x = torch.randn(64, device="cuda", requires_grad=True)
    with fconfig.patch(functionalize_rng_ops=True):
        res = pythonify(f, (x,), tmp_path / "p.py", backend="aot_eager")
        assert "FunctionalizedRngRuntimeWrapper" in res.active_wrappers
        mod = load(res.path, bind=f)
        ref = torch.compile(f, backend="aot_eager")
        for seed in range(3):
            torch.cuda.manual_seed(seed)
            got = mod.call(x)
            got_offset = torch.cuda._get_rng_state_offset()
            torch.cuda.manual_seed(seed)
            want = ref(x)
            assert torch.cuda._get_rng_state_offset() == got_offset
            assert torch.equal(got, want)
            got.sum().backward()


CUDAGRAPH_MODULE = ProgramSpec(
    family="cudagraph",
    roots=(RootSpec((2, 3), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("mul", ("a0", "p0"), ("v0",)), Stmt("sin", ("v0",), ("v1",))),
    outputs=(OutSpec("ref", "v1"),),
    plan=CallPlan(calls=3, mode="reduce-overhead"),
    module=ModuleSpec(params=((3,),)),
)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_a_reduce_overhead_case_is_clean_in_the_cuda_mix(backend: str, tmp_path: Path) -> None:
    """A whole case on the GPU under torch's cudagraph trees: no finding, torch recorded its
    graphs (no skip), and the file captured and replayed."""
    result = run_case(
        CUDAGRAPH_MODULE, backend=backend, device="cuda", workdir=tmp_path, keep_evidence=True
    )
    assert result.status == "ok", result.reason
    assert result.findings == [], [f.explanation for f in result.findings]
    ev = result.evidence
    assert ev is not None and ev.compiled.extra["cudagraph_skips"] == 0
    runners = {k: v for k, v in ev.pythonified.extra.items() if k.startswith("_cudagraph_")}
    assert runners and all(r["captures"] >= 1 and not r["skipped"] for r in runners.values())
    assert "cudagraph/static_inputs" in ev.wrappers


def test_an_op_with_atomics_is_flagged_on_the_gpu() -> None:
    """Note [Nondeterminism on the GPU]: torch's own list, read off a real op."""
    from pyfy_fuzz.case.ground_truth import nondeterministic_ops

    x = torch.randn(64, device="cuda")
    with nondeterministic_ops("cuda") as flagged:
        torch.histc(x, bins=4)  # no deterministic CUDA implementation (torch's list)
    assert flagged and "histc" in flagged[0]
    with nondeterministic_ops("cuda") as flagged:
        (x * 2).sin()
    assert flagged == []
