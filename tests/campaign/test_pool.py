"""The worker pool: serve workers ignore what is meant for explorers, and a stop is final."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from generators import ProgramSpec, RootSpec
from pyfy_fuzz.campaign.config import WorkerConfig, serve_only
from pyfy_fuzz.campaign.pool import Died, Pool
from pyfy_fuzz.schema.messages import Avoid, Bye, Done, Known, Serve
from tests.findings import SIN

pytestmark = pytest.mark.slow  # starts the fork server (imports torch): ~5 s

SPEC = SIN.to_json()


def _pool(tmp_path: Path, n: int = 1) -> Pool:
    def config(slot: int) -> WorkerConfig:
        (tmp_path / str(slot)).mkdir(exist_ok=True)
        return WorkerConfig(
            serve_only(),
            slot=slot,
            workdir=str(tmp_path / str(slot)),
            log_path=str(tmp_path / f"w{slot}.log"),
        )

    return Pool(n, config, case_timeout=60)


def _wait(pool: Pool, fut, seconds: float = 120) -> tuple[object, list]:  # type: ignore[no-untyped-def]
    events = []
    end = time.monotonic() + seconds
    while not fut.done() and time.monotonic() < end:
        events += pool.poll(0.2)
    return fut.result(), events


def test_a_serve_worker_survives_broadcasts_and_runs_later_jobs(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    pool.start(0, Serve())
    try:
        first, _ = _wait(pool, pool.submit(SPEC))
        assert isinstance(first, Done) and first.outcome.status == "ok"
        pool.broadcast(Known(({"coarse": "x.y.zzzzzzzzzzzz"},)))
        pool.broadcast(Avoid((SPEC,)))
        second, events = _wait(pool, pool.submit(SPEC))
        assert isinstance(second, Done) and second.outcome.status == "ok", second
        assert not [e for e in events if e.gone or isinstance(e.message, Bye)]
    finally:
        pool.stop(5)


def test_jobs_of_a_stopping_pool_are_cancelled_not_deaths(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    pool.start(0, Serve())
    _wait(pool, pool.submit(SPEC))  # started and warm
    fut = pool.submit(SPEC)
    pool.stop(0)  # killed at once: the job was not judged
    assert fut.cancelled() or isinstance(fut.result(), Done)
    assert not (fut.done() and not fut.cancelled() and isinstance(fut.result(), Died))


def test_a_stop_does_not_wait_its_grace_for_a_hanging_case(tmp_path: Path) -> None:
    """A worker stuck in a case past case_timeout cannot answer "stop": it is killed once the
    case is over time, and its case is abandoned (no death reported), so a campaign with a
    hang at its deadline ends near its budget rather than a whole grace later."""
    hangs = ProgramSpec.from_json(SPEC)
    hangs = ProgramSpec(
        family=hangs.family,
        roots=(RootSpec((2,), dtype="float64"),),
        inputs=hangs.inputs,
        body=hangs.body,
        outputs=hangs.outputs,
        plan=hangs.plan,
    )
    pool = _pool(tmp_path)
    pool.case_timeout = 3.0
    pool.start(0, Serve())
    pool.submit(hangs.to_json(), impl="tests.campaign.impls:float64_hangs")
    end = time.monotonic() + 120
    while pool.slots[0].spec is None and time.monotonic() < end:
        pool.poll(0.2, enforce=False)
    assert pool.slots[0].spec is not None, "the case never started"
    t0 = time.monotonic()
    events = pool.stop(60)
    assert time.monotonic() - t0 < 3.0 + 10
    assert not [e for e in events if isinstance(e.message, Died)]
