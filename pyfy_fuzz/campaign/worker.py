"""The worker process: runs cases for the campaign and talks to it over a pipe.

A worker is forked from a server that has already imported torch (cheap to replace), and is
disposable: whatever kills it -- a segfault in torch, a hang, memory -- kills only it; the
campaign sees the pipe close, knows which spec was running (every case is announced before it
starts, with its phase as it advances) and turns the death into a finding.

Two modes, chosen by the first command:
- ``explore``: a Hypothesis loop over `generators.programs`. The test function raises for a
  signature nobody has seen; Hypothesis then shrinks *that* signature (the predicate is "the
  target signature is still found", so the shrink cannot slip to another bug), reporting every
  improvement so the campaign holds the smallest spec even if the worker dies mid-shrink.
  Failing examples also go to the Hypothesis database inside the corpus: a campaign restarted
  after kill -9 replays them first and finishes the shrink.
- ``serve``: run the specs the campaign sends (replay, reducing crashes, canary jobs: Note [A
  broken process]) and reply.

Every case is followed by a canary, which says whether the case left the process as a fresh
one (Note [A broken process]).

Messages both ways are the frozen dataclasses of `schema/messages.py`; see `_Channel`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

# Imported here so the fork server pays for them once, not each worker.
import torch
import torch._dynamo
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from generators import ProgramSpec, programs
from oracles import Finding
from oracles.identity import PENDING, KnownBug, KnownBugs, normalise_message
from pyfy_fuzz.case.runner import case_backend, run_case
from pyfy_fuzz.case.subjects import BundledPythonify, PythonifyImpl
from pyfy_fuzz.corpus._repro_helpers import canary
from pyfy_fuzz.corpus.trace import TRACE_DIR, structured_trace, tlparse_index
from pyfy_fuzz.schema.finding import PHASE_SUBJECT
from pyfy_fuzz.schema.messages import (
    Avoid,
    Broken,
    Bye,
    CaseOutcome,
    Done,
    Explore,
    FindingDict,
    Found,
    Improved,
    Known,
    Note,
    PhaseStarted,
    Ready,
    Report,
    RunJob,
    Serve,
    Shrunk,
    Started,
    Stop,
)

__all__ = [
    "coverage_include",
    "die_with_parent",
    "HYPOTHESIS_SHARE",
    "HYPOTHESIS_SHRINK_CASES",
    "main",
    "make_impl",
    "poisoned",
    "rss_bytes",
    "WorkerConfig",
]


@dataclass
class WorkerConfig:
    """Everything a worker needs, picklable (it crosses the process boundary)."""

    slot: int
    backend: str = "aot_eager"
    # One drawn case in `partner_share` compiles with `partner` (the spec names it, so it
    # keeps it through shrinking and saving); 0: every case uses `backend`.
    partner: str | None = None
    partner_share: int = 0
    # Every drawn case runs under these catalogue knobs (--config); None: each draws its own.
    config: tuple[str, ...] | None = None
    device: str = "cpu"
    impl: str = "bundled"  # bundled | torch
    wrappers: list[str] | None = None
    max_ops: int = 5
    max_inputs: int = 3
    database: str | None = None  # Hypothesis example database directory
    corpus_root: str | None = None  # where shrunk cases are staged
    owner_pid: int | None = None  # the campaign's pid: names stagings (cleanup keys on it)
    replay_database: bool = False  # replay the example database first (one worker, once)
    coverage_dir: str | None = None  # run --coverage: where this worker saves its data
    workdir: str = "."
    log_path: str | None = None
    recycle_cases: int = 300
    rss_soft_bytes: int = 3 << 30
    shrink_seconds: float = 60.0
    threads: int = 1
    known: list[dict[str, Any]] = field(default_factory=list)  # KnownBug.to_dict()s
    avoid: list[str] = field(default_factory=list)  # specs (JSON) that killed a worker


# Note [Shrinking budget]
# Every shrink case is a case not spent exploring. Hypothesis's shrinker works on the choice
# sequence and tries many near-identical programs; the spec reducer (shrink.py) drops whole
# arguments, statements and outputs and stops at its fixpoint. On the 10-minute seed-0
# campaign an even split of the time spent 40% of all cases shrinking; a 30% share capped at
# 30 cases, 32%; capped at 15, 31% (a median of 36 cases a bug, the reducer's ~20 of them
# reaching its fixpoint). So Hypothesis gets a first pass of a few cases (its cheapest
# simplifications come first) and the reducer the rest of the time.
HYPOTHESIS_SHARE = 0.3
HYPOTHESIS_SHRINK_CASES = 5


class _Stop(BaseException):
    """Leave the Hypothesis loop at once (a BaseException: Hypothesis must not treat it as a
    failure of the test)."""


class _Abandon(BaseException):
    """Stop shrinking: another worker owns this signature, or the shrink ran out of time."""


class _Interesting(Exception):
    """The test 'fails': the case shows the target signature."""


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size from /proc (0 where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def make_impl(name: str) -> PythonifyImpl:
    """ "bundled", "torch", or "package.module:factory" (a callable returning a
    `PythonifyImpl`: how tests and the self-test plant bugs in a worker only)."""
    if name == "bundled":
        return BundledPythonify()
    if name == "torch":
        from pyfy_fuzz.case.subjects.impl import TorchPythonify

        return TorchPythonify()
    if ":" in name:
        import importlib

        module, _, attr = name.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        impl: PythonifyImpl = factory()
        return impl
    raise ValueError(f"unknown pythonify implementation {name!r}")


class _Channel:
    """The pipe to the campaign, plus the commands it sends between cases."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.known = KnownBugs()
        self.avoid: set[str] = set()
        self.stopping = False
        # What the canary found broken after this process's last case: it runs no other case
        # and leaves (Note [A broken process]).
        self.broken: Broken | None = None

    def send(self, message: Report) -> None:
        try:
            self.conn.send(message)
        except OSError:  # the campaign is gone (killed): nothing left to work for
            os._exit(0)

    def poll(self) -> None:
        """Drain the commands sent between cases: Known, Avoid, Stop."""
        while self.conn.poll():
            self.take(self.conn.recv())

    def take(self, command: object) -> None:
        if isinstance(command, Known):
            for item in command.items:
                if "settle" in item:
                    bugs = [KnownBug.from_dict(d) for d in item["bugs"]]
                    self.known.settle(item["settle"], bugs)
                else:
                    self.known.add(KnownBug.from_dict(item))
        elif isinstance(command, Avoid):
            self.avoid.update(command.specs)
        elif isinstance(command, Stop):
            self.stopping = True


