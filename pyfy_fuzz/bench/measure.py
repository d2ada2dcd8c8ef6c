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

`run_bench` returns plain data (the JSON of `--json`); `render` makes the tables.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generators import FAMILIES, ProgramSpec, programs
from pyfy_fuzz.campaign.procstat import TreeSample, machine, sample_until_exit
from pyfy_fuzz.schema.messages import Died, Done, Serve, Started

if TYPE_CHECKING:
    from pyfy_fuzz.campaign.pool import (
        Event,  # the pool imports torch (through the worker): not at import time
    )

__all__ = [
    "BenchConfig",
    "CLOCK",
    "INDUCTOR_CACHE",
    "TARGETS",
    "WARMUP_SHARE",
    "WINDOW_SHARE",
    "Workers",
    "bare",
    "campaign_rss",
    "draw",
    "eager_validity",
    "measure_overhead",
    "mix",
    "overhead_one",
    "program_set",
    "rss_metrics",
    "run_bench",
    "summarize_overhead",
]

TARGETS = {"cases_per_min": 400.0, "overhead_ratio": 1.2, "rss_growth": 0.20}
WARMUP_SHARE, WINDOW_SHARE = 0.2, 0.1  # of the RSS campaign's budget: 2 and 1 min of 10
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
        from pyfy_fuzz.campaign.pool import Pool
        from pyfy_fuzz.campaign.worker import WorkerConfig

        def config(slot: int) -> WorkerConfig:
            work = directory / f"work-{slot}"
            work.mkdir(exist_ok=True)
            return WorkerConfig(
                slot=slot,
                workdir=str(work),
                log_path=str(directory / f"worker-{slot}.log"),
                device=device,
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


# -- (b) overhead -------------------------------------------------------------------------------
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


# -- (c) memory over a real campaign ------------------------------------------------------------
def campaign_rss(seconds: int, workers: int, seed: int, directory: Path) -> dict[str, Any]:
    """Run `pyfy-fuzz run` for `seconds` on a fresh corpus, sample its tree every second."""
    summary_path = directory / "summary.json"
    cmd = [sys.executable, "-m", "pyfy_fuzz", "run", "--budget", f"{seconds}s"]
    cmd += ["--corpus", str(directory / "corpus"), "--json", str(summary_path)]
    cmd += ["--progress", "quiet", "--workers", str(workers), "--seed", str(seed)]
    with open(directory / "campaign.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            samples = sample_until_exit(proc)
        finally:
            if proc.poll() is None:  # interrupted: take the campaign down with us
                proc.terminate()
                proc.wait(30)
    if proc.returncode not in (0, 1) or not summary_path.is_file():
        tail = (directory / "campaign.log").read_text(errors="replace").strip().splitlines()
        raise RuntimeError(
            f"the campaign exited {proc.returncode}: {tail[-1] if tail else 'no output'}"
        )
    summary = json.loads(summary_path.read_text())
    out = rss_metrics(samples)
    out["budget_s"] = seconds
    out["campaign"] = {
        k: summary[k] for k in ("cases", "cases_per_min", "shrink_cases", "recycled", "deaths")
    }
    # Who the new findings are against: a pythonify one here is a generator bug (or a false
    # positive of an oracle) worth a look.
    subjects: dict[str, int] = {}
    for f in summary["findings"]:
        subjects[f["subject"]] = subjects.get(f["subject"], 0) + 1
    out["campaign"]["findings_by_subject"] = subjects
    return out


def _mean_in(series: list[tuple[float, int]], lo: float, hi: float) -> float | None:
    values = [v for t, v in series if lo <= t <= hi]
    return statistics.mean(values) if values else None


def rss_metrics(samples: list[TreeSample]) -> dict[str, Any]:
    """Memory of a campaign's workers (the processes its fork server forked, depth 2).

    The span is the time the workers ran: from the first sample with a worker to the last
    sample with as many workers as there ever were (the campaign's budget, less its start-up;
    at the deadline the workers leave). The warm-up is its first 20%, the windows 10% (2 and
    1 minutes of 10). S(t) is the total RSS of the live workers. Each worker is recycled after
    300 cases and restarts low, so S is a saw-tooth, a window's mean depends on where the
    teeth fall, and a leak in a worker is cut back at every recycle. The growth is therefore
    taken on the envelope E(t) = max of S over the trailing worker lifetime (the median life of
    the workers that ended before the span did; 0, i.e. E = S, when none did):
        rss_growth = mean E(last window) / mean E(first window after warm-up) - 1.
    Without recycling this is the plain ratio of S's means (`plain_growth`). Growth that
    survives recycling (in the campaign, the fork server, what each new worker is handed) shows
    in it; a per-case leak in a worker shows in `worker_life_growth`: each ended worker's last
    RSS (at recycle) against its mean RSS over the first 20% of its own life, median. The
    campaign process (depth 0) and the fork server (the workers' parent) are reported apart.

    Long: each number is defined by the paragraph above and computed in that order, over
    the same span and windows.
    """
    # Depth 2 exactly: a worker's own child (tlparse indexing an entry's trace, for a few
    # milliseconds) is no worker -- counted as one, it made "as many workers as there ever
    # were" a passing instant and left the windows empty.
    alive = [[p for p in s.procs.values() if p.depth == 2] for s in samples]
    seen = [(s.t, w) for s, w in zip(samples, alive, strict=True) if w]
    if not seen:
        raise RuntimeError(f"no campaign worker was seen in {len(samples)} samples")
    born, most = seen[0][0], max(len(w) for _, w in seen)
    span = max(t for t, w in seen if len(w) == most) - born
    series = [(t - born, sum(p.rss for p in w)) for t, w in seen if t - born <= span]
    lives: dict[int, list[tuple[float, int]]] = {}
    for t, w in seen:
        for p in w:
            if p.rss > 0:  # an exiting (zombie) worker reads 0: not a size it ever had
                lives.setdefault(p.pid, []).append((t - born, p.rss))
    ended = [v for v in lives.values() if v[-1][0] < span - 1]  # recycled (or died)
    life = statistics.median(v[-1][0] - v[0][0] for v in ended) if ended else 0.0
    envelope = [(t, max(x for u, x in series if t - life <= u <= t)) for t, _ in series]
    first = (WARMUP_SHARE * span, (WARMUP_SHARE + WINDOW_SHARE) * span)
    last = ((1 - WINDOW_SHARE) * span, span)
    e0, e1 = _mean_in(envelope, *first), _mean_in(envelope, *last)
    s0, s1 = _mean_in(series, *first), _mean_in(series, *last)
    in_life = [
        v[-1][1] / warm - 1
        for v in ended
        if (warm := _mean_in(v, v[0][0], v[0][0] + WARMUP_SHARE * (v[-1][0] - v[0][0])))
    ]
    mib = 2**20

    def apart(pick: Callable[[Any], bool]) -> dict[str, int | None]:
        mine = [(t - born, sum(p.rss for p in s.procs.values() if pick(p))) for t, s in tree]
        return {
            k: round(v / mib) if (v := _mean_in(mine, *w)) else None
            for k, w in (("first_window", first), ("last_window", last))
        }

    tree = [(s.t, s) for s in samples if 0 <= s.t - born <= span]
    parents = {p.ppid for _, w in seen for p in w}
    return {
        "rss_growth": round(e1 / e0 - 1, 4) if e0 and e1 else None,
        "plain_growth": round(s1 / s0 - 1, 4) if s0 and s1 else None,
        "span_s": round(span, 1),
        "samples": len(series),
        "windows_s": {
            "first": [round(x, 1) for x in first],
            "last": [round(x, 1) for x in last],
            "envelope": round(life, 1),
        },
        "workers_rss_mib": {
            "first_window": round(s0 / mib) if s0 else None,
            "last_window": round(s1 / mib) if s1 else None,
        },
        "worker_rss_peak_mib": round(max(x for v in lives.values() for _, x in v) / mib),
        "worker_rss_at_recycle_mib": [round(v[-1][1] / mib) for v in ended],
        "worker_life_growth": round(statistics.median(in_life), 4) if in_life else None,
        "worker_lives": len(lives),
        "campaign_rss_mib": apart(lambda p: p.depth == 0),
        "fork_server_rss_mib": apart(lambda p: p.pid in parents),
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


# -- tables -------------------------------------------------------------------------------------
