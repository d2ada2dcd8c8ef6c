"""What the campaign and its workers say to each other: one frozen dataclass per message.

A worker runs in its own process and talks over a `multiprocessing` pipe, so every message is
pickled; a frozen dataclass pickles as plainly as the `(tag, dict)` pairs it replaces, and a
reader (or mypy) sees in one place what each message carries. Three directions:

- **Commands**, campaign -> worker: `Explore` or `Serve` (the first, choosing the mode), then
  `RunJob` (serve), `Known`/`Avoid` (explore, between cases) and `Stop`.
- **Reports**, worker -> campaign: `Ready`, then per case `Started`, `PhaseStarted`, `Done`;
  an explore worker adds `Found`/`Improved` while it shrinks and `Shrunk` at the end of one;
  `Note` for what the campaign logs, `Bye` when it leaves on its own.
- **Pool events**, pool -> its caller, which no worker sends: `Died` (the process went down
  in a case, or was killed) and `Exited` (it left after saying `Bye`).

Findings travel as `Finding.to_dict()` dicts: the known-bug matching and case.json both work
on that form, and a dict pickles without importing the oracles. What the canary found broken
in a worker's process after a case travels as `Broken`, data the finding is built from.

Note [Messages between cases]
A worker reads its pipe only between cases. `Ready`, `Done` and `Shrunk` say it is about to
read; the pool holds `Known`/`Avoid` until then (a send to a worker stuck in a hanging case
could fill the pipe and block the thread that must kill it). `BETWEEN_CASES` names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = [
    "Avoid",
    "BETWEEN_CASES",
    "Broken",
    "Bye",
    "CaseOutcome",
    "Command",
    "Died",
    "DiedKind",
    "Done",
    "Exited",
    "Explore",
    "Found",
    "FindingDict",
    "Improved",
    "Known",
    "Note",
    "PhaseStarted",
    "PoolMessage",
    "Ready",
    "Report",
    "SERVED",
    "RunJob",
    "Serve",
    "Served",
    "Shrunk",
    "Started",
    "Stop",
]

FindingDict: TypeAlias = dict[str, Any]  # Finding.to_dict(): signature, coarse, kind, ...

# What AOTAutograd's cache did for a case's warm compile (Note [The warm subject] in
# subjects/warm.py): every graph served from it ("hit"), some ("partial"), none ("miss"); or
# there was nothing to serve: the cold compile could not be cached ("bypass"), or saved no
# entry ("unsaved": torch saves one only once the lazily lowered backward exists, and the plan
# ran no backward). Only "hit" and "partial" are judged warm.
Served = Literal["hit", "partial", "miss", "bypass", "unsaved"]
SERVED: tuple[Served, ...] = ("hit", "partial", "miss", "bypass", "unsaved")

# -- commands: campaign -> worker -----------------------------------------------------------


@dataclass(frozen=True)
class Explore:
    """First command: run Hypothesis over the generators until `deadline`."""

    seed: int  # the stream's seed; each Hypothesis restart derives its own from it
    deadline: float  # time.monotonic() (system-wide on Linux, so valid across processes)
    stream: int  # the stream's id, for the campaign's bookkeeping

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ValueError(f"Explore.seed must be >= 0, not {self.seed}")


@dataclass(frozen=True)
class Serve:
    """First command: run the `RunJob`s the pool sends, and nothing else."""


@dataclass(frozen=True)
class RunJob:
    """Run one spec on a serve worker and answer `Done` (with `job`)."""

    job: int  # the pool's id for it: the Done that answers carries it back
    spec: str  # ProgramSpec JSON
    backend: str | None = None  # None: the worker's configured backend
    impl: str | None = None  # pythonify implementation; None: the worker's own
    trace_dir: str | None = None  # keep the run's structured trace (TORCH_TRACE) here
    workdir: str | None = None  # run the case here (its pythonified.py); None: the worker's own
    # A canary job: the canary runs before each runner phase and after the case, a broken
    # process is reported as a `process-broken` finding naming the phase, and the worker
    # leaves after it, so each job runs in a fresh process (Note [A broken process] in
    # worker.py).
    canary: bool = False


@dataclass(frozen=True)
class Known:
    """Bugs the campaign knows, in order. An item is a `KnownBug.to_dict()` to add, or
    ``{"settle": coarse, "bugs": [...]}``: everything known of a coarse key once its shrink
    ended (Note [Bug identity] in oracles/identity.py)."""

    items: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Avoid:
    """Specs (JSON) that killed a worker: never run them again."""

    specs: tuple[str, ...]


@dataclass(frozen=True)
class Stop:
    """Finish (or abandon) the current shrink and leave with `Bye`."""


Command: TypeAlias = Explore | Serve | RunJob | Known | Avoid | Stop

# -- reports: worker -> campaign ------------------------------------------------------------


@dataclass(frozen=True)
class Broken:
    """What the canary found off in a worker's process (Note [A broken process] in worker.py):
    the first check of `_repro_helpers.canary` that failed. A process-broken finding's identity
    is read from these fields: `what` as its exception type, `detail` as its message."""

    # The exception type the canary's forward and backward raised, or the check that failed:
    # grad_mode | inference_mode | dispatch_mode | function_mode | wrong_gradient.
    what: str
    detail: str  # the exception's message, or the state found (the modes left active)
    # A canary job checks before each runner phase: the phase that ran last before the first
    # failed check. None: checked only after the whole case (an exploring worker), or it
    # failed before the case began (not the case's doing).
    phase: str | None = None

    def __post_init__(self) -> None:
        if not self.what:
            raise ValueError("Broken.what names the failed check or the exception type")

    def describe(self) -> str:
        """The canary's failure in words, for a log line or a note."""
        after = f" after {self.phase}" if self.phase else ""
        return f"the canary fails in this process{after}: {self.what}: {self.detail[:200]}"


