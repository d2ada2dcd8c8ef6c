"""A worker's tracer runs only in the phases of a case that can reach a measured file, and
measures what the always-on tracer did (Note [Measured phases] in
pyfy_fuzz/campaign/case_coverage.py)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import coverage
import pytest

from pyfy_fuzz.campaign.case_coverage import MEASURED_PHASES, UNMEASURED_PHASES, CaseCoverage
from pyfy_fuzz.case.runner import run_case

from ..oracles.helpers import spec

TARGET = "def f(x):\n    if x:\n        return 1\n    return 2\n"
REPO = Path(__file__).resolve().parents[2]


def test_the_tracer_pauses_in_an_unmeasured_phase_and_resumes_in_a_measured_one(
    tmp_path: Path,
) -> None:
    mod = tmp_path / "target_phases.py"
    mod.write_text(TARGET)
    sys.path.insert(0, str(tmp_path))
    try:
        import target_phases  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    name = str(mod.resolve())
    cov = coverage.Coverage(data_file=None, branch=True, include=[name])
    cov.start()
    try:
        probe = CaseCoverage(cov, [name], ())
        probe.phase("eager")
        target_phases.f(True)
        unmeasured = probe.new_arcs()
        probe.phase("compile")
        target_phases.f(True)
        measured = probe.new_arcs()
        probe.pause()
        target_phases.f(False)
        paused = probe.new_arcs()
        probe.phase("a phase nobody named yet")
        target_phases.f(False)
        new_phase = probe.new_arcs()
    finally:
        probe.resume()
        cov.stop()
    assert unmeasured == () and paused == ()
    assert measured and new_phase and not set(measured) & set(new_phase)


def test_every_phase_the_runner_names_is_classed() -> None:
    phases: list[str] = []
    body = [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))]
    for backend in ("aot_eager",):
        run_case(spec(body, ["v1"]), backend=backend, on_phase=phases.append)
    assert set(phases) <= MEASURED_PHASES | UNMEASURED_PHASES
    assert not MEASURED_PHASES & UNMEASURED_PHASES
    assert {"compile", "torch.compile", "pythonify", "eager", "oracles"} <= set(phases)


# A worker's cases in a fresh process, the tracer paused between measured phases or always
# on; the arcs of the measured files it reached, pickled to argv[2].
_WORKER = """
import pickle, sys, tempfile
from pathlib import Path
import torch
from generators._spec import CallPlan
from pyfy_fuzz.campaign.case_coverage import CaseCoverage
from pyfy_fuzz.campaign.config import CampaignConfig, WorkerConfig
from pyfy_fuzz.campaign.worker import Channel, run_one
from pyfy_fuzz.case.subjects import BundledPythonify
from tests.oracles.helpers import spec

if sys.argv[1] == "always":
    CaseCoverage.pause = lambda self: None
torch.set_num_threads(1)
c = CampaignConfig(budget_s=60, corpus=Path(tempfile.mkdtemp()), coverage=True)
wc = WorkerConfig(campaign=c, slot=0, workdir=tempfile.mkdtemp())
class Conn:
    def send(self, m): pass
    def poll(self): return False
ch = Channel(Conn())
ch.coverage = CaseCoverage.start(tempfile.mkdtemp())
specs = [
    spec([("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))], ["v1"],
         plan=CallPlan(calls=2, backward=True)),
    spec([("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="nonleaf"),
]
for s in specs:
    run_one(ch, wc, BundledPythonify(), s)
ch.coverage.resume()
data = ch.coverage.cov._collector.data
pickle.dump({f: set(a) for f, a in data.items()}, open(sys.argv[2], "wb"))
"""


@pytest.mark.slow
def test_paused_between_phases_the_worker_reaches_the_same_arcs(tmp_path: Path) -> None:
    arcs = {}
    for how in ("always", "paused"):
        out = tmp_path / f"{how}.pkl"
        subprocess.run([sys.executable, "-c", _WORKER, how, str(out)], check=True, cwd=REPO)
        arcs[how] = pickle.loads(out.read_bytes())
    assert sum(map(len, arcs["always"].values())) > 100
    assert arcs["paused"] == arcs["always"]
