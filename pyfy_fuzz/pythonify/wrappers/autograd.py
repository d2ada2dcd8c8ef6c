"""AOTDispatchAutograd.post_compile (runtime_wrappers.py): the compiled forward and backward as
one torch.autograd.Function, `CompiledFunction`.

Read beside torch's `AOTDispatchAutograd.post_compile` and its nested `CompiledFunction`: the
emitted `forward` runs the compiled forward, saves the activations (version-checked and not),
hides aliased outputs from autograd and marks the non-differentiable ones; `backward` selects
the tangents that reach the backward graph, coerces them to the layout (and subclass) the graph
was traced with, and calls the compiled backward, refusing double backward as torch does.

Note [Which outputs get a tangent]
----------------------------------
autograd.Function hands `backward` one grad per forward return: the mutated inputs, the user
outputs and the intermediate bases. Only some reach the backward graph: data-mutated inputs
that require grad, non-aliased tensor outputs that require grad for backward, and every
intermediate base. The rest are dropped before the call (torch's `expected_grad_outs` slicing),
and a wrong count is an AssertionError, as in torch.

Note [Saved views are detached]
-------------------------------
A saved activation that is a view is saved detached, so autograd stores the view itself rather
than keeping its base alive and replaying the view at unpack time (torch does the same before
`ctx.save_for_backward`).

Note [Saved symints]
--------------------
With dynamic shapes the forward graph returns, after the saved tensors, the sizes the backward
needs (`symints_saved_for_backwards_slice`). They are this call's sizes, computed by the graph,
never the capture's: a file that froze them would give a later call of another size the
gradients of the first (checked: `test_saved_symints_follow_the_call`). torch asserts they are
numbers before saving them; so does the file, with torch's message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from .. import records as R
from ..errors import PythonifyUnsupported
from ..file_runtime import _is_wrapper_subclass  # emitted by file_runtime, used here
from ..meta import (
    NON_ALIAS_OUTPUTS,
    EmitContext,
    InputInfo,
    IRNode,
    OutputInfo,
    PathFacts,
    Registration,
    TensorMetaRecord,
)
from .source import Emitter, indent
from .subclass import emit_wrap_list, memory_format_expr, tangent_meta_literal

__all__ = [
    "AOTAutogradWrapperNode",
    "emit",
    "FIELDS",
    "FUNCTION",
    "paths",
    "record",
    "REGISTRATION",
    "RUNTIME",
    "saved_tensor_indices",
    "Slice",
]

# Fields of torch's AOTDispatchAutogradCompileSpec that `record` reads.
FIELDS = (
    "maybe_subclass_meta",
    "num_symints_saved_for_bw",
    "backward_state_indices",
    "disable_amp",
    "indices_of_inps_to_detach",
    "fw_metadata",
)
FUNCTION = "_autograd_apply"

Slice = tuple[int | None, int | None]


@dataclass
class AOTAutogradWrapperNode(IRNode):
    """AOTDispatchAutograd.post_compile: the torch.autograd.Function stitching fw and bw.

    Field names follow the wrapper audit. Slices are (start, stop) pairs over the compiled
    forward's outputs.
    """

    wrapper: ClassVar[str] = "AOTDispatchAutograd"
    num_forward_returns: int = 0  # mutated inputs + user outputs + intermediate bases
    num_outputs: int = 0  # user outputs
    num_intermediate_bases: int = 0
    mutated_inp_runtime_indices: list[int] = field(default_factory=list)
    input_info: list[InputInfo] = field(default_factory=list)  # per graph input
    output_info: list[OutputInfo] = field(default_factory=list)  # per user output
    tensors_saved_for_bw_with_vc_check_slice: Slice = (0, 0)
    tensors_saved_for_bw_no_vc_check_slice: Slice = (0, 0)
    symints_saved_for_bw_slice: Slice = (0, 0)
    num_symints_saved_for_bw: int = 0
    num_backward_tokens: int = 0  # effect tokens the backward threads (passed as None)
    is_rng_op_functionalized: bool = False  # the backward takes the CUDA (seed, offset)
    num_graphsafe_rng_states: int = 0  # refused by `record`: always 0
    disable_amp: bool = False  # run both graphs under _DisableAutocast
    deterministic: bool | None = None  # deterministic-algorithms mode at compile time
    has_mutations_in_bw: bool = False  # the backward mutates an input that requires grad
    donated_buffers: bool = False  # the backward may reuse saved buffers (no retain_graph)
    tangent_metas: list[TensorMetaRecord] = field(default_factory=list)  # per tangent
    grad_input_metas: list[TensorMetaRecord] | None = None  # subclass grads to rebuild
    has_subclass: bool = False  # tangents and grads go through subclass flattening

    def __post_init__(self) -> None:
        if len(self.output_info) != self.num_outputs:
            raise ValueError("output_info needs one entry per user output")
        if self.num_graphsafe_rng_states:
            raise ValueError("graph-safe RNG states are not modelled")


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(
    node=AOTAutogradWrapperNode, segment="autograd_assembly", order=4, helpers=2, post_compile=False
)


def record(spec: Any) -> AOTAutogradWrapperNode:
    """From AOTDispatchAutograd.post_compile's compile spec (a staticmethod, not a wrapper)."""
    meta = spec.fw_metadata
    if getattr(spec, "backward_state_indices", None):
        raise PythonifyUnsupported("BackwardState inputs (compiled autograd)")
    if getattr(meta, "num_opaque_objects_saved_for_bw", 0):
        raise PythonifyUnsupported("opaque objects saved for backward")
    if meta.num_graphsafe_rng_states:
        raise PythonifyUnsupported("graph-safe RNG states (CUDA generators in the graph)")
    sub = spec.maybe_subclass_meta
    return AOTAutogradWrapperNode(
        num_forward_returns=int(meta.num_forward_returns),
        num_outputs=int(meta.num_outputs),
        num_intermediate_bases=int(meta.num_intermediate_bases),
        mutated_inp_runtime_indices=list(meta.mutated_inp_runtime_indices),
        input_info=R.input_infos(meta),
        output_info=R.output_infos(meta),
        tensors_saved_for_bw_with_vc_check_slice=R.slice_pair(
            meta.tensors_saved_for_backwards_with_vc_check_slice
        ),
        tensors_saved_for_bw_no_vc_check_slice=R.slice_pair(
            meta.tensors_saved_for_backwards_no_vc_check_slice
        ),
        symints_saved_for_bw_slice=R.slice_pair(meta.symints_saved_for_backwards_slice),
        num_symints_saved_for_bw=int(spec.num_symints_saved_for_bw or 0),
        num_backward_tokens=int(meta.num_backward_tokens),
        is_rng_op_functionalized=bool(meta.is_rng_op_functionalized),
        num_graphsafe_rng_states=int(meta.num_graphsafe_rng_states),
        disable_amp=bool(spec.disable_amp),
        deterministic=meta.deterministic,
        has_mutations_in_bw=bool(meta.indices_of_inputs_that_requires_grad_with_mutations_in_bw),
        donated_buffers=bool(torch._functorch.config.donated_buffer and meta.bw_donated_idxs),
        tangent_metas=[R.tensor_meta(m) for m in meta.subclass_tangent_meta],
        grad_input_metas=(
            [R.tensor_meta(m) for m in sub.grad_input_metas]
            if sub is not None and sub.grad_input_metas is not None
            else None
        ),
        has_subclass=sub is not None,
    )


