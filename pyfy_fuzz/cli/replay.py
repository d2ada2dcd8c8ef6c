"""``pyfy-fuzz replay``: corpus entries run again, each judged against what it expects."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pyfy_fuzz.cli.common import (
    Commands,
    check_device,
    check_impl,
    check_json_path,
    cli_error,
    worker_count,
)

__all__ = [
    "register",
    "cmd_replay",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 1


def register(commands: Commands) -> None:
    p = commands.add_parser(
        "replay",
        help="re-run saved corpus entries; report which still fail and which are fixed",
        description=(
            "Re-run corpus entries (a corpus directory, or entry directories). Entries marked "
            'expected "fail" (torch bugs) are known failures; entries marked expected "pass" '
            "(fixed bugs of the bundled generator or of pyfy-fuzz) must not reproduce. "
            "Exit status: 0 all as expected, 1 an expected-pass entry still fails or an entry "
            "could not be judged (error), 2 usage error."
        ),
    )
    p.add_argument("paths", nargs="*", type=Path, default=[Path("corpus")], metavar="PATH")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument(
        "--pythonify",
        choices=["bundled", "torch"],
        default=None,
        help="implementation to replay with (default: the one each entry was found with)",
    )
    p.add_argument("--case-timeout", type=float, default=120.0)
    p.add_argument("--json", type=Path, default=None, metavar="REPORT.json")
    p.add_argument(
        "--repros",
        action="store_true",
        help="also run each entry's repro.py on its own and record the run in case.json; "
        "a repro that disagrees with the replay (repro-mismatch) exits 1",
    )
    p.set_defaults(run=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from pyfy_fuzz.campaign.replay import collect, replay
    from pyfy_fuzz.corpus.store import CorpusError

    workers = worker_count(args.workers)
    check_json_path(args.json)
    check_device(args.device)
    check_impl(args.pythonify)
    try:
        entries, problems = collect(args.paths)
    except (FileNotFoundError, CorpusError) as e:
        raise cli_error(str(e)) from None
    for p in problems:  # a damaged entry is an error (exit 1), left as it is; others a note
        print(f"{'error' if p.damaged else 'warning'}: {p.path}: {p.message}", file=sys.stderr)
    if not entries and not any(p.damaged for p in problems):
        raise cli_error(f"no corpus entries under {', '.join(map(str, args.paths))}")

    def show(o: Any) -> None:
        repro = f" [repro.py {o.repro}{': MISMATCH' if o.repro_mismatch else ''}]"
        tail = repro if o.repro is not None else ""
        print(f"{o.verdict:<15} {o.entry.signature:<48} {o.detail}{tail}", flush=True)

    from pyfy_fuzz.campaign.pool import WorkerStartError

    try:
        report = replay(
            args.paths,
            workers=workers,
            device=args.device,
            impl=args.pythonify,
            case_timeout=args.case_timeout,
            on_outcome=show,
            repros=args.repros,
        )
    except WorkerStartError as e:
        raise cli_error(f"workers cannot start: {str(e).splitlines()[0]}") from None
    for o in report.outcomes:
        if o.verdict == "skipped":
            show(o)
    counts: dict[str, int] = {}
    for o in report.outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    mismatched = sum(o.repro_mismatch for o in report.outcomes)
    if mismatched:
        counts["repro-mismatch"] = mismatched
    damaged = sum(p.damaged for p in problems)
    if damaged:
        counts["damaged"] = damaged
    print("replay: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    if args.json is not None:
        from pyfy_fuzz.schema.atomic import atomic_write

        atomic_write(args.json, json.dumps(report.to_dict(), indent=1) + "\n")
    return report.exit_code
