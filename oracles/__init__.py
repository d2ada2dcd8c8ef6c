"""Oracles: compare what eager, torch.compile and the pythonified file did with one program.

    findings = check_all(evidence)

Eager is the ground truth for torch.compile; torch.compile is the reference for pythonify.
One module per oracle family; each `check(evidence) -> list[Finding]`. Differences that are by
design are listed, with their reasons, in `by_design.BY_DESIGN` and nowhere else.

Note [The oracles load on first use]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The oracle modules compare tensors and import torch; the rest of the package -- Finding (the
schema's), identity, groups, upstream, by_design, evidence -- does not, and what writes a
corpus entry (pyfy_fuzz/corpus: entry.py, repro.py, torch-free) imports it. So importing the
package loads no oracle: `ORACLES`, `check_all` and an oracle module as an attribute
(`oracles.outputs`) load them all, on first use (tests/test_torch_free.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .by_design import BY_DESIGN, ByDesign, recording
from .consequences import fold
from .evidence import Evidence
from .finding import KINDS, Finding

if TYPE_CHECKING:  # bound on first use (Note [The oracles load on first use])
    ORACLES: dict[str, Callable[[Evidence], list[Finding]]]

# Note [The oracle registry]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An oracle is a public module of this package with `NAME`, `check`, `POSITION` (where
# check_all runs it: exceptions first, so a raising subject is judged before its values) and
# `ATTRIBUTABLE` (Note [Whose bug]). Nothing lists them: `_oracles` finds them with pkgutil,
# importing the package's public modules alphabetically, and orders them by POSITION.
_PUBLIC = tuple(
    sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
)


@cache
def _registry() -> tuple[ModuleType, ...]:
    """The oracle modules, by POSITION; importing them on the first call."""
    modules = [importlib.import_module(f"{__name__}.{n}") for n in _PUBLIC]
    found = sorted((m for m in modules if hasattr(m, "POSITION")), key=lambda m: m.POSITION)
    positions = [m.POSITION for m in found]
    if sorted(set(positions)) != list(range(len(found))):
        raise RuntimeError(f"oracle POSITIONs must be 0..{len(found) - 1}, once each: {positions}")
    return tuple(found)


@cache
def _oracles() -> dict[str, Callable[[Evidence], list[Finding]]]:
    """NAME -> check of every oracle, in the order check_all runs them."""
    return {m.NAME: m.check for m in _registry()}


@cache
def _attributable() -> frozenset[str]:
    """The NAMEs of the ATTRIBUTABLE oracles (Note [Whose bug])."""
    return frozenset(m.NAME for m in _registry() if m.ATTRIBUTABLE)


def __getattr__(name: str) -> Any:
    """ORACLES, and the package's modules, loaded on first use (Note [The oracles load on
    first use]); importing a submodule binds it in the package."""
    if name == "ORACLES":
        return _oracles()
    if name in _PUBLIC:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Note [Whose bug]
# ~~~~~~~~~~~~~~~~
# An oracle is ATTRIBUTABLE where its pythonify check compares the file with torch.compile's
# *outputs*, so that "the file agrees with eager" can be asked by comparing it with eager
# instead (`_torch_alone`). seq_nr compares the file's tables with torch's graphs and guards
# attribute on their own (_agrees_with_compile).


def check_all(evidence: Evidence) -> list[Finding]:
    """Every oracle's findings, in a fixed order (exceptions first), attributed (see
    `_torch_alone`), each consequence folded into its cause (Note [Consequences])."""
    found: list[Finding] = []
    for name, check in _oracles().items():
        got = check(evidence)
        found += [f for f in got if not _torch_alone(evidence, name, f, got)]
    return fold(evidence, found)


def _torch_alone(ev: Evidence, oracle: str, f: Finding, same_oracle: list[Finding]) -> bool:
    """A pythonify finding that is torch.compile's bug alone: torch.compile differs from eager
    under this oracle, and the pythonified file, judged against eager as torch.compile is,
    agrees with eager. The file then differs from torch.compile only because it is right; the
    bug is reported once, against torch.compile, never as one of the generator's."""
    if f.subject != "pythonify" or oracle not in _attributable() or ev.pythonified is None:
        return False
    if not any(g.subject == "torch.compile" for g in same_oracle):
        return False
    as_compiled = replace(ev, compiled=ev.pythonified, pythonified=None)
    with recording():  # a re-check: its excuses are not the case's
        return not _oracles()[oracle](as_compiled)


__all__ = ["BY_DESIGN", "KINDS", "ORACLES", "ByDesign", "Evidence", "Finding", "check_all"]
