"""`pyfy-fuzz bench`: what a campaign costs, measured in one run on a fixed, seeded program set.

Three measurements, each answering one question about where the time and memory go:

(a) **throughput**: cases/min per wrapper family and overall, per backend, with N worker
    processes of the campaign's own pool (pool.py serve workers: forked from the fork server
    that imported torch, one intra-op thread each, Dynamo reset after every case). The clock
    runs from the first case's start to the last case's end as the pool sees them, so process
    start-up and the import of torch are outside it, as they are outside a campaign's budget.
(b) **overhead**: `run_case` against the bare torch work the same comparison needs (`bare`),
    per spec, in worker processes like (a)'s: is the harness spending its time in torch?
(c) **memory**: a real `pyfy-fuzz run` as a subprocess, its process tree sampled from /proc
    every second (procstat.py): does a long campaign stay flat after warm-up?

`run_bench` runs the three in turn and returns plain data (the JSON of `--json`); (a) and the
program set live here, (b) in overhead.py, (c) in memory.py; tables.py makes the tables.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generators import FAMILIES, ProgramSpec, programs
from pyfy_fuzz.bench.memory import campaign_rss
from pyfy_fuzz.bench.overhead import measure_overhead
from pyfy_fuzz.campaign.procstat import machine
from pyfy_fuzz.schema.messages import Died, Done, Serve, Started

if TYPE_CHECKING:
    from pyfy_fuzz.campaign.pool import Event

__all__ = [
    "BenchConfig",
    "CLOCK",
    "INDUCTOR_CACHE",
    "TARGETS",
    "Workers",
    "draw",
    "eager_validity",
    "mix",
    "program_set",
    "run_bench",
]

TARGETS = {"cases_per_min": 400.0, "overhead_ratio": 1.2, "rss_growth": 0.20}
INDUCTOR_CACHE = (
    "warm: one untimed pass over the same inductor programs on the same workers first "
    "(Inductor's kernel caches, on disk and in memory, hold their kernels; pythonify turns the "
    "FX graph and AOTAutograd caches off, so every timed case still lowers its graphs)"
)
CLOCK = (
    "wall clock from the first case's start to the last case's end; worker start-up and the "
    "import of torch are excluded"
)


@dataclass
class BenchConfig:
    seed: int = 0
    programs: int = 20  # per family, aot_eager (also the overhead set)
    inductor_programs: int = 2  # per family
    workers: int = 2
    backends: tuple[str, ...] = ("aot_eager", "inductor")
    rss_seconds: float = 600.0  # 0: skip (c)
    quick: bool = False
    device: str = "cpu"  # cuda: every case on the GPU, reduce-overhead under torch's CUDA graphs
    families: tuple[str, ...] | None = None  # the program set's families; None: every family
    overhead_backend: str = "aot_eager"  # (b)'s backend
    log: Callable[[str], None] = field(default=lambda line: None, repr=False)


# -- the program set ----------------------------------------------------------------------------
def draw(strategy: Any, n: int, seed: int) -> list[ProgramSpec]:
    """The first `n` examples Hypothesis generates from `strategy` with `seed`: the same seed
    gives the same specs (generate phase only, no database, no shrinking)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as with_seed

    specs: list[ProgramSpec] = []

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
        verbosity=Verbosity.quiet,
    )
    @given(strategy)
    def collect(spec: ProgramSpec) -> None:
        specs.append(spec)

    with_seed(seed)(collect)()
    return specs[:n]


def program_set(
    seed: int, per_family: int, families: tuple[str, ...] | None = None
) -> list[ProgramSpec]:
    """`per_family` specs of every family (or of `families`), drawn as a campaign draws them
    (same size limits), families interleaved so that a slow family does not finish a batch
    alone."""
    by_family = [draw(programs([f]), per_family, seed) for f in families or FAMILIES]
    return [specs[i] for i in range(per_family) for specs in by_family if i < len(specs)]


def mix(specs: list[ProgramSpec]) -> dict[str, Any]:
    return {
        "programs": len(specs),
        "families": sorted({s.family for s in specs}),
        "mean_ops": round(statistics.mean(len(s.body) for s in specs), 2),
        "mean_inputs": round(statistics.mean(len(s.inputs) for s in specs), 2),
    }


