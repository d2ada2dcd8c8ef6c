"""Run each corpus entry's repro.py alone, several at a time, and say how each exited.

    python3 benchmarks/run_repros.py [--jobs 8] [--timeout 120] [--skip-known corpus/] DIR...

Each DIR is a corpus (its entries) or an entry. A line per entry: its name, the exit code
(Note [A repro's exit codes] in pyfy_fuzz/corpus/_repro_head.py: 1 the bug, 0 fixed, 2 another
error, 3 the reference raises; "timeout"), the seconds and the last line it printed. Plain torch
only: the
scripts never import pyfy-fuzz, so this runs where the GPU campaign ran, with nothing but
python3 and torch. `--skip-known` leaves out entries that a checked-in corpus already has.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def entries(paths: list[Path], known: set[str]) -> list[Path]:
    """The entry directories under `paths` (an entry itself, or a corpus of them)."""
    found = []
    for p in paths:
        dirs = [p] if (p / "repro.py").is_file() else sorted(p.iterdir()) if p.is_dir() else []
        found += [d for d in dirs if (d / "repro.py").is_file() and d.name not in known]
    return found


def run(entry: Path, timeout: float) -> str:
    """One repro.py alone, in its directory (it loads pythonified.py from there)."""
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "repro.py"],
            cwd=entry,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
        code, out = str(done.returncode), (done.stdout + done.stderr).strip()
    except subprocess.TimeoutExpired:
        code, out = "timeout", ""
    last = out.splitlines()[-1][:200] if out else ""
    return f"{entry.parent.name}/{entry.name} exit={code} {time.monotonic() - start:.1f}s {last}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dirs", type=Path, nargs="+")
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--skip-known", type=Path, default=None)
    args = p.parse_args(argv)
    known = {d.name for d in args.skip_known.iterdir()} if args.skip_known else set()
    todo = entries(args.dirs, known)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for line in pool.map(lambda e: run(e, args.timeout), todo):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
