"""The runner's own cost per case, next to the bare torch work it wraps.

    .venv/bin/python benchmarks/bench_runner.py [--examples 60] [--backend aot_eager]

For a fixed, derandomized set of programs (all families), times per case:
- full: `run_case(spec)` (two eager runs, the one compile, torch.compile and the file run
  through the plan, probes, oracles);
- bare: the least torch work the same comparison needs -- eager through the plan twice, the
  one compile (pythonify's capture + codegen, which is also torch.compile's compile), the
  compiled callable and the file through the plan, nothing recorded or compared.
Prints the means, the ratio full/bare, and run_case's own breakdown.
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
        for spec in specs * 1:
            b = bare(spec, args.backend, Path(d))
            if b is None:
                continue  # not pythonifiable: the bare path has nothing to compare
            torch._dynamo.reset()
            t0 = time.perf_counter()
            r = run_case(spec, backend=args.backend, workdir=d)
            fulls.append(time.perf_counter() - t0)
            bares.append(b)
            for k, v in r.timings.items():
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
