"""Hooks (seed 003; Note [Hooks on inputs] in capture/hooks.py): parity with torch.compile.

Hooks the compiled function registers on its inputs are replayed after the graph, as Dynamo
does; hooks on intermediates are in the backward graph; hooks the caller registered before
the call (on inputs, on a non-leaf input's grad_fn) are autograd's. Every test compares the
file with torch.compile and eager on gradients and on the order in which hooks ran.
"""

from __future__ import annotations

import pytest
import torch

from pyfy_fuzz.pythonify.paths import wrapper_paths

from .parity import check_parity, r

LOG: list[str] = []


def double(g: torch.Tensor) -> torch.Tensor:
    return g * 2


def log_a(g: torch.Tensor) -> None:
    LOG.append(f"a {g.shape}")


def log_b(g: torch.Tensor) -> None:
    LOG.append(f"b {g.shape}")


def log_acc(p: torch.Tensor) -> None:
    LOG.append(f"acc {p.grad.shape}")


def test_input_hook_returning_a_modified_grad(tmp_path):
    def f(x, y):
        x.register_hook(double)
        return (x * y).sin()

    res = check_parity(tmp_path, f, lambda: (r(4, rg=True), r(4, rg=True, seed=1)))
    assert "L['x'].register_hook(G['double'])" in res.path.read_text()
    assert "autograd/training" in wrapper_paths(res.ir)


def test_hooks_on_a_non_leaf_input_keep_their_order(tmp_path):
    """Two observing hooks on one input, then one on another: each subject's log must be
    eager's (three subjects per call, so the log is eager's sequence three times)."""

    def f(x, y):
        x.register_hook(log_a)
        x.register_hook(log_b)
        y.register_hook(log_a)
        return x.cos() * y

    LOG.clear()
    check_parity(tmp_path, f, lambda: (r(3, rg=True) * 1, r(3, rg=True, seed=2)), calls=1)
    # eager, torch.compile, the file: the same three hooks in the same order
    assert len(LOG) == 9 and LOG[:3] == LOG[3:6] == LOG[6:9], LOG
    assert LOG[:3].count("a torch.Size([3])") == 2 and "b torch.Size([3])" in LOG[:3], LOG


def test_post_accumulate_grad_hook_on_a_leaf_input(tmp_path):
    def f(x):
        x.register_post_accumulate_grad_hook(log_acc)
        return x.exp()

    LOG.clear()
    res = check_parity(tmp_path, f, lambda: (r(2, 3, rg=True),), calls=1)
    assert "register_post_accumulate_grad_hook(G['log_acc'])" in res.path.read_text()
    assert LOG == ["acc torch.Size([2, 3])"] * 3, LOG


def test_hook_on_an_intermediate_is_in_the_backward_graph(tmp_path):
    def f(x):
        y = x * 3
        y.register_hook(double)
        return y.sin()

    res = check_parity(tmp_path, f, lambda: (r(4, rg=True),))
    assert "register_hook" not in res.path.read_text().split("def call(")[1]


def test_grad_fn_hooks_registered_by_the_caller(tmp_path):
    """A non-leaf input whose grad_fn carries a hook and a prehook, registered before the
    call: autograd runs them for the file as for torch.compile, in eager's order."""

    def f(x):
        return (x * x).sum(0)

    def args():
        x = r(3, 2, rg=True) * 2
        x.grad_fn.register_prehook(lambda go: LOG.append("pre") and None)
        x.grad_fn.register_hook(lambda gi, go: LOG.append("post") and None)
        return (x,)

    LOG.clear()
    check_parity(tmp_path, f, args, calls=1)
    assert LOG == ["pre", "post"] * 3, LOG


class _Ident(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(r(3, seed=5))

    def forward(self, x):
        return x, x * self.w


def _module_hook(module, grad_input, grad_output):
    LOG.append(f"full {len(grad_input)} {len(grad_output)}")
    return tuple(None if g is None else g * 3 for g in grad_input)


def _module_pre_hook(module, grad_output):
    LOG.append("pre")
    return None


def test_module_full_backward_hook_and_pre_hook(tmp_path):
    """Found by the aliasing oracle when the file ran forward alone: a full backward hook wraps
    the module's inputs and outputs in BackwardHookFunction views, so torch.compile returns a
    view of an input the module returns. The file now runs the module's own __call__ around
    the graph, as torch.compile does: same aliasing, a hook that changes grad_input, and the
    hooks' order."""

    def make():
        m = _Ident()
        m.register_full_backward_pre_hook(_module_pre_hook)
        m.register_full_backward_hook(_module_hook)
        return m

    LOG.clear()
    res = check_parity(tmp_path, None, lambda: (r(3, rg=True),), make_module=make, calls=2)
    assert "return _call_module(_forward, args)" in res.path.read_text()
    assert LOG == ["pre", "full 1 2"] * 6, LOG


def lambda_hook(x, y):
    x.register_hook(lambda g: g * 2)
    return (x * y).sin()


def closure_hook(x, y, scale):
    x.register_hook(lambda g: g * scale + y.detach())
    return (x * y).sin()


def nested_def_hook(x, y):
    def clip(g):
        LOG.append(f"clip {g.shape}")
        return torch.clamp(g, -0.1, 0.1)

    y.register_hook(clip)
    x.register_post_accumulate_grad_hook(lambda p: LOG.append("acc"))
    return (x * y).cos()


# Hooks written as lambdas and closures, the most common way (Note [Hooks on inputs]): the
# file rebuilds each from the function's source at every call, over its globals and the
# current values of what it closes over.
DEFINED = [
    (lambda_hook, lambda: (r(4, rg=True), r(4, rg=True, seed=1))),
    (closure_hook, lambda: (r(4, rg=True), r(4, rg=True, seed=1), 3.0)),
    (nested_def_hook, lambda: (r(4, rg=True), r(4, rg=True, seed=1))),
]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize(("fn", "args"), DEFINED, ids=[f.__name__ for f, _ in DEFINED])
def test_hooks_the_function_defines_are_rebuilt_from_its_source(tmp_path, fn, args, backend):
    LOG.clear()
    res = check_parity(tmp_path, fn, args, backend=backend)
    text = res.path.read_text()
    assert "def _hook_0(" in text and "_over_globals(_hook_0, G)(" in text
    if fn is nested_def_hook:  # each subject ran both hooks on each of 2 calls
        assert LOG.count("acc") == 3 * 2
        assert LOG.count("clip torch.Size([4])") == 3 * 2
