"""Capture regressions, most found by the oracles: input copies that keep values, aliasing and
a usable history; programs the file cannot model are refused rather than silently changed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pyfy_fuzz.pythonify import PythonifyUnsupported, pythonify
from pyfy_fuzz.pythonify.inputs import clone_preserving_aliasing


def test_nonleaf_copy_can_be_mutated_before_backward():
    """Capture runs programs that mutate their (copied) non-leaf inputs and then backward:
    the copy's own history must not make that fail where the original would not."""
    leaf = torch.randn(4, requires_grad=True)
    x = leaf.clone()
    (c,) = clone_preserving_aliasing((x,))
    assert c.grad_fn is not None and not c.is_leaf and torch.equal(c, x)
    c.mul_(2)
    c.sin_()
    c.sum().backward()
    x.mul_(2)
    x.sin_()
    x.sum().backward()


def test_signed_zeros_and_nan_survive_the_copy():
    x = torch.tensor([-0.0, 0.0, float("nan")], requires_grad=True).clone()
    (c,) = clone_preserving_aliasing((x,))
    assert torch.equal(torch.signbit(c), torch.signbit(x))
    assert c[2].isnan()


def test_aliasing_is_kept():
    base = torch.randn(4, 3)
    a, b = base, base[1:3]
    shared = torch.empty(0).set_(base.untyped_storage(), 2, (2,), (1,))
    ca, cb, cs, cd = clone_preserving_aliasing((a, b, shared, a))
    assert cd is ca and cb._base is ca
    assert cs.untyped_storage().data_ptr() == ca.untyped_storage().data_ptr()
    assert ca.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()


def test_a_hook_the_file_cannot_name_is_refused(tmp_path):
    """Found by the grads oracle: a file that dropped `x.register_hook(h)` (a side effect
    Dynamo replays after the graph) lost the hook's effect on gradients. Hooks the file can
    name or rebuild from the function's source are replayed (Note [Hooks on inputs]); a hook
    closing over a value the function computes is refused by name rather than dropped."""
    import pytest

    from pyfy_fuzz.pythonify import PythonifyUnsupported, pythonify

    def f(a0: torch.Tensor) -> torch.Tensor:
        s = a0.detach().sum().item()
        a0.register_hook(lambda g: g * s)
        return a0.sin()

    with pytest.raises(PythonifyUnsupported, match="a hook closing over a value.*: s"):
        pythonify(f, (torch.randn(3, requires_grad=True),), tmp_path / "p.py")


def test_unrelated_empty_tensors_stay_unrelated():
    """Found by the exceptions oracle: copies keyed storages by data_ptr (0 for every empty
    storage), so two unrelated zero-size inputs came out sharing a storage, and the file's
    aliasing guard then refused every real call."""
    a, b = torch.randn(1, 0), torch.randn(0, 3, dtype=torch.float64)
    ca, cb = clone_preserving_aliasing((a, b))
    assert ca.untyped_storage()._cdata != cb.untyped_storage()._cdata


def test_copies_keep_autograd_state_under_the_callers_grad_mode():
    """pythonify may be called under no_grad or inference_mode (a drawn call-site
    configuration): the copies keep requires_grad and stay normal tensors, as the originals
    are, or the file guards on the wrong metadata (found: PythonifyGuardError
    'expected requires_grad=False, got True' under inference_mode)."""
    x = torch.randn(3, requires_grad=True).clone()
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            (c,) = clone_preserving_aliasing((x,))
        assert c.requires_grad and not c.is_leaf and not c.is_inference(), mode
    with torch.inference_mode():
        t = torch.randn(3)
        (c,) = clone_preserving_aliasing((t,))
        assert c.is_inference()  # an inference tensor's copy is one too


def test_a_returned_dynamic_size_follows_the_call(tmp_path):
    """dynamic=True: a returned size is a graph output, not the capture's number (found by the
    self-test's campaign as guard-unsound: the file returned 4 where torch.compile returned
    5); a returned constant stays one."""
    from pyfy_fuzz.pythonify import load, pythonify

    def f(a, b):
        return a * 2, b.size(0), 3

    result = pythonify(f, (torch.randn(3), torch.randn(4, 2)), tmp_path / "p.py", dynamic=True)
    mod = load(result.path, bind=f)
    args = (torch.randn(5), torch.randn(6, 2))
    _, size, constant = mod.call(*args)
    assert (size, constant) == (6, 3) == tuple(result.compiled(*args)[1:])


