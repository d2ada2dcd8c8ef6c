"""Unit tests of single wrapper helpers and of the generated source (no full capture needed)."""

from __future__ import annotations

import torch

from pyfy_fuzz.pythonify import load, pythonify
from pyfy_fuzz.pythonify.ir import (
    AOTDedupeWrapperNode,
    FakeOutMeta,
    FakifiedOutWrapperNode,
    FunctionalizedRngRuntimeWrapperNode,
)
from pyfy_fuzz.pythonify.meta import EmitContext
from pyfy_fuzz.pythonify.wrappers import dedupe, fakified_out, rng

INNER = EmitContext(inner="inner")


def _exec_helper(src: str, **env):
    ns = {"torch": torch, **env}
    exec(compile(src, "<helper>", "exec"), ns)
    return ns


def test_functionalized_rng_helper_threads_seed_offset_and_advances(tmp_path):
    """CUDA-only at runtime: the helper is exercised with the CUDA RNG calls stubbed."""
    src = rng.emit(FunctionalizedRngRuntimeWrapperNode(num_forward_returns=2), INNER)
    seen, offsets = [], []

    def inner(args):
        seen.append(list(args))
        return [torch.tensor(1.0), torch.tensor(2.0), torch.tensor(104), torch.tensor(3.0)]

    ns = _exec_helper(
        src,
        inner=inner,
        _cuda_rng_state_as_tuple=lambda: (torch.tensor(7), torch.tensor(100)),
        _cuda_set_rng_offset=lambda o: offsets.append(int(o)),
    )
    outs = ns["_functionalized_rng_wrapper"]([torch.tensor(0.5)])
    assert [float(o) for o in outs] == [1.0, 2.0, 3.0]  # offset output removed
    assert offsets == [104]
    assert [int(a) for a in seen[0][1:]] == [7, 100]  # seed, offset appended


def test_functionalized_rng_training_keeps_offset_output():
    node = FunctionalizedRngRuntimeWrapperNode(num_forward_returns=1, return_new_outs=False)
    ns = _exec_helper(
        rng.emit(node, INNER),
        inner=lambda args: [torch.tensor(1.0), torch.tensor(9)],
        _cuda_rng_state_as_tuple=lambda: (torch.tensor(0), torch.tensor(0)),
        _cuda_set_rng_offset=lambda o: None,
    )
    assert len(ns["_functionalized_rng_wrapper"]([])) == 2


def test_fakified_out_helper_first_call_returns_fake_strided_outputs():
    node = FakifiedOutWrapperNode(
        out_metas=[FakeOutMeta((2, 3), (1, 2), "torch.float32", "cpu"), None]
    )
    calls = []
    ns = _exec_helper(
        fakified_out.emit(node, INNER),
        inner=lambda args: calls.append(args) or ["real"],
        _dtype=lambda name: getattr(torch, name.split(".")[-1]),
    )
    wrapper = ns["_fakified_out_wrapper"]
    assert wrapper([1]) == ["real"]  # consumed at capture: runs the graph
    ns["_fakified_state"]["pending"] = True
    fake = wrapper([1])
    assert fake[0].device.type == "meta" and fake[0].stride() == (1, 2) and fake[1] is None
    assert wrapper([1]) == ["real"] and len(calls) == 2


def test_dedupe_helper_drops_duplicates():
    node = AOTDedupeWrapperNode(keep_arg_mask=[True, False, True], add_dupe_map=[0, 0, 1])
    ns = _exec_helper(dedupe.emit(node, INNER), inner=lambda args: args)
    assert ns["_dedupe_wrapper"](["a", "a", "b"]) == ["a", "b"]


def test_wrapper_order_matches_torch_application_order(tmp_path):
    def f(a, b):
        a.add_(1)
        return a * b

    x = torch.randn(4, requires_grad=True).clone()
    with torch._functorch.config.patch(debug_assert=True):
        res = pythonify(f, (x, x), tmp_path / "p.py", frontend="aot")
    # Outer-most first, as torch applies post_compile: dispatch, then assembly.
    assert res.active_wrappers == [
        "AOTDedupeWrapper",
        "DebugAssertWrapper",
        "RuntimeWrapper",
        "AOTDispatchAutograd",
    ]
    src = res.path.read_text()
    # Sections appear inner-most first, each helper naming the callable it wraps.
    order = [
        "def compiled_forward",
        "class CompiledFunction(",
        "def _runtime_wrapper",
        "def _debug_assert_wrapper",
        "def _dedupe_wrapper",
    ]
    assert [src.index(s) for s in order] == sorted(src.index(s) for s in order)
    assert "return _debug_assert_wrapper([args[0], args[2]])" not in src
    assert "return _debug_assert_wrapper([args[0]])" in src


def test_seq_nr_survives_into_the_file_and_maps_backward_to_forward(tmp_path):
    def f(x, w):
        y = x @ w
        return (y.sin() * y).sum() + (x * x).sum()

    res = pythonify(
        f,
        (torch.randn(3, 4, requires_grad=True), torch.randn(4, 2, requires_grad=True)),
        tmp_path / "p.py",
    )
    mod = load(res.path, bind=f)
    fw, bw = mod.SEQ_NR["forward"], mod.SEQ_NR["backward"]
    assert fw and bw
    assert fw == dict(res.ir.graphs["forward"].seq_nr)
    acc = set(mod.GRADIENT_ACC_NODES.get("backward", []))
    fw_nrs = set(fw.values())
    unmapped = [n for n, s in bw.items() if n not in acc and s not in fw_nrs]
    assert not unmapped, f"backward nodes without a forward seq_nr: {unmapped}"
    # Every annotated node line carries its seq_nr comment.
    src = res.path.read_text()
    for name, nr in fw.items():
        assert f"    {name} = " in src and f"# seq_nr={nr}" in src


def test_file_imports_torch_only(tmp_path):
    res = pythonify(lambda x: x.sin(), (torch.randn(3),), tmp_path / "p.py")
    imports = [
        line.split()[1]
        for line in res.path.read_text().splitlines()
        if line.startswith(("import ", "from "))
    ]
    assert set(imports) <= {
        "base64",
        "importlib",
        "io",
        "operator",
        "math",
        "torch",
        "pyfy_fuzz.pythonify.errors",
    }
