"""What every ``pyfy-fuzz`` command shares: the one-line user error (exit 2) and the checks
several commands make before anything starts (device, --pythonify, --json, --workers, --out,
the history file).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from pyfy_fuzz.reports.history import History

__all__ = [
    "EXIT_USAGE",
    "Commands",
    "PROG",
    "CliError",
    "check_device",
    "check_impl",
    "check_json_path",
    "check_out_dir",
    "cli_error",
    "cores",
    "load_history",
    "warn",
    "worker_count",
]


# What each command module's `register` adds its subcommand to.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

PROG = "pyfy-fuzz"


EXIT_USAGE = 2


class CliError(Exception):
    """A user-facing error: printed as one line on stderr, exit code 2."""


def cli_error(message: str) -> CliError:
    """The error to raise for a user's mistake: `main` prints it as one line, exit 2."""
    return CliError(message)


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_device(device: str) -> None:
    if device == "cuda":
        import torch

        if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
            raise cli_error("--device cuda: no usable GPU (torch.cuda.is_available() is False)")


def check_impl(name: str | None) -> None:
    if name == "torch":
        from pyfy_fuzz.case.subjects.impl import torch_has_pythonify

        if not torch_has_pythonify():
            import torch

            raise cli_error(
                f"--pythonify torch: the installed torch {torch.__version__} has no "
                "torch.compile(pythonify=...); use --pythonify bundled"
            )


def check_json_path(path: Path | None) -> None:
    if path is None:
        return
    if path.is_dir():
        raise cli_error(f"--json {path} is a directory")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        raise cli_error(f"--json {path}: directory {path.parent} does not exist or is not writable")


def worker_count(n: int | None) -> int:
    if n is None:
        return cores()
    if n < 1:
        raise cli_error(f"--workers must be at least 1, got {n}")
    return n


def check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise cli_error(f"--out {out} is not a directory")


def load_history(path: Path) -> History:
    """A nightly history (absent: empty); unreadable: a one-line error, its skipped entries
    warned about."""
    from pyfy_fuzz.reports.history import History, HistoryError

    try:
        history = History.load(path)
    except HistoryError as e:
        raise cli_error(str(e)) from None
    warn(history.warnings)
    return history


def warn(lines: list[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)