def saved_tensor_indices(node: AOTAutogradWrapperNode, forward_outputs: int) -> list[int]:
    """The forward outputs saved for backward (the slices may be open-ended: (1, None))."""
    a, b, _ = slice(*node.tensors_saved_for_bw_with_vc_check_slice).indices(forward_outputs)
    c, d, _ = slice(*node.tensors_saved_for_bw_no_vc_check_slice).indices(forward_outputs)
    return [*range(a, b), *range(c, d)]


# --------------------------------------------------------------------------- runtime (emitted)


def _coerce_tangent(x, memory_format):
    """Give a tangent the memory format the backward graph was traced with."""
    if not isinstance(x, torch.Tensor) or memory_format is None:
        return x
    if _is_wrapper_subclass(x) and not hasattr(x, "__coerce_same_metadata_as_tangent__"):
        raise RuntimeError(
            "During the backward, we encountered a tensor subclass where we guessed its "
            f"metadata incorrectly. Expected a plain Tensor tangent but got {type(x).__name__}."
        )
    fmt, size, stride = memory_format
    if fmt is not None:
        if not x.is_contiguous(memory_format=fmt):
            x = x.contiguous(memory_format=fmt)
        return x
    if tuple(x.shape) == tuple(size) and tuple(x.stride()) == tuple(stride):
        return x
    restrided = torch.empty_strided(
        size,
        stride,
        dtype=x.dtype,
        device=x.device,
        layout=x.layout,
        requires_grad=x.requires_grad,
    )
    restrided.copy_(x)
    return restrided


