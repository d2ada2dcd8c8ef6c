"""Cost of generating, rendering and importing one program, next to compiling it.

    .venv/bin/python benchmarks/bench_generators.py [--examples 300]

Draws specs from `programs()` (all families), and times per example: the Hypothesis draw
(spec generation), `render(spec)`, and `materialize(spec)` (write + import). For scale it
also times a torch.compile(aot_eager) + first call of a sample of the programs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings

import torch
import torch._dynamo
from hypothesis import HealthCheck, given, settings

from generators import ProgramSpec, materialize, programs, render


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--compile-sample", type=int, default=30)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    specs: list[ProgramSpec] = []
    draw_times: list[float] = []
    last = [time.perf_counter()]

    @settings(
        max_examples=args.examples,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs())
    def collect(spec: ProgramSpec) -> None:
        now = time.perf_counter()
        draw_times.append(now - last[0])  # includes Hypothesis' own per-example overhead
        specs.append(spec)
        last[0] = time.perf_counter()

    t0 = time.perf_counter()
    collect()
    gen_total = time.perf_counter() - t0
    render_times, mat_times = [], []
    with tempfile.TemporaryDirectory() as d:
        for spec in specs:
            a = time.perf_counter()
            render(spec)
            b = time.perf_counter()
            materialize(spec, d)
            c = time.perf_counter()
            render_times.append(b - a)
            mat_times.append(c - b)
        compile_times = []
        for spec in specs[: args.compile_sample]:
            program = materialize(spec, d)
            torch._dynamo.reset()
            a = time.perf_counter()
            try:
                compiled = torch.compile(program.make_fn(), backend="aot_eager")
                program.module.drive(compiled, program.make_inputs(0), 0)
            except Exception:
                continue
            finally:
                torch.set_grad_enabled(True)
            compile_times.append(time.perf_counter() - a)
    n = len(specs)
    ops = statistics.mean(len(s.body) for s in specs)
    ins = statistics.mean(len(s.inputs) for s in specs)
    print(f"examples: {n} (mean {ops:.1f} statements, {ins:.1f} inputs)")
    print(f"generate (Hypothesis draw, whole run / n): {1e3 * gen_total / n:.2f} ms")
    print(f"render: mean {1e3 * statistics.mean(render_times):.3f} ms")
    print(f"materialize (write + import): mean {1e3 * statistics.mean(mat_times):.2f} ms")
    if compile_times:
        print(
            f"torch.compile(aot_eager) + first call + backward: "
            f"mean {1e3 * statistics.mean(compile_times):.0f} ms over {len(compile_times)}"
        )


if __name__ == "__main__":
    main()
