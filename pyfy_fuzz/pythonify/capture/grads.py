"""Gradients Dynamo stores on the inputs after the graph: the file stores them too.

Note [Gradients the graph stores]
---------------------------------
`loss.backward()` inside the compiled function, with `torch._dynamo.config.trace_autograd_ops`,
is traced as `torch.autograd.grad` plus `inductor.accumulate_grad_` on each leaf Dynamo knows
(`TensorVariable.method_backward`). Where a leaf's `.grad` is None, the accumulation makes a
new tensor: the graph returns it as an extra output, and Dynamo's resume bytecode assigns it,
`L['x'].grad = <output>`, after the graph ran and after the hooks it replays
(`SideEffects.codegen_update_mutated`, after `codegen_hooks`). Where `.grad` already exists,
Dynamo passes it to the graph as an input (source `L['x'].grad`) and the accumulation is an
input mutation, which the wrappers apply: nothing to store.
So the capture looks at what its own call did: every tensor of the arguments (and a module's
parameters and buffers) whose `.grad` is another object after the call than before gets a
store, `<source>.grad = outs[i]` with `i` the compiled output that *is* the new gradient, or
`= None`. A new gradient that is no compiled output, or a tensor without a source, is refused
by name: dropping the store would lose the gradient silently (found by the campaign's first
`.backward()` inside a function: the file returned the right outputs and no `.grad`).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..errors import PythonifyUnsupported
from ..meta import GradStore

__all__ = ["GradSnapshot", "grad_snapshot", "grad_stores"]

# id(tensor) -> (the tensor, id of its .grad before the call, or None)
GradSnapshot = dict[int, tuple[torch.Tensor, int | None]]


def _grad(t: torch.Tensor) -> Any:
    with warnings.catch_warnings():  # reading a non-leaf's .grad warns
        warnings.simplefilter("ignore")
        return t.grad


def grad_snapshot(fn: Any, args: tuple[Any, ...]) -> GradSnapshot:
    """Each tensor the call can reach by a source (the arguments' leaves, a module's
    parameters and buffers) and the identity of its `.grad` now."""
    tensors = [x for x in pytree.tree_leaves(args) if isinstance(x, torch.Tensor)]
    if isinstance(fn, torch.nn.Module):
        tensors += [*fn.parameters(), *fn.buffers()]
    out: GradSnapshot = {}
    for t in tensors:
        g = _grad(t)
        out[id(t)] = (t, None if g is None else id(g))
    return out


def grad_stores(
    before: GradSnapshot, sources: dict[int, str], outputs: list[Any]
) -> list[GradStore]:
    """The `.grad` stores the call made (Note [Gradients the graph stores]). `sources` maps
    id(tensor) -> source for the graph's inputs and the bound arguments; `outputs` are the
    compiled graph's outputs at that call."""
    stores = []
    for t, was in before.values():
        g = _grad(t)
        if (None if g is None else id(g)) == was:
            continue
        source = sources.get(id(t))
        if source is None:
            raise PythonifyUnsupported(
                "a .grad Dynamo stores on a tensor the file has no source for", repr(t.shape)
            )
        if g is None:
            stores.append(GradStore(source, None))
            continue
        index = next((i for i, o in enumerate(outputs) if o is g), None)
        if index is None:
            raise PythonifyUnsupported(
                "a .grad Dynamo stores that is no compiled output", f"{source}.grad"
            )
        stores.append(GradStore(source, index))
    return stores
