"""Shared test setup: every test starts and ends with a clean compile state."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

with warnings.catch_warnings():
    # The CPU wheel warns on import when numpy is absent; nothing here needs numpy.
    warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)
    import torch
    import torch._dynamo
    import torch._functorch.config


# A compile that raises can leave dispatch keys included in the thread's dispatch state (the
# Python ones: PythonDispatcher, Python, PythonTLSSnapshot), or inference mode on (PB1 in
# reports/triage-2026-11-27-issue28.md): every later op of the process then fails
# ("PythonDispatcherTLS was not set"). A campaign finds such a case (a process-broken
# finding); the tests only undo it -- every key's included/excluded state back to what the
# session started with -- so that the program one test compiles in-process cannot fail
# another test's eager run.
def _key_states() -> dict[torch._C.DispatchKey, tuple[bool, bool]]:
    out = {}
    for name in dir(torch._C.DispatchKey):
        key = getattr(torch._C.DispatchKey, name)
        if isinstance(key, torch._C.DispatchKey):
            try:
                out[key] = (
                    torch._C._dispatch_tls_is_dispatch_key_included(key),
                    torch._C._dispatch_tls_is_dispatch_key_excluded(key),
                )
            except RuntimeError:  # an alias key, not in any thread-local set
                continue
    return out


_KEYS_AT_START = _key_states()
_HELD: list[object] = []  # inference_mode(False) contexts entered to undo a leaked mode


def _undo_a_broken_process() -> None:
    for key, (included, excluded) in _key_states().items():
        was_included, was_excluded = _KEYS_AT_START.get(key, (included, excluded))
        if included != was_included:
            torch._C._dispatch_tls_set_dispatch_key_included(key, was_included)
        if excluded != was_excluded:
            torch._C._dispatch_tls_set_dispatch_key_excluded(key, was_excluded)
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode

    while _get_current_dispatch_mode_stack():  # a mode a failed trace never left
        _pop_mode()
    while _get_current_function_mode_stack():
        torch._C._pop_torch_function_stack()
    if torch.is_inference_mode_enabled():
        ctx = torch.inference_mode(False)
        ctx.__enter__()
        _HELD.append(ctx)


@pytest.fixture(autouse=True)
def _isolate_compile_state() -> Iterator[None]:
    """Reset Dynamo around each test and undo grad-mode and config changes it leaked.

    Tests change configs with ``torch._dynamo.config.patch(...)`` (or the functorch one); the
    restore here is a safety net, so that one test's leak cannot change another's outcome.
    """
    configs = (torch._dynamo.config, torch._functorch.config)
    saved = [config.get_config_copy() for config in configs]
    grad_enabled = torch.is_grad_enabled()
    torch._dynamo.reset()
    yield
    _undo_a_broken_process()
    torch._dynamo.reset()
    torch.set_grad_enabled(grad_enabled)
    for config, before in zip(configs, saved, strict=True):
        after = config.get_config_copy()
        for key, value in before.items():
            if after[key] != value:  # set only what changed: deprecated keys warn when set
                setattr(config, key, value)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip_cuda = pytest.mark.skip(reason="needs a GPU (torch.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip_cuda)