def test_sizes_that_shared_a_symbol_must_stay_equal(tmp_path):
    """dynamic=True: equal sizes share one symbol (duck sizing), and torch.compile's guards
    hold the relation: a call where they differ recompiles. The file refuses it, naming the
    symbol, rather than running a graph traced for equal sizes (Note [Size symbols]; found by a
    campaign as guard-unsound). Sizes of their own symbols stay independent."""
    import pytest

    from pyfy_fuzz.pythonify import PythonifyGuardError, load, pythonify

    def f(a, b):
        return a.sum() * b.sum(), a.size(0)

    result = pythonify(f, (torch.randn(4), torch.randn(4)), tmp_path / "p.py", dynamic=True)
    mod = load(result.path, bind=f)
    assert mod.call(torch.randn(6), torch.randn(6))[1] == 6
    with pytest.raises(PythonifyGuardError, match="were one size"):
        mod.call(torch.randn(6), torch.randn(7))
    with pytest.raises(PythonifyGuardError, match=">= 2"):
        mod.call(torch.randn(1), torch.randn(1))
    compiled = torch.compile(f, backend="aot_eager", dynamic=True)
    compiled(torch.randn(4), torch.randn(4))
    assert compiled(torch.randn(6), torch.randn(7))[1] == 6  # torch.compile recompiles

    apart = pythonify(f, (torch.randn(4), torch.randn(5)), tmp_path / "q.py", dynamic=True)
    assert load(apart.path, bind=f).call(torch.randn(6), torch.randn(7))[1] == 6


def test_subclass_views_are_copied_as_views_with_their_autograd_state():
    """Views of one TwoTensor were copied as fresh TwoTensors over copied inner tensors: no
    longer views of one base, and without requires_grad when the base was a non-leaf. The
    capture then compiled for other inputs than the call's (an inference graph, unaliased
    inputs), so the file refused every real call, or computed what torch.compile did not."""
    from torch.testing._internal.two_tensor import TwoTensor

    base = TwoTensor(torch.randn(6, requires_grad=True), torch.randn(6, requires_grad=True)) * 1
    a, b = base[:3], base[2:5]
    ca, cb = clone_preserving_aliasing((a, b))
    assert type(ca) is TwoTensor and ca._base is not None and ca._base is cb._base
    assert ca.requires_grad and cb.requires_grad and not ca.is_leaf
    with torch.no_grad():
        ca.mul_(2)
    assert torch.equal(cb.a[0], ca.a[2]) and torch.equal(cb.b[0], ca.b[2])
    assert torch.equal(ca.a, a.a * 2) and torch.equal(cb.a[1:], b.a[1:])


def test_dynamic_shapes_still_guard_the_strides_the_compile_saw_as_numbers(tmp_path):
    """dynamic=True: sizes are symbols but a contiguous input's last stride is the number 1,
    and Dynamo's guards reject an input strided 2 there (it recompiles). The file must refuse
    it too (found by issue 17's campaign: the "strided" call relationship, guard parity);
    strides that are expressions of sizes stay unguarded, so other sizes still pass."""
    import pytest

    from pyfy_fuzz.pythonify import PythonifyGuardError, load, pythonify

    def f(a):
        return a * 2

    result = pythonify(f, (torch.randn(3, 4),), tmp_path / "p.py", dynamic=True)
    mod = load(result.path, bind=f)
    assert mod.call(torch.randn(5, 6)).shape == (5, 6)  # other sizes: one graph
    strided = torch.randn(3, 8)[:, ::2]
    with pytest.raises(PythonifyGuardError, match="expected stride"):
        mod.call(strided)


def test_inductor_gradient_accumulation_nodes_match_torchs(tmp_path):
    """Found on an H200 (issue 18; also on CPU): torch marks a backward tangent placeholder
    is_gradient_acc; the Inductor path listed it in GRADIENT_ACC_NODES where the aot_eager
    path and torch's call_function metadata did not (pythonify-divergence.seq_nr)."""
    from pyfy_fuzz.pythonify import load, pythonify

    def f(a0):
        v0 = torch.relu(a0)
        a0.copy_(a0)
        return v0

    def make():
        r0 = torch.randn(6, generator=torch.Generator().manual_seed(0)).requires_grad_()
        return (r0.clone()[..., ::2].as_strided((1,), (1,), 5),)

    res = pythonify(f, make(), tmp_path / "p.py", backend="inductor")
    mod = load(res.path, bind=f)
    for graph, metas in res.fx_meta.items():
        want = sorted(m.name for m in metas if m.is_gradient_acc)
        assert sorted(mod.GRADIENT_ACC_NODES.get(graph, [])) == want, graph


