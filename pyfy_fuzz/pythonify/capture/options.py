"""Options the caller's context asks of every capture inside it.

A campaign's drawn configuration (Note [Drawn configurations] in pyfy_fuzz/schema/config.py)
reaches the capture this way, whatever implementation protocol stands between the runner and
pythonify: `with capture_options(fakify_first_call=True): ...`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["OPTIONS", "capture_options", "option"]

# Each option, and its value where no caller set one.
OPTIONS: dict[str, object] = {
    "fakify_first_call": False,  # compile as DDPOptimizer does (Note [The fakified first call])
    "keep_inference_input_mutations": True,  # the AOT front-end's aot_function argument
}

_SET: ContextVar[dict[str, object] | None] = ContextVar("capture_options", default=None)


@contextlib.contextmanager
def capture_options(**options: object) -> Iterator[None]:
    """Every capture in the block runs with these options."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise ValueError(f"unknown capture options {sorted(unknown)}")
    token = _SET.set(options)
    try:
        yield
    finally:
        _SET.reset(token)


def option(name: str) -> object:
    """The caller's value of `name`, or its default (OPTIONS)."""
    return (_SET.get() or {}).get(name, OPTIONS[name])
