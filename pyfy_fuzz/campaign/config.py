"""A campaign's configuration: one frozen object, built once, read by everyone (torch-free).

    config = CampaignConfig(budget_s=600, corpus=Path("corpus"), mix=default_mix("cpu"))

`pyfy-fuzz run` (cli/run.py) checks the flags and builds a `CampaignConfig`; the campaign
keeps it as it is, and every worker receives the very same object inside its `WorkerConfig`,
beside the few things that are that worker's own (its slot, its log, what is known when it
starts). Nothing is copied field by field on the way, so a field added here reaches the
workers without a second edit. Invariants are checked in `__post_init__` ("expected X, got
Y"): a caller that builds a configuration by hand (the self-test, the tests) meets the same
rules the CLI's flags do. The module imports no torch: the campaign process, the pool and
the CLI read it before (or without) any worker importing torch.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfy_fuzz.schema.spec import PLAN_BACKENDS

__all__ = [
    "BackendMix",
    "CampaignConfig",
    "PROGRESS",
    "WorkerConfig",
    "default_mix",
    "serve_only",
]

PROGRESS = ("auto", "rich", "plain", "quiet")  # how a campaign shows it is alive
_DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class BackendMix:
    """The backends a campaign compiles with: `base` for most cases, `partner` for one drawn
    case in `share` (the spec names it in CallPlan.backend, so shrinking, saving and replay
    keep it). `--backend` pins one: no partner."""

    base: str = "aot_eager"  # "aot_eager" | "inductor": every case's, but the partner's share
    partner: str | None = None  # the other backend, or None
    share: int = 0  # one case in `share` is the partner's; 0 without a partner

    def __post_init__(self) -> None:
        for name, value in (("base", self.base), ("partner", self.partner)):
            if value is not None and value not in PLAN_BACKENDS:
                raise ValueError(
                    f"backend mix: expected a {name} in {PLAN_BACKENDS}, got {value!r}"
                )
        if (self.partner is None) != (self.share == 0):
            raise ValueError("a partner backend needs a share > 1, and a share a partner")
        if self.partner == self.base or self.share == 1:
            raise ValueError(f"{self} mixes nothing: the partner must differ and share be > 1")
        if self.share < 0:
            raise ValueError(f"backend mix: expected a share >= 0, got {self.share}")


def default_mix(device: str) -> BackendMix:
    """`pyfy-fuzz run` without --backend. On CPU, aot_eager (cheap and exact) with one case
    in 10 compiled by Inductor (cached kernels are reused across cases). On CUDA, Inductor
    (what users ship, with CUDA graphs under reduce-overhead: torch's cudagraph trees) with
    one case in 4 compiled by aot_eager, whose cudagraph reference is torch's `cudagraphs`
    backend (Note [The CUDA-graph reference] in subjects/stock.py)."""
    if device == "cuda":
        return BackendMix("inductor", "aot_eager", 4)
    return BackendMix("aot_eager", "inductor", 10)


@dataclass(frozen=True)
class CampaignConfig:
    """What one campaign runs, as `pyfy-fuzz run` (or a caller of `run_campaign`) asked;
    workers receive it as it is (`WorkerConfig.campaign`)."""

    # Seconds of exploring; the run ends by budget_s + grace_s (Note [Ending on time]).
    budget_s: float
    corpus: Path  # the corpus directory: entries, the Hypothesis database, campaign state
    device: str = "cpu"  # "cpu" | "cuda": where every case runs
    mix: BackendMix = BackendMix()  # the backends cases compile with (cli: default_mix)
    # --config: every drawn case runs under these catalogue knobs; None: each draws its own.
    config: tuple[str, ...] | None = None
    workers: int = 1  # worker processes
    seed: int = 0  # the campaign seed: the seed streams' root (streams.py)
    wrappers: tuple[str, ...] | None = None  # program families to generate; None: all
    max_cases: int | None = None  # stop after this many explored cases; None: the budget
    shard: tuple[int, int] = (1, 1)  # (K, N): this campaign's share of the seed streams
    impl: str = "bundled"  # the pythonify under test: bundled | torch | "module:factory"
    case_timeout: float = 60.0  # seconds before a case is a hang and its worker is killed
    shrink_seconds: float | None = None  # per finding; None: `shrink_s` from the budget
    recycle_cases: int = 300  # a worker is replaced after this many cases
    # Seconds past the budget the run may take to end: cases still running, repro checks, the
    # last saves and the summary all fit in it (Note [Ending on time]).
    grace_s: float = 15.0
    json_path: Path | None = None  # where the summary JSON goes (--json); None: nowhere
    progress: str = "auto"  # auto | rich | plain | quiet
    max_ops: int = 5  # statements a generated program may have
    max_inputs: int = 3  # arguments a generated program may take
    # coverage.py over torch's wrapper files and the generator, read after every case
    # (reports/coverage_data.py, Note [What coverage measures])
    coverage: bool = False
    # With coverage: programs that reach an arc no earlier one reached are kept in a pool the
    # explorer draws mutations from (Note [Steering] in steering.py); False: never drawn from
    # (the same measurement, for comparing steered with unsteered runs)
    steer: bool = True
    # Stop at the first case with a finding against this subject ("pythonify": the self-test's
    # "the planted bug was caught"); the summary's "stopped_on" says when and on what.
    stop_on_subject: str | None = None

    def __post_init__(self) -> None:
        checks: list[tuple[bool, str, object]] = [
            (self.budget_s > 0, "a budget_s > 0", self.budget_s),
            (self.device in _DEVICES, f"a device in {_DEVICES}", self.device),
            (isinstance(self.mix, BackendMix), "a BackendMix", self.mix),
            (_tuple_or_none(self.config), "config knobs as a tuple or None", self.config),
            (self.workers >= 1, "workers >= 1", self.workers),
            (_tuple_or_none(self.wrappers), "wrappers as a tuple or None", self.wrappers),
            (self.wrappers != (), "at least one wrapper family (None: all)", self.wrappers),
            (self.max_cases is None or self.max_cases >= 1, "max_cases >= 1", self.max_cases),
            (1 <= self.shard[0] <= self.shard[1], "a shard (K, N), 1 <= K <= N", self.shard),
            (bool(self.impl), "a pythonify implementation", self.impl),
            (self.case_timeout > 0, "a case_timeout > 0", self.case_timeout),
            (
                self.shrink_seconds is None or self.shrink_seconds >= 0,
                "shrink_seconds >= 0 or None",
                self.shrink_seconds,
            ),
            (self.recycle_cases >= 1, "recycle_cases >= 1", self.recycle_cases),
            (self.grace_s >= 0, "a grace_s >= 0", self.grace_s),
            (self.progress in PROGRESS, f"progress in {PROGRESS}", self.progress),
        ]
        for ok, expected, got in checks:
            if not ok:
                raise ValueError(f"campaign config: expected {expected}, got {got!r}")

    @property
    def shrink_s(self) -> float:
        """Seconds of shrinking per finding."""
        if self.shrink_seconds is not None:
            return self.shrink_seconds
        # Shrinking is time not spent exploring: a bug's minimal program is usually reached in
        # seconds (the reducer stops at its fixpoint), so 2% of the budget, 8..20 s.
        return min(20.0, max(8.0, 0.02 * self.budget_s))


def _tuple_or_none(value: object) -> bool:
    return value is None or isinstance(value, tuple)


def serve_only(device: str = "cpu", impl: str = "bundled") -> CampaignConfig:
    """The configuration of a pool that only runs the jobs it is sent (replay, migrate, the
    bench): no budget of its own -- its caller stops the pool -- and no corpus (each job
    names where its run goes; an explore command would fail on the null device)."""
    return CampaignConfig(budget_s=math.inf, corpus=Path(os.devnull), device=device, impl=impl)


@dataclass(frozen=True)
class WorkerConfig:
    """One start of one worker: the campaign's configuration as it is, and what is this
    worker's own. Picklable: it crosses the process boundary (pool.py)."""

    campaign: CampaignConfig  # the same object for every worker of the campaign
    slot: int  # the pool's slot this process fills
    workdir: str = "."  # where its cases write their files (pythonified.py, programs)
    log_path: str | None = None  # its stdout and stderr; None: inherited
    # What is known when it starts (KnownBug.to_dict()s) and specs (JSON) that killed a
    # worker; later news comes as Known/Avoid messages.
    known: tuple[dict[str, Any], ...] = ()
    avoid: tuple[str, ...] = ()
    owner_pid: int | None = None  # the campaign's pid: names stagings (cleanup keys on it)
    replay_database: bool = False  # replay the example database first (one worker, once)
    coverage_dir: str | None = None  # run --coverage: where this worker saves its data
    # run --coverage: the arcs of torch's files the campaign has seen, (file, arc), and the
    # steering pool's specs (JSON) when it starts (Note [Steering] in steering.py)
    seen: tuple[tuple[str, Any], ...] = ()
    seeds: tuple[str, ...] = ()
    rss_soft_bytes: int = 3 << 30  # resident memory after a case past which it is recycled
    threads: int = 1  # torch's intra-op threads (the campaign's cores shared by its workers)

    def __post_init__(self) -> None:
        if not isinstance(self.campaign, CampaignConfig):
            raise ValueError(f"worker config: expected a CampaignConfig, got {self.campaign!r}")
        if self.slot < 0 or self.threads < 1:
            raise ValueError(
                f"worker config: expected slot >= 0 and threads >= 1, got {self.slot}, "
                f"{self.threads}"
            )
