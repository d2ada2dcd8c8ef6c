"""``pyfy-fuzz bench``: flags in, `bench.run_bench` out, tables and --json.

Every check a user can fail happens here, before a worker starts, and ends in one line and
exit 2 (`common.CliError`). Exit status 0 once measured, whether or not the targets are met
(the table says which); 1 when a measurement could not be taken (the table's notes say why).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pyfy_fuzz.cli.common import Commands, check_device, check_json_path, cli_error, worker_count

__all__ = [
    "register",
    "cmd_bench",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 5


_BACKENDS = ("aot_eager", "inductor")


_FULL = {"programs": 20, "inductor_programs": 2, "rss_minutes": 10}


_QUICK = {"programs": 1, "inductor_programs": 1, "rss_minutes": 1}


def register(commands: Commands) -> None:
    """`pyfy-fuzz bench` and its flags.

    Long: one add_argument per flag, each with its help text; nothing to split."""
    p = commands.add_parser(
        "bench",
        help="measure cases/min, the harness's overhead and memory over a campaign",
        description=(
            "On a fixed, seeded set of programs: (a) cases/min per wrapper family with each "
            "backend on --workers processes; (b) run_case's cost per case against the bare "
            "torch work (torch.compile + running the same programs); (c) worker memory over a "
            "real campaign of --rss-minutes (pyfy-fuzz run on a fresh corpus). Prints tables; "
            "--json writes the numbers. Exit status: 0 measured (targets met or not), 1 a "
            "measurement failed, 2 usage error. Takes about 5 minutes plus --rss-minutes."
        ),
    )
    p.add_argument("--seed", type=int, default=0, help="draws the program set (default 0)")
    p.add_argument(
        "--programs",
        type=int,
        default=None,
        metavar="N",
        help=f"programs per family for aot_eager and the overhead (default {_FULL['programs']})",
    )
    p.add_argument(
        "--inductor-programs",
        type=int,
        default=None,
        metavar="N",
        help=f"programs per family for inductor (default {_FULL['inductor_programs']})",
    )
    p.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: one per core)"
    )
    p.add_argument(
        "--backends",
        default=",".join(_BACKENDS),
        help="comma-separated: aot_eager, inductor (default both)",
    )
    p.add_argument(
        "--rss-minutes",
        type=float,
        default=None,
        help=f"campaign length for the memory measurement (default {_FULL['rss_minutes']}; "
        "0 skips it)",
    )
    p.add_argument("--rss-seconds", type=float, default=None, help=argparse.SUPPRESS)  # tests
    p.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="where the programs run (cuda: reduce-overhead under torch's CUDA graphs)",
    )
    p.add_argument(
        "--families",
        default=None,
        metavar="F[,F]",
        help="draw the program set from these wrapper families only (default: every family)",
    )
    p.add_argument(
        "--overhead-backend",
        choices=list(_BACKENDS),
        default="aot_eager",
        help="the backend of the overhead measurement (default aot_eager)",
    )
    p.add_argument("--json", type=Path, default=None, metavar="FILE")
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes (1 program per family, a 1-minute campaign): for tests",
    )
    p.set_defaults(run=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    sizes = _QUICK if args.quick else _FULL
    programs = sizes["programs"] if args.programs is None else args.programs
    inductor = (
        sizes["inductor_programs"] if args.inductor_programs is None else args.inductor_programs
    )
    minutes = sizes["rss_minutes"] if args.rss_minutes is None else args.rss_minutes
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    unknown = [b for b in backends if b not in _BACKENDS]
    if unknown or not backends or len(set(backends)) < len(backends):
        raise cli_error(
            f"--backends: unknown, repeated or no backends in {args.backends!r}; "
            f"choose from {', '.join(_BACKENDS)}"
        )
    if programs < 1:
        raise cli_error(f"--programs must be at least 1, got {programs}")
    if inductor < 1 and "inductor" in backends:
        raise cli_error(f"--inductor-programs must be at least 1, got {inductor}")
    if minutes < 0 or (args.rss_seconds is not None and args.rss_seconds < 0):
        raise cli_error("--rss-minutes must not be negative")
    workers = worker_count(args.workers)
    check_json_path(args.json)
    check_device(args.device)
    families = _families(args.families)
    from pyfy_fuzz.bench.measure import BenchConfig, run_bench
    from pyfy_fuzz.bench.tables import render
    from pyfy_fuzz.campaign.pool import WorkerStartError

    config = BenchConfig(
        seed=args.seed,
        programs=programs,
        inductor_programs=inductor,
        workers=workers,
        backends=backends,
        rss_seconds=60 * minutes if args.rss_seconds is None else args.rss_seconds,
        quick=args.quick,
        device=args.device,
        families=families,
        overhead_backend=args.overhead_backend,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    try:
        result = run_bench(config)
    except WorkerStartError as e:
        raise cli_error(f"workers cannot start: {str(e).splitlines()[0]}") from None
    print(render(result), end="")
    if args.json is not None:
        from pyfy_fuzz.schema.atomic import atomic_write

        atomic_write(args.json, json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 1 if result["notes"] else 0


def _families(text: str | None) -> tuple[str, ...] | None:
    """--families, checked against the generators' families (one line and exit 2 when not)."""
    if text is None:
        return None
    from generators import FAMILIES

    names = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in names if f not in FAMILIES]
    if unknown or not names:
        raise cli_error(f"--families: unknown or no family in {text!r}; choose from {FAMILIES}")
    return names
