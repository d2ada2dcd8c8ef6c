"""What the machine allows a campaign: the memory its workers may use together."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["memory_limit"]


def memory_limit() -> int:
    """Physical memory, or the cgroup's limit when smaller (Slurm, containers): the kernel's
    OOM killer acts on the cgroup's."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return int(total)
