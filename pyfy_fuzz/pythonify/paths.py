"""Wrapper paths read off the pythonify IR: which paths a compile exercised.

Each wrapper module says which of its own paths a node reaches (`wrappers/*.paths`). The
names form the harness's vocabulary (`pyfy_fuzz.schema.paths.ALL_PATHS`, which a test keeps a
superset of every path emitted here); pythonify itself imports nothing of the harness.
"""

from __future__ import annotations

from . import wrappers
from .ir import PythonifyIR
from .meta import PathFacts

__all__ = ["wrapper_paths"]


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
    if ir.entry.grad_stores:  # Note [Gradients the graph stores] in capture/grads.py
        paths.append("graph/grad_store")
    return sorted(set(paths))
