"""The public entry points: `pythonify(fn, args, path)` and `load(path, bind=fn)`."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import regions
from .capture import capture
from .errors import PythonifyUnsupported
from .gen_python import generate
from .graph_render import FxNodeMeta
from .inputs import clone_preserving_aliasing
from .ir import PythonifyIR
from .meta import FakeOutput
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
    fake_first_outputs: list[FakeOutput] = field(default_factory=list)
    # A function split at graph breaks (Note [Regions]): each compiled region's IR, in order.
    regions: list[PythonifyIR] = field(default_factory=list)
    source: str = ""  # the file's text


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


def _write(path: Path, source: str) -> None:
    """Write the file whole or not at all: a temp file beside it, fsynced, renamed over it.
    A kill mid-write leaves the previous file (or none), never half of one. pythonify's own,
    not the harness's: the generator imports nothing of the harness that tests it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
    try:
        return _pythonify_one(
            fn,
            args,
            out,
            backend=backend,
            frontend=frontend,
            dynamic=dynamic,
            mode=mode,
            fakify_first_call=fakify_first_call,
        )
    except PythonifyUnsupported as exc:
        plain = frontend == "dynamo" and mode is None and not fakify_first_call
        parsed = regions.parse(fn) if plain and exc.construct == _BREAK else None
        if parsed is None:
            raise
        return _pythonify_regions(fn, parsed, args, out, exc, backend=backend, dynamic=dynamic)


# What the capture raises where Dynamo breaks the graph (capture/dynamo.py).
_BREAK = "a graph break"


def _pythonify_one(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    out: Path,
    *,
    backend: str,
    frontend: str = "dynamo",
    dynamic: bool,
    mode: str | None = None,
    fakify_first_call: bool = False,
) -> PythonifyResult:
    """One capture, one graph, one file: a graph break raises."""
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
    _write(out, source)
    t2 = time.perf_counter()
    return PythonifyResult(
        path=out,
        compiled=cap.compiled,
        active_wrappers=ir.active_wrappers(),
        ir=ir,
        timings={"capture_s": t1 - t0, "codegen_s": t2 - t1},
        fx_meta=cap.fx_meta,
        fake_first_outputs=cap.fake_first_outputs,
        source=source,
    )


def _pythonify_regions(
    fn: Callable[..., Any],
    parsed: regions.Function,
    args: tuple[Any, ...],
    out: Path,
    first: PythonifyUnsupported,
    *,
    backend: str,
    dynamic: bool,
) -> PythonifyResult:
    """A function Dynamo splits at graph breaks: each region pythonified alone, on the values
    the code before it computed (eager, on copies), and one file running them in order. The
    split starts at the statement Dynamo first broke at and grows by each break a region's
    own compile meets (Note [Regions]); regions already compiled are kept. The reference is
    the regions' own compiled callables, in the same order, with the break blocks between."""
    t0 = time.perf_counter()
    where = fn.__qualname__  # type: ignore[attr-defined]
    at = {parsed.statement_at(first.frames, where)}
    done: dict[tuple[Any, ...], PythonifyResult | None] = {}
    while True:
        sp = regions.split(parsed, frozenset(at))
        broke = _compile_regions(parsed, sp, args, out, done, backend=backend, dynamic=dynamic)
        if broke is None:
            break
        k = parsed.statement_at(broke.frames, where)
        if k in at:
            raise PythonifyUnsupported(
                "a graph break the file cannot place", f"{where}: again at statement {k}"
            )
        at.add(k)
    results = [done[sp.prefix(k)] for k in range(len(sp.regions))]
    compiled = [r for r in results if r is not None]
    if not compiled:
        raise PythonifyUnsupported("a program without a compiled graph", "no region has one")
    files = [None if r is None else r.source for r in results]
    source = regions.generate(sp, files, f"    regions with a graph: {len(compiled)}")
    compile(source, str(out), "exec")
    _write(out, source)
    calls = [
        r.compiled if r is not None else regions.region_function(parsed, sp, k)
        for k, r in enumerate(results)
    ]
    return PythonifyResult(
        path=out,
        compiled=_regions_reference(parsed, sp, calls),
        active_wrappers=sorted({w for r in compiled for w in r.active_wrappers}),
        ir=compiled[0].ir,
        timings={"capture_s": time.perf_counter() - t0, "codegen_s": 0.0},
        regions=[r.ir for r in compiled],
        source=source,
    )


def _compile_regions(
    parsed: regions.Function,
    sp: regions.Split,
    args: tuple[Any, ...],
    out: Path,
    done: dict[tuple[Any, ...], PythonifyResult | None],
    *,
    backend: str,
    dynamic: bool,
) -> PythonifyUnsupported | None:
    """Pythonify each region of `sp` not in `done` yet, on what the code before it computes
    (its compiled regions and the Python between them, on copies of `args`: what torch.compile
    hands the next graph; issue 36's fifth run's f4c0d0921b14); the graph break a region
    meets, if any, else None."""
    env = dict(zip(parsed.args, clone_preserving_aliasing(args), strict=True))
    for k, region in enumerate(sp.regions):
        rfn = regions.region_function(parsed, sp, k)
        rargs = tuple(env[p] for p in region.params)
        key = sp.prefix(k)
        if key not in done and region.body:
            path = out.with_name(f".{out.stem}.region{k}.py")
            try:
                done[key] = _pythonify_one(rfn, rargs, path, backend=backend, dynamic=dynamic)
            except PythonifyUnsupported as exc:
                if exc.construct == _BREAK:
                    return exc
                if exc.construct not in _NO_GRAPH:
                    raise PythonifyUnsupported(exc.construct, f"in region {k}: {exc}") from exc
                done[key] = None
            finally:
                path.unlink(missing_ok=True)
        done.setdefault(key, None)
        if k < len(sp.breaks):  # later regions' examples: what this region's compile returns
            # (torch.compile's next graph gets the compiled region's outputs, whose aliasing
            # may differ from eager's: an Inductor output that eager returns as a view)
            result = done[key]
            run = rfn if result is None else result.compiled
            env.update(zip(region.returns, run(*rargs) or (), strict=True))
            block = sp.breaks[k]
            got = regions.break_function(parsed, sp, k)(*(env[p] for p in block.params))
            env.update(zip(block.returns, got or (), strict=True))
    return None


# What a region with no tensor work raises: it has no graph, and runs as Python.
_NO_GRAPH = ("a program without a compiled graph",)


def _regions_reference(
    parsed: regions.Function, sp: regions.Split, calls: list[Callable[..., Any]]
) -> Callable[..., Any]:
    """The compile the file models: each region's compiled callable (or its Python), the
    break blocks between, in the function's globals."""
    steps = [(region, calls[k]) for k, region in enumerate(sp.regions)]
    for k, block in enumerate(sp.breaks):
        steps.insert(2 * k + 1, (block, regions.break_function(parsed, sp, k)))

    def compiled(*args: Any) -> Any:
        env = dict(zip(sp.args, args, strict=True))
        for segment, run in steps[:-1]:
            got = run(*(env[p] for p in segment.params))
            env.update(zip(segment.returns, got or (), strict=True))
        segment, run = steps[-1]
        return run(*(env[p] for p in segment.params))

    return compiled


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
