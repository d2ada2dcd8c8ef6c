"""Whether eager can be the ground truth of a case: it must give the same bits twice (on CUDA,
take no op without a deterministic implementation: Note [Nondeterminism on the GPU]) and not
misbehave on its own (`EagerQuirks`). The runner discards a case where it cannot; the oracles
never see it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

import oracles
from generators import Program
from oracles import Evidence
from pyfy_fuzz.case.observe import observe_subject
from pyfy_fuzz.case.probes import autograd_order
from pyfy_fuzz.case.recording import Target
from pyfy_fuzz.case.subjects import eager_target
from pyfy_fuzz.schema.observation import SubjectObs

__all__ = [
    "EagerQuirks",
    "NONDETERMINISTIC",
    "nondeterminism",
    "nondeterministic_ops",
    "observe_eager",
    "watched",
]


# Note [Nondeterminism on the GPU]
# Eager is the ground truth only where it gives the same bits twice. On CPU two eager runs
# that agree are evidence enough (run_case compares them exactly). On CUDA they are not:
# atomics (index_add, scatter_add, index_put with accumulate, and the backwards of gathers
# and embeddings) add in whatever order the threads arrive, which on small tensors is often,
# but not always, the same. So on CUDA the second run asks torch which ops it took that have
# no deterministic implementation (use_deterministic_algorithms(True, warn_only=True): the
# same list torch documents), and a program that took one is discarded, never compared
# exactly and never reported. An op that has a deterministic alternative (index_add_ on
# CUDA: no warning, measured on torch 2.11 with an H200) takes it in that run instead, so the
# two eager runs usually differ in their bits and the exact comparison discards the program;
# where they agree by chance, the program stays compared. The generators draw none of those
# ops today (no index_add, scatter_add, index_put with accumulate, embedding or gather), so
# that gap is open only to hand-written specs. Everything else stays exact.
NONDETERMINISTIC = "does not have a deterministic implementation"


@contextlib.contextmanager
def nondeterministic_ops(device: str) -> Iterator[list[str]]:
    """On CUDA, the run inside asks torch to warn where it takes an op that may give other
    bits on another run (Note [Nondeterminism on the GPU]); yields the ops' messages. Two
    eager runs that agree do not prove it: atomics can happen to add in the same order."""
    flagged: list[str] = []
    if not device.startswith("cuda"):
        yield flagged
        return
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield flagged
        finally:
            torch.use_deterministic_algorithms(before[0], warn_only=before[1])
    flagged += [
        str(w.message).split("\n")[0][:200] for w in seen if NONDETERMINISTIC in str(w.message)
    ]


def nondeterminism(a: SubjectObs, b: SubjectObs) -> str | None:
    """Compare two eager runs with the oracles themselves (eager vs eager, exact)."""
    ev = Evidence(eager=a, compiled=b, pythonified=None, backend="aot_eager")
    found = [f for f in oracles.check_all(ev) if f.oracle != "seq_nr"]
    return (
        found[0].explanation.replace(
            "torch.compile differs from eager", "eager differs from itself"
        )
        if found
        else None
    )


def observe_eager(program: Program) -> SubjectObs:
    """Eager through the plan, with its backward order for the seq_nr oracle (`extra`)."""
    obs = observe_subject(program, eager_target(program))
    order = autograd_order(program, eager_target(program), 0) if program.plan.backward else None
    return replace(obs, extra={**obs.extra, "autograd_order": order})


# ---------------------------------------------------------------- eager misbehaving


class EagerQuirks(TorchFunctionMode):
    """Watches an eager run for an out-of-place op that hands back its input object itself.

    torch 2.13: dropout (and its variants) of a tensor with no elements returns the input
    as-is instead of a new tensor. Everything downstream then works on the argument itself:
    the output *is* the input (a leaf), an in-place write to the "result" mutates the input
    and trips eager's own backward (a saved tensor modified) or its leaf check. torch.compile
    hands out another tensor (its graph's output), as an out-of-place op should; the difference
    is eager's, not a compile bug, so such a case is discarded. Decided at run time, on what
    eager did, so it holds however the spec came to have an empty tensor there (generated,
    shrunk, a variant call, written by hand)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: str | None = None

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        inplace = name.endswith("_") or kwargs.get("inplace") or (len(args) > 3 and args[3])
        if (
            "dropout" in name
            and not inplace
            and args
            and isinstance(out, torch.Tensor)
            and out is args[0]
            and self.found is None
        ):
            self.found = (
                f"{name} of a tensor with {out.numel()} elements returned its input as-is "
                "(not a new tensor)"
            )
        return out


def watched(target: Target, quirks: EagerQuirks | None) -> Target:
    """`target` with its calls run under `quirks` (unchanged where there is nothing to watch)."""
    if quirks is None:
        return target
    inner = target.call

    def call(*args: Any) -> Any:
        with quirks:
            return inner(*args)

    return replace(target, call=call)
