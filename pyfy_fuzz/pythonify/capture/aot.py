"""The AOT front-end: aot_function (aot_eager) or compile_fx on a traced flat function.

Graph inputs are the flat tensor leaves of the arguments; aot_function compiles the backward
lazily whatever the config says, so one backward is forced on the capture run's copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx
import torch.utils._pytree as pytree

from ..errors import PythonifyUnsupported
from .exprs import path_expr, structure
from .options import option
from .recorder import Recorder
from .result import GraphInputRecord, snapshot

__all__ = ["capture_aot", "trace_flat"]


def capture_aot(
    fn: Callable[..., Any],
    copies: tuple[Any, ...],
    rec: Recorder,
    backend: str,
    dynamic: bool,
    arg_names: list[str],
) -> tuple[Callable[..., Any], list[GraphInputRecord], str]:
    flat, spec = pytree.tree_flatten(copies)
    paths = [path_expr(p) for p, _ in pytree.tree_flatten_with_path(copies)[0]]
    inputs = [
        GraphInputRecord(
            source=f"L[{arg_names[int(p[0])]!r}]{p[1]}",
            example=a,
            dynamic_dims=tuple(range(a.dim())) if dynamic and isinstance(a, torch.Tensor) else (),
            snapshot=snapshot(a),
        )
        for p, a in zip(paths, flat, strict=True)
    ]
    for r, a in zip(inputs, flat, strict=True):
        if not isinstance(a, torch.Tensor):
            raise PythonifyUnsupported("frontend='aot' with a non-tensor argument", r.source)

    def flat_fn(*leaves: Any) -> Any:
        return fn(*pytree.tree_unflatten(list(leaves), spec))

    if backend == "aot_eager":
        from functorch.compile import min_cut_rematerialization_partition
        from torch._functorch.aot_autograd import aot_function

        compiled_flat = aot_function(
            flat_fn,
            fw_compiler=rec.fx_compiler("forward"),
            bw_compiler=rec.fx_compiler("backward"),
            partition_fn=min_cut_rematerialization_partition,
            keep_inference_input_mutations=bool(option("keep_inference_input_mutations")),
            dynamic=dynamic,
        )
    else:
        from torch._inductor.compile_fx import compile_fx

        gm = trace_flat(flat_fn, len(flat))
        inner: Any = compile_fx(gm, list(flat), inner_compile=rec.inductor_inner)

        def compiled_flat(*leaves: Any) -> Any:
            return inner(*leaves)

    def compiled(*args: Any) -> Any:
        return compiled_flat(*pytree.tree_leaves(args))

    # Saved tensors are packed as copies for this one run, so that the backward forced below
    # compiles even where torch's own runtime would refuse it (a saved input that the forward
    # mutates: the file then reproduces that refusal, as torch.compile does).
    with torch.autograd.graph.saved_tensors_hooks(_pack_copy, _unpack_copy):
        ret = compiled(*copies)
        graph_outputs = pytree.tree_leaves(ret)
        _force_backward(rec, graph_outputs)
    out_expr = _aot_output_expr(ret, graph_outputs)
    return compiled, inputs, out_expr


def _force_backward(rec: Recorder, outs: list[Any]) -> None:
    """aot_function compiles the backward lazily, whatever force_non_lazy_backward_lowering
    says; one backward through the capture run's outputs (on our copies) compiles it now."""
    if "AOTDispatchAutograd" not in rec.wrappers or any(r == "backward" for r, _, _ in rec.gms):
        return
    diff = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    if diff:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])


def _pack_copy(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone()


def _unpack_copy(t: torch.Tensor) -> torch.Tensor:
    return t


def trace_flat(flat_fn: Callable[..., Any], n: int) -> torch.fx.GraphModule:
    """A torch.fx graph of the flat function, as compile_fx expects from a front-end.

    Public because the stock reference (subjects/compile_once.py) hands compile_fx the same
    graph: the AOT front-end with Inductor is this trace plus compile_fx, for both compiles."""
    names = [f"a{i}" for i in range(n)]
    src = f"def f({', '.join(names)}):\n    return flat_fn({', '.join(names)})\n"
    ns: dict[str, Any] = {"flat_fn": flat_fn}
    exec(src, ns)  # noqa: S102 - a positional-arity shim, not user code
    gm = torch.fx.symbolic_trace(ns["f"])
    return gm


def _aot_output_expr(ret: Any, graph_outputs: list[Any]) -> str:
    counter = iter(range(len(graph_outputs)))
    return structure(ret, lambda x: f"outs[{next(counter)}]")
