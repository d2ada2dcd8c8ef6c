"""Build the IR from a Capture: wrapper nodes in segment order, guards, CUDA graphs, entry.

Only wrappers whose post_compile did real work become nodes, decided with the same conditions
torch uses (a token count of zero, needs_post_compile False, ... mean the wrapper returned the
compiled function unchanged).
"""

from __future__ import annotations

import torch

from .capture import Capture
from .capture.result import InputSnapshot
from .errors import PythonifyUnsupported
from .ir import EntryNode, GuardNode, PythonifyIR, TensorGuard, ValueGuard
from .records import type_path
from .wrappers import cudagraph, segments
from .wrappers.autograd import AOTAutogradWrapperNode
from .wrappers.runtime import RuntimeWrapperNode
from .wrappers.subclass import AOTDispatchSubclassWrapperNode, subclass_types

__all__ = ["build_ir"]


def build_ir(cap: Capture) -> PythonifyIR:
    w = cap.wrappers
    training = AOTAutogradWrapperNode.wrapper in w
    # Each recorded node in its segment, in torch's order (Note [The wrapper registry]).
    stack = segments(w.values())
    rw = w[RuntimeWrapperNode.wrapper]
    ag = w.get(AOTAutogradWrapperNode.wrapper)
    assert isinstance(rw, RuntimeWrapperNode)
    assert ag is None or isinstance(ag, AOTAutogradWrapperNode)
    cudagraphs = []
    if cap.mode == "reduce-overhead":
        cudagraphs = cudagraph.build(
            rw,
            ag,
            cap.graphs,
            static_input_indices=cap.static_input_indices,
            device=cap.device,
            dynamic=cap.dynamic,
        )
    ir = PythonifyIR(
        graphs=cap.graphs,
        forward_inference=stack["forward_inference"],
        autograd_assembly=stack["autograd_assembly"],
        dispatch=stack["dispatch"],
        cudagraphs=cudagraphs,
        guards=_guards(cap),
        entry=EntryNode(
            arg_names=list(cap.arg_names),
            is_module=cap.is_module,
            frontend=cap.frontend,
            input_sources=[r.source for r in cap.inputs],
            output_expr=cap.output_expr,
            hooks=list(cap.hooks),
            grad_stores=list(cap.grad_stores),
            module_call=cap.module_call,
            as_tensor=[i for i, r in enumerate(cap.inputs) if r.pass_arg_as_tensor],
        ),
        training=training,
        backend=cap.backend,
        device=cap.device,
        constants=dict(cap.render.constants),
    )
    ir.subclass_imports = sorted(_subclass_types(ir))
    ir.header = {
        "torch": torch.__version__,
        "backend": cap.backend,
        "frontend": cap.frontend,
        "dynamic": str(cap.dynamic),
        "mode": str(cap.mode),
        "device": cap.device,
    }
    return ir


def _subclass_types(ir: PythonifyIR) -> set[str]:
    """The subclass types the file imports: those its wrappers rebuild and those it guards."""
    found: set[str] = set()
    for n in ir.forward_inference + ir.autograd_assembly:
        if isinstance(n, AOTDispatchSubclassWrapperNode):
            found |= subclass_types([*n.inp_metas, *n.out_metas])
        elif isinstance(n, AOTAutogradWrapperNode):
            found |= subclass_types([*n.tangent_metas, *(n.grad_input_metas or [])])
    for g in ir.guards.tensors:
        if g.type_path not in ("torch:Tensor", "torch.nn.parameter:Parameter"):
            found.add(g.type_path)
    return found


def _guards(cap: Capture) -> GuardNode:
    node = GuardNode(
        grad_enabled=cap.grad_enabled,
        saved_hooks=cap.saved_hooks,
        inference_mode=cap.inference_mode,
        scalars=list(cap.scalar_guards),
    )
    by_obj: dict[int, list[int]] = {}
    by_storage: dict[tuple[int, str], list[int]] = {}
    for i, r in enumerate(cap.inputs):
        snap = r.snapshot
        if snap is not None:
            dyn = set(r.dynamic_dims)
            node.tensors.append(
                _tensor_guard(
                    i,
                    r.source,
                    snap,
                    shape=tuple(None if d in dyn else s for d, s in enumerate(snap.shape)),
                    # dynamic dims: the strides the compile saw as numbers (Dynamo guards
                    # them); static: every stride
                    stride=(r.static_strides or None) if dyn else snap.stride,
                )
            )
            by_obj.setdefault(snap.obj_id, []).append(i)
            for st in snap.storages:
                by_storage.setdefault(st, []).append(i)
        elif isinstance(r.example, torch.SymInt | int) and not isinstance(r.example, bool):
            node.values.append(ValueGuard(index=i, source=r.source, kind="symint"))
        else:
            raise PythonifyUnsupported(
                f"a graph input of type {type(r.example).__name__}", r.source
            )
    node.same_object, node.shared_storage = _alias_groups(by_obj, by_storage)
    node.alias_layout = [_layout(cap, group) for group in node.shared_storage]
    for i, r in enumerate(cap.inputs):
        dims: list[int | None] = list(r.dynamic_dims) if r.snapshot is not None else [None]
        for d, sym in zip(dims, r.symbols, strict=False):
            node.size_symbols.setdefault(sym, []).append((i, d))
    node.symbol_ranges = {s: rng for s, rng in cap.symbol_ranges.items() if s in node.size_symbols}
    node.arg_sources = [src for src, _ in cap.arg_leaves]
    node.arg_tensors = _passthrough_guards(cap)
    a_obj: dict[int, list[int]] = {}
    a_st: dict[tuple[int, str], list[int]] = {}
    for i, (_, snap) in enumerate(cap.arg_leaves):
        a_obj.setdefault(snap.obj_id, []).append(i)
        for st in snap.storages:
            a_st.setdefault(st, []).append(i)
    node.arg_same_object, node.arg_shared_storage = _alias_groups(a_obj, a_st)
    return node


