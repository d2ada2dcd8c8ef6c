"""The runner's own cost per case, next to the bare torch work it wraps.

    .venv/bin/python benchmarks/bench_runner.py [--examples 60] [--backend aot_eager]

For a fixed, derandomized set of programs (all families), times per case:
- full: `run_case(spec)` (two eager runs, the one compile, torch.compile and the file run
  through the plan, probes, oracles);
- bare: the least torch work the same comparison needs -- eager through the plan twice, the
  one compile (pythonify's capture + codegen, which is also torch.compile's compile), the
  compiled callable and the file through the plan, and the plan's variant call in all three
  (where torch.compile recompiles); nothing recorded, probed or compared.
Each path runs twice per program (alternating) and the faster run counts. Prints the means,
the ratio full/bare, and run_case's own breakdown (of its last run).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch._dynamo
from hypothesis import HealthCheck, Phase, given, settings

from generators import ProgramSpec, materialize, programs
from pyfy_fuzz.pythonify import load, pythonify
from pyfy_fuzz.runner import run_case


def bare(spec: ProgramSpec, backend: str, d: Path) -> float | None:
    t0 = time.perf_counter()
    program = materialize(spec)
    plan = program.plan
    drive = program.module.drive

    def through_plan(call, module):  # type: ignore[no-untyped-def]
        for seed in range(plan.calls):
            try:
                drive(call, program.make_inputs(seed), seed, module=module)
            except Exception:
                pass
            finally:
                torch.set_grad_enabled(True)

    for _ in range(2):
        fn = program.make_fn()
        through_plan(fn, fn)
    torch._dynamo.reset()
    fn = program.make_fn()
    try:
        r = pythonify(
            fn,
            program.make_inputs(0),
            d / "p.py",
            backend=backend,
            frontend=plan.frontend,
            dynamic=plan.dynamic,
            mode=plan.mode,
        )
    except Exception:
        return None
    through_plan(r.compiled, fn)
    fn2 = program.make_fn()
    mod = load(r.path, bind=fn2)
    through_plan(mod.call, fn2)
    if plan.variant is not None:  # the plan's guard-breaking call (torch.compile recompiles)
        for call, module in ((program.make_fn(), None), (r.compiled, fn), (mod.call, fn2)):
            try:
                drive(call, program.make_inputs(0, plan.variant), 0, module=module)
            except Exception:
                pass
            finally:
                torch.set_grad_enabled(True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=60)
    ap.add_argument("--backend", default="aot_eager")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    specs: list[ProgramSpec] = []

    @settings(
        max_examples=args.examples,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(programs())
    def collect(spec: ProgramSpec) -> None:
        specs.append(spec)

    collect()
    fulls, bares, parts = [], [], {}
    with tempfile.TemporaryDirectory() as d:
        for spec in specs:
            # Both paths twice, alternating; the minimum of each removes first-import and
            # warm-up costs from whichever happened to run first.
            b_times, f_times, result = [], [], None
            for _ in range(2):
                b = bare(spec, args.backend, Path(d))
                if b is None:
                    break  # not pythonifiable: the bare path has nothing to compare
                b_times.append(b)
                torch._dynamo.reset()
                t0 = time.perf_counter()
                result = run_case(spec, backend=args.backend, workdir=d)
                f_times.append(time.perf_counter() - t0)
            if not b_times or result is None:
                continue
            bares.append(min(b_times))
            fulls.append(min(f_times))
            for k, v in result.timings.items():
                parts.setdefault(k, []).append(v)
    n = len(fulls)
    f, b = statistics.mean(fulls), statistics.mean(bares)
    print(f"torch {torch.__version__}, backend {args.backend}, {n} cases of {len(specs)} drawn")
    print(f"bare torch work per case: {1e3 * b:.1f} ms")
    print(
        f"run_case per case:        {1e3 * f:.1f} ms   (ratio {f / b:.2f}x, "
        f"harness {1e3 * (f - b):.1f} ms)"
    )
    for k, v in sorted(parts.items()):
        print(f"  {k:20s} {1e3 * statistics.mean(v):7.1f} ms")


if __name__ == "__main__":
    main()
