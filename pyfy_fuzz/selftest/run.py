"""Run a budgeted campaign against each mutant and judge whether it was caught.

    results = run_selftest([BY_NAME["copy_back_dropped"]], budget_s=60, workers=2, seed=0)

A mutant is *killed* when its campaign (the real one: worker processes, Hypothesis over the
mutant's generator families) reports a finding against pythonify, and the kill is *confirmed*
when, re-run here, the detecting program still fails with the mutant and passes with the
unmutated generator -- so a kill is never a generator bug that was there all along, nor a
flaky case. The campaign stops at the first such finding (`stop_on_subject`), so its elapsed
time is the time to first detection, start-up included.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pyfy_fuzz.selftest.mutants import Mutant, MutantPythonify

__all__ = [
    "CONFIRM_TRIES",
    "IMPL_MODULE",
    "MutantResult",
    "confirm",
    "run_mutant",
    "run_selftest",
]

IMPL_MODULE = "pyfy_fuzz.selftest.mutants"


@dataclass
class MutantResult:
    name: str
    wrapper: str
    families: list[str]
    bug: str
    killed: bool
    confirmed: bool | None  # None: nothing to confirm (survived)
    seconds: float | None  # campaign start to first detection
    cases: int | None  # cases run until then (all workers)
    total_cases: int
    detected_by: str | None  # "<kind>/<oracle>"
    explanation: str | None
    spec: str | None  # the detecting program (ProgramSpec JSON)
    elapsed_s: float  # the whole campaign, stop included
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_mutant(
    mutant: Mutant,
    *,
    budget_s: float,
    workers: int,
    seed: int,
    workdir: Path,
    backend: str = "aot_eager",
) -> MutantResult:
    from pyfy_fuzz.campaign.campaign import run_campaign
    from pyfy_fuzz.campaign.config import BackendMix, CampaignConfig

    config = CampaignConfig(
        budget_s=budget_s,
        corpus=workdir / mutant.name,
        mix=BackendMix(backend),
        workers=workers,
        seed=seed,
        wrappers=tuple(mutant.families),
        impl=f"{IMPL_MODULE}:impl_{mutant.name}",
        progress="quiet",
        stop_on_subject="pythonify",
        shrink_seconds=2.0,  # torch's own bugs found on the way are not what this measures
        grace_s=5.0,
    )
    t0 = time.monotonic()
    summary = run_campaign(config).summary
    elapsed = time.monotonic() - t0
    stop = summary.get("stopped_on")
    result = MutantResult(
        name=mutant.name,
        wrapper=mutant.wrapper,
        families=list(mutant.families),
        bug=mutant.bug,
        killed=stop is not None,
        confirmed=None,
        seconds=None,
        cases=None,
        total_cases=int(summary["cases"]),
        detected_by=None,
        explanation=None,
        spec=None,
        elapsed_s=round(elapsed, 1),
    )
    if stop is not None:
        finding = stop["finding"]
        result.confirmed, result.note = confirm(mutant, stop["spec"], backend)
        result.seconds, result.cases = float(stop["elapsed_s"]), int(stop["cases"])
        result.detected_by = f"{finding['kind']}/{finding['oracle']}"
        result.explanation = str(finding.get("explanation", ""))[:400]
        result.spec = stop["spec"]
    return result


CONFIRM_TRIES = 3  # runs of the detecting program with the mutant, until one fails


def confirm(mutant: Mutant, spec_json: str | None, backend: str) -> tuple[bool, str]:
    """Re-run the detecting program here: it must fail with the mutant and pass without.

    Note [A mutant's effect may depend on memory]: several mutants make the file read memory
    torch.compile never reads (a graph compiled for aliased inputs run on distinct ones takes
    `as_strided` views of a base that is not theirs), so what the oracle sees depends on what
    the allocator left there: the campaign's worker saw a difference and one re-run here may
    not (the 11-27 CI run's guard_aliasing_missing). The mutated program gets up to
    `CONFIRM_TRIES` runs, and a kill confirmed after the first says so in its note; the
    unmutated generator must pass its run, so a kill is still never a bug of the generator.
    """
    if not spec_json:
        return False, "the campaign did not report the detecting program"
    import torch._dynamo

    from generators import ProgramSpec
    from pyfy_fuzz.case.runner import run_case
    from pyfy_fuzz.case.subjects.impl import BundledPythonify

    spec = ProgramSpec.from_json(spec_json)

    def against_pythonify(impl: Any) -> list[str]:
        torch._dynamo.reset()
        with _stdout_discarded():  # effect programs print; the table must stay readable
            r = run_case(spec, backend=backend, impl=impl)
        return [f"{f.kind}/{f.oracle}" for f in r.findings if f.subject == "pythonify"]

    tries = 0
    mutated: list[str] = []
    while not mutated and tries < CONFIRM_TRIES:
        tries += 1
        mutated = against_pythonify(MutantPythonify(mutant))
    clean = against_pythonify(BundledPythonify())
    if clean:
        return False, f"the unmutated generator fails it too ({', '.join(clean)}): a real bug"
    if not mutated:
        return False, f"did not fail again with the mutant in {tries} runs (flaky detection)"
    return True, f"failed again on run {tries} of {CONFIRM_TRIES}" if tries > 1 else ""


@contextlib.contextmanager
def _stdout_discarded() -> Iterator[None]:
    """fd 1 to /dev/null (torch's print ops write there directly, past sys.stdout)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            try:
                yield
            finally:
                sys.stdout.flush()
                os.dup2(saved, 1)
    finally:
        os.close(saved)


def run_selftest(
    mutants: list[Mutant],
    *,
    budget_s: float,
    workers: int,
    seed: int = 0,
    backend: str = "aot_eager",
    keep: Path | None = None,
    on_result: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    """One campaign per mutant, in turn (each uses all `workers`); `keep` keeps the corpora."""
    root = keep if keep is not None else Path(tempfile.mkdtemp(prefix="pyfy-selftest-"))
    root.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for m in mutants:
            r = run_mutant(m, budget_s=budget_s, workers=workers, seed=seed, workdir=root)
            results.append(r)
            if on_result is not None:
                on_result(r)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return results
