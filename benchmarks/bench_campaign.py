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

from pyfy_fuzz.campaign.procstat import machine_busy, sample_until_exit


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
    busy0, total0 = machine_busy()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tree_samples = sample_until_exit(proc)
    wall = time.monotonic() - t0
    busy1, total1 = machine_busy()
    seen_cpu: dict[int, float] = {}
    samples = []
    for ts in tree_samples:
        for info in ts.procs.values():
            seen_cpu[info.pid] = max(seen_cpu.get(info.pid, 0.0), info.cpu_s)
        # workers: forked from the campaign's fork server (depth 2)
        workers = sorted(info.rss for info in ts.procs.values() if info.depth >= 2)
        samples.append({"t": ts.t, "rss": workers})
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