def test_aliased_inputs_laid_out_otherwise_are_refused(tmp_path):
    """Found by the guards oracle (issue 28's `shift` call): a base and its view compiled, then
    two views of a longer storage, the second one element on. torch.compile recompiles (Dynamo
    guards the views' `_base`); the file ran its synthetic base on them and wrote the wrong
    elements. Note [Aliased input layout]: it refuses, and takes a fresh call laid out alike."""
    import pytest

    from pyfy_fuzz.pythonify import PythonifyGuardError, load, pythonify

    def f(a0, a1):
        a0.fill_(2)
        with torch.no_grad():
            a1.mul_(2)
        return a1

    def args():
        a0 = torch.randn(2, 1, 4)
        return a0, a0.view(1, 2, 1, 4)

    res = pythonify(f, args(), tmp_path / "p.py")
    mod = load(res.path, bind=f)
    a0, a1 = args()
    out = mod.call(a0, a1)  # (a new tensor, not a1 itself: as torch.compile returns it)
    assert torch.equal(out, a1) and torch.equal(a0, torch.full((2, 1, 4), 4.0))
    store = torch.zeros(9)
    shifted = (
        store.as_strided((2, 1, 4), (4, 4, 1), 0),
        store.as_strided((1, 2, 1, 4), (8, 4, 4, 1), 1),
    )
    with pytest.raises(PythonifyGuardError, match="laid out otherwise"):
        mod.call(*shifted)


def test_inference_and_normal_inputs_are_copied_each_as_it_is():
    """Note [Inference tensors among the inputs]: a region after a graph break, run under
    inference_mode, takes the caller's normal tensors beside inference tensors the region
    before made; each copy must be what its original is."""
    x = torch.randn(3, requires_grad=True).clone()
    with torch.inference_mode():
        made_there = x * 2
        view = made_there[1:]
        cx, cm, cv = clone_preserving_aliasing((x, made_there, view))
    assert made_there.is_inference() and not x.is_inference()
    assert not cx.is_inference() and cx.requires_grad and not cx.is_leaf
    assert cm.is_inference() and cv.is_inference()
    # an inference view records no _base; it shares the copied storage, as the original does
    assert cv.untyped_storage()._cdata == cm.untyped_storage()._cdata
    assert torch.equal(cm, made_there) and torch.equal(cv, view)


def test_a_region_given_inference_tensors_by_the_one_before_runs(tmp_path):
    """Found by issue 30's smoke campaigns (crash.PythonifyGuardError): an effects program
    that breaks at print, called under inference_mode. The second region takes `a0` (normal)
    and `v0` (made in inference mode by the first); the file guarded `v0` as a normal tensor
    and refused the call torch.compile ran."""
    from pyfy_fuzz.pythonify import load, pythonify

    def f(a0):
        v0 = a0 * 2
        a0.mul_(2)
        print("pyfy-fuzz graph break")
        with torch.no_grad():
            v1 = torch.maximum(a0, v0)
        return v0, v1

    def make():
        return (torch.randn(3, 1, generator=torch.Generator().manual_seed(0)).requires_grad_() * 1,)

    made = [make() for _ in range(3)]  # normal tensors: made outside, called inside
    with torch.inference_mode():
        res = pythonify(f, made[0], tmp_path / "p.py")
        mod = load(res.path, bind=f)
        got = mod.call(*made[1])
        want = f(*made[2])
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))


def test_dynamo_failing_inside_its_tracing_is_a_refusal_not_a_crash(tmp_path: Path) -> None:
    """tensor_split by a tensor of indices: under fullgraph=True Dynamo raises
    InternalTorchDynamoError (PendingUnbackedSymbolNotFound) where torch.compile without it
    breaks the graph and runs; the capture declines (no graph reached its backend)."""

    def f(a0: torch.Tensor) -> torch.Tensor:
        indices = torch.tensor((1, 2, 3), dtype=torch.int64)
        return torch.ops.aten.tensor_split.indices(a0, indices)[0]

    x = torch.randn(4)
    torch.compile(f, backend="aot_eager")(x)  # torch.compile itself runs it
    with pytest.raises(PythonifyUnsupported, match="Dynamo failed while tracing under fullgraph"):
        pythonify(f, (x,), tmp_path / "f.py")


