"""The pythonified file: imported fresh, bound to its own copy of the module."""

from __future__ import annotations

from typing import Any

from pyfy_fuzz.observe import Target

RUNNERS = ("_cudagraph_inference", "_cudagraph_forward", "_cudagraph_backward")


def pythonified_target(program: Any, path: Any) -> tuple[Target, Any]:
    """(target, loaded module). The module exposes SEQ_NR, GRADIENT_ACC_NODES, the CUDA-graph
    runners; `extra` reports the runners' counters after the run."""
    from pyfy_fuzz.pythonify import load

    fn = program.make_fn()
    mod = load(path, bind=fn)
    module = fn if hasattr(fn, "parameters") else None

    def extra() -> dict[str, Any]:
        out = {}
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