def die_with_parent() -> None:
    """Linux: be killed when the fork server (our parent) goes, e.g. after kill -9 of the
    campaign; otherwise a worker in a hanging case would outlive it."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(conn: Connection, config: WorkerConfig) -> None:
    """Process entry point."""
    die_with_parent()
    if config.log_path:
        fd = os.open(config.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    import warnings

    warnings.filterwarnings("ignore")
    torch.set_num_threads(config.threads)
    ch = _Channel(conn)
    ch.known.update(KnownBug.from_dict(d) for d in config.known)
    ch.avoid.update(config.avoid)
    impl = make_impl(config.impl)
    cov = _start_coverage(config.coverage_dir) if config.coverage_dir else None
    ch.send(Ready(os.getpid()))
    first = conn.recv()
    try:
        if isinstance(first, Explore):
            reason = _explore(ch, config, impl, first)
        elif isinstance(first, Serve):
            reason = _serve(ch, config, impl)
        else:
            reason = "stopped"
    except (EOFError, BrokenPipeError):
        return  # the campaign is gone; nothing to tell
    finally:
        if cov is not None:  # a worker that dies loses its share; recycling bounds the loss
            cov.stop()
            cov.save()
    ch.send(Bye(reason))


def coverage_include() -> list[str]:
    """What `run --coverage` measures: AOTAutograd's runtime wrappers in the installed torch,
    and the bundled generator with its subpackages."""
    import torch._functorch._aot_autograd as aot

    from pyfy_fuzz import pythonify

    aot_dir = os.path.dirname(aot.__file__)
    files = ["runtime_wrappers.py", "graph_compile.py", "subclass_utils.py"]
    here = os.path.dirname(pythonify.__file__)
    # the package and its subpackages (wrappers/, capture/): a pattern's * stops at a folder
    return [os.path.join(aot_dir, f) for f in files] + [
        os.path.join(here, "*.py"),
        os.path.join(here, "*", "*.py"),
    ]


def _start_coverage(directory: str) -> Any:
    import coverage

    cov = coverage.Coverage(
        data_file=os.path.join(directory, ".coverage"),
        data_suffix=True,  # one file per worker incarnation; the campaign combines them
        branch=True,
        include=coverage_include(),
    )
    cov.start()
    return cov


def _run(
    ch: _Channel,
    config: WorkerConfig,
    impl: PythonifyImpl,
    spec: ProgramSpec,
    workdir: str | None = None,
    backend: str | None = None,
    *,
    canary_job: bool = False,
) -> CaseOutcome:
    """One case; the result as plain data, with what the canary then found broken in this
    process (Note [A broken process]; it also goes to `ch.broken`). A pyfy-fuzz exception
    becomes a harness-error finding (the case's spec is what a developer needs to fix it),
    unless the canary fails too (Note [A poisoned worker]). A canary job checks before each
    runner phase as well and reports a process it leaves broken as a finding."""
    backend = case_backend(spec, backend or config.backend)
    watch = _Watch(ch, config.device, between_phases=canary_job)
    try:
        r = run_case(
            spec,
            backend=backend,
            device=config.device,
            impl=impl,
            workdir=workdir or config.workdir,
            on_phase=watch.phase,
        )
    except Exception as exc:
        torch._dynamo.reset()
        return _raised(ch, watch, exc, spec.family, backend)
    finally:
        torch._dynamo.reset()
    ch.broken = watch.after_case()
    return CaseOutcome(
        r.status,
        spec.family,
        findings=tuple(f.to_dict() for f in r.findings) + watch.findings(),
        wrapper_paths=tuple(r.wrapper_paths),
        unsupported=r.unsupported,
        reason=r.reason,
        excused=tuple(r.excused),
        total_s=r.timings.get("total_s", 0.0),
        warm=r.warm,
        config_skipped=r.config_skipped,
        backend=backend,
        broken=ch.broken,
    )


def _raised(ch: _Channel, watch: _Watch, exc: Exception, family: str, backend: str) -> CaseOutcome:
    """A case in which pyfy-fuzz raised: a harness-error finding, or a poisoned case where the
    canary fails too (Note [A poisoned worker])."""
    tb = traceback.format_exc()[-4000:]
    broken = ch.broken = watch.after_case()
    if broken is not None:
        return CaseOutcome(
            "poisoned",
            family,
            findings=watch.findings(),
            reason=broken.describe(),
            traceback=tb,
            backend=backend,
            broken=broken,
        )
    findings = (_harness_finding(exc).to_dict(),)
    return CaseOutcome("error", family, findings=findings, traceback=tb, backend=backend)


# Note [A poisoned worker]
# A torch crash can leave the process broken: seen on an H200 with torch 2.11, a case left
# the Python dispatcher's key set without its thread-local state, and from then on every
# case raised "PythonDispatcherTLS was not set" inside the program's own make_fn. Reported
# as the next case's harness error, and shrunk, that made 241 errored cases in 150 s, all
# false alarms. So an exception of pyfy-fuzz's is first checked against the canary
# (`_repro_helpers.canary`: the process's global state as a fresh one has it, and a
# parameter's forward and backward): if the canary fails too, the case is "poisoned" (no
# harness-error finding) and the worker is recycled; only an exception the canary does not
# share is a harness error. Which case broke the process is Note [A broken process]'s part.
#
# Note [A broken process]
# The case that breaks a process is a finding of its own, kind "process-broken".
# - The canary runs after every case, in `_run`, and each Done says what it found
#   (`CaseOutcome.broken`; None: the process is as a fresh one). It is plain torch, in
#   `_repro_helpers`, so the entry's repro.py runs the very same code: grad mode on,
#   inference mode off, no TorchDispatchMode or TorchFunctionMode left active (a leaked
#   pass-through mode changes no value yet, but every later op and compile runs under it),
#   and a parameter's forward and backward to the right gradient. Measured on torch 2.13,
#   CPU, one thread: 0.11 ms a run (median of 1,000; 0.2 ms at p90), against 100-230 ms a
#   case (BENCHMARKS.md): about 0.1% of a campaign. The canary spec run through
#   `materialize`, as before, took 2.4 ms, nearly all of it rendering and importing the
#   program. At that price there is no reason to check only every N cases, or only when a
#   case raises: a breakage is seen right after the case that made it, and no innocent case
#   runs in a broken process, where it could report a false finding.
# - The worker then leaves (recycled). The campaign keeps each slot's cases since its last
#   passing canary (`Campaign.unchecked`, bounded; with the canary after every case, the one
#   case) and runs them again, newest first, each as a canary job on a fresh serve worker
#   (`RunJob.canary`), until one leaves that process broken too: only a case that breaks a
#   fresh process alone is saved, never the innocent case that met the breakage. A hunt
#   that finds none (the breakage needed earlier cases too) is a note, not a finding.
# - A canary job runs the canary before each runner phase as well (`_Watch`): the first
#   failure names the phase that ran last, whose subject (PHASE_SUBJECT) the finding is
#   charged to -- the file's run is pythonify's, the compile's run torch.compile's. Its
#   identity is what the canary found (the exception type or the failed check, and the
#   message, normalised), as a crash's is. A canary job costs a fresh process, whose first
#   compile is cold: 2.6 s for a one-statement aot_eager case on CPU. The entry is reduced
#   like a crash, each candidate a canary job; its repro.py runs that subject's calls and
#   then the canary in one process, and exits 1 while it fails.
# What the canary does not check (another global, a cache left inconsistent) it cannot see:
# a later case that raises in such a process is the harness error it appears to be.


class _Watch:
    """A case's phases: each told to the campaign as it starts, and in a canary job the
    canary run before it, so the first failure names the phase that ran last (Note [A broken
    process])."""

    def __init__(self, ch: _Channel, device: str, *, between_phases: bool) -> None:
        self.ch, self.device, self.between_phases = ch, device, between_phases
        self.last: str | None = None  # the phase running now; None before the first
        self.broken: Broken | None = None  # the canary's first failure

    def phase(self, name: str) -> None:
        self.ch.send(PhaseStarted(name))
        if self.between_phases:
            self._check()
        self.last = name

    def _check(self) -> None:
        if self.broken is None:
            found = poisoned(self.device)
            if found is not None:  # which phase broke it is known only between phases
                self.broken = replace(found, phase=self.last if self.between_phases else None)

    def after_case(self) -> Broken | None:
        """The canary once more after the case: what it found, from the first failure on."""
        self._check()
        return self.broken

    def findings(self) -> tuple[FindingDict, ...]:
        """A canary job's process-broken finding, where a phase of the case broke the process
        (a canary failing before the first phase is not the case's doing)."""
        if not self.between_phases or self.broken is None or self.broken.phase is None:
            return ()
        return (_broken_finding(self.broken).to_dict(),)


def poisoned(device: str) -> Broken | None:
    """None while the canary runs cleanly in this process; else what it found broken (Note
    [A poisoned worker], Note [A broken process])."""
    found = canary(device)
    return None if found is None else Broken(*found)


def _broken_finding(broken: Broken) -> Finding:
    """The case left its process broken: identified, as a crash is, by what the canary found
    (the exception type or the failed check, and the message, normalised), and charged to the
    subject of the phase after which the canary first failed. No wrapper paths, as for a dead
    worker: the campaign reduces the case, and the paths would be the unreduced program's."""
    return Finding(
        kind="process-broken",
        oracle="canary",
        subject=PHASE_SUBJECT.get(broken.phase, "pyfy-fuzz"),
        wrappers=(),
        explanation=broken.describe(),
        exc_type=broken.what,
        message=normalise_message(broken.detail),
    )


def _harness_finding(exc: BaseException) -> Finding:
    """Signature by exception type and the innermost pyfy-fuzz frame (not the message)."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if any(p in frame.filename for p in ("pyfy_fuzz", "oracles", "generators")):
            where = f"{os.path.basename(frame.filename)}:{frame.name}"
    return Finding(
        kind="harness-error",
        oracle="harness",
        subject="pyfy-fuzz",
        wrappers=(),
        explanation=f"pyfy-fuzz raised {type(exc).__name__}: {str(exc)[:300]} (at {where})",
        exc_type=f"{type(exc).__name__}@{where}",
    )


def _recycle_reason(config: WorkerConfig, cases: int) -> str | None:
    if cases >= config.recycle_cases:
        return f"recycled after {cases} cases"
    rss = rss_bytes()
    if rss > config.rss_soft_bytes:
        return f"recycled at {rss >> 20} MiB resident"
    return None


def _serve(ch: _Channel, config: WorkerConfig, impl: PythonifyImpl) -> str:
    cases = 0
    impls: dict[str, PythonifyImpl] = {config.impl: impl}  # replay: each entry's own
    while True:
        command = ch.conn.recv()
        if isinstance(command, Stop):
            return "stopped"
        if not isinstance(command, RunJob):
            continue  # nothing else concerns a serve worker
        spec = ProgramSpec.from_json(command.spec)
        ch.send(Started(command.spec, job=command.job))
        name = command.impl or config.impl
        if name not in impls:
            impls[name] = make_impl(name)
        trace = command.trace_dir
        with structured_trace(Path(trace)) if trace else contextlib.nullcontext():
            outcome = _run(
                ch,
                config,
                impls[name],
                spec,
                workdir=command.workdir,
                backend=command.backend,
                canary_job=command.canary,
            )
        if trace:
            tlparse_index(Path(trace))
        cases += 1
        if command.canary:  # the next canary job gets a fresh process (Note [A broken process])
            leave: str | None = "left after a canary job"
        elif ch.broken is not None:
            leave = f"recycled: {ch.broken.describe()}"
        else:
            leave = _recycle_reason(config, cases)
        ch.send(Done(outcome, command.spec, job=command.job, last=leave is not None))
        if leave is not None:
            return leave


@dataclass
class _Run:
    """One Hypothesis run: no target until a case shows an unknown bug; then the run shrinks
    that bug (its coarse key: Note [Bug identity] in oracles/identity.py) and nothing else."""

    target: str | None = None  # the coarse key being shrunk
    best: tuple[str, FindingDict] | None = None  # (spec JSON, finding)
    shrink_end: float = 0.0
    shrink_cases: int = 0  # cases Hypothesis ran on the target so far
    recycle: str | None = None


class _Explorer:
    def __init__(
        self, ch: _Channel, config: WorkerConfig, impl: PythonifyImpl, deadline: float
    ) -> None:
        self.ch, self.config, self.impl, self.deadline = ch, config, impl, deadline
        self.cases = 0
        self.run = _Run()

    def one(self, spec: ProgramSpec) -> None:
        """The Hypothesis test function."""
        ch, run = self.ch, self.run
        ch.poll()
        now = time.monotonic()
        if ch.stopping or now > self.deadline:
            raise _Stop
        if run.best is not None and ch.known.match(run.best[1]) is not None:
            run.best = None  # another worker found it first and owns its shrink, or a known
            raise _Abandon  # bug's shrunk program turned out to be inside this one
        if run.target is not None and (
            now > run.shrink_end or run.shrink_cases >= HYPOTHESIS_SHRINK_CASES
        ):
            raise _Abandon
        if ch.broken is not None:  # a shrink's candidate broke it (_polish)
            run.recycle = f"recycled: {ch.broken.describe()}"
            raise _Stop
        if run.target is None and (why := _recycle_reason(self.config, self.cases)):
            run.recycle = why
            raise _Stop
        spec_json = spec.to_json()
        if spec_json in ch.avoid:
            return  # it killed a worker before; the campaign already has it
        ch.send(Started(spec_json, shrinking=run.target))
        outcome = _run(ch, self.config, self.impl, spec)
        self.cases += 1
        run.shrink_cases += run.target is not None
        ch.send(Done(outcome, spec_json, shrinking=run.target))
        if ch.broken is not None:  # Note [A broken process]: a fresh process goes on
            ch.send(Note(f"worker recycled: {ch.broken.describe()}"))
            run.recycle = f"recycled: {ch.broken.describe()}"
            raise _Stop  # a bug being shrunk is saved as Hypothesis left it (interrupted)
        found = {f["coarse"]: f for f in reversed(outcome.findings)}  # first one wins
        if run.target is None:
            new = [f["coarse"] for f in outcome.findings if ch.known.match(f) is None]
            if not new:
                return
            run.target = new[0]
            # Hypothesis gets half the shrink time; the spec reducer polishes with the rest.
            run.shrink_end = time.monotonic() + HYPOTHESIS_SHARE * self.config.shrink_seconds
            ch.send(Found(found[run.target], spec_json))
        elif run.target in found:
            ch.send(Improved(found[run.target], spec_json))
        else:
            return
        run.best = (spec_json, found[run.target])
        # One raise site: Hypothesis tells bugs apart by where they are raised, and would
        # not shrink "found" and "improved" as one bug.
        raise _Interesting(run.target)


def _explore(ch: _Channel, config: WorkerConfig, impl: PythonifyImpl, job: Explore) -> str:
    """Hypothesis runs until the deadline, recycling or stop; each run ends at a finding
    (shrunk, reported) and the next starts with a derived seed."""
    explorer = _Explorer(ch, config, impl, job.deadline)  # monotonic: system-wide on Linux
    database = DirectoryBasedExampleDatabase(config.database) if config.database else None
    strategy = _with_partner(
        _with_config(
            programs(config.wrappers, max_ops=config.max_ops, max_inputs=config.max_inputs),
            config.config,
        ),
        config.partner,
        config.partner_share,
    )
    for restart in itertools.count():
        explorer.run = run = _Run()
        phases = [Phase.generate, Phase.shrink]
        if config.replay_database and restart == 0 and database is not None:
            phases.insert(0, Phase.reuse)  # finish shrinks a killed campaign left in the DB
        test = settings(
            database=database,
            max_examples=10**9,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            phases=phases,
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,
            print_blob=False,
            derandomize=False,
        )(seed(_sub_seed(job.seed, restart))(given(strategy)(explorer.one)))
        try:
            test()
        except (_Interesting, _Abandon):
            pass
        except Exception as exc:  # Flaky (the target did not reproduce), a generator error
            ch.send(Note(f"hypothesis run ended: {type(exc).__name__}: {str(exc)[:200]}"))
        except _Stop:
            if run.best is not None:
                _shrunk(ch, config, impl, run.best, polish=False)
            return run.recycle or "stopped"
        if run.best is not None:
            _shrunk(ch, config, impl, run.best, polish=not ch.stopping)
        if run.target is not None and run.best is not None:
            # Known to this worker until the campaign says what the shrink settled on.
            paths = frozenset(run.best[1].get("identity_paths", ()))
            ch.known.add(KnownBug(run.target, paths, PENDING))
    raise AssertionError("unreachable")


def _with_config(
    strategy: st.SearchStrategy[ProgramSpec], knobs: tuple[str, ...] | None
) -> st.SearchStrategy[ProgramSpec]:
    """Every spec under `knobs` (--config) in place of the configuration it drew."""
    if knobs is None:
        return strategy
    return strategy.map(lambda spec: replace(spec, plan=replace(spec.plan, config=knobs)))


def _with_partner(
    strategy: st.SearchStrategy[ProgramSpec], partner: str | None, share: int
) -> st.SearchStrategy[ProgramSpec]:
    """One spec in `share` names the partner as its backend (CallPlan.backend). Drawn beside
    the program, so Hypothesis shrinks it toward the campaign's base backend: a bug the
    partner is not needed for is saved as the base's."""
    if partner is None or share <= 1:
        return strategy

    def pick(drawn: tuple[ProgramSpec, int]) -> ProgramSpec:
        spec, k = drawn
        if k != share - 1:
            return spec
        return replace(spec, plan=replace(spec.plan, backend=partner))

    return st.tuples(strategy, st.sampled_from(range(share))).map(pick)


def _polish(
    ch: _Channel,
    config: WorkerConfig,
    impl: PythonifyImpl,
    spec_json: str,
    finding: FindingDict,
) -> tuple[str, FindingDict, str]:
    from pyfy_fuzz.campaign.shrink import reduce

    target = finding["coarse"]
    best = [(spec_json, finding)]  # the reducer only ever accepts smaller specs

    def still_fails(spec: ProgramSpec) -> bool:
        ch.poll()
        if ch.stopping or ch.broken is not None:
            raise _Stop
        candidate = spec.to_json()
        if candidate in ch.avoid:
            return False
        ch.send(Started(candidate, shrinking=target))
        outcome = _run(ch, config, impl, spec)
        ch.send(Done(outcome, candidate, shrinking=target))
        hit = [f for f in outcome.findings if f["coarse"] == target]
        if hit:
            best[0] = (candidate, hit[0])
            ch.send(Improved(hit[0], candidate))
        return bool(hit)

    deadline = time.monotonic() + (1.0 - HYPOTHESIS_SHARE) * config.shrink_seconds
    try:
        stopped = reduce(ProgramSpec.from_json(spec_json), still_fails, deadline=deadline).stopped
    except _Stop:
        stopped = "campaign stopped"
    return (*best[0], stopped)


def _sub_seed(stream_seed: int, restart: int) -> int:
    digest = hashlib.sha256(f"{stream_seed}/{restart}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _shrunk(
    ch: _Channel,
    config: WorkerConfig,
    impl: PythonifyImpl,
    best: tuple[str, FindingDict],
    *,
    polish: bool,
) -> None:
    """Polish Hypothesis's result with the spec reducer (it drops arguments, statements and
    outputs Hypothesis's choice-sequence shrinking rarely can), then run the smallest spec once
    more into a staging directory of the corpus, so the entry gets the pythonified file of
    exactly that spec; tell the campaign."""
    spec_json, finding = best
    stopped = "not polished"
    if polish:
        spec_json, finding, stopped = _polish(ch, config, impl, spec_json, finding)
    if ch.broken is not None:
        # No staging run in a broken process: the campaign saves the smallest spec it was
        # told of (Campaign._finish_interrupted).
        return
    staging = None
    findings: tuple[FindingDict, ...] = ()
    if config.corpus_root is not None:
        from pyfy_fuzz.corpus.store import staging_name

        staging = os.path.join(config.corpus_root, staging_name(config.owner_pid))
        os.mkdir(staging)
        ch.send(Started(spec_json, shrinking=finding["coarse"]))
        # The entry keeps the compile's structured trace (what TORCH_TRACE writes), and
        # tlparse's HTML index of it where tlparse is installed.
        with structured_trace(Path(staging) / TRACE_DIR):
            outcome = _run(ch, config, impl, ProgramSpec.from_json(spec_json), workdir=staging)
        tlparse_index(Path(staging) / TRACE_DIR)
        ch.send(Done(outcome, spec_json, shrinking=finding["coarse"]))
        findings = outcome.findings
    again = [f for f in findings if f["coarse"] == finding["coarse"]]
    ch.send(
        Shrunk(
            # The staging run's finding names the entry: its paths are the shrunk program's.
            finding=again[0] if again else finding,
            spec=spec_json,
            staging=staging,
            confirmed=bool(again),
            cut_by_budget=not polish,
            complete=stopped == "fixpoint",  # no candidate of the reducer still fails
            also=tuple(f for f in findings if f["coarse"] != finding["coarse"]),
        )
    )
