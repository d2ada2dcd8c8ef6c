"""Note [A broken process]: the canary runs after every case; when it fails, the campaign runs
the worker's cases since its last passing canary again, each alone on a fresh worker followed
by the canary, and saves the one that breaks a process as a `process-broken` finding whose
repro.py runs the program and then the canary.

The breakage is planted (tests/campaign/impls.py:float64_leaves_a_mode): the pythonified
file's `call` enters a TorchDispatchMode for float64 arguments and never leaves it. Every
other case, float32 programs among them, leaves its process as it found it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import pyfy_fuzz.campaign.worker as worker
from generators import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt, spec_from_dict
from pyfy_fuzz.campaign.campaign import Campaign, run_campaign
from pyfy_fuzz.campaign.config import CampaignConfig, WorkerConfig, serve_only
from pyfy_fuzz.campaign.pool import Pool
from pyfy_fuzz.campaign.reductions import Hunted
from pyfy_fuzz.campaign.replay import replay
from pyfy_fuzz.corpus.repro import check_repro
from pyfy_fuzz.corpus.store import Corpus
from pyfy_fuzz.schema.messages import Broken, CaseOutcome, Died, Done, Serve

IMPL = "tests.campaign.impls:float64_leaves_a_mode"


def _spec(dtype: str) -> ProgramSpec:
    return ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((3,), dtype=dtype, grad="leaf"),),
        inputs=(InputSpec("root"),),
        body=(Stmt("sin", ("a0",), ("v0",)),),
        outputs=(OutSpec("ref", "v0"),),
        plan=CallPlan(calls=1, backward=True),
    )


class _Leak(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def test_the_canary_sees_what_a_case_leaves_behind() -> None:
    """Global state a fresh process has, and a forward and backward that still work; each
    check names what it found (the identity of a process-broken finding)."""
    assert worker.poisoned("cpu") is None
    torch._C._set_grad_enabled(False)
    try:
        assert worker.poisoned("cpu") == Broken("grad_mode", "off")
    finally:
        torch._C._set_grad_enabled(True)
    mode = _Leak()
    mode.__enter__()
    try:  # a mode's class names it, however many were pushed
        assert worker.poisoned("cpu") == Broken("dispatch_mode", "_Leak")
    finally:
        mode.__exit__(None, None, None)
    with torch.inference_mode():
        assert worker.poisoned("cpu") == Broken("inference_mode", "on")
    assert worker.poisoned("cpu") is None


def test_a_canary_job_names_the_phase_that_broke_a_fresh_process(tmp_path: Path) -> None:
    """Each canary job runs alone in a fresh worker (its Done says the worker leaves); only a
    case that breaks that process is a finding, charged to the phase after which the canary
    first failed: the file's run is pythonify's."""
    campaign = serve_only(impl=IMPL)
    pool = Pool(1, lambda slot: WorkerConfig(campaign, slot=slot, workdir=str(tmp_path)))
    pool.start(0, Serve())
    futures = [pool.submit(_spec(d).to_json(), canary=True) for d in ("float32", "float64")]
    results: list[Done | Died] = []
    end = time.monotonic() + 120
    try:
        while not all(f.done() for f in futures) and time.monotonic() < end:
            for ev in pool.poll(0.25):
                if ev.gone:
                    pool.start(ev.slot, Serve())
        results = [f.result(timeout=0) for f in futures]
    finally:
        pool.stop(5.0)
    innocent, breaker = results
    assert isinstance(innocent, Done) and isinstance(breaker, Done), results
    assert innocent.last and breaker.last
    assert innocent.outcome.broken is None
    assert not [f for f in innocent.outcome.findings if f["kind"] == "process-broken"]
    assert breaker.outcome.broken == Broken("dispatch_mode", "PlantedLeak", "pythonify")
    (found,) = [f for f in breaker.outcome.findings if f["kind"] == "process-broken"]
    assert (found["oracle"], found["subject"]) == ("canary", "pythonify")
    assert (found["exc_type"], found["message"]) == ("dispatch_mode", "PlantedLeak")
    assert found["signature"].startswith("process-broken.canary.")


@pytest.fixture
def hunter(tmp_path: Path) -> Iterator[Campaign]:
    """A campaign whose serve jobs are faked: "breaker" leaves a fresh process broken."""
    campaign = Campaign(CampaignConfig(budget_s=60, corpus=tmp_path / "corpus", progress="quiet"))
    ran: list[str] = []

    def job(spec: str, *, canary: bool) -> tuple[Done | Died, Path | None]:
        assert canary, "a hunt's runs are canary jobs"
        ran.append(spec)
        staging = campaign.corpus.new_staging()
        if spec != "breaker":
            return Done(CaseOutcome("ok", "input_mutation"), spec, job=1), staging
        broken = Broken("dispatch_mode", "PlantedLeak", "pythonify")
        found = (worker._broken_finding(broken).to_dict(),)
        outcome = CaseOutcome("ok", "input_mutation", findings=found, broken=broken)
        return Done(outcome, spec, job=1), staging

    campaign.reductions.job = job  # type: ignore[method-assign, assignment]
    campaign.ran = ran  # type: ignore[attr-defined]
    yield campaign
    campaign.repros.close()


def test_a_hunt_runs_the_suspects_until_one_breaks_a_fresh_process(hunter: Campaign) -> None:
    """Newest first; the innocent cases are not saved (nor their runs kept), and the hunt stops
    at the case that breaks a process alone."""
    broken = Broken("dispatch_mode", "PlantedLeak")
    hunter.reductions.hunt(0, broken, ["innocent, later", "breaker", "innocent, earlier"], None)
    assert hunter.ran == ["innocent, later", "breaker"]  # type: ignore[attr-defined]
    (hunted,) = hunter.reductions.take_hunted()
    found = hunted.found
    assert (hunted.slot, hunted.broken) == (0, broken)
    assert found is not None and found.spec == "breaker" and found.staging.is_dir()
    assert found.phase == "pythonify"
    assert len([p for p in hunter.corpus.root.iterdir() if p.name.startswith(".tmp")]) == 1
    hunter.reductions.hunt(1, broken, ["innocent, later"], None)
    assert hunter.reductions.take_hunted() == [Hunted(1, broken, None)]  # noted, nothing saved


def test_the_canary_runs_after_every_case_and_a_hunt_starts_at_its_first_failure(
    hunter: Campaign,
) -> None:
    """A slot's cases since its last passing canary are the suspects; a passing canary clears
    them (with a canary after every case, a hunt has the one case)."""
    started: list[tuple[Any, ...]] = []
    hunter.reductions.hunt = lambda *args: started.append(args)  # type: ignore[method-assign]
    ok = CaseOutcome("ok", "input_mutation")
    broke = CaseOutcome("ok", "input_mutation", broken=Broken("grad_mode", "off"))
    hunter.reductions.after_canary(0, Done(ok, "first"), None)
    assert list(hunter.reductions.unchecked[0]) == []
    hunter.reductions.after_canary(0, Done(broke, "second"), None)
    for t in hunter.reductions.threads:
        t.join()
    assert [a[:3] for a in started] == [(0, Broken("grad_mode", "off"), ["second"])]
    assert hunter.stats.hunts == 1 and list(hunter.reductions.unchecked[0]) == []


@pytest.mark.slow
def test_a_case_that_leaves_its_process_broken_is_saved_and_its_repro_exits_1(
    tmp_path: Path,
) -> None:
    """A real campaign: the float64 case that broke its worker is found on a fresh one, saved
    (and reduced as far as its time allows) as a pythonify process-broken entry, its repro.py
    exits 1 where pyfy-fuzz cannot be imported, and replay tells the planted bug from the
    fixed generator."""
    t0 = time.monotonic()
    result = run_campaign(
        CampaignConfig(
            budget_s=45,
            corpus=tmp_path / "corpus",
            progress="quiet",
            impl=IMPL,
            wrappers=("input_mutation",),
            workers=2,  # one explores while the other hunts and reduces as a serve worker
            seed=0,
            shrink_seconds=4.0,  # other bugs' shrinks leave time to explore
        )
    )
    assert time.monotonic() - t0 <= 45 + 15 + 5
    summary = result.summary
    assert summary["hunts"] >= 1
    corpus = Corpus.open(tmp_path / "corpus", create=False)
    cases = [e.case for e in corpus.entries.values()]
    assert not [c for c in cases if c["kind"] == "harness-error"]  # no innocent case blamed
    broken = [c for c in cases if c["kind"] == "process-broken"]
    assert len(broken) == 1, [c["signature"] for c in cases]
    case = broken[0]
    assert (case["subject"], case["bug_in"], case["expected"]) == ("pythonify", "pythonify", "pass")
    assert (case["exc_type"], case["message"]) == ("dispatch_mode", "PlantedLeak")
    assert case["phase"] == "pythonify"  # the phase after which the canary first failed
    assert case["title"].startswith("pythonify (aot_eager): leaves the process broken")
    # the breaking case, not a later one: the planted trigger survives the reduction
    assert any(r.dtype == "float64" for r in spec_from_dict(case["spec"]).roots)
    entry = corpus.root / case["signature"]
    assert "PlantedLeak" in (entry / "pythonified.py").read_text()  # the reduced spec's file
    assert "leaves the process broken" in (entry / "README.md").read_text()
    code, tail = check_repro(entry, timeout=120)
    assert code == 1, tail
    assert "BUG: pythonified.py leaves the process broken" in tail
    assert case.get("repro", {}).get("verdict") in ("reproduces", None, "not run")

    still = replay([entry], impl=IMPL)
    assert [o.verdict for o in still.outcomes] == ["FAIL"], [o.detail for o in still.outcomes]
    fixed = replay([entry], impl="bundled")
    assert [o.verdict for o in fixed.outcomes] == ["pass"], [o.detail for o in fixed.outcomes]


def test_a_hunts_findings_are_data() -> None:
    """What travels between the stages: Broken, and a finding built from it, never prose."""
    b = Broken("RuntimeError", "Hit PythonDispatcher dispatch key", "compile")
    f = worker._broken_finding(b).to_dict()
    assert json.loads(json.dumps(f)) == f
    assert (f["kind"], f["subject"], f["exc_type"]) == (
        "process-broken",
        "torch.compile",
        "RuntimeError",
    )
    with pytest.raises(ValueError, match="carries what the canary found"):
        CaseOutcome("poisoned", "input_mutation")
