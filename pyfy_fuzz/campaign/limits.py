"""What the machine allows a campaign: the memory its workers may use together, each worker's
share of it and of the cores, and what a process holds now (torch-free: the pool reads it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WorkerShare", "memory_limit", "rss_bytes", "worker_share"]


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


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size from /proc (0 where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(frozen=True)
class WorkerShare:
    """One worker's share of the machine, the same for every worker of a campaign."""

    rss_soft_bytes: int  # past this after a case, the worker leaves (recycled)
    rss_hard_bytes: int  # past this at any time, the pool kills it (a memory death)
    threads: int  # torch's intra-op threads


def worker_share(workers: int) -> WorkerShare:
    """Memory and cores split evenly between `workers`: a worker is recycled at half its
    memory share (3 GiB at most) and killed at twice that (80% of its share at most)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    per_worker = memory_limit() // max(1, workers)
    soft = int(min(3 << 30, 0.5 * per_worker))
    hard = int(min(2 * soft, 0.8 * per_worker))
    return WorkerShare(soft, hard, max(1, cores // max(1, workers)))
