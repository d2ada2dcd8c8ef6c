"""Pythonify implementations with planted failures, loaded *inside* campaign workers through
``WorkerConfig.impl = "tests.campaign.impls:<factory>"``: they misbehave in the worker only.

Each fails on a condition a generated program meets often (so a short campaign hits it) and
that shrinking must keep (so the saved spec says something checkable).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import torch

from pyfy_fuzz.subjects import BundledPythonify
from pyfy_fuzz.subjects.impl import Produced


def _has_float64(args: tuple[Any, ...]) -> bool:
    return any(isinstance(a, torch.Tensor) and a.dtype == torch.float64 for a in args)


class _Planted:
    name = "planted"

    def __init__(self) -> None:
        self.inner = BundledPythonify()
        self.unsupported = self.inner.unsupported

    def before(self, fn: Any, args: tuple[Any, ...]) -> None:
        pass

    def produce(self, fn: Any, args: tuple[Any, ...], path: Path, **kw: Any) -> Produced:
        self.before(fn, args)
        produced = self.inner.produce(fn, args, path, **kw)
        self.after(produced)
        return produced

    def after(self, produced: Produced) -> None:
        pass


class Float64Raises(_Planted):
    """A generator bug: the file's `call` raises for float64 arguments."""

    def after(self, produced: Produced) -> None:
        with open(produced.path, "a") as f:
            f.write(
                "\n\n_planted_call = call\n\n\n"
                "def call(*args):\n"
                "    if any(isinstance(a, torch.Tensor) and a.dtype == torch.float64"
                " for a in args):\n"
                "        raise RuntimeError('planted: float64 arguments are not handled')\n"
                "    return _planted_call(*args)\n"
            )


class ModuleSegfaults(_Planted):
    """The compile of an nn.Module kills the process (as a segfault in torch would)."""

    def before(self, fn: Any, args: tuple[Any, ...]) -> None:
        if isinstance(fn, torch.nn.Module):
            os.kill(os.getpid(), signal.SIGSEGV)


class Float64Hangs(_Planted):
    """The compile never returns for float64 arguments."""

    def before(self, fn: Any, args: tuple[Any, ...]) -> None:
        if _has_float64(args):
            time.sleep(3600)


def float64_raises() -> Float64Raises:
    return Float64Raises()


def module_segfaults() -> ModuleSegfaults:
    return ModuleSegfaults()


def float64_hangs() -> Float64Hangs:
    return Float64Hangs()