# -- (a) throughput -----------------------------------------------------------------------------
class Workers:
    """N serve workers of the campaign's pool; a worker that dies or is recycled is replaced."""

    def __init__(self, n: int, directory: Path, device: str = "cpu") -> None:
        from pyfy_fuzz.campaign.config import WorkerConfig, serve_only
        from pyfy_fuzz.campaign.pool import Pool

        campaign = serve_only(device)

        def config(slot: int) -> WorkerConfig:
            work = directory / f"work-{slot}"
            work.mkdir(exist_ok=True)
            return WorkerConfig(
                campaign,
                slot=slot,
                workdir=str(work),
                log_path=str(directory / f"worker-{slot}.log"),
            )

        self.pool = Pool(n, config, case_timeout=300.0)
        self._used: set[tuple[int, int]] = set()  # (slot, incarnation) that ran a case

    def __enter__(self) -> Workers:
        try:
            for slot in self.pool.slots:
                self.pool.start(slot.index, Serve())
            while not all(s.ready for s in self.pool.slots):  # start-up: not on the clock
                self._replace(self.pool.poll(0.2))
        except BaseException:  # WorkerStartError, ^C: leave no worker behind
            self.pool.stop(grace=0)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.stop(grace=10.0)

    def _replace(self, events: list[Event]) -> None:
        for ev in events:
            if ev.gone:
                self.pool.start(ev.slot, Serve())

    def run(self, specs: list[ProgramSpec], backend: str) -> dict[str, Any]:
        """Run every spec once; the wall time and, per family, each case's latency."""
        futures = [self.pool.submit(s.to_json(), backend=backend) for s in specs]
        started: dict[int, tuple[float, str]] = {}  # slot -> (start, family)
        first = last = None
        latency: dict[str, list[float]] = {}
        status: dict[str, int] = {}
        fresh: list[float] = []  # the first case of a worker process: lazy imports, warm-up
        while not all(f.done() for f in futures):
            events = self.pool.poll(0.5)
            for ev in events:
                now = time.monotonic()
                m = ev.message
                if isinstance(m, Started):
                    started[ev.slot] = (now, json.loads(m.spec)["family"])
                    first = now if first is None else first
                elif isinstance(m, (Done, Died)) and ev.slot in started:
                    t0, family = started.pop(ev.slot)
                    latency.setdefault(family, []).append(now - t0)
                    key = m.outcome.status if isinstance(m, Done) else "died"
                    status[key] = status.get(key, 0) + 1
                    last = now
                    incarnation = (ev.slot, self.pool.slots[ev.slot].incarnation)
                    if isinstance(m, Done) and incarnation not in self._used:
                        self._used.add(incarnation)
                        fresh.append(round(now - t0, 2))
            self._replace(events)
        wall = (last - first) if first is not None and last is not None else 0.0
        out = _throughput(backend, len(self.pool.slots), wall, latency, status)
        return {**out, "fresh_worker_case_s": fresh}


def _throughput(
    backend: str, workers: int, wall: float, latency: dict[str, list[float]], status: Any
) -> dict[str, Any]:
    """Overall cases/min is cases over wall time. A family's cases/min is what the workers
    would sustain on that family alone: workers x 60 / its mean case latency (the families
    share the workers, so their wall time cannot be split)."""
    cases = sum(map(len, latency.values()))
    return {
        "backend": backend,
        "workers": workers,
        "cases": cases,
        "wall_s": round(wall, 2),
        "cases_per_min": round(60 * cases / wall, 1) if wall > 0 else None,
        "status": dict(sorted(status.items())),
        "per_family": {
            f: {
                "cases": len(v),
                "mean_case_s": round(statistics.mean(v), 3),
                "cases_per_min": round(60 * workers / statistics.mean(v), 1),
            }
            for f, v in sorted(latency.items())
        },
    }


