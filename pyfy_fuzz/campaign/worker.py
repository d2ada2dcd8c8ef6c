"""The worker process: runs cases for the campaign and talks to it over a pipe.

A worker is forked from a server that has already imported torch (cheap to replace), and is
disposable: whatever kills it -- a segfault in torch, a hang, memory -- kills only it; the
campaign sees the pipe close, knows which spec was running (every case is announced before it
starts, with its phase as it advances) and turns the death into a finding.

Two modes, chosen by the first command:
- ``explore``: a Hypothesis loop over `generators.programs` that shrinks what it finds
  (explore.py).
- ``serve``: run the specs the campaign sends (replay, reducing crashes, canary jobs: Note [A
  broken process]) and reply.

Every case runs through `run_one` and is followed by a canary, which says whether the case
left the process as a fresh one (Note [A broken process]). The worker's configuration is the
campaign's, as it is, with this worker's own part (`config.WorkerConfig`).

Messages both ways are the frozen dataclasses of `schema/messages.py`; see `Channel`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Protocol

# Imported here so the fork server pays for them once, not each worker.
import torch
import torch._dynamo

from generators import ProgramSpec
from oracles import Finding
from oracles.identity import KnownBug, KnownBugs, normalise_message
from pyfy_fuzz.campaign.case_coverage import CaseCoverage
from pyfy_fuzz.campaign.config import WorkerConfig
from pyfy_fuzz.campaign.limits import rss_bytes
from pyfy_fuzz.case.runner import case_backend, run_case
from pyfy_fuzz.case.subjects import BundledPythonify, PythonifyImpl
from pyfy_fuzz.corpus.repro import canary
from pyfy_fuzz.corpus.trace import structured_trace, tlparse_index
from pyfy_fuzz.schema.finding import PHASE_SUBJECT
from pyfy_fuzz.schema.messages import (
    Avoid,
    Broken,
    Bye,
    CaseOutcome,
    Done,
    Explore,
    FindingDict,
    Known,
    PhaseStarted,
    Ready,
    Report,
    RunJob,
    Serve,
    Started,
    Stop,
)

__all__ = [
    "Channel",
    "ExploreMode",
    "die_with_parent",
    "main",
    "make_impl",
    "poisoned",
    "recycle_reason",
    "run_one",
]


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


class Channel:
    """The pipe to the campaign, plus the commands it sends between cases."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.known = KnownBugs()
        self.avoid: set[str] = set()
        self.stopping = False
        # What the canary found broken after this process's last case: it runs no other case
        # and leaves (Note [A broken process]).
        self.broken: Broken | None = None
        self.coverage: CaseCoverage | None = None  # run --coverage: this process's tracer

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


class ExploreMode(Protocol):
    """The explore mode (explore.explore): runs until the deadline, recycling or Stop, and
    says why it ended."""

    def __call__(
        self, ch: Channel, config: WorkerConfig, impl: PythonifyImpl, job: Explore
    ) -> str: ...


def main(conn: Connection, config: WorkerConfig, explore: ExploreMode) -> None:
    """Process entry point. `explore` is explore.py's mode, handed in by the pool's process
    target: explore.py imports this module, so this one does not import it."""
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
    ch = Channel(conn)
    ch.known.update(KnownBug.from_dict(d) for d in config.known)
    ch.avoid.update(config.avoid)
    impl = make_impl(config.campaign.impl)
    if config.coverage_dir:  # after the imports: Note [Reached by cases]
        ch.coverage = CaseCoverage.start(config.coverage_dir, config.seen)
    ch.send(Ready(os.getpid()))
    first = conn.recv()
    try:
        if isinstance(first, Explore):
            reason = explore(ch, config, impl, first)
        elif isinstance(first, Serve):
            reason = _serve(ch, config, impl)
        else:
            reason = "stopped"
    except (EOFError, BrokenPipeError):
        return  # the campaign is gone; nothing to tell
    finally:
        if ch.coverage is not None:  # a worker that dies loses its share; recycling bounds it
            ch.coverage.stop()
    ch.send(Bye(reason))


def run_one(
    ch: Channel,
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
    runner phase as well and reports a process it leaves broken as a finding. Under
    --coverage the outcome carries the arcs of torch's files it reached first in this worker
    (`CaseOutcome.new_arcs`)."""
    outcome = _run_one(ch, config, impl, spec, workdir, backend, canary_job=canary_job)
    if ch.coverage is None:
        return outcome
    return replace(outcome, new_arcs=ch.coverage.new_arcs())


def _run_one(
    ch: Channel,
    config: WorkerConfig,
    impl: PythonifyImpl,
    spec: ProgramSpec,
    workdir: str | None,
    backend: str | None,
    *,
    canary_job: bool,
) -> CaseOutcome:
    c = config.campaign
    backend = case_backend(spec, backend or c.mix.base)
    watch = _Watch(ch, c.device, between_phases=canary_job)
    try:
        r = run_case(
            spec,
            backend=backend,
            device=c.device,
            impl=impl,
            workdir=workdir or config.workdir,
            on_phase=watch.phase,
        )
    except Exception as exc:
        watch.between_cases()
        torch._dynamo.reset()
        return _raised(ch, watch, exc, spec.family, backend)
    finally:
        watch.between_cases()
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


def _raised(ch: Channel, watch: _Watch, exc: Exception, family: str, backend: str) -> CaseOutcome:
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
# - The canary runs after every case, in `run_one`, and each Done says what it found
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
#   passing canary (`Reductions.unchecked`, bounded; with the canary after every case, the one
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

    def __init__(self, ch: Channel, device: str, *, between_phases: bool) -> None:
        self.ch, self.device, self.between_phases = ch, device, between_phases
        self.last: str | None = None  # the phase running now; None before the first
        self.broken: Broken | None = None  # the canary's first failure

    def phase(self, name: str) -> None:
        self.ch.send(PhaseStarted(name))
        if self.between_phases:
            self._check()
        self.last = name
        if self.ch.coverage is not None:  # run --coverage: Note [Measured phases]
            self.ch.coverage.phase(name)

    def between_cases(self) -> None:
        """The case is over: under run --coverage the tracer pauses (Dynamo's reset, the
        canary, the next draw are no case's phase: Note [Measured phases])."""
        if self.ch.coverage is not None:
            self.ch.coverage.pause()

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


def recycle_reason(config: WorkerConfig, cases: int) -> str | None:
    if cases >= config.campaign.recycle_cases:
        return f"recycled after {cases} cases"
    rss = rss_bytes()
    if rss > config.rss_soft_bytes:
        return f"recycled at {rss >> 20} MiB resident"
    return None


def _serve(ch: Channel, config: WorkerConfig, impl: PythonifyImpl) -> str:
    cases = 0
    impls: dict[str, PythonifyImpl] = {config.campaign.impl: impl}  # replay: each entry's own
    while True:
        command = ch.conn.recv()
        if isinstance(command, Stop):
            return "stopped"
        if not isinstance(command, RunJob):
            continue  # nothing else concerns a serve worker
        spec = ProgramSpec.from_json(command.spec)
        ch.send(Started(command.spec, job=command.job))
        name = command.impl or config.campaign.impl
        if name not in impls:
            impls[name] = make_impl(name)
        trace = command.trace_dir
        with structured_trace(Path(trace)) if trace else contextlib.nullcontext():
            outcome = run_one(
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
            leave = recycle_reason(config, cases)
        ch.send(Done(outcome, command.spec, job=command.job, last=leave is not None))
        if leave is not None:
            return leave
