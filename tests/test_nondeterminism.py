"""Note [Nondeterminism on the GPU]: what the second eager run flags, tested without a GPU
(the detector reads torch's warnings; the real CUDA op is in tests/test_cuda.py)."""

from __future__ import annotations

import warnings

import torch

from pyfy_fuzz.case.ground_truth import NONDETERMINISTIC, nondeterministic_ops


def test_on_cuda_torchs_warning_for_an_op_flags_the_program() -> None:
    message = f"index_add_cuda_ {NONDETERMINISTIC}. You can turn off determinism ..."
    with nondeterministic_ops("cuda") as flagged:
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()  # never raises
        warnings.warn(message, UserWarning, stacklevel=1)
        warnings.warn("an unrelated warning", UserWarning, stacklevel=1)
    assert flagged == [message]
    assert not torch.are_deterministic_algorithms_enabled()  # put back


def test_on_cpu_nothing_changes() -> None:
    with nondeterministic_ops("cpu") as flagged:
        assert not torch.are_deterministic_algorithms_enabled()
        warnings.warn(f"x {NONDETERMINISTIC}", UserWarning, stacklevel=1)
    assert flagged == []


def test_a_setting_the_caller_made_is_kept() -> None:
    torch.use_deterministic_algorithms(True)
    try:
        with nondeterministic_ops("cuda"):
            pass
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


def test_the_settings_come_back_when_the_run_raises() -> None:
    try:
        with nondeterministic_ops("cuda"):
            raise ValueError("the program raised")
    except ValueError:
        pass
    assert not torch.are_deterministic_algorithms_enabled()
    assert not torch.is_deterministic_algorithms_warn_only_enabled()
