"""`pyfy-fuzz run`: a budgeted campaign of worker processes that saves shrunk findings.

    result = run_campaign(CampaignConfig(budget_s=600, corpus=Path("corpus")))
    result.exit_code, result.summary

The campaign process does no torch work itself. Workers explore (Hypothesis, shrinking their
own findings); the campaign keeps the books: which signatures are known (the corpus's plus
this run's), the smallest spec seen for each new one, what killed a worker. A case that kills
or hangs its worker becomes a finding with its spec and is reduced here with `shrink.reduce`,
each candidate run on a serve worker. Everything is saved through `Corpus`, atomically, and
the run ends within its budget plus `grace_s` (Note [Ending on time]). Campaigns may share a
corpus at once (Note [Shards share a corpus] in corpus.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import shutil
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generators import ProgramSpec
from oracles import Finding
from oracles.finding import as_kind, as_subject
from oracles.groups import group_of
from oracles.identity import PENDING, KnownBug, KnownBugs, severity_of
from oracles.upstream import known_upstream
from pyfy_fuzz import __version__
from pyfy_fuzz.campaign.limits import memory_limit
from pyfy_fuzz.campaign.pool import Event, Pool
from pyfy_fuzz.campaign.progress import make_progress
from pyfy_fuzz.campaign.streams import Streams
from pyfy_fuzz.campaign.worker import WorkerConfig
from pyfy_fuzz.corpus.entry import derived_fields, entry_files, readme_of
from pyfy_fuzz.corpus.releases import records_of, releases_line
from pyfy_fuzz.corpus.store import Corpus, environment, now_iso
from pyfy_fuzz.corpus.trace import TRACE_DIR
from pyfy_fuzz.reports.coverage_data import combine_coverage
from pyfy_fuzz.schema.atomic import atomic_write
from pyfy_fuzz.schema.case import BUG_IN, OPTIONAL_FIELDS, BugIn, CaseRecord
from pyfy_fuzz.schema.case import FORMAT as CASE_FORMAT
from pyfy_fuzz.schema.finding import PHASE_SUBJECT
from pyfy_fuzz.schema.messages import (
    Avoid,
    Broken,
    Died,
    Done,
    Exited,
    Explore,
    FindingDict,
    Found,
    Improved,
    Known,
    Note,
    Serve,
    Shrunk,
)

__all__ = [
    "Campaign",
    "CampaignConfig",
    "CampaignResult",
    "BackendMix",
    "default_mix",
    "FINISH_S",
    "MAX_SHRINKS_PER_COARSE",
    "UNCHECKED_CASES",
    "NewFinding",
    "PHASE_SUBJECT",  # re-exported from schema.finding
    "REPRO_MIN_S",
    "REPRO_TIMEOUT_S",
    "RESCAN_S",
    "Stats",
    "combine_coverage",
    "run_campaign",
]


@dataclass
class CampaignConfig:
    budget_s: float
    corpus: Path
    device: str = "cpu"
    backend: str = "aot_eager"  # the base backend: every case's, but the partner's share
    # One drawn case in `partner_share` compiles with `partner` instead (`pyfy-fuzz run`
    # without --backend: default_mix(device)); 0: every case uses `backend`.
    partner: str | None = None
    partner_share: int = 0
    # --config: every drawn case runs under these catalogue knobs; None: each draws its own.
    config: tuple[str, ...] | None = None
    workers: int = 1
    seed: int = 0
    wrappers: list[str] | None = None
    max_cases: int | None = None
    shard: tuple[int, int] = (1, 1)
    impl: str = "bundled"
    case_timeout: float = 60.0
    shrink_seconds: float | None = None  # default: 2% of the budget, within [8, 20] s
    recycle_cases: int = 300
    # Seconds past the budget the run may take to end: cases still running, repro checks, the
    # last saves and the summary all fit in it (Note [Ending on time]).
    grace_s: float = 15.0
    json_path: Path | None = None
    progress: str = "auto"  # auto | rich | plain | quiet
    max_ops: int = 5
    max_inputs: int = 3
    coverage: bool = False  # coverage.py over AOTAutograd's runtime wrappers and the generator
    # Stop at the first case with a finding against this subject ("pythonify": the self-test's
    # "the planted bug was caught"); the summary's "stopped_on" says when and on what.
    stop_on_subject: str | None = None

    @property
    def shrink_s(self) -> float:
        if self.shrink_seconds is not None:
            return self.shrink_seconds
        # Shrinking is time not spent exploring: a bug's minimal program is usually reached in
        # seconds (the reducer stops at its fixpoint), so 2% of the budget, 8..20 s.
        return min(20.0, max(8.0, 0.02 * self.budget_s))


# Shrinks of one coarse key per campaign before all of its findings count as known: a bug whose
# minimal program needs no particular wrapper path is shrunk once; one that shows in two
# unrelated contexts gets a second entry; past that, shrinking it again is time not exploring.
MAX_SHRINKS_PER_COARSE = 2
# At most this many of a slot's cases since its last passing canary are kept for a hunt (Note
# [A broken process] in worker.py): the canary runs after every case, so a hunt has one.
UNCHECKED_CASES = 8


@dataclass(frozen=True)
class BackendMix:
    """The backends a campaign compiles with: `base` for most cases, `partner` for one drawn
    case in `share` (the spec names it in CallPlan.backend, so shrinking, saving and replay
    keep it). `--backend` pins one: no partner."""

    base: str  # "aot_eager" | "inductor"
    partner: str | None = None  # the other backend, or None
    share: int = 0  # one case in `share` is the partner's; 0 without a partner

    def __post_init__(self) -> None:
        if (self.partner is None) != (self.share == 0):
            raise ValueError("a partner backend needs a share > 1, and a share a partner")
        if self.partner == self.base or self.share == 1:
            raise ValueError(f"{self} mixes nothing: the partner must differ and share be > 1")


def default_mix(device: str) -> BackendMix:
    """`pyfy-fuzz run` without --backend. On CPU, aot_eager (cheap and exact) with one case
    in 10 compiled by Inductor (cached kernels are reused across cases). On CUDA, Inductor
    (what users ship, with CUDA graphs under reduce-overhead: torch's cudagraph trees) with
    one case in 4 compiled by aot_eager, whose cudagraph reference is torch's `cudagraphs`
    backend (Note [The CUDA-graph reference] in subjects/stock.py)."""
    if device == "cuda":
        return BackendMix("inductor", "aot_eager", 4)
    return BackendMix("aot_eager", "inductor", 10)


# Note [Ending on time]
# A campaign ends within its budget plus `grace_s` (15 s): its summary written, its workers
# and repro checks gone (`--coverage` combines the workers' data after that: coverage.py's
# time, not the campaign's). A 210 s GPU campaign once ended at 231 s: the repro checks still
# queued were given a tenth of the budget past its end, and Inductor compiles ran on. So what
# runs past the deadline is bounded by `end = deadline + grace_s`:
# - workers are told to stop at the deadline (a shrink in progress stages its best spec);
#   those still in a case at `end - FINISH_S` are killed and their cases abandoned (a compile,
#   a hang short of case_timeout). Nothing found is lost: the campaign holds the smallest spec
#   each worker reported and saves it; what a killed worker left half-staged is removed;
# - the repro checker runs beside the workers, one check at a time (each repro.py on its own:
#   a compile, seconds). It starts none with less than REPRO_MIN_S left before `end -
#   FINISH_S`, and the check running then is killed with its process group. An entry whose
#   check did not run is marked so in case.json (verdict repro.NOT_RUN; `pyfy-fuzz replay
#   --repros` runs it) and the summary's "repro" is null;
# - FINISH_S is for the books: the last saves (whole entries, renamed into place), the
#   sightings, the not-run marks, the summary (atomic_write).
REPRO_TIMEOUT_S = 120.0  # a repro still running after this is a "timeout" verdict
REPRO_MIN_S = 5.0  # no repro check starts with less time than this left
FINISH_S = 3.0  # the end of the grace kept for the books
RESCAN_S = 5.0  # how often other campaigns' new entries are read (Note [Shards share a corpus])


@dataclass
class NewFinding:
    """A bug first seen in this run, and the smallest spec that shows it so far."""

    finding: FindingDict
    spec: str
    size: tuple[int, ...]
    stream_seed: int | None
    owner: int | None = None  # the slot shrinking it
    count: int = 1
    state: str = "shrinking"  # shrinking | reducing | saved
    path: Path | None = None
    shrink_cases: int = 0
    started: float = field(default_factory=time.monotonic)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Stats:
    started: float
    budget_s: float
    cases: int = 0
    shrink_cases: int = 0
    status: Counter[str] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)
    wrapper_hits: Counter[str] = field(default_factory=Counter)
    unsupported: int = 0
    # The warm subject, by what AOTAutograd's cache did (Note [The warm subject]): only "hit"
    # and "partial" cases were judged warm.
    warm: Counter[str] = field(default_factory=Counter)
    backends: Counter[str] = field(default_factory=Counter)  # explored cases per backend
    deaths: Counter[str] = field(default_factory=Counter)
    recycled: int = 0
    # cases after which a worker's canary failed, each hunted for the case that broke its
    # process (Note [A broken process] in worker.py)
    hunts: int = 0
    known_seen: Counter[str] = field(default_factory=Counter)
    # Bugs being shrunk, by coarse key; once saved, by signature in `new`.
    pending: dict[str, NewFinding] = field(default_factory=dict)
    new: dict[str, NewFinding] = field(default_factory=dict)
    shrinks: Counter[str] = field(default_factory=Counter)  # per coarse key
    merged: int = 0  # shrinks that ended in a bug already known (counted there)
    superseded: int = 0  # this run's entries folded into a later, smaller one
    # (bigger, general) pairs of one identity with comparable paths, one of them this run's
    fold_candidates: list[tuple[str, str]] = field(default_factory=list)
    # entries other campaigns (shards) wrote into the corpus during this run, known from when
    # they were read (Note [Shards share a corpus] in corpus.py)
    learned: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped_on: dict[str, Any] | None = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def per_min(self) -> float:
        return 60.0 * self.cases / max(self.elapsed, 1e-9)

    def new_by_kind(self) -> Counter[str]:
        return Counter(n.finding["kind"] for n in self.new.values())

    @property
    def exploring_fraction(self) -> float:
        """The share of cases spent exploring (not shrinking a finding)."""
        return (self.cases - self.shrink_cases) / self.cases if self.cases else 1.0


@dataclass
class CampaignResult:
    exit_code: int
    summary: dict[str, Any]


@dataclass(frozen=True)
class _Breaker:
    """The case a hunt found leaving a fresh process broken (Note [A broken process] in
    worker.py), as its canary job ran it."""

    finding: FindingDict  # the canary job's process-broken finding
    spec: str  # the case, ProgramSpec JSON
    staging: Path  # the canary job's run: the entry's pythonified.py and trace
    seed: int | None  # the seed stream of the worker that first ran it
    phase: str | None  # the runner phase after which the canary first failed (Broken.phase)


def _size(spec_json: str) -> tuple[int, ...]:
    return ProgramSpec.from_json(spec_json).size()


def _broke(result: Done | Died, coarse: str | None = None) -> list[FindingDict]:
    """A canary job's process-broken findings (of the bug `coarse` only, where given)."""
    if not isinstance(result, Done):
        return []
    return [
        f
        for f in result.outcome.findings
        if f["kind"] == "process-broken" and coarse in (None, f["coarse"])
    ]


def _same_death(died: Died, r: Done | Died) -> bool:
    """A reduction's candidate took its worker down as `died` did."""
    if not (isinstance(r, Died) and r.kind == died.kind and r.phase == died.phase):
        return False
    if died.kind == "hang":
        return True
    if died.reason.startswith("memory"):
        return r.reason.startswith("memory")
    return r.reason == died.reason


def _discard(staging: Path | None) -> None:
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)


