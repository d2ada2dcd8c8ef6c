"""Work Dynamo does in every compile only for its logs and metrics, left out for a case.

Note [Work only for logs]
Two things every Dynamo compile does feed nothing but a log line or a compilation metric, and
together they were the largest item of a case's time that tests nothing (issue 36's
throughput profile, BENCHMARKS.md "Issue 36: throughput"):
- After building a frame's guards, `CheckFunctionManager` runs them once more under
  `profile_guard_manager`, which first flushes the CPU caches by writing a buffer larger than
  them, to log the guards' latency (`guard_latency_us`; torch/_dynamo/guards.py: "This cache
  flush is expensive"). 20-28 ms a compile on the 2-core machine, and a case compiles three
  times or more (the capture, the stock compile, each recompile of a variant or sequence
  call, the warm compile). The guards' own check on the frame (`guard_manager.check`, the
  "Guard failed on the same frame it was created" assertion) runs before it and is kept:
  only the profile returns 0.0, so the metric reads 0.
- Each FX node Dynamo creates from a new source line names the function around that line for
  a `trace_call` debug line (`get_line_of_code_header` in output_graph.py), and naming it
  tokenizes the whole source file once per file (torch/_dynamo/funcname_cache.py). Every
  case's program is a new file of ~480 lines (its prelude): ~27 ms a case, for a string only
  a debug log would print. While neither log that prints it is enabled (TORCH_LOGS
  trace_call / trace_source), the name is None; enabled, it is torch's.
Nothing a subject returns, raises, records or writes depends on either, so the subjects and
the oracles see the same compile (tests/test_log_only.py). The patches hold for the
case's compiles only (`log_only_skipped` is entered around them by runner.py) and are undone
after it; a repro.py, which runs plain torch, does the work as torch does.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

__all__ = ["log_only_skipped"]


def _no_guard_profile(*args: Any) -> float:
    """`profile_guard_manager`'s latency, not measured (Note [Work only for logs])."""
    return 0.0


@contextlib.contextmanager
def log_only_skipped() -> Iterator[None]:
    """Note [Work only for logs]: for the compiles inside, no guard latency profile and no
    function names for debug logs that are off. A torch without either hook is left as it is."""
    import torch._dynamo.guards as guards
    import torch._dynamo.output_graph as output_graph
    import torch._dynamo.symbolic_convert as convert

    undo: list[tuple[Any, str, Any]] = []
    if hasattr(guards, "profile_guard_manager"):
        undo.append((guards, "profile_guard_manager", guards.profile_guard_manager))
        setattr(guards, "profile_guard_manager", _no_guard_profile)  # noqa: B010
    named = getattr(convert, "get_funcname", None)
    if named is not None:
        # the debug logs that print the name (artifact loggers are one per module)
        logs = [
            getattr(module, name)
            for module, name in (
                (convert, "trace_call_log"),
                (convert, "trace_source_log"),
                (output_graph, "trace_call_log"),
            )
            if hasattr(module, name)
        ]

        def funcname(filename: str, lineno: int) -> str | None:
            if any(log.isEnabledFor(logging.DEBUG) for log in logs):
                return named(filename, lineno)  # type: ignore[no-any-return]
            return None

        undo.append((convert, "get_funcname", named))
        setattr(convert, "get_funcname", funcname)  # noqa: B010
    try:
        yield
    finally:
        for module, name, original in reversed(undo):
            setattr(module, name, original)
