"""``pyfy-fuzz pythonify FILE.py:NAME``: one function compiled and written as a standalone file."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from pyfy_fuzz.cli.common import CliError, Commands

__all__ = [
    "register",
    "cmd_pythonify",
    "POSITION",
]

# Where `pyfy-fuzz --help` lists the command (Note [Commands] in cli/__init__.py).
POSITION = 8


def register(commands: Commands) -> None:
    p = commands.add_parser(
        "pythonify",
        help="write the standalone Python file for what torch.compile runs on a function",
        description=(
            "Compile FILE.py:NAME on the inputs saved in --inputs and write the pythonified file. "
            "NAME is a function or an nn.Module instance defined at the top level of FILE.py. "
            "The inputs file is unpickled (torch.load with weights_only=False): "
            "only use files you trust."
        ),
    )
    p.add_argument("target", metavar="FILE.py:NAME", help="the function or module to compile")
    p.add_argument(
        "--inputs",
        required=True,
        type=Path,
        metavar="INPUTS.pt",
        help="a tuple (or list) of positional arguments saved with torch.save",
    )
    p.add_argument("-o", "--output", required=True, type=Path, metavar="OUT.py")
    p.add_argument("--backend", choices=["aot_eager", "inductor"], default="aot_eager")
    p.add_argument(
        "--frontend",
        choices=["dynamo", "aot"],
        default="dynamo",
        help="dynamo: torch.compile; aot: AOTAutograd directly (aot_function)",
    )
    p.add_argument("--dynamic", action="store_true", help="compile with dynamic shapes")
    p.add_argument("--mode", choices=["reduce-overhead"], default=None, help="torch.compile mode")
    p.set_defaults(run=cmd_pythonify)


def cmd_pythonify(args: argparse.Namespace) -> int:
    fn = _load_target(args.target)
    inputs = _load_inputs(args.inputs)
    _check_output_path(args.output)
    from pyfy_fuzz.pythonify import PythonifyUnsupported, pythonify

    try:
        result = pythonify(
            fn,
            inputs,
            args.output,
            backend=args.backend,
            frontend=args.frontend,
            dynamic=args.dynamic,
            mode=args.mode,
        )
    except (PythonifyUnsupported, ValueError, TypeError) as e:
        raise CliError(f"pythonify failed: {type(e).__name__}: {e}") from e
    print(f"wrote {result.path}")
    print("active wrappers:")
    for name in result.active_wrappers:
        print(f"  {name}")
    return 0


def _load_target(target: str) -> Callable[..., Any]:
    """Import FILE.py by path and return its top-level NAME, checked to be callable."""
    file_part, sep, name = target.rpartition(":")
    if not sep or not file_part or not name.isidentifier():
        raise CliError(f"expected FILE.py:NAME, got {target!r}")
    path = Path(file_part)
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    module = _import_file(path)
    if not hasattr(module, name):
        raise CliError(f"{path} has no attribute {name!r}")
    obj = getattr(module, name)
    import torch

    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        raise CliError(
            f"{name!r} in {path} is an nn.Module class; define an instance "
            f"(e.g. model = {name}()) and name that"
        )
    if not callable(obj):
        raise CliError(f"expected {name!r} in {path} to be callable, got {type(obj).__name__}")
    return obj


def _import_file(path: Path) -> ModuleType:
    """Import a source file under a fresh module name (registered, so pickling and inspect work)."""
    module_name = f"_pyfy_fuzz_target_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path}: expected a Python source file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[module_name]
        raise CliError(f"importing {path} failed: {type(e).__name__}: {e}") from e
    return module


def _load_inputs(path: Path) -> tuple[Any, ...]:
    """Load the positional arguments saved in PATH; a list is accepted and made a tuple."""
    if not path.is_file():
        raise CliError(f"no such inputs file: {path}")
    import torch

    try:
        inputs = torch.load(path, weights_only=False)
    except Exception as e:
        raise CliError(f"cannot load inputs from {path}: {type(e).__name__}: {e}") from e
    if isinstance(inputs, list):
        inputs = tuple(inputs)
    if not isinstance(inputs, tuple):
        raise CliError(f"expected {path} to hold a tuple of inputs, got {type(inputs).__name__}")
    return inputs


def _check_output_path(out: Path) -> None:
    """Fail before compiling if OUT cannot be written; the file itself is left to pythonify."""
    if out.is_dir():
        raise CliError(f"output path is a directory: {out}")
    parent = out.parent
    if not parent.is_dir():
        raise CliError(f"output directory does not exist: {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"output directory is not writable: {parent}")
