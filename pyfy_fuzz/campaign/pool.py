"""Worker processes for a campaign: start, watch, kill, replace.

The pool knows processes and pipes, not findings. It forks workers from a fork server that has
imported torch once (replacing a dead worker costs milliseconds, not an import), relays their
messages as `Event`s, and turns the three ways a case can take its worker down into a `Died`
event carrying the spec that was running:
- the process exits without saying goodbye (segfault, abort, os._exit): `interpreter-crash`;
- the case outlives `case_timeout`: the pool kills it, `hang`;
- the worker's resident memory passes `rss_hard_bytes`: the pool kills it, `interpreter-crash`
  with a memory reason.
Slots are refilled by the caller (`restart`), which decides the mode (explore or serve).
The module itself is torch-free (the campaign's process imports it; torch is the fork
server's): a worker gets its `WorkerConfig` (config.py) pickled, the campaign's configuration
inside it as it is.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkServerContext, ForkServerProcess
from pathlib import Path
from typing import Any, cast

from pyfy_fuzz.campaign.config import WorkerConfig
from pyfy_fuzz.campaign.limits import rss_bytes
from pyfy_fuzz.schema.messages import (
    BETWEEN_CASES,
    Avoid,
    Bye,
    Command,
    Died,
    DiedKind,
    Done,
    Exited,
    Explore,
    Known,
    PhaseStarted,
    PoolMessage,
    Ready,
    RunJob,
    Serve,
    Started,
    Stop,
)

__all__ = [
    "Died",  # re-exported from schema.messages: callers of the pool meet it here
    "Event",
    "mp_context",
    "Pool",
    "WorkerStartError",
]

_CONTEXT: ForkServerContext | None = None


def mp_context() -> ForkServerContext:
    """The fork server, preloading torch, Hypothesis and the worker's modules (once per
    campaign process; this module itself imports none of them)."""
    global _CONTEXT
    if _CONTEXT is None:
        ctx = cast(ForkServerContext, mp.get_context("forkserver"))
        ctx.set_forkserver_preload(["pyfy_fuzz.campaign.worker", "pyfy_fuzz.campaign.explore"])
        _CONTEXT = ctx
    return _CONTEXT


class WorkerStartError(Exception):
    """Workers cannot even start (broken install, a main module without a __main__ guard):
    an environment problem, not a finding."""


@dataclass(frozen=True)
class Event:
    """What a slot's worker said (a `Report`), or what the pool saw happen to it (`Died`,
    `Exited`): schema/messages.py."""

    slot: int
    message: PoolMessage

    @property
    def gone(self) -> bool:
        """The slot's worker is gone (died or exited): the caller refills the slot."""
        return isinstance(self.message, (Died, Exited))


@dataclass
class _Slot:
    index: int
    mode: str = "explore"
    proc: ForkServerProcess | None = None
    conn: Connection | None = None
    incarnation: int = 0
    spec: str | None = None  # the case running now (JSON)
    job: int | None = None
    phase: str | None = None
    started: float = 0.0
    said_bye: str | None = None
    kill_reason: tuple[DiedKind, str] | None = None  # (kind, reason) when the pool killed it
    log_path: Path | None = None
    ready: bool = False
    failed_starts: int = 0  # deaths before "ready", in a row
    told_to_stop: bool = False
    leaving: bool = False  # its last Done said it leaves (Done.last): no other job for it
    # Known/Avoid items for an explore worker, merged and sent when it is between cases
    # (Note [Messages between cases] in schema/messages.py).
    outbox: dict[type[Known | Avoid], list[Any]] = field(default_factory=dict)