# Note [Arguments the graph does not take]
# Dynamo guards every tensor argument the frame reads, graph input or not: one returned as it
# is (`return a1`) gets a TENSOR_MATCH (dtype, device, requires_grad, dispatch keys, and on a
# static compile its sizes and strides) though no graph reads it; a later call that breaks it
# recompiles (torch 2.15's campaign: `requires_grad mismatch` on a passed-through argument the
# file accepted). The file guards such arguments the same way; with dynamic shapes a size of
# 0 or 1 is a number (Dynamo specialises them) and any other is symbolic, compiled for sizes
# >= 2 (a call 0 with a size-1 dim must pass: the selftest's campaign in CI of 0fc25a2).
def _passthrough_guards(cap: Capture) -> list[TensorGuard]:
    taken = {r.source for r in cap.inputs}
    out = []
    for k, (src, snap) in enumerate(cap.arg_leaves):
        if src in taken:
            continue
        out.append(
            _tensor_guard(
                k,
                src,
                snap,
                # dynamic: sizes 0 and 1 specialised, the rest symbolic (sizes >= 2), as
                # Dynamo wraps any tensor under dynamic=True
                shape=tuple(None if cap.dynamic and s >= 2 else s for s in snap.shape),
                stride=None if cap.dynamic else snap.stride,
            )
        )
    return out


def _tensor_guard(
    index: int,
    source: str,
    snap: InputSnapshot,
    shape: tuple[int | None, ...],
    stride: tuple[int | None, ...] | None,
) -> TensorGuard:
    """What the file checks of one tensor: the snapshot's facts, with the shape and stride
    the caller says Dynamo guards."""
    return TensorGuard(
        index=index,
        source=source,
        dtype=snap.dtype,
        device=snap.device,
        shape=shape,
        requires_grad=snap.requires_grad,
        type_path=type_path(snap.cls),
        stride=stride,
        is_leaf=snap.is_leaf,
        is_inference=snap.is_inference,
    )


# Note [Aliased input layout]
# Inputs that share a storage reach AOTAutograd's synthetic base (or its dedupe), which the
# graph was traced for: the base is the views' `_base` (else the storage itself), and the
# graph regenerates each input from it with the view metadata it saw. Dynamo guards what that
# depends on through the inputs' `_base` (a guard on `a1._base.size()[0]`, measured on 2.13),
# so a later call whose aliased inputs lie otherwise in their storage (one shifted by an
# element, a view where call 0 passed the base itself) recompiles under torch.compile. The
# file cannot recompile: it refuses such a call, checking per group which inputs are views
# and their storage offsets relative to the group's least (`_check_alias_layout`). Relative,
# so a call on fresh tensors laid out alike passes; stricter than Dynamo where only a size
# differs, which is a refusal, never a wrong result.


def _layout(cap: Capture, group: list[int]) -> list[tuple[int, bool, int]]:
    snaps = [(i, cap.inputs[i].snapshot) for i in group]
    least = min(s.storage_offset for _, s in snaps if s is not None)
    return [(i, s.is_view, s.storage_offset - least) for i, s in snaps if s is not None]


def _alias_groups(
    by_obj: dict[int, list[int]], by_storage: dict[tuple[int, str], list[int]]
) -> tuple[list[list[int]], list[list[int]]]:
    same = [g for g in by_obj.values() if len(g) > 1]
    shared: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for g in by_storage.values():
        uniq = tuple(sorted(set(g)))
        if len(uniq) > 1 and uniq not in seen:
            seen.add(uniq)
            shared.append(list(uniq))
    return same, shared
