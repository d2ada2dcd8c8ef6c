"""CPU time and resident memory of a process tree, read from /proc (Linux only; torch-free).

The benchmarks watch a real `pyfy-fuzz run` from outside, as an operator would: the campaign's
own counters cannot see what the kernel charges to each process (a leak, a worker that grows
until it is recycled), so they sample /proc once a second instead.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PAGE",
    "ProcInfo",
    "TICK",
    "TreeSample",
    "machine",
    "machine_busy",
    "process_tree",
    "sample_until_exit",
]

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcInfo:
    """One process of a tree. `depth` counts from the root: a campaign is 0, its fork server 1,
    the workers forked from that server 2."""

    pid: int
    ppid: int
    depth: int
    cpu_s: float  # user + system time so far
    rss: int  # bytes


@dataclass(frozen=True)
class TreeSample:
    t: float  # seconds since sampling started
    procs: dict[int, ProcInfo]


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies over all CPUs since boot; two readings give the utilisation."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def process_tree(root: int) -> dict[int, ProcInfo]:
    """`root` and all its descendants (a process that exits while /proc is read is skipped)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, float, int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
            rest = stat[stat.rindex(")") + 2 :].split()  # the name may contain spaces
            ppid = int(rest[1])
            cpu = (float(rest[11]) + float(rest[12])) / TICK
            rss = int(rest[21]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(p.name))
        stats[int(p.name)] = (ppid, cpu, rss)
    out: dict[int, ProcInfo] = {}
    todo = [(root, 0)]
    while todo:
        pid, depth = todo.pop()
        if pid in stats:
            ppid, cpu, rss = stats[pid]
            out[pid] = ProcInfo(pid, ppid, depth, cpu, rss)
        todo.extend((c, depth + 1) for c in children.get(pid, []))
    return out


def sample_until_exit(proc: subprocess.Popen[bytes], interval: float = 1.0) -> list[TreeSample]:
    """Sample `proc`'s tree every `interval` seconds until it exits."""
    t0 = time.monotonic()
    samples = []
    while proc.poll() is None:
        time.sleep(interval)
        samples.append(TreeSample(time.monotonic() - t0, process_tree(proc.pid)))
    return samples


def machine() -> dict[str, object]:
    """Cores usable by this process, physical memory and the CPU model (GPU: the caller's)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": cores, "memory_gib": round(memory, 1), "cpu_model": model}
