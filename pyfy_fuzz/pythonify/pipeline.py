"""Build the IR from a Capture: wrapper nodes in segment order, guards, CUDA graphs, entry.

Only wrappers whose post_compile did real work become nodes, decided with the same conditions
torch uses (a token count of zero, needs_post_compile False, ... mean the wrapper returned the
compiled function unchanged).
"""

from __future__ import annotations

from typing import Any

import torch

from .capture import Capture
from .errors import PythonifyUnsupported
from .ir import (
    AOTAutogradWrapperNode,
    AOTDedupeWrapperNode,
    AOTDispatchSubclassWrapperNode,
    AOTSyntheticBaseWrapperNode,
    CUDAGraphPhase,
    CUDAGraphSetupNode,
    DebugAssertWrapperNode,
    EffectTokensWrapperNode,
    EntryNode,
    FakifiedOutWrapperNode,
    FunctionalizedRngRuntimeWrapperNode,
    GuardNode,
    IRNode,
    PythonifyIR,
    RuntimeWrapperNode,
    SubclassMeta,
    TensorGuard,
    TensorMetaRecord,
    ValueGuard,
)
from .records import type_path

_FIELDS_OF = {
    cls.wrapper: cls
    for cls in (
        EffectTokensWrapperNode,
        AOTDispatchSubclassWrapperNode,
        FunctionalizedRngRuntimeWrapperNode,
        FakifiedOutWrapperNode,
        RuntimeWrapperNode,
        DebugAssertWrapperNode,
        AOTSyntheticBaseWrapperNode,
        AOTDedupeWrapperNode,
        AOTAutogradWrapperNode,
    )
}


def _node(name: str, rec: dict[str, Any]) -> IRNode:
    cls = _FIELDS_OF[name]
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in rec.items() if k in names})


def build_ir(cap: Capture) -> PythonifyIR:
    w = cap.wrappers
    training = "AOTDispatchAutograd" in w

    def active(name: str) -> bool:
        return bool(w.get(name, {}).get("active"))

    forward_inference: list[IRNode] = [
        _node(n, w[n])
        for n in (
            "EffectTokensWrapper",
            "AOTDispatchSubclassWrapper",
            "FunctionalizedRngRuntimeWrapper",
            "FakifiedOutWrapper",
        )
        if active(n)
    ]
    assembly: list[IRNode] = []
    if training:
        assembly.append(_node("AOTDispatchAutograd", w["AOTDispatchAutograd"]))
    assembly.append(_node("RuntimeWrapper", w["RuntimeWrapper"]))
    if active("DebugAssertWrapper"):
        assembly.append(_node("DebugAssertWrapper", w["DebugAssertWrapper"]))
    dispatch: list[IRNode] = [
        _node(n, w[n]) for n in ("AOTSyntheticBaseWrapper", "AOTDedupeWrapper") if active(n)
    ]
    ir = PythonifyIR(
        graphs=cap.graphs,
        forward_inference=forward_inference,
        autograd_assembly=assembly,
        dispatch=dispatch,
        cudagraphs=_cudagraph_nodes(cap, training),
        guards=_guards(cap),
        entry=EntryNode(
            arg_names=list(cap.arg_names),
            is_module=cap.is_module,
            frontend=cap.frontend,
            input_sources=[r.source for r in cap.inputs],
            output_expr=cap.output_expr,
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
    found: set[str] = set()

    def walk(m: TensorMetaRecord | Any) -> None:
        if isinstance(m, SubclassMeta):
            found.add(m.type_path)
            for _, a in m.attrs:
                walk(a)

    for n in ir.forward_inference + ir.autograd_assembly:
        for attr in ("inp_metas", "out_metas", "tangent_metas", "grad_input_metas"):
            for m in getattr(n, attr, None) or []:
                walk(m)
    for g in ir.guards.tensors:
        if g.type_path not in ("torch:Tensor", "torch.nn.parameter:Parameter"):
            found.add(g.type_path)
    return found


def _guards(cap: Capture) -> GuardNode:
    node = GuardNode(grad_enabled=cap.grad_enabled)
    by_obj: dict[int, list[int]] = {}
    by_storage: dict[tuple[int, str], list[int]] = {}
    for i, r in enumerate(cap.inputs):
        snap = r.snapshot
        if snap is not None:
            dyn = set(r.dynamic_dims)
            node.tensors.append(
                TensorGuard(
                    index=i,
                    source=r.source,
                    dtype=snap.dtype,
                    device=snap.device,
                    shape=tuple(None if d in dyn else s for d, s in enumerate(snap.shape)),
                    requires_grad=snap.requires_grad,
                    type_path=type_path(snap.cls),
                    stride=None if dyn else snap.stride,
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
    node.arg_sources = [src for src, _ in cap.arg_leaves]
    a_obj: dict[int, list[int]] = {}
    a_st: dict[tuple[int, str], list[int]] = {}
    for i, (_, snap) in enumerate(cap.arg_leaves):
        a_obj.setdefault(snap.obj_id, []).append(i)
        for st in snap.storages:
            a_st.setdefault(st, []).append(i)
    node.arg_same_object, node.arg_shared_storage = _alias_groups(a_obj, a_st)
    return node


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


def _cudagraph_nodes(cap: Capture, training: bool) -> list[CUDAGraphSetupNode]:
    if cap.mode != "reduce-overhead":
        return []
    emulate = cap.device != "cuda"
    rw = cap.wrappers["RuntimeWrapper"]
    mutated = [
        i for i, info in enumerate(rw["input_info"]) if info.mutates_data or info.mutates_metadata
    ]
    common = dict(
        warmup_runs=1,
        skip_dynamic_graphs=cap.dynamic,
        emulate=emulate,
        device_index=0 if not emulate else None,
    )
    if not training:
        n = CUDAGraphSetupNode(
            graph_id="inference",
            phase=CUDAGraphPhase.INFERENCE,
            static_input_indices=list(cap.static_input_indices),
            mutated_input_indices=mutated,
            **common,  # type: ignore[arg-type]
        )
        return [n]
    ag = cap.wrappers["AOTDispatchAutograd"]
    n_fw = cap.graphs["forward"].num_outputs
    a, b, _ = slice(*ag["tensors_saved_for_bw_with_vc_check_slice"]).indices(n_fw)
    c, d, _ = slice(*ag["tensors_saved_for_bw_no_vc_check_slice"]).indices(n_fw)
    fw = CUDAGraphSetupNode(
        graph_id="forward",
        phase=CUDAGraphPhase.FORWARD,
        static_input_indices=list(cap.static_input_indices),
        saved_tensor_indices=[*range(a, b), *range(c, d)],
        num_forward_outputs=ag["num_forward_returns"],
        backward_graph_id="backward",
        mutated_input_indices=mutated,
        **common,  # type: ignore[arg-type]
    )
    nsym = ag["num_symints_saved_for_bw"]
    nsaved = (b - a) + (d - c)
    bw = CUDAGraphSetupNode(
        graph_id="backward",
        phase=CUDAGraphPhase.BACKWARD,
        static_input_indices=[],
        saved_tensor_indices=list(range(nsym, nsym + nsaved)),
        **common,  # type: ignore[arg-type]
    )
    return [fw, bw]
