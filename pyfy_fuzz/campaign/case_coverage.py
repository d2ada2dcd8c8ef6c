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

__all__ = ["CaseCoverage", "coverage_include"]


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
        return CaseCoverage(cov, torch, seen)

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
        self.cov.stop()
        self.cov.save()
