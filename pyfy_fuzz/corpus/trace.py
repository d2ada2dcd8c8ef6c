"""Keep torch.compile's structured trace (``TORCH_TRACE``) with a finding, and tlparse's index.

PyTorch engineers triage a pt2 bug from the ``TORCH_TRACE`` structured log and the ``tlparse``
HTML built from it, so a corpus entry should carry both. The env var cannot be used here:
campaign workers are forked from a server that imported torch long before, and torch reads
``TORCH_TRACE`` only once, at import (``torch._logging._internal._init_logs``). So the trace is
switched on for one block of code by pointing torch's ``trace_log`` at a handler of our own:

    with structured_trace(staging / "trace"):
        result = run_case(spec, workdir=staging, ...)
    index = tlparse_index(staging / "trace")  # None without tlparse: the raw log is still there

Everything that is not plain ``logging`` is a torch internal; where one is missing, the trace
is skipped with a one-line warning that names it, and the block runs untraced.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "TLPARSE_DIR",
    "TLPARSE_NOTICE",
    "TRACE_DIR",
    "TRACE_PREFIX",
    "find_tlparse",
    "log",
    "structured_trace",
    "tlparse_index",
    "trace_logs",
]

log = logging.getLogger(__name__)

#: The file name prefix torch gives a structured trace (``LOG_PREFIX`` in torch 2.13).
TRACE_PREFIX = "dedicated_log_torch_trace_"

#: Said once per process when tlparse is missing (the raw log is kept all the same).
TLPARSE_NOTICE = (
    "tlparse not installed: TORCH_TRACE logs kept without their HTML index (pip install tlparse)"
)

#: tlparse's output folder inside the trace directory; its ``index.html`` is the entry page.
TLPARSE_DIR = "tlparse"

#: A corpus entry's trace directory.
TRACE_DIR = "trace"

# Once-per-process notices; tests reset them with monkeypatch.
_tlparse_notice_given = False
_internals_warned: set[str] = set()


def _torch_trace_internals() -> tuple[logging.Logger, Any, Any] | str:
    """torch's ``trace_log``, ``LazyTraceHandler`` and ``TorchLogsFormatter``, or the name of
    the internal that is missing (so the warning can say which one changed)."""
    try:
        import torch._logging._internal as internal
    except Exception as exc:  # an import error of any kind means: no trace, not a crash
        return f"torch._logging._internal ({type(exc).__name__}: {exc})"
    trace_log = getattr(internal, "trace_log", None)
    if not isinstance(trace_log, logging.Logger):
        return "torch._logging._internal.trace_log"
    handler_cls = getattr(internal, "LazyTraceHandler", None)
    if not (isinstance(handler_cls, type) and issubclass(handler_cls, logging.Handler)):
        return "torch._logging._internal.LazyTraceHandler"
    formatter_cls = getattr(internal, "TorchLogsFormatter", None)
    if not (isinstance(formatter_cls, type) and issubclass(formatter_cls, logging.Formatter)):
        return "torch._logging._internal.TorchLogsFormatter"
    return trace_log, handler_cls, formatter_cls


def _warn_once(message: str) -> None:
    """A degraded trace is worth one line per process, not one per case."""
    if message not in _internals_warned:
        _internals_warned.add(message)
        log.warning("%s", message)


def _make_handler(directory: Path, handler_cls: Any, formatter_cls: Any) -> logging.Handler:
    """torch's own lazy handler, so the file name and line format are exactly TORCH_TRACE's
    (tlparse parses them), and a block that compiles nothing leaves no empty file."""
    handler: logging.Handler = handler_cls(str(directory))
    handler.setFormatter(formatter_cls(trace=True))
    return handler


@contextlib.contextmanager
def structured_trace(directory: Path) -> Iterator[None]:
    """While active, torch's structured trace goes to ``directory/dedicated_log_torch_trace_*.log``
    as if the process had been started with ``TORCH_TRACE=directory``.

    The file is created on the first trace record (so possibly never). On exit the handler is
    closed and ``trace_log`` gets back exactly what it had (handlers, level, propagate,
    disabled, ``isEnabledFor``), so later cases in the same worker are not traced; this holds
    on an exception and when nested (the inner block traces to its own directory, the outer one
    resumes after it).

    ``trace_log``'s handlers are replaced, not added to, during the block: at import torch puts
    a ``LazyTraceHandler(None)`` there that removes itself from the list on its first record,
    which would make ``logging`` skip the handler after it for that record (it iterates the
    list being changed); and a case's trace should hold that case alone, even when the process
    already traces elsewhere.
    """
    internals = _torch_trace_internals()
    if isinstance(internals, str):
        _warn_once(f"structured trace skipped: {internals} not found in this torch")
        yield
        return
    trace_log, handler_cls, formatter_cls = internals
    try:
        handler = _make_handler(Path(directory), handler_cls, formatter_cls)
    except Exception as exc:  # a changed constructor: degrade rather than fail the case
        _warn_once(
            f"structured trace skipped: torch._logging._internal.LazyTraceHandler could not be "
            f"made ({type(exc).__name__}: {exc})"
        )
        yield
        return

    handlers = trace_log.handlers
    saved_handlers = list(handlers)
    saved = (trace_log.level, trace_log.propagate, trace_log.disabled)
    # torch sets isEnabledFor on the instance; restore that exactly, or its absence.
    saved_enabled = vars(trace_log).get("isEnabledFor")
    try:
        trace_log.handlers = [handler]
        trace_log.setLevel(logging.DEBUG)
        trace_log.propagate = False
        trace_log.disabled = False
        # As torch's _init_logs does: a logging.disable() elsewhere must not silence the trace.
        trace_log.isEnabledFor = lambda level: level >= trace_log.level  # type: ignore[method-assign]
        yield
    finally:
        trace_log.handlers = handlers
        handlers[:] = saved_handlers
        level, trace_log.propagate, trace_log.disabled = saved
        trace_log.setLevel(level)  # setLevel, not .level: it clears logging's enabled cache
        if saved_enabled is not None:
            vars(trace_log)["isEnabledFor"] = saved_enabled
        else:
            vars(trace_log).pop("isEnabledFor", None)
        handler.close()


def trace_logs(directory: Path) -> list[Path]:
    """The structured trace files in ``directory``, largest first (the main compile's)."""
    found = Path(directory).glob(f"{TRACE_PREFIX}*.log")
    return sorted(found, key=lambda p: (-p.stat().st_size, p.name))


def find_tlparse() -> str | None:
    """tlparse on PATH, or beside this interpreter: a venv's ``bin`` is often not on PATH when
    the fuzzer runs as ``.venv/bin/python -m pyfy_fuzz``."""
    return shutil.which("tlparse") or shutil.which("tlparse", path=str(Path(sys.executable).parent))


def _notice_tlparse_missing() -> None:
    global _tlparse_notice_given
    if not _tlparse_notice_given:
        _tlparse_notice_given = True
        log.warning("%s", TLPARSE_NOTICE)


def tlparse_index(directory: Path, *, timeout: float = 120.0) -> Path | None:
    """Run tlparse on the trace in ``directory`` into ``directory/tlparse``; its index.html.

    None when there is nothing to show: no trace file, tlparse not installed (said once per
    process through this module's logger, ``pyfy_fuzz.corpus.trace``), or tlparse failed or ran past
    ``timeout`` seconds (said each time: that one is worth a look). The raw log stays either
    way. With several trace files (a forked child traces to its own) the largest is parsed.
    """
    directory = Path(directory)
    logs = trace_logs(directory)
    if not logs:
        return None
    exe = find_tlparse()
    if exe is None:
        _notice_tlparse_missing()
        return None
    out = directory / TLPARSE_DIR
    cmd = [exe, str(logs[0]), "-o", str(out), "--overwrite", "--no-browser"]
    try:
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        log.warning("tlparse ran past %.0fs on %s; no HTML index", timeout, logs[0])
        return None
    except OSError as exc:
        log.warning("tlparse could not run (%s); no HTML index", exc)
        return None
    index = out / "index.html"
    if proc.returncode != 0 or not index.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        log.warning("tlparse exited %d on %s; no HTML index: %s", proc.returncode, logs[0], tail[0])
        return None
    return index
