"""Saved-tensor hooks that are GraphModules: the file runs its graphs, which inlined them, with
the ambient hooks off, and guards on them (Note [Saved-tensor hooks inlined] in
pyfy_fuzz/pythonify/wrappers/runtime.py)."""

from __future__ import annotations

import pytest
import torch
import torch.fx

from pyfy_fuzz.pythonify import PythonifyGuardError, load, pythonify
from pyfy_fuzz.pythonify.paths import wrapper_paths

from .parity import r

CALLS: list[str] = []  # what the pack hook's graph ran as a plain hook


@torch.fx.wrap
def _seen(t: torch.Tensor) -> torch.Tensor:
    """A call the pack graph keeps (fx.wrap): it counts where the module runs as a plain hook,
    and is traced away, into torch ops only, where AOTAutograd inlines it."""
    CALLS.append("pack")
    return t


def _pack(t: torch.Tensor) -> torch.Tensor:
    return _seen(t).clone()


def _unpack(t: torch.Tensor) -> torch.Tensor:
    return t


def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x.sin() * w).cos().sum()


@pytest.fixture
def hooks() -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    CALLS.clear()
    return torch.fx.symbolic_trace(_pack), torch.fx.symbolic_trace(_unpack)


def test_the_file_runs_inlined_hooks_with_the_ambient_ones_off(tmp_path, hooks) -> None:
    x, w = r(3, 4, rg=True), r(3, 4, rg=True, seed=1)
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        res = pythonify(f, (x, w), tmp_path / "p.py")
        mod = load(res.path, bind=f)
        assert res.ir.autograd_assembly[1].disable_saved_hooks
        assert "runtime/saved_hooks_inlined" in wrapper_paths(res.ir)
        CALLS.clear()
        out = mod.call(x, w)
        assert CALLS == []  # the graph packed: a plain hook on top would have packed again
        out.backward()
    grads = x.grad, w.grad
    x.grad = w.grad = None
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        f(x, w).backward()  # eager: the modules are plain hooks, on every saved tensor
    assert CALLS
    torch.testing.assert_close(grads, (x.grad, w.grad))


def test_the_file_guards_on_the_hooks_it_inlined(tmp_path, hooks) -> None:
    x, w = r(3, 4, rg=True), r(3, 4, rg=True, seed=1)
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        res = pythonify(f, (x, w), tmp_path / "p.py")
    mod = load(res.path, bind=f)
    with pytest.raises(PythonifyGuardError, match="saved-tensor hooks"):
        mod.call(x, w)  # Dynamo recompiles here: these graphs pack what nothing unpacks
    plain = pythonify(f, (x, w), tmp_path / "q.py")
    assert not plain.ir.autograd_assembly[1].disable_saved_hooks
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        with pytest.raises(PythonifyGuardError, match="saved-tensor hooks"):
            load(plain.path, bind=f).call(x, w)
