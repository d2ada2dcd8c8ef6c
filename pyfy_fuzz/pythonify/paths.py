"""Wrapper paths read off the pythonify IR: which of the vocabulary's names
(`pyfy_fuzz.schema.paths`: `ALL_PATHS`, `FAMILY_TARGETS`, `REFINEMENTS`) a compile exercised.
Each wrapper module says which of its own paths a node reaches (`wrappers/*.paths`).

The vocabulary moved to the torch-free schema (issue 15). For one release its old names still
import from here, with a DeprecationWarning that says where they went.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..schema import paths as _schema_paths
from . import wrappers
from .ir import PythonifyIR
from .meta import PathFacts

__all__ = ["wrapper_paths"]

# Names that moved to pyfy_fuzz.schema.paths (issue 15); importable from here for one release
# (0.2 drops them).
_MOVED = frozenset(_schema_paths.__all__)


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(
            f"pyfy_fuzz.pythonify.paths.{name} moved to pyfy_fuzz.schema.paths.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_schema_paths, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def wrapper_paths(ir: PythonifyIR) -> list[str]:
    """Every wrapper path this compile exercised, sorted, each once. Each wrapper's paths are
    its module's `paths` (wrappers/); the module and dynamic-shape paths belong to no wrapper."""
    fw = ir.graphs.get("forward")
    facts = PathFacts(
        training=ir.training,
        forward_outputs=fw.num_outputs if fw is not None else 0,
        input_ndims={g.index: len(g.shape) for g in ir.guards.tensors},
    )
    paths: list[str] = []
    for node in [*ir.wrapper_nodes(), *ir.cudagraphs]:
        paths += wrappers.paths(node, facts)
    if ir.entry.is_module:
        paths.append("module/parameters" if ir.training else "module/inference")
    if any(None in g.shape for g in ir.guards.tensors):
        paths.append("graph/dynamic")
    return sorted(set(paths))
