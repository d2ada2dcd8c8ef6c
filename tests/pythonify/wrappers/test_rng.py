"""FunctionalizedRngRuntimeWrapper's emitted code (wrappers/rng.py)."""

from __future__ import annotations

import torch

from pyfy_fuzz.pythonify.ir import FunctionalizedRngRuntimeWrapperNode
from pyfy_fuzz.pythonify.wrappers import rng

from .helpers import INNER, exec_helper


def test_functionalized_rng_helper_threads_seed_offset_and_advances(tmp_path):
    """CUDA-only at runtime: the helper is exercised with the CUDA RNG calls stubbed."""
    src = rng.emit(FunctionalizedRngRuntimeWrapperNode(num_forward_returns=2), INNER)
    seen, offsets = [], []

    def inner(args):
        seen.append(list(args))
        return [torch.tensor(1.0), torch.tensor(2.0), torch.tensor(104), torch.tensor(3.0)]

    ns = exec_helper(
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
    ns = exec_helper(
        rng.emit(node, INNER),
        inner=lambda args: [torch.tensor(1.0), torch.tensor(9)],
        _cuda_rng_state_as_tuple=lambda: (torch.tensor(0), torch.tensor(0)),
        _cuda_set_rng_offset=lambda o: None,
    )
    assert len(ns["_functionalized_rng_wrapper"]([])) == 2
