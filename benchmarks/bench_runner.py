"""The runner's own cost per case, next to the bare torch work it wraps, in this process.

    .venv/bin/python benchmarks/bench_runner.py [--examples 60] [--backend aot_eager] [--seed 0]

For a fixed, seeded set of programs (all families mixed, as `programs()` draws them), times
per case `run_case(spec)` against `pyfy_fuzz.bench.overhead.bare` (the least torch work the same
comparison needs), each path twice, alternating, the faster run counting; prints the means,
the ratio and run_case's own breakdown. `pyfy-fuzz bench` measures the same on worker
processes, over its per-family program set; this script keeps the single-process view (with
torch's default threads), handy under a profiler.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import torch

from generators import programs
from pyfy_fuzz.bench.measure import draw
from pyfy_fuzz.bench.overhead import overhead_one, summarize_overhead
from pyfy_fuzz.bench.tables import overhead_table


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=60)
    ap.add_argument("--backend", default="aot_eager")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    specs = draw(programs(), args.examples, args.seed)
    with tempfile.TemporaryDirectory() as d:
        samples = [s for s in (overhead_one(x, args.backend, Path(d)) for x in specs) if s]
    print(f"torch {torch.__version__}")
    print(overhead_table(summarize_overhead(samples, len(specs), args.backend)))


if __name__ == "__main__":
    main()
