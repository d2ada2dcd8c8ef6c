"""Where an explored case's time goes: drawn specs run one after another in one process, as a
campaign worker runs them (`worker.run_one`: the case, Dynamo's reset, the canary; one torch
thread), with or without `run --coverage`'s tracer, per runner stage (CaseResult.timings) and
per backend, in wall and CPU seconds (the process's own and its children's: Inductor's C++
compiles). CPU is the figure to compare on a shared machine; wall moves with whatever else
runs. Issue 36's throughput profile (BENCHMARKS.md "Issue 36: throughput").

    python benchmarks/case_stages.py --draw 80 --save /tmp/specs.json      # draw, then run
    python benchmarks/case_stages.py --specs /tmp/specs.json --coverage    # the same specs
    python benchmarks/case_stages.py --specs /tmp/specs.json --cprofile /tmp/cases.prof

Run it with PYTHONPATH at another checkout (a git worktree) to compare revisions on the same
specs (a spec format both read).
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")

import torch  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402


def _draw(n: int, at: int) -> list[Any]:
    """`n` specs of the campaign's default mix (explore._strategy), Hypothesis seed `at`."""
    from pyfy_fuzz.campaign import explore
    from pyfy_fuzz.campaign.config import CampaignConfig, default_mix

    config = CampaignConfig(budget_s=60, corpus=Path(tempfile.mkdtemp()), mix=default_mix("cpu"))
    specs: list[Any] = []
    run = settings(
        max_examples=n,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(seed(at)(given(explore._strategy(config))(lambda spec: specs.append(spec))))
    start = time.perf_counter()
    run()
    print(f"drawn: {len(specs)} specs, {1000 * (time.perf_counter() - start) / n:.1f} ms a spec")
    return specs


class _Conn:
    """The campaign's end of the pipe: nothing listens."""

    def send(self, message: object) -> None:
        pass

    def poll(self) -> bool:
        return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draw", type=int, default=80, help="specs to draw (without --specs)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--specs", type=Path, help="a JSON list of spec JSON (--save writes one)")
    ap.add_argument("--save", type=Path)
    ap.add_argument("--coverage", action="store_true", help="run --coverage's tracer")
    ap.add_argument("--cprofile", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(1)

    from generators import ProgramSpec
    from pyfy_fuzz.campaign.case_coverage import CaseCoverage
    from pyfy_fuzz.campaign.config import CampaignConfig, WorkerConfig, default_mix
    from pyfy_fuzz.campaign.worker import Channel, run_one
    from pyfy_fuzz.case import runner
    from pyfy_fuzz.case.subjects import BundledPythonify

    if args.specs:
        specs = [ProgramSpec.from_json(s) for s in json.loads(args.specs.read_text())]
    else:
        specs = _draw(args.draw, args.seed)
    if args.save:
        args.save.write_text(json.dumps([s.to_json() for s in specs]))
    config = CampaignConfig(budget_s=60, corpus=Path(tempfile.mkdtemp()), mix=default_mix("cpu"))
    worker = WorkerConfig(campaign=config, slot=0, workdir=tempfile.mkdtemp())
    ch = Channel(_Conn())  # type: ignore[arg-type]
    impl = BundledPythonify()
    if args.coverage:
        ch.coverage = CaseCoverage.start(tempfile.mkdtemp())
    run_one(ch, worker, impl, specs[0])  # the process's first case (lazy imports): not counted

    stages: collections.Counter[str] = collections.Counter()
    real = runner.run_case

    def timed(*a: Any, **k: Any) -> Any:
        result = real(*a, **k)
        stages.update(result.timings)
        return result

    import pyfy_fuzz.campaign.worker as worker_module

    worker_module.run_case = timed  # type: ignore[assignment]
    prof = None
    if args.cprofile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    backends: dict[str, list[float]] = collections.defaultdict(list)
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for spec in specs:
        start = time.perf_counter()
        outcome = run_one(ch, worker, impl, spec)
        backends[outcome.backend or "?"].append(time.perf_counter() - start)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids = kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime
    if prof is not None:
        prof.disable()
        prof.dump_stats(str(args.cprofile))
    n = len(specs)
    print(f"torch {torch.__version__}, coverage {'on' if args.coverage else 'off'}, {n} cases")
    print(f"CPU  {1000 * cpu / n:7.1f} ms a case (+ {1000 * kids / n:.1f} in children)")
    print(f"wall {1000 * wall / n:7.1f} ms a case")
    for backend, times in sorted(backends.items()):
        print(f"  {backend}: {len(times)} cases, {1000 * sum(times) / len(times):.1f} ms wall each")
    for key, total in stages.most_common():
        print(f"  {key:20s} {1000 * total / n:8.1f} ms a case")


if __name__ == "__main__":
    main()