@dataclass(frozen=True)
class CaseOutcome:
    """One case's result as plain data (what `runner.CaseResult` keeps that the campaign uses)."""

    # ok | discarded | invalid | error (pyfy-fuzz itself raised) | poisoned (it raised, and the
    # canary fails too: the process is broken, its exception is the process's, not a finding:
    # Note [A poisoned worker] in worker.py)
    status: str
    family: str  # the spec's generator family
    findings: tuple[FindingDict, ...] = ()
    wrapper_paths: tuple[str, ...] = ()
    unsupported: str | None = None  # why no pythonified file
    reason: str | None = None  # why discarded / invalid
    excused: tuple[str, ...] = ()  # by-design excuses that applied
    total_s: float = 0.0  # the case's wall time
    traceback: str = ""  # status "error": where pyfy-fuzz raised
    warm: Served | None = None  # what the cache did for the warm subject; None: not consulted
    config_skipped: tuple[str, ...] = ()  # configuration knobs this torch lacks (not applied)
    backend: str = ""  # what the case compiled with ("": not recorded)
    # What the canary, run after every case, found broken in the process (None: it runs as a
    # fresh process would). Note [A broken process] in worker.py.
    broken: Broken | None = None
    # run --coverage: the arcs of torch's measured files this case reached that its worker had
    # not seen, as (file, arc); what steering keeps a program for (Note [Steering])
    new_arcs: tuple[tuple[str, Any], ...] = ()
    pooled: bool = False  # explore: the spec was drawn from the steering pool (a mutation)

    def __post_init__(self) -> None:
        if self.status not in ("ok", "discarded", "invalid", "error", "poisoned"):
            raise ValueError(f"CaseOutcome.status {self.status!r} is not a case status")
        if self.status == "poisoned" and self.broken is None:
            raise ValueError("a poisoned case carries what the canary found broken")
        if self.warm is not None and self.warm not in SERVED:
            raise ValueError(f"CaseOutcome.warm {self.warm!r} is not one of {SERVED}")
        if self.status == "error" and not self.findings:
            raise ValueError("an errored case carries its harness-error finding")


@dataclass(frozen=True)
class Ready:
    """The worker started (torch imported, coverage on) and reads its first command."""

    pid: int


@dataclass(frozen=True)
class Started:
    """A case starts: if the worker dies now, this spec killed it."""

    spec: str  # ProgramSpec JSON
    job: int | None = None  # serve: the RunJob it answers
    shrinking: str | None = None  # explore: the coarse key being shrunk, if any


@dataclass(frozen=True)
class PhaseStarted:
    """The running case entered a runner phase (eager, compile, pythonify, ...): a death
    names it."""

    phase: str


@dataclass(frozen=True)
class Done:
    """A case ended (the worker reads its pipe next)."""

    outcome: CaseOutcome
    spec: str  # ProgramSpec JSON
    job: int | None = None  # serve: the RunJob it answers
    shrinking: str | None = None  # explore: the coarse key being shrunk, if any
    # serve: the worker leaves after this case (recycled, or after a canary job), so the pool
    # sends it no other job -- one sent would be lost with the process
    last: bool = False


@dataclass(frozen=True)
class Found:
    """An explore worker saw a bug nobody knows and starts shrinking it."""

    finding: FindingDict
    spec: str


@dataclass(frozen=True)
class Improved:
    """A smaller spec still shows the bug being shrunk."""

    finding: FindingDict
    spec: str


@dataclass(frozen=True)
class Shrunk:
    """A shrink ended: the smallest spec, run once more into a corpus staging directory."""

    finding: FindingDict  # the staging run's (its paths are the shrunk program's)
    spec: str
    staging: str | None  # the staged entry directory; None without a corpus
    confirmed: bool  # the staging run showed the bug again
    cut_by_budget: bool  # the campaign stopped before the reducer could run
    complete: bool  # the reducer reached its fixpoint: no candidate still fails
    also: tuple[FindingDict, ...] = ()  # the staging run's other findings

    def __post_init__(self) -> None:
        if self.complete and self.cut_by_budget:
            raise ValueError("a shrink cut by the budget cannot be complete")


@dataclass(frozen=True)
class Note:
    """Something the campaign logs (a Hypothesis run that ended oddly)."""

    text: str


@dataclass(frozen=True)
class Bye:
    """The worker leaves on its own: stopped, or recycled (the reason says which)."""

    reason: str


Report: TypeAlias = Ready | Started | PhaseStarted | Done | Found | Improved | Shrunk | Note | Bye

# -- pool events: pool -> its caller --------------------------------------------------------

DiedKind: TypeAlias = Literal["interpreter-crash", "hang"]


@dataclass(frozen=True)
class Died:
    """A case that took its worker down."""

    kind: DiedKind
    reason: str  # "SIGSEGV", "exit 1", "timeout after 60 s", "memory 5.0 GiB > 4.0 GiB"
    phase: str | None  # the runner phase that was running
    spec: str | None  # the spec (JSON) that was running
    log_tail: str = ""


@dataclass(frozen=True)
class Exited:
    """A worker left after `Bye` (between cases)."""

    reason: str


PoolMessage: TypeAlias = Report | Died | Exited

# See Note [Messages between cases].
BETWEEN_CASES: tuple[type, ...] = (Ready, Done, Shrunk)
