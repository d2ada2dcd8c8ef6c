"""Note [A poisoned worker]: an exception of pyfy-fuzz's that the canary shares is the
process's, not the case's: no harness-error finding, and the worker is recycled (the case that
broke the process is hunted by the campaign: tests/campaign/test_broken_process.py)."""

from __future__ import annotations

from multiprocessing import Pipe
from typing import Any

import pytest

import pyfy_fuzz.campaign.explore as explore
import pyfy_fuzz.campaign.worker as worker
from generators import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from pyfy_fuzz.campaign.config import WorkerConfig, serve_only
from pyfy_fuzz.case.subjects import BundledPythonify
from pyfy_fuzz.schema.messages import Broken, CaseOutcome, Done, Note, Serve

SPEC = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((3,), grad="none"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("sin", ("a0",), ("v0",)),),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1, backward=False),
)
TLS = "Hit PythonDispatcher dispatch key but PythonDispatcherTLS was not set"
BROKEN = Broken("RuntimeError", TLS)


def _raises(*args: Any, **kwargs: Any) -> Any:
    """run_case in a broken process: what the H200's worker raised inside make_fn."""
    raise RuntimeError(TLS)


def _run(monkeypatch: pytest.MonkeyPatch, canary_fails: bool, tmp: str) -> CaseOutcome:
    if canary_fails:  # what the canary's forward raised on the H200
        monkeypatch.setattr(worker, "canary", lambda device: ("RuntimeError", TLS))
    monkeypatch.setattr(worker, "run_case", _raises)
    a, b = Pipe()
    ch = worker.Channel(a)
    config = WorkerConfig(serve_only(), slot=0, workdir=tmp)
    out = worker.run_one(ch, config, BundledPythonify(), SPEC)
    while b.poll():
        b.recv()
    return out


def test_a_healthy_process_reports_the_harness_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    assert worker.poisoned("cpu") is None
    out = _run(monkeypatch, canary_fails=False, tmp=str(tmp_path))
    assert out.status == "error" and out.findings[0]["kind"] == "harness-error"


def test_a_broken_process_is_poisoned_not_a_finding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    out = _run(monkeypatch, canary_fails=True, tmp=str(tmp_path))
    assert out.status == "poisoned" and out.findings == ()
    assert TLS in (out.reason or "") and TLS in out.traceback
    assert out.broken == BROKEN  # what the canary found, as data: the campaign hunts with it


def _broken_run(outcome: CaseOutcome) -> Any:
    """A `_run` whose case left the process broken (as the real one says: ch.broken)."""

    def run(ch: worker.Channel, *a: Any, **kw: Any) -> CaseOutcome:
        ch.broken = outcome.broken
        return outcome

    return run


def test_a_serve_worker_leaves_after_a_poisoned_case(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from pyfy_fuzz.schema.messages import RunJob, Stop

    outcome = CaseOutcome("poisoned", SPEC.family, reason=BROKEN.describe(), broken=BROKEN)
    monkeypatch.setattr(worker, "run_one", _broken_run(outcome))
    a, b = Pipe()
    b.send(RunJob(1, SPEC.to_json()))
    b.send(Stop())
    why = worker._serve(worker.Channel(a), WorkerConfig(serve_only(), slot=0), BundledPythonify())
    assert why.startswith("recycled: the canary fails") and TLS in why
    sent = []
    while b.poll():
        sent.append(b.recv())
    # its Done says it leaves: the pool sends it no other job, which would die with it
    assert any(isinstance(m, Done) and m.outcome.status == "poisoned" and m.last for m in sent)
    assert not any(isinstance(m, (Note, Serve)) for m in sent)


def test_an_exploring_worker_stops_after_a_poisoned_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """It stops at once (a fresh process goes on), says why, and runs no staging case in the
    broken process: the campaign saves a shrink it cut short from what it was told."""
    import time

    outcome = CaseOutcome("poisoned", SPEC.family, reason=BROKEN.describe(), broken=BROKEN)
    monkeypatch.setattr(explore, "run_one", _broken_run(outcome))
    a, b = Pipe()
    config = WorkerConfig(serve_only(), slot=0)
    explorer = explore._Explorer(
        worker.Channel(a), config, BundledPythonify(), time.monotonic() + 60
    )
    explorer.run = explore._Run()
    with pytest.raises(explore._Stop):
        explorer.one(SPEC)
    assert (explorer.run.recycle or "").startswith("recycled: the canary fails")
    sent = []
    while b.poll():
        sent.append(b.recv())
    assert any(isinstance(m, Note) and "recycled" in m.text for m in sent)
