"""Command-line interface: ``pyfy-fuzz``, one module per command plus `common`.

Configuration parsing lives here and only here; commands hand plain values to library code.
torch and the pythonify package are imported lazily, so ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from pyfy_fuzz import __version__
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
    for command in _commands():
        command.register(commands)  # each module adds its subcommand: flags, help, what runs
    return parser


# Note [Commands]
# ~~~~~~~~~~~~~~~
# A command is a module of this package with `register(commands)` and `POSITION`, its place
# in `--help`. Nothing lists them: `_commands` finds them with pkgutil. Adding a command is
# adding its module (and its tests).
def _commands() -> list[ModuleType]:
    """The command modules, by POSITION."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "common")
    modules = [importlib.import_module(f"{__name__}.{n}") for n in names]
    found = sorted((m for m in modules if hasattr(m, "register")), key=lambda m: m.POSITION)
    if sorted(m.POSITION for m in found) != list(range(len(found))):
        raise RuntimeError(f"command POSITIONs must be 0..{len(found) - 1}, once each")
    return found