def _flatten_tangents(tangents, metas):
    """Subclass tangents: check the type, coerce memory format, flatten to inner tensors.
    Each meta is (subclass type or None for plain, memory format, [(attr, meta)] or None)."""
    leaves = []
    for t, meta in zip(tangents, metas, strict=False):
        leaves.extend(_flatten_tangent(t, meta))
    return leaves


def _flatten_tangent(x, meta):
    if meta is None or not isinstance(x, torch.Tensor):
        return [x]
    expected, memory_format, attrs = meta
    if expected is None:
        return [_coerce_tangent(x, memory_format)]
    if type(x) is not expected:
        if not hasattr(x, "__coerce_same_metadata_as_tangent__"):
            raise RuntimeError(
                "During the backward, we encountered a tensor subclass where we guessed its "
                f"metadata incorrectly. Expected a {expected.__name__} tangent but got "
                f"{type(x).__name__}."
            )
        x = x.__coerce_same_metadata_as_tangent__(None, expected)
    if memory_format is not None:
        fmt, size, stride = memory_format
        if fmt is not None and not x.is_contiguous(memory_format=fmt):
            x = x.contiguous(memory_format=fmt)
    out = []
    for attr, sub in attrs:
        elem = getattr(x, attr)
        if sub is None:
            out.append(elem)
            continue
        new = _flatten_tangent(elem, sub)
        if sub[0] is None and new[0] is not elem:
            setattr(x, attr, new[0])
        out.extend(new)
    return out


def _checked_symints(symints):
    """ctx.symints as torch saves them: numbers only (Note [Saved symints])."""
    if not all(isinstance(x, (int, float, torch.SymInt, torch.SymFloat)) for x in symints):
        raise AssertionError(
            "expected all symint_outs to be int/float/SymInt/SymFloat, "
            f"got types: {[type(x) for x in symints]}"
        )
    return symints


def _double_backward(impl, all_args):
    """create_graph=True through a compiled backward: run it inside a node whose own backward
    raises, as torch.compile does."""

    class CompiledFunctionBackward(torch.autograd.Function):
        @staticmethod
        def forward(double_ctx, *unused_args):
            return impl()

        @staticmethod
        def backward(ctx, *args):
            raise RuntimeError(
                "torch.compile with aot_autograd does not currently support double backward"
            )

    if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in all_args):
        all_args = [torch.empty(0, requires_grad=True), *all_args]
    return CompiledFunctionBackward.apply(*all_args)


RUNTIME = (
    "_coerce_tangent",
    "_flatten_tangents",
    "_flatten_tangent",
    "_checked_symints",
    "_double_backward",
)


# --------------------------------------------------------------------------- emit


def _s(v: int | None) -> str:
    return "" if v is None else str(v)


