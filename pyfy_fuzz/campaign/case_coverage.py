"""A worker's coverage: measured from after its imports, read after every case.

`run --coverage` starts coverage.py's tracer in each worker (`CaseCoverage.start`), restricted
to torch's measured files and the bundled generator (coverage_data.torch_files, Note [What
coverage measures]), after every measured module is imported (Note [Reached by cases]).
After each case `new_arcs` says which arcs of torch's files the case reached that this
worker had not seen (nor the campaign, when the worker started): what steering keeps a
program for (Note [Steering] in campaign/steering.py). At the end the worker saves its data
file; the campaign combines them (coverage_data.combine_coverage).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pyfy_fuzz.reports.coverage_data import torch_files

__all__ = ["MEASURED_PHASES", "UNMEASURED_PHASES", "CaseCoverage", "coverage_include"]

# Note [Measured phases]
# coverage.py's C tracer (Python 3.11 has no sys.monitoring) is called for every Python call,
# line and return while it is installed, in every file: measuring nothing at all cost a case
# as much as measuring the 29 files (issue 36's profile: 337 against 367 ms of CPU a case,
# 228 without the tracer). So a worker's tracer runs only while a case is in a phase that can
# run a measured file (torch's AOTAutograd, partitioner, functionalization and Dynamo files,
# and the bundled generator): the compiles and the compiled subjects' runs, whose runtime
# wrappers, guards and recompiles are those files, and the pythonified file's load and run
# (the generator's runtime). It is paused for the rest: drawing the program (Hypothesis, no
# torch), materialize, eager's runs (plain torch: no Dynamo, no AOTAutograd), the float64
# reference (eager too), the oracles (plain data), the canary, Dynamo's reset between cases and
# the messages to the campaign. Which runner phase is which is `MEASURED_PHASES`, keyed by
# the names runner.run_case tells `on_phase`; a phase it does not name (a new one) is
# measured. The arcs a campaign reaches are those the always-on tracer reached
# (tests/campaign/test_case_coverage.py runs a set of cases both ways).
MEASURED_PHASES = frozenset(
    {"compile", "torch.compile", "torch.compile-warm", "pythonify", "capture"}
)
UNMEASURED_PHASES = frozenset({"materialize", "eager", "eager-fp64", "oracles"})


def coverage_include() -> list[str]:
    """What `run --coverage` measures: torch's files (Note [What coverage measures]) and the
    bundled generator with its subpackages."""
    from pyfy_fuzz import pythonify

    here = os.path.realpath(os.path.dirname(pythonify.__file__))
    # the package and its subpackages (wrappers/, capture/): a pattern's * stops at a folder
    return [*torch_files(), os.path.join(here, "*.py"), os.path.join(here, "*", "*.py")]


def _import_measured(files: Iterable[str]) -> None:
    """Import every measured torch module before measuring starts, so what runs at import is
    never recorded as reached by a case (Note [Reached by cases])."""
    import torch

    root = Path(os.path.realpath(torch.__file__)).parent.parent
    for name in files:
        module = ".".join(Path(name).relative_to(root).with_suffix("").parts)
        try:
            importlib.import_module(module.removesuffix(".__init__"))
        except Exception:  # noqa: BLE001 - a module this build cannot import is not reached
            pass


class CaseCoverage:
    """coverage.py in one worker, and the arcs of torch's files it has seen."""

    def __init__(self, cov: Any, torch: list[str], seen: Iterable[tuple[str, Any]]) -> None:
        self.cov = cov
        self.torch = torch
        self.seen: dict[str, set[Any]] = {f: set() for f in torch}
        for name, arc in seen:
            self.seen.setdefault(name, set()).add(arc)
        self.sizes: dict[str, int] = {}  # arcs in the tracer's data per file, last read
        self.tracing = True  # the tracer is installed (Note [Measured phases])

    @staticmethod
    def start(directory: str, seen: Iterable[tuple[str, Any]] = ()) -> CaseCoverage:
        """Measure from now on into a data file of its own in `directory`; `seen`: arcs the
        campaign had seen when this worker started."""
        import coverage

        torch = torch_files()
        _import_measured(torch)
        cov = coverage.Coverage(
            data_file=os.path.join(directory, ".coverage"),
            data_suffix=True,  # one file per worker incarnation; the campaign combines them
            branch=True,
            include=coverage_include(),
        )
        cov.start()
        measured = CaseCoverage(cov, torch, seen)
        measured.pause()  # until a case's first measured phase (Note [Measured phases])
        return measured

    def phase(self, name: str) -> None:
        """The case enters runner phase `name`: trace it where it can reach a measured file
        (Note [Measured phases])."""
        if name in UNMEASURED_PHASES:
            self.pause()
        else:
            self.resume()

    def pause(self) -> None:
        """Stop tracing, keeping the data (coverage.py's Collector.pause; a no-op where this
        coverage.py has none)."""
        if self.tracing:
            getattr(getattr(self.cov, "_collector", None), "pause", lambda: None)()
            self.tracing = False

    def resume(self) -> None:
        if not self.tracing:
            getattr(getattr(self.cov, "_collector", None), "resume", lambda: None)()
            self.tracing = True

    def new_arcs(self) -> tuple[tuple[str, Any], ...]:
        """The arcs of torch's files reached since the last call that were not seen before,
        as (file, arc) with the arc as coverage.py's tracer records it (opaque, hashable).
        Reads the tracer's in-memory data (coverage.py's private collector: () where it has
        none), so it costs a set difference per file that grew."""
        data = getattr(getattr(self.cov, "_collector", None), "data", None)
        if not isinstance(data, dict):
            return ()
        new: list[tuple[str, Any]] = []
        for name in self.torch:
            arcs = data.get(name)
            if not arcs or len(arcs) == self.sizes.get(name, 0):
                continue
            self.sizes[name] = len(arcs)
            seen = self.seen[name]
            fresh = arcs.difference(seen)  # one C call: atomic under the GIL
            seen |= fresh
            new += ((name, arc) for arc in fresh)
        return tuple(new)

    def stop(self) -> None:
        self.resume()  # Coverage.stop pauses its collector itself
        self.cov.stop()
        self.cov.save()
