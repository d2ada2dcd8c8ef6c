"""Command-line interface: ``pyfy-fuzz``, one module per command plus `common`.

Configuration parsing lives here and only here; commands hand plain values to library code.
torch and the pythonify package are imported lazily, so ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from pyfy_fuzz import __version__
from pyfy_fuzz.cli import (
    bench,
    migrate,
    nightly,
    pythonify,
    replay,
    report,
    run,
    selftest,
    versions,
)
from pyfy_fuzz.cli.common import EXIT_USAGE, PROG, CliError

__all__ = ["EXIT_USAGE", "PROG", "CliError", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (argparse usage errors raise SystemExit(2))."""
    args = _build_parser().parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.run
    try:
        return command(args)
    except CliError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_USAGE


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Differential testing and fuzzing harness for pythonify.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (run, replay, versions, migrate, report, bench, nightly, selftest, pythonify):
        command.register(commands)  # each module adds its subcommand: flags, help, what runs
    return parser
