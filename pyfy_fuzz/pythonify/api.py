"""The public entry points: `pythonify(fn, args, path)` and `load(path, bind=fn)`."""

from __future__ import annotations

import importlib.util
import itertools
import os
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import atomic_write
from .capture import capture
from .gen_python import generate
from .graph_render import FxNodeMeta
from .ir import PythonifyIR
from .pipeline import build_ir

__all__ = [
    "PythonifyResult",
    "load",
    "pythonify",
]


@dataclass
class PythonifyResult:
    """What pythonify produced: the file, the reference compiled callable, the wrapper stack."""

    path: Path
    compiled: Callable[..., Any]
    active_wrappers: list[str]
    ir: PythonifyIR
    timings: dict[str, float] = field(default_factory=dict)
    # torch's node metadata per compiled graph (seq_nr etc.), for the seq_nr oracle.
    fx_meta: dict[str, tuple[FxNodeMeta, ...]] = field(default_factory=dict)
    # With fakify_first_call: torch's fake first outputs, (shape, stride, dtype) each.
    fake_first_outputs: list[tuple[tuple[int, ...], tuple[int, ...], str] | None] = field(
        default_factory=list
    )


def _check_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"cannot write {p}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"cannot write {p}: directory {parent} is not writable")
    if p.is_dir():
        raise ValueError(f"cannot write {p}: it is a directory")
    return p


def pythonify(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    path: str | os.PathLike[str],
    *,
    backend: str = "aot_eager",
    frontend: str = "dynamo",
    dynamic: bool = False,
    mode: str | None = None,
    fakify_first_call: bool = False,
) -> PythonifyResult:
    """Compile `fn` on copies of `args` and write a standalone file reproducing the compile.

    `args` are not mutated. Raises PythonifyUnsupported (naming the construct) when the program
    cannot be modelled faithfully, ValueError/TypeError for bad arguments.
    `fakify_first_call` compiles as DDPOptimizer does (Note [The fakified first call] in
    capture/dynamo.py), so FakifiedOutWrapper is built.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function or nn.Module, got {type(fn).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple of example inputs, got {type(args).__name__}")
    out = _check_path(path)
    t0 = time.perf_counter()
    cap = capture(
        fn,
        args,
        backend=backend,
        frontend=frontend,
        dynamic=dynamic,
        mode=mode,
        fakify_first_call=fakify_first_call,
    )
    t1 = time.perf_counter()
    ir = build_ir(cap)
    source = generate(ir)
    compile(source, str(out), "exec")  # a codegen bug must fail here, not in the user's run
    atomic_write(out, source)
    t2 = time.perf_counter()
    return PythonifyResult(
        path=out,
        compiled=cap.compiled,
        active_wrappers=ir.active_wrappers(),
        ir=ir,
        timings={"capture_s": t1 - t0, "codegen_s": t2 - t1},
        fx_meta=cap.fx_meta,
        fake_first_outputs=cap.fake_first_outputs,
    )


_counter = itertools.count()


def load(path: str | os.PathLike[str], bind: Any = None) -> types.ModuleType:
    """Import a generated file as a fresh module; `bind` resolves non-argument inputs."""
    p = Path(path)
    name = f"_pythonified_{p.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {p}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if bind is not None:
        mod.bind(bind)
    return mod