def test_an_output_view_of_a_multi_output_view_is_replayed_not_as_strided(tmp_path):
    """One output of a multi-output view (chunk -> split) puts its out_index second in its
    ViewMeta's tuple; misread, the file rebuilt the output with as_strided where torch
    replays split and unfold (the issue-36 triage's c712: AsStridedBackward0 against
    UnfoldBackward0)."""
    from pyfy_fuzz.pythonify import load

    def f(a):
        v = a.chunk(5, 1)[0]
        with torch.no_grad():
            return v.unfold(1, 1, 1)

    result = pythonify(f, (torch.randn(4, 4, 1, requires_grad=True),), tmp_path / "p.py")
    mod = load(result.path, bind=f)
    expected = result.compiled(torch.randn(4, 4, 1, requires_grad=True))
    got = mod.call(torch.randn(4, 4, 1, requires_grad=True))
    assert type(got.grad_fn).__name__ == type(expected.grad_fn).__name__ == "UnfoldBackward0"


def test_a_view_meta_that_leaves_out_an_argument_is_replayed_by_torchs_fallback(tmp_path):
    """resize_'s ViewMeta tuple has no size: decoded as it was, the file called
    `resize_.default(v)` and raised (the 12-07 unsteered run's 8471d04b8b4f). Such a
    sequence is left to torch's own fallback, as a symbolic one is."""
    from pyfy_fuzz.pythonify import load

    def f(a):
        v = a.detach()
        torch.ops.aten.resize_.default(v, [])
        return v

    result = pythonify(f, (torch.randn(1),), tmp_path / "p.py")
    assert "resize_.default(v)" not in result.path.read_text()
    mod = load(result.path, bind=f)
    x = torch.randn(1)
    got, expected = mod.call(x.clone()), result.compiled(x.clone())
    assert got.shape == expected.shape == () and torch.equal(got, expected)


def test_a_compile_dynamo_restarts_is_recorded_once(tmp_path, monkeypatch):
    """Note [A compile Dynamo restarts]: a backend pass that raises RestartAnalysis (torch's
    tensorify pass does) makes Dynamo trace again and call the backend a second time for the
    same one graph. The first, abandoned compile must leave nothing in the recording: before
    the fix, the retry was refused as "more than one compiled graph"."""
    import torch._dynamo.exc

    from pyfy_fuzz.pythonify.capture import dynamo

    real = dynamo._compile_graph
    calls: list[int] = []

    def restarts_once(gm, example_inputs, rec, backend):
        calls.append(len(rec.gms))
        if len(calls) == 1:
            real(gm, example_inputs, rec, backend)  # records wrappers and graphs, then ...
            raise torch._dynamo.exc.TensorifyScalarRestartAnalysis
        return real(gm, example_inputs, rec, backend)

    monkeypatch.setattr(dynamo, "_compile_graph", restarts_once)

    def f(x):
        return (x * 2).sin()

    x = torch.randn(3, requires_grad=True)
    r = pythonify(f, (x,), tmp_path / "f.py", backend="aot_eager")
    assert calls == [0, 0]  # the retry starts from an empty recording
    assert set(r.ir.graphs) == {"forward", "backward"}
    out = r.compiled(x)
    assert torch.allclose(out, f(x))


def test_a_later_region_is_compiled_on_what_the_compiled_region_before_it_returns() -> None:
    """Issue 36's fifth run's crash.PythonifyGuardError.f4c0d0921b14: after a graph break the
    capture compiled region 1 on eager's outputs of region 0, where v2 is a view of v0;
    torch.compile's region 1 gets Inductor's outputs, where it is not (GX1). The file's
    aliasing-layout guard then refused torch.compile's own call."""
    import json

    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    r = run_case(spec_from_dict(json.loads(_LATER_REGION_SPEC)), backend="inductor")
    assert r.status == "ok" and not r.findings, [f.explanation for f in r.findings]


_LATER_REGION_SPEC = '{"body": [{"args": ["a0"], "ctx": "no_grad", "op": "neg", "outs": ["v0"]}, {"args": ["v0", "as_strided", [4], [1], 18], "ctx": "no_grad", "op": "view", "outs": ["v2"]}, {"args": ["v0", ["int", "stride", 0]], "ctx": "enable_grad", "op": "probe", "outs": ["v3"]}, {"args": ["aten.resize_.default", "v3", ["l", []], ["spelling", "method"]], "ctx": null, "op": "aten", "outs": []}, {"args": ["aten.logical_and_.default", "v2", ["t", "int64", [4]]], "ctx": null, "op": "aten", "outs": []}], "family": "output_aliasing", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "v0", "value": 0}], "plan": {"backend": "inductor", "backward": true, "calls": 1, "config": [], "dynamic": false, "frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, "second_backward": null, "sequence": [], "tangents": "randn", "through": null, "variant": null}, "roots": [{"dtype": "int64", "grad": "none", "layout": "contiguous", "shape": [4, 3, 2], "subclass": null}], "version": 1}'  # noqa: E501