@dataclass
class Pool:
    size: int
    config_for: Callable[[int], WorkerConfig]  # a fresh config per (re)start of a slot
    case_timeout: float = 60.0
    rss_hard_bytes: int = 6 << 30
    slots: list[_Slot] = field(default_factory=list)
    _jobs: deque[RunJob] = field(default_factory=deque)
    _futures: dict[int, Future[Done | Died]] = field(default_factory=dict)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    _last_rss_check: float = 0.0
    _stopping: bool = False

    def __post_init__(self) -> None:
        self.slots = [_Slot(i) for i in range(self.size)]

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, index: int, first: Explore | Serve) -> None:
        """(Re)start slot `index`, exploring or serving (its `first` command)."""
        slot = self.slots[index]
        self._reap(slot)
        config = self.config_for(index)
        slot.log_path = Path(config.log_path) if config.log_path else None
        parent, child = mp_context().Pipe()
        proc = mp_context().Process(
            target=_worker_main, args=(child, config), daemon=True, name=f"pyfy-worker-{index}"
        )
        proc.start()
        child.close()
        slot.mode = "serve" if isinstance(first, Serve) else "explore"
        slot.proc, slot.conn = proc, parent
        slot.incarnation += 1
        slot.spec = slot.phase = slot.said_bye = slot.kill_reason = None
        slot.job = None
        slot.ready = slot.told_to_stop = slot.leaving = False
        slot.outbox = {}
        parent.send(first)

    def alive(self, index: int) -> bool:
        p = self.slots[index].proc
        return p is not None and p.is_alive()

    def send(self, index: int, command: Command) -> None:
        conn = self.slots[index].conn
        if conn is not None and self.alive(index):
            try:
                conn.send(command)
            except (BrokenPipeError, OSError):
                pass  # it is dying; poll() will report it

    def broadcast(
        self, command: Known | Avoid, *, exclude: int | None = None, only: int | None = None
    ) -> None:
        """Tell every explore worker (or `only` one); queued, merged in order, and sent when
        the worker next reports between cases. Serve workers run what they are sent and need
        neither."""
        items = command.items if isinstance(command, Known) else command.specs
        for s in self.slots:
            if only is not None and s.index != only:
                continue
            if s.index != exclude and s.mode == "explore":
                s.outbox.setdefault(type(command), []).extend(items)

    def tell_stop(self, index: int) -> None:
        self.slots[index].told_to_stop = True
        self.send(index, Stop())

    def _flush(self, s: _Slot) -> None:
        for kind, items in s.outbox.items():
            if items:
                self.send(s.index, kind(tuple(items)))
        s.outbox = {}

    def stop(self, grace: float) -> list[Event]:
        """Ask every worker to stop, collect what they still say for up to `grace` seconds,
        then kill the rest (their running case is abandoned, not a finding).

        A worker whose case has run past `case_timeout` will not answer within any grace (it
        hangs): it is killed then, its case abandoned, rather than holding the campaign past
        its budget for the whole grace. Killed workers are waited for a second at most, all
        together (a GPU process may take a while to go): the caller's time is bounded by
        `grace` plus that (Note [Ending on time] in campaign.py)."""
        self._stopping = True
        for s in self.slots:
            self.tell_stop(s.index)
        events: list[Event] = []
        abandoned: set[int] = set()
        end = time.monotonic() + grace
        while any(self.alive(s.index) for s in self.slots) and time.monotonic() < end:
            got = self.poll(0.2, enforce=False)
            events.extend(
                e for e in got if not (isinstance(e.message, Died) and e.slot in abandoned)
            )
            now = time.monotonic()
            for s in self.slots:
                if self._over_time(s, now) and self.alive(s.index):
                    abandoned.add(s.index)
                    _kill(s)
        for s in self.slots:
            if self.alive(s.index):
                _kill(s)
        reaped = time.monotonic() + 1.0
        for s in self.slots:
            events.extend(e for e in self._drain(s) if not isinstance(e.message, Died))
            self._reap(s, timeout=max(0.0, reaped - time.monotonic()))
        for fut in self._futures.values():
            if not fut.done():
                fut.cancel()
        return events

    def _reap(self, slot: _Slot, timeout: float = 5.0) -> None:
        if slot.proc is not None:
            slot.proc.join(timeout=timeout)
            if slot.conn is not None:
                slot.conn.close()
        slot.proc = slot.conn = None

    # -- serve jobs ------------------------------------------------------------------------
    def submit(
        self,
        spec_json: str,
        *,
        backend: str | None = None,
        impl: str | None = None,
        trace_dir: str | None = None,
        workdir: str | None = None,
        canary: bool = False,
    ) -> Future[Done | Died]:
        """Run a spec on a serve worker (`RunJob` says what the options mean); resolves to its
        `Done` or a `Died`."""
        job = next(self._ids)
        fut: Future[Done | Died] = Future()
        self._futures[job] = fut
        self._jobs.append(RunJob(job, spec_json, backend, impl, trace_dir, workdir, canary))
        return fut

    def _dispatch(self) -> None:
        for s in self.slots:
            if not self._jobs:
                return
            if (
                s.mode == "serve"
                and s.job is None
                and s.ready
                and not s.told_to_stop
                and not s.leaving
                and self.alive(s.index)
            ):
                run = self._jobs.popleft()
                s.job = run.job
                s.spec = run.spec
                s.started = time.monotonic()
                self.send(s.index, run)

    # -- watching --------------------------------------------------------------------------
    def poll(self, timeout: float, *, enforce: bool = True) -> list[Event]:
        """Messages and deaths since the last poll (waits up to `timeout` for the first)."""
        self._dispatch()
        waitables: list[Connection | int] = []
        for s in self.slots:
            if s.proc is not None and s.conn is not None:
                waitables += [s.conn, s.proc.sentinel]
        if waitables:
            wait(waitables, timeout)
        else:
            time.sleep(timeout)
        events: list[Event] = []
        for s in self.slots:
            if s.proc is None:
                continue
            events.extend(self._drain(s))
        if enforce:
            self._enforce_limits()
        self._dispatch()
        return events

    def _drain(self, s: _Slot) -> list[Event]:
        events: list[Event] = []
        # Alive *before* reading: a worker that writes its last messages and exits between our
        # last read and the check would otherwise lose them ("shrunk", "start" of a fatal case).
        exited = s.proc is not None and not s.proc.is_alive()
        conn = s.conn
        while conn is not None:
            try:
                if not conn.poll():
                    break
                message = conn.recv()
            except (EOFError, OSError):
                break
            events.append(self._on_message(s, message))
        if exited:
            events.extend(self._on_exit(s))
        return events

    def _on_message(self, s: _Slot, message: PoolMessage) -> Event:
        if isinstance(message, BETWEEN_CASES):  # it reads its pipe next
            self._flush(s)
        if isinstance(message, Ready):
            s.ready, s.failed_starts = True, 0
        elif isinstance(message, Started):
            s.spec, s.phase, s.started = message.spec, None, time.monotonic()
        elif isinstance(message, PhaseStarted):
            s.phase = message.phase
        elif isinstance(message, Done):
            s.spec = None
            s.leaving = message.last
            if message.job is not None:
                s.job = None
                fut = self._futures.pop(message.job, None)
                if fut is not None and not fut.done():
                    fut.set_result(message)
        elif isinstance(message, Bye):
            s.said_bye = message.reason
        return Event(s.index, message)

    def _on_exit(self, s: _Slot) -> list[Event]:
        proc = s.proc
        assert proc is not None, "only a slot with a process exits"
        proc.join(timeout=1)
        if not s.ready and s.kill_reason is None:
            s.failed_starts += 1
            if s.failed_starts >= 3 and not self._stopping:
                raise WorkerStartError(
                    f"worker {s.index} died on start-up 3 times ({_exit_reason(proc.exitcode)}); "
                    f"log: {s.log_path} (a script that starts a campaign needs an "
                    "`if __name__ == '__main__':` guard)\n" + _tail(s.log_path, 1500)
                )
        if s.said_bye is not None and s.spec is None:
            ev = Event(s.index, Exited(s.said_bye))
        else:
            if s.kill_reason is not None:
                kind, reason = s.kill_reason
            else:
                kind, reason = "interpreter-crash", _exit_reason(proc.exitcode)
            died = Died(kind, reason, s.phase, s.spec, _tail(s.log_path))
            ev = Event(s.index, died)
            if s.job is not None:
                fut = self._futures.pop(s.job, None)
                if fut is not None and not fut.done():
                    if self._stopping:  # we killed it: not the job's outcome
                        fut.cancel()
                    else:
                        fut.set_result(died)
        if s.conn is not None:
            s.conn.close()
        s.proc = s.conn = None
        s.spec = s.job = None
        return [ev]

    def _over_time(self, s: _Slot, now: float) -> bool:
        """The slot is in a case that has run past case_timeout (a hang)."""
        return s.spec is not None and now - s.started > self.case_timeout

    def _enforce_limits(self) -> None:
        now = time.monotonic()
        for s in self.slots:
            if s.proc is None or s.kill_reason is not None:
                continue
            if self._over_time(s, now):
                s.kill_reason = ("hang", f"timeout after {self.case_timeout:.0f} s")
                s.proc.kill()
        if now - self._last_rss_check < 1.0:
            return
        self._last_rss_check = now
        for s in self.slots:
            if s.proc is None or s.kill_reason is not None or s.proc.pid is None:
                continue
            rss = rss_bytes(s.proc.pid)
            if rss > self.rss_hard_bytes:
                gib = 1 << 30
                s.kill_reason = (
                    "interpreter-crash",
                    f"memory {rss / gib:.1f} GiB > {self.rss_hard_bytes / gib:.1f} GiB",
                )
                s.proc.kill()


def _kill(s: _Slot) -> None:
    if s.proc is not None:
        s.proc.kill()


def _worker_main(conn: Connection, config: WorkerConfig) -> None:
    """The worker process's target (both modules preloaded by the fork server)."""
    from pyfy_fuzz.campaign.explore import explore
    from pyfy_fuzz.campaign.worker import main

    main(conn, config, explore)


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "unknown exit"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit {code}"


def _tail(path: Path | None, n: int = 3000) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