def _forward_body(node: AOTAutogradWrapperNode, fw: str) -> list[str]:
    nm = len(node.mutated_inp_runtime_indices)
    a, b = (_s(v) for v in node.tensors_saved_for_bw_with_vc_check_slice)
    c, d = (_s(v) for v in node.tensors_saved_for_bw_no_vc_check_slice)
    e_, f_ = (_s(v) for v in node.symints_saved_for_bw_slice)
    fwd: list[str] = []
    call = f"fw_outs = list({fw}(list(deduped_flat_tensor_args)))"
    if node.disable_amp:
        fwd += ["with torch._C._DisableAutocast():", f"    {call}"]
    else:
        fwd.append(call)
    fwd += [  # Note [Saved views are detached]
        "# Saved for backward; views are detached so autograd saves the view itself, not its base.",
        f"ctx.save_for_backward(*[x.detach() if x._is_view() else x for x in fw_outs[{a}:{b}]])",
        f"ctx._tensors_no_vc_check = [x.detach() if x._is_view() else x for x in fw_outs[{c}:{d}]]",
        f"ctx.symints = _checked_symints(fw_outs[{e_}:{f_}])",
        f"raw_returns = fw_outs[:{node.num_forward_returns}]",
    ]
    for i, idx in enumerate(node.mutated_inp_runtime_indices):
        info = node.input_info[idx]
        if info.mutates_metadata and not info.mutates_data:
            fwd.append(
                f"raw_returns[{i}] = _TensorAlias(raw_returns[{i}])  # metadata-only mutation"
            )
    for i, o in enumerate(node.output_info):
        ri = nm + i
        if o.output_type == "unsafe_view_alias":
            fwd.append(
                f"raw_returns[{ri}] = torch.ops.aten._unsafe_view(raw_returns[{ri}], raw_returns[{ri}].shape)"
            )
        elif o.output_type not in NON_ALIAS_OUTPUTS:
            fwd.append(f"raw_returns[{ri}] = _TensorAlias(raw_returns[{ri}])  # {o.output_type}")
    returns_meta = [info for info in node.input_info if info.mutated_out_of_graph] + list(
        node.output_info
    )
    non_diff = [
        i for i, m in enumerate(returns_meta) if i < nm + node.num_outputs and not m.requires_grad
    ]
    fwd.append(
        "ctx.mark_non_differentiable(*[raw_returns[i] for i in "
        f"{non_diff!r} if isinstance(raw_returns[i], torch.Tensor)])"
    )
    return fwd + ["ctx._materialize_non_diff_grads = False", "return tuple(raw_returns)"]


def _tangent_lines(node: AOTAutogradWrapperNode) -> list[str]:
    """Note [Which outputs get a tangent], then the tangents' layout and subclass coercion."""
    nm = len(node.mutated_inp_runtime_indices)
    no = node.num_outputs
    expected = no + nm + node.num_intermediate_bases
    inp_surviving = [
        i
        for i, idx in enumerate(node.mutated_inp_runtime_indices)
        if node.input_info[idx].mutates_data and node.input_info[idx].requires_grad
    ]
    out_surviving = [
        nm + i
        for i, o in enumerate(node.output_info)
        if o.output_type in NON_ALIAS_OUTPUTS and o.is_tensor and o.requires_grad_for_backward
    ]
    surviving = inp_surviving + out_surviving + list(range(nm + no, expected))
    bwd: list[str] = [
        f"if len(grads) != {expected}:",
        f"    raise AssertionError(f'expected {expected} grad_outs, got {{len(grads)}}')",
        f"tangents = [grads[i] for i in {surviving!r}]",
    ]
    if node.deterministic is not None and not node.deterministic:
        bwd += [
            "if torch.are_deterministic_algorithms_enabled():",
            "    raise RuntimeError('This compiled backward function is being run with "
            "torch.use_deterministic_algorithms(True), but it was previously generated during "
            "the forward function while torch.use_deterministic_algorithms(False) was set.')",
        ]
    if node.has_subclass:
        metas = ", ".join(tangent_meta_literal(m) for m in node.tangent_metas)
        bwd += [
            f"if len(tangents) != {len(node.tangent_metas)}:",
            "    raise RuntimeError('The grad inputs should be same number as forward output tangents')",
            f"tangents = _flatten_tangents(tangents, [{metas}])",
        ]
    elif surviving:
        mfs = [memory_format_expr(m) for m in node.tangent_metas]
        bwd.append(
            f"tangents = [_coerce_tangent(t, mf) for t, mf in zip(tangents, [{', '.join(mfs)}])]"
        )
    return bwd


