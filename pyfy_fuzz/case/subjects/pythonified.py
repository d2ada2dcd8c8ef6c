"""The pythonified file: imported fresh, bound to its own copy of the module."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from generators import Program
from pyfy_fuzz.case.recording import Target
from pyfy_fuzz.schema.observation import CUDAGRAPH_RUNNERS

__all__ = [
    "RUNNERS",
    "guarded_inputs",
    "pythonified_target",
]

RUNNERS = CUDAGRAPH_RUNNERS


def pythonified_target(program: Program, path: Path) -> tuple[Target, ModuleType]:
    """(target, loaded module). The module exposes SEQ_NR, GRADIENT_ACC_NODES, the CUDA-graph
    runners; `extra` reports the runners' counters after the run."""
    from pyfy_fuzz.pythonify import load

    fn = program.make_fn()
    mod = load(path, bind=fn)
    module = fn if hasattr(fn, "parameters") else None

    def extra() -> dict[str, Any]:
        out: dict[str, Any] = {"guarded_inputs": guarded_inputs(mod)}
        for name in RUNNERS:
            r = getattr(mod, name, None)
            if r is not None:
                out[name] = {
                    "captures": r.num_captures,
                    "replays": r.num_replays,
                    "eager_runs": r.num_eager_runs,
                    "skipped": r.skipped_reason,
                }
        return out

    return Target("pythonify", mod.call, module, extra), mod


def guarded_inputs(mod: Any) -> list[str]:
    """The sources (e.g. "L['a0']") the file guards: its graph's tensor inputs."""
    guards = getattr(mod, "_TENSOR_GUARDS", None) or []
    return sorted({str(g[1]) for g in guards if isinstance(g, tuple) and len(g) > 1})
