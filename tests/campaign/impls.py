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

from pyfy_fuzz.case.subjects import BundledPythonify
from pyfy_fuzz.case.subjects.impl import Produced


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


class AlwaysRaises(_Planted):
    """A generator bug every program shows: the file's `call` always raises, so every case
    finds the same bug (one coarse key, no wrapper paths) within its first seconds."""

    def after(self, produced: Produced) -> None:
        with open(produced.path, "a") as f:
            f.write("\n\ndef call(*args):\n    raise RuntimeError('planted: never runs')\n")


SLEEP_S = 30.0  # a compile that outlives any test's budget and grace


class Sleeps(_Planted):
    """Every compile takes SLEEP_S (a long Inductor compile): a campaign's budget ends while
    its cases run. Each sleeping worker leaves its pid in a `sleeping` file beside the case."""

    def produce(self, fn: Any, args: tuple[Any, ...], path: Path, **kw: Any) -> Produced:
        Path(path).with_name("sleeping").write_text(f"{os.getpid()}\n")
        time.sleep(SLEEP_S)
        return super().produce(fn, args, path, **kw)


def always_raises() -> AlwaysRaises:
    return AlwaysRaises()


def sleeps() -> Sleeps:
    return Sleeps()


class Float64LeavesAMode(_Planted):
    """A generator bug that breaks the process (Note [A broken process] in
    pyfy_fuzz/campaign/worker.py): the file's `call` enters a TorchDispatchMode for float64
    arguments and never leaves it, so
    every op after it in the process runs through the mode."""

    def after(self, produced: Produced) -> None:
        with open(produced.path, "a") as f:
            f.write(
                "\n\nfrom torch.utils._python_dispatch import TorchDispatchMode\n\n\n"
                "class PlantedLeak(TorchDispatchMode):\n"
                "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
                "        return func(*args, **(kwargs or {}))\n\n\n"
                "_planted_call = call\n\n\n"
                "def call(*args):\n"
                "    out = _planted_call(*args)\n"
                "    if any(isinstance(a, torch.Tensor) and a.dtype == torch.float64"
                " for a in args):\n"
                "        PlantedLeak().__enter__()  # planted: never left\n"
                "    return out\n"
            )


def float64_leaves_a_mode() -> Float64LeavesAMode:
    return Float64LeavesAMode()
