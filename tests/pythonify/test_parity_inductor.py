"""A representative subset of the parity suite with Inductor's output code embedded.

Inductor keeps eager numerics only approximately, so values are compared with tolerances;
aliasing, mutation and autograd facts are still compared exactly.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.two_tensor import TwoTensor

from .parity import check_parity, r

pytestmark = [pytest.mark.inductor, pytest.mark.slow]


def test_inductor_inference_mutation_and_alias(tmp_path):
    def f(x, y):
        x[:2].mul_(2)
        return (x + y).sin(), x.t()

    res = check_parity(
        tmp_path,
        f,
        lambda: (r(4, 3), r(4, 3, seed=1)),
        backend="inductor",
        bad_args=lambda: (r(5, 3), r(5, 3)),
    )
    assert res.ir.graphs["inference"].kind == "inductor"
    assert "_INDUCTOR_INFERENCE_SOURCE" in res.path.read_text()


def test_inductor_training(tmp_path):
    def f(x, w):
        return (x @ w).relu().sin(), (x * 2).cos()

    check_parity(
        tmp_path,
        f,
        lambda: (r(3, 4, rg=True), r(4, 5, rg=True, seed=1)),
        backend="inductor",
        expect="AOTDispatchAutograd",
    )


def test_inductor_synthetic_base(tmp_path):
    def f(a, b):
        a.mul_(2)
        return a + b

    def make():
        base = r(8)
        return (base[:5], base[3:])

    check_parity(tmp_path, f, make, backend="inductor", expect="AOTSyntheticBaseWrapper")


def test_inductor_subclass(tmp_path):
    def f(x):
        return x * 2 + 1

    check_parity(
        tmp_path,
        f,
        lambda: (TwoTensor(r(3, 4), r(3, 4, seed=2)),),
        backend="inductor",
        expect="AOTDispatchSubclassWrapper",
    )


def test_inductor_effects_still_happen(tmp_path, capfd):
    def f(x):
        torch.ops.aten._print("inductor effect")
        return x.cos()

    res = check_parity(tmp_path, f, lambda: (r(4),), backend="inductor", calls=1)
    # Inductor unlifts effect tokens: no EffectTokensWrapper, but the print must still run.
    assert "EffectTokensWrapper" not in res.active_wrappers
    assert capfd.readouterr().out.count("inductor effect") == 4


def test_inductor_graph_without_ops_is_rendered_from_fx(tmp_path):
    """Note [Inductor graphs without ops]: a training program that mutates a non-leaf input
    and returns a view of it has a backward with no ops; torch runs that FX graph as it is, and
    the file renders it (it was refused for having no output code)."""

    def f(x):
        x.add_(1)
        return x.view(-1)

    res = check_parity(tmp_path, f, lambda: (r(2, 3, rg=True) * 1,), backend="inductor")
    graphs = res.ir.graphs
    assert graphs["forward"].kind == "inductor"
    assert graphs["backward"].kind == "fx"
    assert "Inductor: no ops, so no kernel, rendered from FX" in res.path.read_text()
