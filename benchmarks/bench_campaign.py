"""Campaign throughput: cases/min, CPU utilisation of the machine and of the campaign's process
tree, and worker memory over a real `pyfy-fuzz run`.

    python benchmarks/bench_campaign.py --budget 5m --out /tmp/bench-campaign.json

Runs the CLI as a subprocess on a fresh corpus (so the run finds and shrinks as a first run
does; pass --corpus to measure a run against an existing corpus, where little is new), samples
/proc every second, and prints a table. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies over all CPUs since boot."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def _tree(root: int) -> dict[int, tuple[float, int]]:
    """pid -> (cpu seconds, rss bytes) for `root` and all its descendants."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[float, int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
            rest = stat[stat.rindex(")") + 2 :].split()
            ppid = int(rest[1])
            cpu = (float(rest[11]) + float(rest[12])) / TICK
            rss = int(rest[21]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(p.name))
        info[int(p.name)] = (cpu, rss)
    out: dict[int, tuple[float, int]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in info:
            out[pid] = info[pid]
        todo.extend(children.get(pid, []))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", default="5m")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--backend", default="aot_eager")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    corpus = args.corpus or Path(tempfile.mkdtemp(prefix="bench-campaign-")) / "corpus"
    summary_path = corpus.parent / "summary.json"
    cmd = [sys.executable, "-m", "pyfy_fuzz", "run", "--budget", args.budget]
    cmd += ["--corpus", str(corpus), "--json", str(summary_path), "--progress", "plain"]
    cmd += ["--backend", args.backend]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    busy0, total0 = _machine_busy()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = []
    seen_cpu: dict[int, float] = {}
    while proc.poll() is None:
        time.sleep(1.0)
        tree = _tree(proc.pid)
        for pid, (cpu, _) in tree.items():
            seen_cpu[pid] = max(seen_cpu.get(pid, 0.0), cpu)
        workers = sorted(rss for pid, (_, rss) in tree.items() if pid != proc.pid)
        samples.append({"t": time.monotonic() - t0, "rss": workers})
    wall = time.monotonic() - t0
    busy1, total1 = _machine_busy()
    summary = json.loads(summary_path.read_text())
    cores = len(os.sched_getaffinity(0))
    tree_cpu = sum(seen_cpu.values())
    warm = [s for s in samples if s["t"] > 60]
    peak = [max(s["rss"]) for s in samples if s["rss"]]
    result = {
        "budget": args.budget,
        "wall_s": round(wall, 1),
        "cases": summary["cases"],
        "shrink_cases": summary["shrink_cases"],
        "cases_per_min": round(60 * summary["cases"] / summary["elapsed_s"], 1),
        "explore_cases_per_min": round(
            60 * (summary["cases"] - summary["shrink_cases"]) / summary["elapsed_s"], 1
        ),
        "new_findings": len(summary["findings"]),
        "machine_cpu_util": round((busy1 - busy0) / (total1 - total0), 3),
        "campaign_cpu_s": round(tree_cpu, 1),
        "campaign_cores_busy": round(tree_cpu / wall, 2),
        "cores": cores,
        "worker_rss_mib_peak": round(max(peak) / 2**20) if peak else None,
        "worker_rss_mib_after_1min": (
            [round(max(s["rss"]) / 2**20) for s in warm[:: max(1, len(warm) // 5)]] if warm else []
        ),
        "deaths": summary["deaths"],
        "recycled": summary["recycled"],
        "torch": summary["torch"],
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for k, v in result.items():
        print(f"{k:28} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
