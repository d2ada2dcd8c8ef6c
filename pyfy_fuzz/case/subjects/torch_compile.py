"""torch.compile: the stock compile of a fresh copy (compile_once.plain_compile)."""

from __future__ import annotations

from typing import Any

from pyfy_fuzz.case.recording import Target
from pyfy_fuzz.case.subjects.compile_once import CompileOnce

__all__ = [
    "cudagraph_skips",
    "torch_compile_target",
]


def cudagraph_skips() -> int:
    """How many graphs torch has run without CUDA graphs in this process: cudagraph trees (and
    the `cudagraphs` backend) count each skip, whatever the reason (a CPU tensor, a mutated
    input, an incompatible op, ...), in counters["inductor"]["cudagraph_skips"]."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["cudagraph_skips"])


def torch_compile_target(once: CompileOnce) -> Target:
    """The stock compile; `extra` reports the CUDA-graph skips its compiles made (the oracle
    compares them with the file's runners under reduce-overhead: oracles/cudagraph.py)."""
    before = cudagraph_skips()

    def extra() -> dict[str, Any]:
        return {"cudagraph_skips": cudagraph_skips() - before}

    return Target("torch.compile", once.compiled, once.compiled_module, extra)