# -- the whole bench ----------------------------------------------------------------------------
def run_bench(config: BenchConfig) -> dict[str, Any]:
    """Run (a), (b), (c) in turn (never at once: each would slow the others) and return the
    result as plain data.

    Long: the three measurements in the order they run, each with its progress line, so one
    read shows what a bench run does and in what order."""
    import torch

    say = config.log
    started = time.monotonic()
    result: dict[str, Any] = {
        "cases_per_min": {b: None for b in ("aot_eager", "inductor")},
        "overhead_ratio": None,
        "rss_growth": None,
        "machine": {
            **machine(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        },
        "torch": torch.__version__,
        "config": {k: v for k, v in vars(config).items() if k != "log"},
        "notes": [],
    }
    say(f"bench: drawing the program set (seed {config.seed})")
    specs = program_set(config.seed, config.programs, config.families)
    result["mix"] = mix(specs)
    say(f"bench: eager validity of {len(specs)} programs")
    result["validity"] = eager_validity(specs)
    throughput: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pyfy-bench-") as tmp:
        root = Path(tmp)
        if config.backends:
            say(f"bench: starting {config.workers} workers")
            with Workers(config.workers, root, config.device) as workers:
                for backend in config.backends:
                    batch = specs
                    if backend == "inductor":
                        batch = program_set(config.seed, config.inductor_programs, config.families)
                        result["mix_inductor"] = mix(batch)
                        say(f"bench: inductor warm-up pass, {len(batch)} cases")
                        warm = workers.run(batch, backend)["wall_s"]
                    say(f"bench: {backend} throughput, {len(batch)} cases")
                    throughput[backend] = workers.run(batch, backend)
                    if backend == "inductor":
                        throughput[backend] |= {"caches": INDUCTOR_CACHE, "warmup_wall_s": warm}
                    result["cases_per_min"][backend] = throughput[backend]["cases_per_min"]
        result["throughput"] = throughput
        backend = config.overhead_backend
        say(f"bench: overhead, {len(specs)} programs x 2 paths x 2 runs ({backend})")
        result["overhead"] = measure_overhead(specs, backend, config.workers, root, config.device)
        result["overhead_ratio"] = result["overhead"]["ratio"]
        result["rss"] = None
        if config.rss_seconds > 0:
            seconds = max(1, round(config.rss_seconds))
            say(f"bench: memory over a {seconds} s campaign (pyfy-fuzz run)")
            try:
                rss_dir = root / "rss"
                rss_dir.mkdir()
                result["rss"] = campaign_rss(seconds, config.workers, config.seed, rss_dir)
                result["rss_growth"] = result["rss"]["rss_growth"]
            except (RuntimeError, OSError) as exc:
                result["notes"].append(f"memory: {exc}")
    result["targets"] = _targets(result, config)
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    return result


def eager_validity(specs: list[ProgramSpec]) -> dict[str, dict[str, Any]]:
    """Per family, the share of programs whose plan eager runs without raising (issue 17:
    at least 85% each), and the later calls (variant, sequence) that could not be built --
    always 0: such a call is drawn away (`variant_changes`), never run to fail."""
    import torch

    from generators import materialize
    from pyfy_fuzz.case.observe import observe_subject
    from pyfy_fuzz.case.subjects import eager_target

    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        program = materialize(spec)
        obs = observe_subject(program, eager_target(program), probes=False)
        torch.set_grad_enabled(True)
        calls = [*obs.calls, *([obs.variant] if obs.variant else []), *obs.sequence]
        row = out.setdefault(spec.family, {"programs": 0, "valid": 0, "unbuilt_calls": 0})
        row["programs"] += 1
        row["valid"] += obs.setup_error is None and all(c.raised is None for c in calls)
        row["unbuilt_calls"] += sum(
            c.raised is not None and c.raised.phase == "inputs" for c in calls
        )
    for row in out.values():
        row["valid_share"] = round(row["valid"] / row["programs"], 3)
    return dict(sorted(out.items()))


def _targets(result: dict[str, Any], config: BenchConfig) -> dict[str, Any]:
    """Each target with its value, whether it was met, and whether this run measured it under
    the conditions the target is stated for (a --quick run does not)."""
    default = BenchConfig()
    two_by_two = config.workers == 2 and result["machine"]["cores"] == 2
    values = {
        "cases_per_min": (
            result["cases_per_min"]["aot_eager"],
            "aot_eager, 2 workers, 2 cores, default mix",
            two_by_two and config.programs == default.programs,
        ),
        "overhead_ratio": (result["overhead_ratio"], config.overhead_backend, True),
        "rss_growth": (
            result["rss_growth"],
            "a 10-minute campaign",
            config.rss_seconds >= default.rss_seconds,
        ),
    }
    out = {}
    for key, target in TARGETS.items():
        v, stated_for, as_stated = values[key]
        met = None if v is None else (v >= target if key == "cases_per_min" else v <= target)
        out[key] = {
            "target": target,
            "value": v,
            "met": met,
            "stated_for": stated_for,
            "as_stated": as_stated,
        }
    return out