class Campaign:
    def __init__(self, config: CampaignConfig) -> None:
        self.config = config
        self.corpus = Corpus.open(config.corpus)
        self.known: KnownBugs = self.corpus.known()
        self.stats = Stats(time.monotonic(), config.budget_s)
        self.started_at = now_iso()
        self.coverage_dir: Path | None = None
        if config.coverage:
            stamp = self.started_at.replace(":", "").replace("-", "")
            self.coverage_dir = self.corpus.state_dir / "coverage" / f"{stamp}-{os.getpid()}"
            self.coverage_dir.mkdir(parents=True, exist_ok=True)
        self.deadline = self.stats.started + config.budget_s
        self._rescanned = self.stats.started
        # collect_env takes seconds: computed now, beside the start, not at the first save
        # (which may come in the last seconds of the grace: Note [Ending on time]).
        threading.Thread(target=environment, daemon=True, name="pyfy-environment").start()
        from pyfy_fuzz.corpus.trace import TLPARSE_NOTICE, find_tlparse

        if find_tlparse() is None:  # said once, here; workers keep the raw traces all the same
            self.stats.notes.append(f"tlparse: {TLPARSE_NOTICE}")
        self.streams = Streams(self.corpus.state_dir, config.seed, config.shard)
        self.stream_of: dict[int, int] = {}
        self.logdir = self.corpus.state_dir / "logs" / f"{socket.gethostname()}-{os.getpid()}"
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.avoid: list[str] = []
        self.reductions: list[threading.Thread] = []  # crash reductions and hunts: serve work
        # Per slot, the cases run since its worker's last passing canary, newest last (Note [A
        # broken process] in worker.py; with a canary after every case, the one case).
        self.unchecked: dict[int, deque[str]] = {}
        self._hunted: list[tuple[int, Broken, _Breaker | None]] = []  # a hunt's end, to save
        self._repro_checks: queue.Queue[tuple[str, str, Path] | None] = queue.Queue()
        self._repro_stop = threading.Event()
        self._repro_verdicts: dict[str, str] = {}  # signature -> verdict (repro_record)
        self._repro_checker = threading.Thread(target=self._check_repros, daemon=True)
        self._repro_checker.start()
        self._lock = threading.Lock()
        # (sig, spec, shrink info, staging: the run that made its files, or None)
        self._saves: list[tuple[str, str, dict[str, Any], Path | None]] = []
        self._replayed_database = False
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        total = memory_limit()
        per_worker = total // max(1, config.workers)
        self.rss_soft = int(min(3 << 30, 0.5 * per_worker))
        self.rss_hard = int(min(2 * self.rss_soft, 0.8 * per_worker))
        self.threads = max(1, cores // max(1, config.workers))
        self.pool = Pool(
            config.workers,
            self._worker_config,
            case_timeout=config.case_timeout,
            rss_hard_bytes=self.rss_hard,
        )

    def _worker_config(self, slot: int) -> WorkerConfig:
        c = self.config
        return WorkerConfig(
            slot=slot,
            backend=c.backend,
            partner=c.partner,
            partner_share=c.partner_share,
            config=c.config,
            device=c.device,
            impl=c.impl,
            wrappers=c.wrappers,
            max_ops=c.max_ops,
            max_inputs=c.max_inputs,
            database=str(self.corpus.hypothesis_dir),
            corpus_root=str(self.corpus.root),
            workdir=str(self.logdir / f"work-{slot}"),
            log_path=str(self.logdir / f"worker-{slot}.log"),
            recycle_cases=c.recycle_cases,
            rss_soft_bytes=self.rss_soft,
            shrink_seconds=c.shrink_s,
            threads=self.threads,
            known=[b.to_dict() for bugs in self.known.table.values() for b in bugs],
            avoid=list(self.avoid),
            owner_pid=os.getpid(),
            coverage_dir=str(self.coverage_dir) if self.coverage_dir else None,
            # Finish shrinks a killed run left in the example database: one worker, once.
            replay_database=not self._replayed_database,
        )

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> CampaignResult:
        for p in self.corpus.problems:
            self.stats.notes.append(f"corpus: {p.path.name}: {p.message}")
        for i in range(self.config.workers):
            (self.logdir / f"work-{i}").mkdir(exist_ok=True)
            self._start(i)
        progress = make_progress(self.config.progress, self.stats)
        progress.start()
        try:
            while time.monotonic() < self.deadline and not self._enough():
                for ev in self.pool.poll(0.25):
                    self._handle(ev, running=True)
                self._serve_to_explore()
                self._save_hunted()
                self._save_reduced()
                if time.monotonic() - self._rescanned >= RESCAN_S:
                    self._rescan()
                progress.update()
        finally:
            self._wind_down()
            progress.stop()
        summary = self.summary()
        if self.coverage_dir is not None:
            summary["coverage"] = combine_coverage(self.coverage_dir)
        if self.config.json_path is not None:
            atomic_write(self.config.json_path, json.dumps(summary, indent=1) + "\n")
        return CampaignResult(1 if self.stats.new else 0, summary)

    def _wind_down(self) -> None:
        """Past the deadline: stop the workers, save what they found, end the repro checks;
        each step bounded so that the whole ends by `deadline + grace_s` (Note [Ending on
        time])."""
        for ev in self.pool.stop(self._left()):
            self._handle(ev, running=False)
        for t in self.reductions:  # their candidates were cancelled with the pool
            t.join(timeout=self._left())
        self._save_hunted()
        self._save_reduced()
        self._finish_interrupted()
        self._flush_counts()
        self.corpus.clean_stagings(owner=os.getpid())  # a killed worker's half-staged entry
        self._repro_checks.put(None)
        self._repro_checker.join(timeout=self._left())
        self._repro_stop.set()  # the check still running is killed; the rest marked not run
        self._repro_checker.join(timeout=FINISH_S)
        self._fold_candidates()

    def _until(self) -> float:
        """When workers and repro checks must be gone: the end of the grace, less FINISH_S."""
        return self.deadline + self.config.grace_s - FINISH_S

    def _left(self) -> float:
        return max(0.0, self._until() - time.monotonic())

    def _enough(self) -> bool:
        m = self.config.max_cases
        return m is not None and self.stats.cases >= m

    def _start(self, slot: int) -> None:
        self.unchecked[slot] = deque(maxlen=UNCHECKED_CASES)  # a fresh process
        if self._serve_wanted():
            self.pool.start(slot, Serve())
            return
        gid, seed = self.streams.take()
        self.stream_of[slot] = seed
        self.pool.start(slot, Explore(seed, self.deadline, gid))
        self._replayed_database = True

    def _serve_wanted(self) -> bool:
        busy = any(t.is_alive() for t in self.reductions)
        serving = any(s.mode == "serve" and self.pool.alive(s.index) for s in self.pool.slots)
        return busy and not serving

    def _handle(self, ev: Event, *, running: bool) -> None:
        m = ev.message
        if isinstance(m, Done):
            self._on_done(ev.slot, m)
        elif isinstance(m, Found):
            self._on_found(ev.slot, m)
        elif isinstance(m, Improved):
            self._on_improved(ev.slot, m)
        elif isinstance(m, Shrunk):
            self._on_shrunk(ev.slot, m)
        elif isinstance(m, Note):
            self.stats.notes.append(f"worker {ev.slot}: {m.text}")
        elif ev.gone:
            slot = self.pool.slots[ev.slot]
            if isinstance(m, Died):
                self._on_died(ev.slot, m, serve=slot.mode == "serve")
            elif isinstance(m, Exited) and m.reason.startswith("recycled"):
                self.stats.recycled += 1
            if running and time.monotonic() < self.deadline and not self._enough():
                self._start(ev.slot)

    def _serve_to_explore(self) -> None:
        """Reductions over: an idle serve worker is stopped and comes back exploring (checked
        every turn of the loop: an idle worker sends nothing that would trigger it)."""
        if any(t.is_alive() for t in self.reductions):
            return
        for s in self.pool.slots:
            if s.mode == "serve" and s.job is None and not s.told_to_stop:
                if self.pool.alive(s.index):
                    self.pool.tell_stop(s.index)

    def _on_done(self, slot: int, done: Done) -> None:
        if done.job is not None:
            return  # a reduction's candidate, not exploration
        self._after_canary(slot, done)
        st, r = self.stats, done.outcome
        st.cases += 1
        self._check_stop(done)
        if done.shrinking:
            st.shrink_cases += 1
            new = st.pending.get(done.shrinking)
            if new is not None:
                new.shrink_cases += 1
            return
        st.status[r.status] += 1
        st.families[r.family] += 1
        if r.backend:
            st.backends[r.backend] += 1
        st.wrapper_hits.update(r.wrapper_paths)
        if r.unsupported:
            st.unsupported += 1
        if r.warm is not None:
            st.warm[r.warm] += 1
        for knob in r.config_skipped:
            note = f"config: this torch lacks knob {knob!r}; cases drawn with it ran without it"
            if note not in st.notes:
                st.notes.append(note)
        for f in r.findings:
            self._count(f)

    def _count(self, f: FindingDict) -> bool:
        """Count a sighting of `f` for the bug that covers it; False if none does (new)."""
        st = self.stats
        hit = self.known.match(f)
        if hit is None:
            return False
        if hit.signature == PENDING:
            if f["coarse"] in st.pending:
                st.pending[f["coarse"]].count += 1
        elif hit.signature in st.new:
            st.new[hit.signature].count += 1
        else:
            st.known_seen[hit.signature] += 1
        return True

    def _check_stop(self, done: Done) -> None:
        subject = self.config.stop_on_subject
        if subject is None or self.stats.stopped_on is not None:
            return
        hit = next((f for f in done.outcome.findings if f.get("subject") == subject), None)
        if hit is not None:
            self.stats.stopped_on = {
                "elapsed_s": round(self.stats.elapsed, 2),
                "cases": self.stats.cases,
                "finding": hit,
                "spec": done.spec,
            }
            self.deadline = time.monotonic()  # the loop ends; workers stop as at the budget

    def _on_found(self, slot: int, p: Found) -> None:
        f = p.finding
        coarse = f["coarse"]
        pending = KnownBug(coarse, frozenset(), PENDING)
        if self.known.match(f) is not None or self.stats.shrinks[coarse] >= MAX_SHRINKS_PER_COARSE:
            # Another worker got there first (its shrink stands), or this bug was shrunk often
            # enough: the finder is told so and abandons its shrink.
            self.pool.broadcast(Known((pending.to_dict(),)), only=slot)
            return
        self.stats.pending[coarse] = NewFinding(
            f, p.spec, _size(p.spec), self.stream_of.get(slot), owner=slot
        )
        self.known.add(pending)
        self.pool.broadcast(Known((pending.to_dict(),)), exclude=slot)

    def _on_improved(self, slot: int, p: Improved) -> None:
        new = self.stats.pending.get(p.finding["coarse"])
        if new is not None and new.state == "shrinking" and new.owner == slot:
            size = _size(p.spec)
            if size <= new.size:
                new.spec, new.size, new.finding = p.spec, size, p.finding

    def _on_shrunk(self, slot: int, p: Shrunk) -> None:
        coarse = p.finding["coarse"]
        new = self.stats.pending.get(coarse)
        staging = Path(p.staging) if p.staging else None
        if new is None or new.state != "shrinking" or new.owner != slot:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            return
        with self._deciding():  # what other shards saved meanwhile is known: one entry a bug
            del self.stats.pending[coarse]
            self.stats.shrinks[coarse] += 1
            new.spec, new.size, new.finding = p.spec, _size(p.spec), p.finding
            settled = [b for b in self.known.of(coarse) if b.signature != PENDING]
            self.known.settle(coarse, settled)
            if self._count(new.finding):
                # The shrunk program shows a bug already known (its paths inside this one's): one
                # bug, one entry -- the sightings go to it.
                self.stats.merged += 1
                hit = self.known.match(new.finding)
                if hit is not None and new.count > 1:
                    self._add_count(hit.signature, new.count - 1)
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)
            else:
                self._settle_new(new, staging, p)
            bugs = [b for b in self.known.of(coarse) if b.signature != PENDING]
            if self.stats.shrinks[coarse] >= MAX_SHRINKS_PER_COARSE and bugs:
                # Shrunk often enough: from now on every finding with this coarse key is a
                # sighting of its most general entry (unless a more specific one covers it).
                general = min(bugs, key=lambda b: len(b.paths))
                bugs.append(KnownBug(coarse, frozenset(), general.signature))
            self.known.settle(coarse, bugs)
            self.pool.broadcast(Known(({"settle": coarse, "bugs": [b.to_dict() for b in bugs]},)))

    def _add_count(self, sig: str, n: int) -> None:
        if sig in self.stats.new:
            self.stats.new[sig].count += n
        elif sig != PENDING:
            self.stats.known_seen[sig] += n

    def _settle_new(self, new: NewFinding, staging: Path | None, p: Shrunk) -> None:
        """Save a shrunk bug nobody knows under its refined signature."""
        f = new.finding
        paths = frozenset(f["identity_paths"])
        self.stats.new[f["signature"]] = new
        self.known.add(KnownBug(f["coarse"], paths, f["signature"]))
        self._supersede(f["coarse"], paths, new)
        info = {
            "by": "hypothesis",
            "cases": new.shrink_cases,
            "seconds": round(time.monotonic() - new.started, 1),
            "confirmed": p.confirmed,
            "cut_by_budget": p.cut_by_budget,
            "complete": p.complete,
        }
        self._save(new, staging, info)

    def _supersede(self, coarse: str, paths: frozenset[str], by: NewFinding) -> None:
        """This run's entries of the same bug whose shrink was cut short with more paths than
        `paths`: the new entry is the same bug in a smaller context, so they are folded into
        it (moved under .superseded/, never deleted; their sightings added)."""
        for b in self.known.of(coarse):
            old = self.stats.new.get(b.signature)
            if old is None or old is by or not paths < b.paths:
                continue
            saved = self.corpus.entries.get(b.signature)
            by.count += old.count + (int(saved.case.get("count", 1)) if saved else 0)
            del self.stats.new[b.signature]
            self.known.settle(coarse, [k for k in self.known.of(coarse) if k != b])
            if old.path is not None:
                self.corpus.retire(old.path, f"superseded by {by.finding['signature']}")
            self.stats.superseded += 1

    def _fold_candidates(self) -> None:
        """This run's entries that share an identity with another entry over comparable
        wrapper paths, for the summary (Note [One entry per identity across wrapper paths]:
        a person decides; `migrate --fold`)."""
        self.stats.fold_candidates = self.corpus.fold_candidates(only=set(self.stats.new))

    def _on_died(self, slot: int, died: Died, *, serve: bool) -> None:
        self.stats.deaths[died.kind] += 1
        if serve or died.spec is None:
            return  # a reduction's candidate (the reducer sees it) or nothing was running
        reason = (
            "timeout"
            if died.kind == "hang"
            else "memory"
            if died.reason.startswith("memory")
            else died.reason
        )
        finding = Finding(
            kind=as_kind(died.kind),
            oracle="timeout" if died.kind == "hang" else "interpreter",
            subject=as_subject(PHASE_SUBJECT.get(died.phase, "pyfy-fuzz")),
            wrappers=(),
            explanation=f"the worker died ({died.reason}) while running {died.phase or 'setup'}",
            exc_type=reason,
        ).to_dict()
        sig = finding["signature"]
        with self._deciding():
            if self._count(finding):
                return
            new = NewFinding(finding, died.spec, _size(died.spec), self.stream_of.get(slot))
            new.extra = {"reason": died.reason, "phase": died.phase, "log_tail": died.log_tail}
            self.stats.new[sig] = new
            bug = KnownBug(finding["coarse"], frozenset(), sig)
            self.known.add(bug)
            self.avoid.append(died.spec)
            self.pool.broadcast(Avoid((died.spec,)))
            self.pool.broadcast(Known((bug.to_dict(),)))
            # Saved at once, unreduced (a kill during the reduction must not lose it); the
            # reduced spec replaces it.
            self._save(new, None, {"by": "reducer", "provisional": True})
        new.state = "reducing"
        same = functools.partial(_same_death, died)
        t = threading.Thread(target=self._reduce, args=(new, same), daemon=True)
        self.reductions.append(t)
        t.start()

    # -- a process left broken (Note [A broken process] in worker.py) ------------------------
    def _after_canary(self, slot: int, done: Done) -> None:
        """Keep the slot's cases since its last passing canary; when the canary fails, a
        thread hunts among them for the case that breaks a process (its runs are serve work,
        as a reduction's are)."""
        unchecked = self.unchecked.setdefault(slot, deque(maxlen=UNCHECKED_CASES))
        unchecked.append(done.spec)
        broken = done.outcome.broken
        if broken is None:
            unchecked.clear()
            return
        suspects = list(reversed(unchecked))  # newest first: the likeliest
        unchecked.clear()
        if time.monotonic() >= self.deadline:
            self.stats.notes.append(f"worker {slot}: {broken.describe()}; not hunted: time")
            return
        self.stats.hunts += 1
        args = (slot, broken, suspects, self.stream_of.get(slot))
        t = threading.Thread(target=self._hunt, args=args, daemon=True)
        self.reductions.append(t)
        t.start()

    def _hunt(self, slot: int, broken: Broken, suspects: list[str], seed: int | None) -> None:
        """A thread: each suspect once more as a canary job on a fresh serve worker, until one
        leaves that process broken too -- only a case that breaks a process alone is saved,
        never one that met the breakage. The end is handed to the main loop
        (`_save_hunted`)."""
        found = None
        for spec in suspects:
            try:
                r, staging = self._job(spec, canary=True)
            except _Cancelled:
                return  # the campaign stopped: no verdict
            hits = _broke(r)
            if hits and staging is not None and isinstance(r, Done) and r.outcome.broken:
                found = _Breaker(hits[0], spec, staging, seed, r.outcome.broken.phase)
                break
            _discard(staging)
        with self._lock:
            self._hunted.append((slot, broken, found))

    def _save_hunted(self) -> None:
        """Ended hunts: the case found is saved at once, unreduced, unless its bug is known,
        and reduced in a thread as a crash is; a hunt that found none is noted."""
        with self._lock:
            hunted, self._hunted = self._hunted, []
        for slot, broken, found in hunted:
            if found is None:
                self.stats.notes.append(
                    f"worker {slot}: {broken.describe()}; no case since its last passing "
                    "canary breaks a fresh process alone"
                )
                continue
            f = found.finding
            with self._deciding():
                if self._count(f):
                    _discard(found.staging)
                    continue
                new = NewFinding(f, found.spec, _size(found.spec), found.seed)
                new.extra = {"phase": found.phase}  # case.json's, as a dead worker's
                self.stats.new[f["signature"]] = new
                bug = KnownBug(f["coarse"], frozenset(), f["signature"])
                self.known.add(bug)
                self.pool.broadcast(Known((bug.to_dict(),)))
                self._save(new, found.staging, {"by": "reducer", "provisional": True})
            new.state = "reducing"
            same = functools.partial(_broke, coarse=f["coarse"])
            t = threading.Thread(target=self._reduce, args=(new, same, True), daemon=True)
            self.reductions.append(t)
            t.start()

    def _job(self, spec_json: str, *, canary: bool) -> tuple[Done | Died, Path | None]:
        """Run a spec on a serve worker and wait for it: as a canary job (Note [A broken
        process] in worker.py) into a staging directory of its own, which then holds what
        the run made. _Cancelled once the campaign stops."""
        if time.monotonic() >= self.deadline:
            raise _Cancelled  # the pool is stopping: a job sent now would never run
        staging = self.corpus.new_staging() if canary else None
        fut = self.pool.submit(
            spec_json,
            canary=canary,
            workdir=str(staging) if staging else None,
            trace_dir=str(staging / TRACE_DIR) if staging else None,
        )
        try:
            return fut.result(), staging
        except CancelledError:
            _discard(staging)
            raise _Cancelled from None

    # -- reduction (a thread; candidates run on a serve worker) ----------------------------
    def _reduce(
        self, new: NewFinding, same: Callable[[Done | Died], object], canary: bool = False
    ) -> None:
        """A thread: `new`'s spec reduced while a candidate still fails the `same` way (the
        worker dies alike; or, each candidate a canary job, it leaves the process broken
        alike, and the entry takes the best candidate's run with its spec). The smallest is
        handed to the main loop (`_save_reduced`)."""
        from pyfy_fuzz.campaign.shrink import reduce

        tried = [0]
        best = [ProgramSpec.from_json(new.spec)]
        kept: list[Path | None] = [None]  # the best candidate's canary-job run

        def still_fails(spec: ProgramSpec) -> bool:
            tried[0] += 1
            r, staging = self._job(spec.to_json(), canary=canary)
            if not same(r):
                _discard(staging)
                return False
            best[0] = spec  # the reducer only tries smaller specs
            _discard(kept[0])
            kept[0] = staging
            return True

        t0 = time.monotonic()
        end = min(t0 + self.config.shrink_s, self.deadline)
        try:
            res = reduce(best[0], still_fails, deadline=end)
            best[0], stopped = res.spec, res.stopped
        except _Cancelled:  # the campaign stopped: keep what was accepted so far
            stopped = "campaign stopped"
        info = {
            "by": "reducer",
            "cases": tried[0],
            "seconds": round(time.monotonic() - t0, 1),
            "stopped": stopped,
        }
        with self._lock:
            self._saves.append((new.finding["signature"], best[0].to_json(), info, kept[0]))

    def _save_reduced(self) -> None:
        with self._lock:
            saves, self._saves = self._saves, []
        for sig, spec_json, info, staging in saves:
            new, size = self.stats.new[sig], _size(spec_json)
            if size <= new.size:
                new.spec, new.size = spec_json, size
            else:  # not what the entry will hold
                _discard(staging)
                staging = None
            # staging None: a fresh one. Where the spec did not change, the corpus keeps the
            # entry as it is (Corpus.put: "kept"), with the files its first run made.
            self._save(new, staging, info)

    def _finish_interrupted(self) -> None:
        """Findings whose shrink was cut short (budget, or the worker died): save the
        smallest spec seen; nothing found is lost."""
        with self._deciding():
            for coarse, new in list(self.stats.pending.items()):
                del self.stats.pending[coarse]
                self.known.settle(
                    coarse, [b for b in self.known.of(coarse) if b.signature != PENDING]
                )
                if self._count(new.finding):  # a known bug after all (another shard's, maybe)
                    hit = self.known.match(new.finding)
                    if hit is not None and new.count > 1:
                        self._add_count(hit.signature, new.count - 1)
                    continue
                paths = frozenset(new.finding["identity_paths"])
                self.stats.new[new.finding["signature"]] = new
                self.known.add(KnownBug(coarse, paths, new.finding["signature"]))
            for new in self.stats.new.values():
                if new.state != "saved":
                    self._save(new, None, {"by": "hypothesis", "interrupted": True})

    @contextlib.contextmanager
    def _deciding(self) -> Iterator[None]:
        """Hold the corpus's lock, knowing what other campaigns saved, while deciding whether
        a finding is new and saving it (Note [Shards share a corpus] in corpus.py)."""
        with self.corpus.lock():
            self._rescan()
            yield

    def _rescan(self) -> None:
        """Entries other campaigns (shards) wrote since we last looked become known, here and
        to the workers (Note [Shards share a corpus] in corpus.py)."""
        self._rescanned = time.monotonic()
        bugs = [e.bug for e in self.corpus.rescan()]
        if bugs:
            self.stats.learned += [b.signature for b in bugs]
            self.known.update(bugs)
            self.pool.broadcast(Known(tuple(b.to_dict() for b in bugs)))

    # -- saving --------------------------------------------------------------------------
    def _save(self, new: NewFinding, staging: Path | None, shrink: dict[str, Any]) -> None:
        """Write `new` into the corpus.

        Long: the record is one CaseRecord field a line, in case.json's order, then the put
        and its bookkeeping."""
        import torch

        c = self.config
        staging = staging or self.corpus.new_staging()
        f = new.finding
        bug_in: BugIn = BUG_IN[as_subject(f["subject"])]
        if bug_in == "pythonify" and c.impl == "torch":
            bug_in = "torch"  # the pythonify under test is torch's own
        plan = json.loads(new.spec).get("plan", {})
        mode = plan.get("mode")
        backend = plan.get("backend") or c.backend  # a mixed campaign's case names its own
        record = CaseRecord(
            format=CASE_FORMAT,
            signature=f["signature"],
            coarse=f["coarse"],
            identity=Finding.from_dict(f).identity(),
            kind=f["kind"],
            oracle=f["oracle"],
            subject=f["subject"],
            wrappers=list(f.get("wrappers", ())),
            exc_type=f.get("exc_type"),
            aspect=f.get("aspect", ""),
            message=f.get("message", ""),
            frame=f.get("frame", ""),
            consequences=list(f.get("consequences", ())),
            explanation=f.get("explanation", ""),
            differences=list(f.get("differences", ())),
            **derived_fields(f, backend, mode, c.device),
            bug_in=bug_in,
            # torch bugs are expected to keep failing on stock torch; ours must be fixed.
            expected="fail" if bug_in == "torch" else "pass",
            spec=json.loads(new.spec),
            size=list(new.size),
            seed=new.stream_seed,
            campaign_seed=c.seed,
            torch=torch.__version__,
            pyfy_fuzz=__version__,
            backend=backend,
            device=c.device,
            pythonify=c.impl,
            count=new.count,
            first_seen=now_iso(),
            last_seen=now_iso(),
            shrink=shrink,
            present=OPTIONAL_FIELDS,  # a new entry has every field
            extra={**environment(), **new.extra},
        )
        case = record.to_json()
        has_file = (staging / "pythonified.py").is_file()
        files = entry_files(case, has_pythonified=has_file)
        path, how = self.corpus.put(staging, case, files)
        if how == "blocked":
            self.stats.notes.append(
                f"corpus: {path.name} does not load as an entry; left as it is, not replaced"
            )
        elif how in ("new", "replaced"):
            self._repro_checks.put((case["signature"], case["kind"], path))
        new.state, new.path, new.count = "saved", path, 0

    def _check_repros(self) -> None:
        """A thread: run each saved entry's repro.py where pyfy-fuzz cannot be imported and
        record in case.json whether it reproduces on its own (exit 1 while the bug is present)
        -- a repro nobody ran is not a repro. One at a time, beside the workers, never past
        the campaign's end: an entry whose check did not run is marked so (Note [Ending on
        time])."""
        from pyfy_fuzz.corpus.repro import ReproStopped, check_repro, repro_not_run, repro_record

        while (item := self._repro_checks.get()) is not None:
            sig, kind, path = item
            if kind == "hang":
                continue  # it would run until the timeout: the worker's death is its check
            if not path.is_dir():
                continue  # superseded or merged into another entry since it was queued
            left = self._until() - time.monotonic()
            if self._repro_stop.is_set() or left < REPRO_MIN_S:
                self.corpus.annotate(sig, {"repro": repro_not_run("the campaign ended first")})
                continue
            timeout = min(REPRO_TIMEOUT_S, left)
            try:
                code, tail = check_repro(path, timeout=timeout, stop=self._repro_stop)
            except ReproStopped:
                code, tail = None, ""
            if code is None and (self._repro_stop.is_set() or timeout < REPRO_TIMEOUT_S):
                why = "the campaign ended while it ran"  # not a timeout of the repro's own
                self.corpus.annotate(sig, {"repro": repro_not_run(why)})
                continue
            record = repro_record(path, code, tail, kind)
            self._repro_verdicts[sig] = record["verdict"]
            self.corpus.annotate(sig, {"repro": record})
            self._refresh_readme(sig)

    def _releases(self, sig: str, path: Path | None) -> str:
        entry = self.corpus.entries.get(sig)
        if entry is None or entry.path != path:
            return ""
        return releases_line(records_of(entry.case), str(entry.case.get("device") or "cpu"))

    def _refresh_readme(self, sig: str) -> None:
        """README.md says which releases reproduce the entry: its repro check is the first
        (Note [Which releases have a bug] in releases.py)."""
        entry = self.corpus.entries.get(sig)
        if entry is not None and entry.path.is_dir():
            self.corpus.refresh(sig, {"README.md": readme_of(entry.path, entry.case)})

    def _flush_counts(self) -> None:
        for sig, n in self.stats.known_seen.items():
            self.corpus.bump(sig, n)
        for new in self.stats.new.values():
            if new.count and new.path is not None:
                self.corpus.bump(new.finding["signature"], new.count)
                new.count = 0

    # -- reporting -----------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """The campaign's summary JSON (--json, and what `run` prints from).

        Long: one literal, a key a line, in the order the file shows them."""
        import torch

        st = self.stats
        return {
            "cases": st.cases,
            "elapsed_s": round(st.elapsed, 1),
            "started_at": self.started_at,
            "finished_at": now_iso(),
            "host": socket.gethostname(),
            "cases_per_min": round(st.per_min, 1),
            "shrink_cases": st.shrink_cases,
            "exploring_fraction": round(st.exploring_fraction, 3),
            "shrinks": sum(st.shrinks.values()),
            "merged_after_shrink": st.merged,
            "superseded": st.superseded,
            "fold_candidates": [list(p) for p in st.fold_candidates],
            # entries other campaigns (shards) wrote meanwhile, known from when they were read
            "learned": sorted(st.learned),
            "findings": [
                {
                    "signature": sig,
                    "kind": n.finding["kind"],
                    "oracle": n.finding["oracle"],
                    "subject": n.finding["subject"],
                    "group": group_of(n.finding),  # bug | refusal | metadata
                    "severity": severity_of(n.finding),
                    "upstream": known_upstream(n.finding),
                    "wrappers": list(n.finding.get("wrappers", ())),
                    "path": str(n.path) if n.path else None,
                    # the saved repro.py run on its own: reproduces | passes | error |
                    # timeout | interpreter died; None: not checked within the budget
                    "repro": self._repro_verdicts.get(sig),
                    # the same, as a release ("reproduces on 2.15.0"; releases.py)
                    "releases": self._releases(sig, n.path),
                }
                for sig, n in sorted(st.new.items())
            ],
            "known_seen": dict(st.known_seen),
            "wrapper_hits": dict(st.wrapper_hits.most_common()),
            "status": dict(st.status),
            "families": dict(st.families),
            "unsupported": st.unsupported,
            "warm_cache": dict(st.warm),
            "backends": dict(st.backends),
            "deaths": dict(st.deaths),
            "recycled": st.recycled,
            # cases after which a worker's canary failed, each hunted for the case that broke
            # its process (Note [A broken process] in worker.py)
            "hunts": st.hunts,
            "notes": st.notes[-50:],
            "stopped_on": st.stopped_on,
            "torch": torch.__version__,
            "config": {
                "budget_s": self.config.budget_s,
                "backend": self.config.backend,
                "partner": self.config.partner,
                "partner_share": self.config.partner_share,
                "knobs": list(self.config.config) if self.config.config is not None else None,
                "device": self.config.device,
                "workers": self.config.workers,
                "seed": self.config.seed,
                "shard": "/".join(map(str, self.config.shard)),
                "wrappers": self.config.wrappers,
                "pythonify": self.config.impl,
                "corpus": str(self.config.corpus),
            },
        }


class _Cancelled(Exception):
    pass


def run_campaign(config: CampaignConfig) -> CampaignResult:
    return Campaign(config).run()
