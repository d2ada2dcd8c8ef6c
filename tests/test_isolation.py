"""The tests' own isolation (conftest.py): what one test's compile leaves broken in the
process is undone before the next, so the suite passes in any order."""

from __future__ import annotations

import pytest
import torch

from .conftest import _undo_a_broken_process


def test_leaked_python_dispatch_keys_are_undone() -> None:
    """The state PB1's compile error leaves (reports/triage-2026-11-27-issue28.md): the Python
    dispatch keys included with no dispatcher set, so every op fails, planted here."""
    key = torch._C.DispatchKey.PythonDispatcher
    torch._C._dispatch_tls_set_dispatch_key_included(key, True)
    try:
        with pytest.raises(RuntimeError, match="PythonDispatcherTLS was not set"):
            torch.randn(4).resize_(2)
    finally:
        _undo_a_broken_process()
    assert not torch._C._dispatch_tls_is_dispatch_key_included(key)
    assert torch.randn(4).resize_(2).shape == (2,)


def test_a_leaked_inference_mode_is_undone() -> None:
    from . import conftest

    leak = torch.inference_mode(True)
    leak.__enter__()  # never left, as a compile error leaves it
    assert torch.is_inference_mode_enabled()
    _undo_a_broken_process()
    try:
        assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled()
    finally:  # leave both, innermost first, so the next test starts as this one did
        conftest._HELD.pop().__exit__(None, None, None)  # type: ignore[attr-defined]
        leak.__exit__(None, None, None)
    assert not torch.is_inference_mode_enabled()
