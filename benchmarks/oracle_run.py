"""A time-budgeted, in-process run of the runner + oracles over generated programs.

Not the campaign (no worker isolation, no shrinking, no corpus; the spec of the case running
is kept in <out>.current.json, so one that kills the interpreter is not lost): the
measurement the oracle issue asks for -- which findings a stock torch produces, how often
programs are discarded or unsupported, and what the runner costs per case. Results are written
atomically to --out at least every 5 s, at once for an error or a new signature, and at the end.

    python benchmarks/oracle_run.py --minutes 30 --backend aot_eager --out /tmp/oracle-run.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import torch  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from generators import programs, render  # noqa: E402
from pyfy_fuzz.case.runner import run_case  # noqa: E402


class _Stop(Exception):
    pass


def _timeout(signum, frame):  # type: ignore[no-untyped-def]
    raise TimeoutError("case exceeded its time limit")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--backend", default="aot_eager")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case-timeout", type=int, default=60)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    deadline = time.monotonic() + 60 * args.minutes
    summary: dict = {
        "torch": torch.__version__,
        "backend": args.backend,
        "minutes": args.minutes,
        "cases": 0,
        "status": collections.Counter(),
        "unsupported": collections.Counter(),
        "families": collections.Counter(),
        "findings": {},
        "timings": collections.Counter(),
        "excused": collections.Counter(),
        "errors": [],
    }
    signal.signal(signal.SIGALRM, _timeout)
    t0 = time.monotonic()

    last_save = [0.0]

    def save(force: bool = True) -> None:
        # Dumping the whole summary costs ~13 ms late in a 30-minute run: every 5 s is enough
        # for counters; errors and new signatures are written at once.
        if not force and time.monotonic() - last_save[0] < 5.0:
            return
        last_save[0] = time.monotonic()
        summary["elapsed_s"] = time.monotonic() - t0
        fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=".oracle-run.")
        with os.fdopen(fd, "w") as f:
            json.dump(summary, f, indent=1, default=str)
        os.replace(tmp, args.out)

    @settings(
        max_examples=10**7,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(programs())
    def one(spec):  # type: ignore[no-untyped-def]
        if time.monotonic() > deadline:
            raise _Stop
        summary["cases"] += 1
        summary["families"][spec.family] += 1
        # The case about to run, kept if it kills the interpreter (no worker isolation here).
        current = args.out.with_suffix(".current.json")
        fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=".oracle-current.")
        with os.fdopen(fd, "w") as f:
            f.write(spec.to_json())
        os.replace(tmp, current)
        signal.alarm(args.case_timeout)
        try:
            r = run_case(spec, backend=args.backend)
        except Exception as exc:  # a pyfy-fuzz bug: keep the spec to fix it
            summary["errors"].append(
                {"error": f"{type(exc).__name__}: {exc}"[:500], "spec": spec.to_json()}
            )
            save()
            return
        finally:
            signal.alarm(0)
        summary["status"][r.status] += 1
        if r.unsupported:
            summary["unsupported"][r.unsupported[:120]] += 1
        if r.status == "discarded":
            summary["status"]["discarded: " + (r.reason or "")[:100]] += 1
        for k, v in r.timings.items():
            summary["timings"][k] += v
        for e in r.excused:
            summary["excused"][e] += 1
        new_signature = False
        for f in r.findings:
            new_signature |= f.signature not in summary["findings"]
            entry = summary["findings"].setdefault(
                f.signature,
                {
                    "kind": f.kind,
                    "oracle": f.oracle,
                    "subject": f.subject,
                    "wrappers": list(f.wrappers),
                    "count": 0,
                    "families": collections.Counter(),
                    "explanation": f.explanation,
                    "spec": spec.to_json(),
                    "size": list(spec.size()),
                    "source": render(spec),
                },
            )
            entry["count"] += 1
            entry["families"][spec.family] += 1
            if list(spec.size()) < entry["size"]:  # keep the smallest example
                entry.update(
                    spec=spec.to_json(),
                    size=list(spec.size()),
                    explanation=f.explanation,
                    source=render(spec),
                )
        save(force=new_signature)

    try:
        one()
    except _Stop:
        pass
    save()
    print(json.dumps({k: summary[k] for k in ("cases", "status", "elapsed_s")}, default=str))
    print(f"{len(summary['findings'])} signatures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
