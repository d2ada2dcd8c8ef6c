"""Writing a file so that a reader (or a kill) never sees half of it. torch-free: the
campaign's bookkeeping, the corpus and the pythonify generator all write through it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = [
    "atomic_write",
]


def atomic_write(path: Path, data: str | bytes) -> None:
    """Temp file in the same directory, flushed and fsynced, then renamed over `path`."""
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
