"""RuntimeWrapper and AOTDispatchAutograd paths: parity of the pythonified file (aot_eager)."""

from __future__ import annotations

import pytest
import torch

from .parity import check_parity, r


def test_inference_input_mutation_and_alias_of_input(tmp_path):
    def f(x, y):
        x[:2].mul_(2)
        return (x + y).sin(), x.t()

    check_parity(
        tmp_path,
        f,
        lambda: (r(4, 3), r(4, 3, seed=1)),
        expect="RuntimeWrapper",
        bad_args=lambda: (r(5, 3), r(5, 3)),
    )


def test_training_saved_tensors_and_grads(tmp_path):
    def f(x, w):
        return (x @ w).relu().sin(), (x * 2).cos()

    res = check_parity(
        tmp_path,
        f,
        lambda: (r(3, 4, rg=True), r(4, 5, rg=True, seed=1)),
        expect=["AOTDispatchAutograd", "RuntimeWrapper"],
        bad_args=lambda: (r(3, 4), r(4, 5, rg=True)),
    )
    assert "backward" in res.ir.graphs


def test_non_leaf_input_mutation_outside_graph(tmp_path):
    def f(a, b):
        a.mul_(3)
        return a + b

    def make():
        leaf = r(4, rg=True)
        return (leaf.clone(), r(4, seed=2))

    check_parity(tmp_path, f, make, expect="AOTDispatchAutograd")


def test_alias_of_intermediate_outputs(tmp_path):
    def f(x):
        y = x * 2
        return y.view(-1), y[1:], y

    check_parity(tmp_path, f, lambda: (r(3, 4, rg=True),), expect="AOTDispatchAutograd")


def test_is_input_output_with_mutation(tmp_path):
    def f(x, y):
        x.add_(1)
        return x, y * 2

    check_parity(tmp_path, f, lambda: (r(4), r(4, seed=3)))


def test_metadata_mutation_of_input(tmp_path):
    def f(x):
        x.t_()
        return x + 1

    # Dynamo graph-breaks on in-place views of inputs; the aot front-end reaches the path.
    check_parity(tmp_path, f, lambda: (r(3, 4),), frontend="aot")


def test_mutation_under_no_grad_of_leaf(tmp_path):
    def f(x, y):
        with torch.no_grad():
            x.mul_(2)
        return x * y

    check_parity(
        tmp_path, f, lambda: (r(4, rg=True), r(4, rg=True, seed=1)), expect="AOTDispatchAutograd"
    )


def test_grad_mode_change_inside_fn(tmp_path):
    def f(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        return y + x

    check_parity(tmp_path, f, lambda: (r(4, rg=True),))


def test_second_backward_without_retain_graph_raises(tmp_path):
    from pyfy_fuzz.pythonify import load, pythonify

    def f(x):
        return (x.sin() * x).sum()

    res = pythonify(f, (r(4, rg=True),), tmp_path / "p.py")
    mod = load(res.path, bind=f)
    for call in (res.compiled, mod.call):
        x = r(4, rg=True)
        out = call(x)
        out.backward(retain_graph=False)
        with pytest.raises(RuntimeError):
            out.backward()


def test_backward_twice_with_retain_graph(tmp_path):
    from pyfy_fuzz.pythonify import load, pythonify

    def f(x):
        return (x.sin() * x).sum()

    res = pythonify(f, (r(4, rg=True),), tmp_path / "p.py")
    mod = load(res.path, bind=f)
    grads = []
    for call in (res.compiled, mod.call):
        x = r(4, rg=True)
        out = call(x)
        out.backward(retain_graph=True)
        out.backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=0)


def test_module_parameters_and_buffer_mutation(tmp_path):
    def make_module():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))

    check_parity(
        tmp_path,
        None,
        lambda: (r(3, 4),),
        make_module=make_module,
        expect="AOTDispatchAutograd",
        bad_args=lambda: (r(3, 5),),
    )


def test_globals_and_closure_cells(tmp_path):
    scale = r(4, seed=9)

    def f(x):
        return x * scale + _GLOBAL_BIAS

    check_parity(tmp_path, f, lambda: (r(4, rg=True),))


_GLOBAL_BIAS = torch.arange(4.0)


def test_indices_of_inps_to_detach(tmp_path):
    def f(x, y):
        return x * 2, y.detach() + 1

    check_parity(tmp_path, f, lambda: (r(4, rg=True), r(4, seed=2).clone().requires_grad_()))


def test_dynamic_shapes_second_call_other_size(tmp_path):
    from pyfy_fuzz.pythonify import load, pythonify

    def f(x):
        return x.sin() * x.shape[0]

    res = pythonify(f, (r(5, 3),), tmp_path / "p.py", dynamic=True)
    mod = load(res.path, bind=f)
    for n in (5, 7):
        x = r(n, 3)
        torch.testing.assert_close(mod.call(x), res.compiled(x), rtol=0, atol=0)


def test_output_alias_kinds_recorded_and_replayed(tmp_path):
    class ViewFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view(-1)

        @staticmethod
        def backward(ctx, g):
            return g.view(2, 3)

    def f(x):
        y = x * 2
        return y, y.view(-1), y[0], ViewFn.apply(x * 3)

    res = check_parity(tmp_path, f, lambda: (r(2, 3, rg=True),), expect="AOTDispatchAutograd")
    kinds = {o.output_type for o in res.ir.autograd_assembly[1].output_info}
    assert {"non_alias", "alias_of_intermediate_base_is_user_output"} <= kinds


def test_autocast_disable_amp(tmp_path):
    from pyfy_fuzz.pythonify import load, pythonify

    def f(x, w):
        return x @ w

    x, w = r(4, 4, rg=True), r(4, 4, rg=True, seed=1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        res = pythonify(f, (x, w), tmp_path / "p.py")
        mod = load(res.path, bind=f)
        a, b = res.compiled(x, w), mod.call(x, w)
    assert res.ir.autograd_assembly[1].disable_amp
    assert a.dtype == b.dtype
    torch.testing.assert_close(a, b, rtol=0, atol=0)
