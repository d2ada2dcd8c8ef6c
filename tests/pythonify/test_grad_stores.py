"""A `Tensor.backward()` Dynamo traces: the graph makes the inputs' new `.grad` and Dynamo
stores them after it; the file stores them too (Note [Gradients the graph stores] in
pyfy_fuzz/pythonify/capture/grads.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pyfy_fuzz.pythonify import PythonifyGuardError, load, pythonify
from pyfy_fuzz.pythonify.capture.grads import grad_snapshot, grad_stores
from pyfy_fuzz.pythonify.errors import PythonifyUnsupported
from pyfy_fuzz.pythonify.meta import GradStore
from pyfy_fuzz.pythonify.paths import wrapper_paths

from .parity import r


def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x.sin() * w
    y.sum().backward(retain_graph=True)
    return y * 2


def _args() -> tuple[torch.Tensor, torch.Tensor]:
    return r(2, 3, rg=True), r(3, rg=True, seed=1)


def _run(fn, args: tuple[torch.Tensor, torch.Tensor]) -> list[torch.Tensor]:
    out = fn(*args)
    inner = [a.grad.clone() for a in args]  # the backward inside, before the caller's
    out.sum().backward()
    return [out.detach(), *inner, *(a.grad for a in args)]


@pytest.fixture(autouse=True)
def _traced() -> None:
    torch._dynamo.config.trace_autograd_ops = True  # the conftest puts the config back


def test_the_file_stores_the_gradients_the_graph_made(tmp_path: Path) -> None:
    res = pythonify(f, _args(), tmp_path / "p.py")
    assert [(g.tensor, g.output is not None) for g in res.ir.entry.grad_stores] == [
        ("L['x']", True),
        ("L['w']", True),
    ]
    assert "graph/grad_store" in wrapper_paths(res.ir)
    mod = load(res.path, bind=f)
    got, want = _run(mod.call, _args()), _run(f, _args())
    for g, e in zip(got, want, strict=True):
        torch.testing.assert_close(g, e)


def test_a_gradient_already_there_is_a_guard_the_file_holds(tmp_path: Path) -> None:
    """Dynamo guards on `.grad` being None (it compiled a store, not an accumulation into an
    input): a call whose argument has one is refused, never accumulated wrongly."""
    res = pythonify(f, _args(), tmp_path / "p.py")
    mod = load(res.path, bind=f)
    x, w = _args()
    x.grad = torch.ones_like(x)
    with pytest.raises(PythonifyGuardError):
        mod.call(x, w)


def test_no_store_where_the_call_leaves_every_gradient() -> None:
    x, w = _args()
    before = grad_snapshot(f, (x, w))
    assert grad_stores(before, {id(x): "L['x']", id(w): "L['w']"}, []) == []


def test_a_new_gradient_is_found_among_the_outputs_by_identity() -> None:
    x, w = _args()
    before = grad_snapshot(f, (x, w))
    g = torch.zeros_like(x)
    x.grad = g
    outputs = [torch.zeros_like(x), g]  # equal values, one identity
    assert grad_stores(before, {id(x): "L['x']"}, outputs) == [GradStore("L['x']", 1)]


def test_a_cleared_gradient_is_stored_as_none() -> None:
    x, w = _args()
    x.grad = torch.ones_like(x)
    before = grad_snapshot(f, (x, w))
    x.grad = None
    assert grad_stores(before, {id(x): "L['x']"}, []) == [GradStore("L['x']", None)]


@pytest.mark.parametrize("sourced", [True, False])
def test_a_store_the_file_cannot_make_is_refused(sourced: bool) -> None:
    """A gradient that is no compiled output, or a tensor without a source: dropping the
    store would lose a gradient silently."""
    x, w = _args()
    before = grad_snapshot(f, (x, w))
    x.grad = torch.zeros_like(x)
    sources = {id(x): "L['x']"} if sourced else {}
    with pytest.raises(PythonifyUnsupported, match="grad"):
        grad_stores(before, sources, [torch.zeros_like(x)])


def test_a_module_s_parameter_gets_its_store(tmp_path: Path) -> None:
    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(r(3, seed=2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x.sin() * self.w
            y.sum().backward(retain_graph=True)
            return y * 2

    m = M()
    res = pythonify(m, (r(2, 3, rg=True),), tmp_path / "m.py")
    assert any("'w'" in g.tensor for g in res.ir.entry.grad_stores), res.ir.entry.grad_stores
    assert m.w.grad is None  # the capture's call ran on copies of the arguments only
    mod = load(res.path, bind=m)
    x = r(2, 3, rg=True)
    mod.call(x)
    got = m.w.grad.clone()
    m.w.grad = None
    M.forward(m, r(2, 3, rg=True))
    torch.testing.assert_close(got, m.w.grad)