def _impl_lines(node: AOTAutogradWrapperNode, bw: str) -> list[str]:
    """The nested `impl()` that calls the compiled backward and rebuilds subclass grads."""
    impl = ["def impl():", "    ctx.maybe_clear_saved_tensors()"]
    if node.donated_buffers:
        impl += [
            "    if torch._C._autograd._get_current_graph_task_keep_graph():",
            "        raise RuntimeError('This backward function was compiled with non-empty donated "
            "buffers which requires create_graph=False and retain_graph=False. Please keep "
            "backward(create_graph=False, retain_graph=False) across all backward() function "
            "calls, or set torch._functorch.config.donated_buffer=False to disable donated "
            "buffer.')",
        ]
    if node.disable_amp:
        impl += [
            "    with torch._C._DisableAutocast():",
            f"        out = list({bw}(list(all_args)))",
        ]
    else:
        impl.append(f"    out = list({bw}(list(all_args)))")
    if node.num_backward_tokens:
        impl.append(f"    out = out[:-{node.num_backward_tokens}]")
    if node.is_rng_op_functionalized:
        impl += ["    _cuda_set_rng_offset(out[-1])", "    out = out[:-1]"]
    if node.has_subclass and node.grad_input_metas is not None:
        e = Emitter(indent=1)
        exprs, _ = emit_wrap_list(e, node.grad_input_metas, "out")
        impl += e.lines
        impl.append("    return (" + ", ".join(exprs) + ("," if len(exprs) == 1 else "") + ")")
    else:
        impl.append("    return tuple(out)")
    return impl


def _backward_body(node: AOTAutogradWrapperNode, bw: str) -> list[str]:
    bwd = _tangent_lines(node)
    saved = "(*ctx.saved_tensors, *ctx._tensors_no_vc_check)"
    tokens = f", *([None] * {node.num_backward_tokens})" if node.num_backward_tokens else ""
    rng = ", *_cuda_rng_state_as_tuple()" if node.is_rng_op_functionalized else ""
    bwd.append(f"all_args = [*ctx.symints, *{saved}, *tangents{tokens}{rng}]")
    if node.has_mutations_in_bw:
        bwd += [
            "if torch.is_grad_enabled():",
            "    raise RuntimeError('aot_autograd does not support input mutations with "
            "requires_grad in backward for create_graph=True')",
        ]
    bwd += _impl_lines(node, bw)
    if any(i.requires_grad for i in node.input_info):
        bwd.append("if torch.is_grad_enabled():")
    else:
        bwd.append(
            "if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad "
            "for t in all_args):"
        )
    return bwd + ["    return _double_backward(impl, all_args)", "return impl()"]


def emit(node: AOTAutogradWrapperNode, ctx: EmitContext) -> str:
    nm = len(node.mutated_inp_runtime_indices)
    a, b = (_s(v) for v in node.tensors_saved_for_bw_with_vc_check_slice)
    c, d = (_s(v) for v in node.tensors_saved_for_bw_no_vc_check_slice)
    e_, f_ = (_s(v) for v in node.symints_saved_for_bw_slice)
    return f'''class CompiledFunction(torch.autograd.Function):
    """AOTDispatchAutograd: the compiled forward and backward stitched into one autograd node.

    forward returns {nm} mutated input(s), {node.num_outputs} user output(s) and {node.num_intermediate_bases}
    intermediate base(s); outputs that alias are wrapped in _TensorAlias so autograd does not
    see them (RuntimeWrapper regenerates them). Saved tensors: fw_outs[{a}:{b}] (version
    checked), fw_outs[{c}:{d}] (not checked); saved symints fw_outs[{e_}:{f_}]."""

    @staticmethod
    def forward(ctx, *deduped_flat_tensor_args):
{indent(chr(10).join(_forward_body(node, ctx.inner)), 2)}

    @staticmethod
    def backward(ctx, *grads):
{indent(chr(10).join(_backward_body(node, ctx.backward)), 2)}


def _autograd_apply(args):
    return CompiledFunction.apply(*args)'''


# --------------------------------------------------------------------------- paths


def paths(node: AOTAutogradWrapperNode, facts: PathFacts) -> list[str]:
    out = ["autograd/training"]
    if saved_tensor_indices(node, facts.forward_outputs):
        out.append("autograd/saved_tensors")
    if node.num_symints_saved_for_bw:
        out.append("autograd/saved_symints")
    if node.mutated_inp_runtime_indices:
        out.append("autograd/input_mutation")
    if node.num_backward_tokens:
        out.append("tokens/backward")
    if node.has_mutations_in_bw:
        out.append("autograd/mutation_in_backward")
    if any(o.output_type == "custom_function_view" for o in node.output_info):
        out.append("autograd/custom_function_view")
    return out
