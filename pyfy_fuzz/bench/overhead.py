"""`pyfy-fuzz bench` (b): the harness's overhead -- `run_case` against the bare torch work the
same comparison needs (`bare`), per spec, in worker processes like a campaign's: is the harness
spending its time in torch?

`overhead_one` times both paths twice, alternating (the faster run of each counts);
`measure_overhead` runs it for every spec on a forkserver process pool, one intra-op thread a
process; `summarize_overhead` is the ratio of the means and run_case's own breakdown.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from generators import ProgramSpec

__all__ = [
    "bare",
    "measure_overhead",
    "overhead_one",
    "summarize_overhead",
]


def bare(spec: ProgramSpec, backend: str, d: Path, device: str = "cpu") -> float | None:
    """Seconds of the least torch work `run_case`'s comparison needs: eager through the plan
    twice; the two compiles (pythonify's capture + codegen, under its own settings, and the
    stock torch.compile of a fresh copy, in a fresh cache directory: Note [The stock
    reference]); the stock compile, the file and the capture's own callable (the file's
    reference, Note [Two references]) through the plan; and the plan's variant call in all
    four (where torch.compile recompiles). Nothing recorded, probed or compared.
    Long: one straight sequence of torch work, in run_case's order, so the two can be read
    side by side.
    None when the program cannot be pythonified (no file to run)."""
    import torch
    import torch._dynamo

    from generators import materialize
    from pyfy_fuzz.case.subjects import case_caches, plain_compile
    from pyfy_fuzz.pythonify import load, pythonify

    t0 = time.perf_counter()
    program = materialize(spec, device=device)
    plan = program.plan
    drive = program.module.drive

    def call(fn: Any, module: Any, seed: int, variant: Any = None) -> None:
        try:
            drive(fn, program.make_inputs(seed, variant), seed, module=module)
        except Exception:
            pass
        finally:
            torch.set_grad_enabled(True)

    for _ in range(2):
        fn = program.make_fn()
        for seed in range(plan.calls):
            call(fn, fn, seed)
    torch._dynamo.reset()
    with case_caches():
        fn, args = program.make_fn(), program.make_inputs(0)
        try:
            with program.module.compile_site():  # as compile_once
                r = pythonify(
                    fn,
                    args,
                    d / "p.py",
                    backend=backend,
                    frontend=plan.frontend,
                    dynamic=plan.dynamic,
                    mode=plan.mode,
                )
        except Exception:
            return None
        capture, capture_module = r.compiled, fn
        fn = program.make_fn()
        compiled = plain_compile(fn, backend, plan, device)  # compiled at its first call
        fn2 = program.make_fn()
        mod = load(r.path, bind=fn2)
        runs = ((compiled, fn), (mod.call, fn2), (capture, capture_module))
        for target, module in runs:
            for seed in range(plan.calls):
                call(target, module, seed)
        if plan.variant is not None:  # the plan's guard-breaking call (torch.compile recompiles)
            for target, module in ((program.make_fn(), None), *runs):
                call(target, module, 0, plan.variant)
    return time.perf_counter() - t0


def overhead_one(
    spec: ProgramSpec, backend: str, d: Path, device: str = "cpu"
) -> dict[str, Any] | None:
    """Both paths twice, alternating; the faster run of each counts, which removes first-import
    and warm-up costs from whichever path happened to run first. None: not pythonifiable."""
    import torch._dynamo

    from pyfy_fuzz.case.runner import run_case

    bares, fulls, timings = [], [], {}
    for _ in range(2):
        b = bare(spec, backend, d, device)
        if b is None:
            return None
        bares.append(b)
        torch._dynamo.reset()
        t0 = time.perf_counter()
        result = run_case(spec, backend=backend, device=device, workdir=d)
        fulls.append(time.perf_counter() - t0)
        timings = result.timings
        torch._dynamo.reset()
    return {"family": spec.family, "bare_s": min(bares), "full_s": min(fulls), "timings": timings}


def summarize_overhead(samples: list[dict[str, Any]], drawn: int, backend: str) -> dict[str, Any]:
    """Ratio of the means (run_case / bare) and `run_case`'s own breakdown (mean per stage)."""
    out: dict[str, Any] = {"backend": backend, "drawn": drawn, "cases": len(samples)}
    if not samples:
        return {**out, "ratio": None}
    full = statistics.mean(s["full_s"] for s in samples)
    bare_s = statistics.mean(s["bare_s"] for s in samples)
    stages = sorted({k for s in samples for k in s["timings"]})
    return {
        **out,
        "bare_ms": round(1e3 * bare_s, 1),
        "run_case_ms": round(1e3 * full, 1),
        "ratio": round(full / bare_s, 3),
        "harness_ms": round(1e3 * (full - bare_s), 1),
        "breakdown_ms": {
            k: round(1e3 * statistics.mean(s["timings"].get(k, 0.0) for s in samples), 1)
            for k in stages
        },
    }


_WORKDIR: list[Path] = []


def _overhead_init(directory: str) -> None:
    """A process of (b)'s pool: like a campaign worker (one thread, dies with its parent, its
    programs' prints go to a log, not to the table)."""
    import torch

    from pyfy_fuzz.campaign.worker import die_with_parent

    die_with_parent()
    log = os.open(os.path.join(directory, f"overhead-{os.getpid()}.log"), os.O_WRONLY | os.O_CREAT)
    for fd in (1, 2):
        os.dup2(log, fd)
    os.close(log)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    _WORKDIR.append(Path(tempfile.mkdtemp(prefix="overhead-", dir=directory)))


def _overhead_task(spec_json: str, backend: str, device: str) -> dict[str, Any] | None:
    return overhead_one(ProgramSpec.from_json(spec_json), backend, _WORKDIR[0], device)


def measure_overhead(
    specs: list[ProgramSpec], backend: str, workers: int, directory: Path, device: str = "cpu"
) -> dict[str, Any]:
    """`overhead_one` for every spec on `workers` processes (the conditions of a campaign: one
    intra-op thread per worker, every core busy)."""
    from pyfy_fuzz.campaign.pool import mp_context

    samples, errors = [], []
    with cf.ProcessPoolExecutor(
        workers, mp_context=mp_context(), initializer=_overhead_init, initargs=(str(directory),)
    ) as ex:
        futures = [ex.submit(_overhead_task, s.to_json(), backend, device) for s in specs]
        for fut in futures:
            try:
                sample = fut.result()
            except Exception as exc:  # a pyfy-fuzz error, or a dead process (BrokenProcessPool)
                errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            if sample is not None:
                samples.append(sample)
    out = summarize_overhead(samples, len(specs), backend)
    out["workers"] = workers
    if errors:
        out["errors"] = errors[:5] + ([f"... {len(errors) - 5} more"] if len(errors) > 5 else [])
    return out
