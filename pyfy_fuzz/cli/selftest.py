"""``pyfy-fuzz selftest``: mutation testing of the fuzzer (see pyfy_fuzz/selftest/)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pyfy_fuzz.cli.common import Commands, check_json_path, cli_error, worker_count

__all__ = [
    "register",
    "cmd_selftest",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 7


def register(commands: Commands) -> None:
    p = commands.add_parser(
        "selftest",
        help="plant bugs in the bundled generator, one at a time; does a campaign catch each?",
        description=(
            "Mutation testing of pyfy-fuzz: for each planted bug (mutant) in the bundled "
            "generator's wrapper models, run a campaign over the mutant's generator families "
            "until the first finding against pythonify or the budget, then confirm the kill "
            "(the detecting program fails with the mutant and passes without it). Prints the "
            "kill rate and the time to first detection per mutant. Exit status: 0 every "
            "mutant killed and confirmed, 1 a survivor or an unconfirmed kill, 2 usage error."
        ),
    )
    p.add_argument("--budget", default="60s", help="per mutant (default 60s)")
    p.add_argument(
        "--mutant",
        action="append",
        dest="mutants",
        metavar="NAME",
        help="only this mutant (repeatable); default all, see --list",
    )
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--workers", type=int, default=None, help="per campaign (default: cores)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=["aot_eager", "inductor"], default="aot_eager")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--keep", type=Path, default=None, help="keep each mutant's corpus here")
    p.set_defaults(run=cmd_selftest)


def cmd_selftest(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from pyfy_fuzz.campaign.budget import parse_budget
    from pyfy_fuzz.selftest import BY_NAME, MUTANTS

    if args.list:
        rows = [[m.name, m.wrapper, ", ".join(m.families), m.bug] for m in MUTANTS]
        print(tabulate(rows, headers=["mutant", "wrapper", "families", "bug"], maxcolwidths=60))
        return 0
    try:
        budget = parse_budget(args.budget)
    except ValueError as e:
        raise cli_error(str(e)) from None
    unknown = [n for n in args.mutants or () if n not in BY_NAME]
    if unknown:
        raise cli_error(f"unknown mutant(s) {', '.join(unknown)}; see `pyfy-fuzz selftest --list`")
    check_json_path(args.json)
    workers = worker_count(args.workers)
    chosen = [BY_NAME[n] for n in args.mutants] if args.mutants else list(MUTANTS)

    from pyfy_fuzz.selftest.run import MutantResult, run_selftest

    def progress(r: MutantResult) -> None:
        verdict = _verdict(r)
        when = f" in {r.seconds:.1f} s ({r.cases} cases)" if r.killed else ""
        print(f"{r.name}: {verdict}{when}" + (f" -- {r.note}" if r.note else ""), flush=True)

    results = run_selftest(
        chosen,
        budget_s=budget,
        workers=workers,
        seed=args.seed,
        backend=args.backend,
        keep=args.keep,
        on_result=progress,
    )
    killed = [r for r in results if r.killed and r.confirmed]
    _print_table(results, killed, budget, workers, args.backend)
    if args.json is not None:
        _write_json(args, results, killed, budget, workers)
    return 0 if len(killed) == len(results) else 1


def _print_table(
    results: list[Any], killed: list[Any], budget: float, workers: int, backend: str
) -> None:
    from tabulate import tabulate

    table = [
        [
            r.name,
            r.wrapper,
            _verdict(r),
            f"{r.seconds:.1f}" if r.seconds is not None else "-",
            r.cases if r.cases is not None else r.total_cases,
            r.detected_by or "-",
        ]
        for r in results
    ]
    headers = ["mutant", "wrapper", "verdict", "first detection s", "cases", "detected by"]
    print()
    print(tabulate(table, headers=headers))
    times = sorted(r.seconds for r in killed if r.seconds is not None)
    median = times[len(times) // 2] if times else None
    print(
        f"\nkill rate {len(killed)}/{len(results)}; time to first detection: median "
        + (f"{median:.1f} s, max {times[-1]:.1f} s" if times else "-")
        + f" (budget {budget:g} s per mutant, {workers} worker(s), {backend})"
    )


def _write_json(
    args: argparse.Namespace, results: list[Any], killed: list[Any], budget: float, workers: int
) -> None:
    import torch

    from pyfy_fuzz.schema.atomic import atomic_write

    doc = {
        "kill_rate": len(killed) / max(1, len(results)),
        "killed": len(killed),
        "mutants": len(results),
        "budget_s": budget,
        "workers": workers,
        "backend": args.backend,
        "seed": args.seed,
        "torch": torch.__version__,
        "results": [r.to_dict() for r in results],
    }
    atomic_write(args.json, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)


def _verdict(r: Any) -> str:
    if not r.killed:
        return "SURVIVED"
    return "killed" if r.confirmed else "UNCONFIRMED"
