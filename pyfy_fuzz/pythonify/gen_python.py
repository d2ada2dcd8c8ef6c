"""IR -> one standalone Python file.

The file has numbered sections in wrapper order. Each wrapper becomes one helper that mirrors
its runtime behaviour and names the callable it wraps, so a reader can follow a call from
`call()` down to the compiled graph. Helpers are emitted inner-most first.
"""

from __future__ import annotations

from typing import Any

from . import runtime_source
from .ir import (
    AOTAutogradWrapperNode,
    AOTDedupeWrapperNode,
    AOTDispatchSubclassWrapperNode,
    AOTSyntheticBaseWrapperNode,
    CodeGenVisitor,
    CompiledGraph,
    CUDAGraphSetupNode,
    DebugAssertWrapperNode,
    EffectTokensWrapperNode,
    FakifiedOutWrapperNode,
    FunctionalizedRngRuntimeWrapperNode,
    GuardNode,
    InputInfo,
    OpaqueLeaf,
    PlainMeta,
    PythonifyIR,
    RuntimeWrapperNode,
    SubclassMeta,
    TensorMetaRecord,
    ViewOp,
)
from .runtime_source import type_var

_NON_ALIAS = ("non_alias", "unsafe_view_alias", "custom_function_view")


def _indent(src: str, n: int = 1) -> str:
    pad = "    " * n
    return "\n".join(pad + line if line else line for line in src.splitlines())


def _triple_quoted(src: str) -> str:
    body = src.replace("\\", "\\\\").replace("'''", "\\'\\'\\'")
    return "'''" + body + "'''"


class _Emitter:
    """Straight-line code with fresh names, for the subclass unwrap/wrap bodies."""

    def __init__(self, indent: int = 1) -> None:
        self.lines: list[str] = []
        self.indent = indent
        self.counter = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


def _attr(var: str, attr: str) -> str:
    return f"{var}.{attr}" if attr.isidentifier() else f"getattr({var}, {attr!r})"


def _emit_unwrap(e: _Emitter, meta: SubclassMeta, var: str, dst: str) -> None:
    for attr, am in meta.attrs:
        if isinstance(am, SubclassMeta):
            inner = e.fresh("_inner")
            e.emit(f"{inner} = {_attr(var, attr)}")
            _emit_unwrap(e, am, inner, dst)
        else:
            e.emit(f"{dst}.append({_attr(var, attr)})")
    sym_size = [i for i, s in enumerate(meta.outer_size) if s is None]
    sym_stride = [i for i, s in enumerate(meta.outer_stride) if s is None]
    if sym_size or sym_stride:
        for i in sym_size:
            e.emit(f"{dst}.append({var}.size()[{i}])")
        for i in sym_stride:
            e.emit(f"{dst}.append({var}.stride()[{i}])")


def _emit_wrap(e: _Emitter, meta: SubclassMeta, src: str, cursor: list[int]) -> str:
    entries = []
    for attr, am in meta.attrs:
        if isinstance(am, SubclassMeta):
            entries.append(f"{attr!r}: {_emit_wrap(e, am, src, cursor)}")
        else:
            entries.append(f"{attr!r}: {src}[{cursor[0]}]")
            cursor[0] += 1

    def dims(vals: tuple[int | None, ...]) -> str:
        parts = []
        for v in vals:
            if v is None:
                parts.append(f"{src}[{cursor[0]}]")
                cursor[0] += 1
            else:
                parts.append(repr(v))
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    size = dims(meta.outer_size)
    stride = dims(meta.outer_stride)
    out = e.fresh("_wrapped")
    e.emit(
        f"{out} = {type_var(meta.type_path)}.__tensor_unflatten__("
        f"{{{', '.join(entries)}}}, {meta.ctx_repr}, {size}, {stride})"
    )
    return out


def _emit_wrap_list(e: _Emitter, metas: list[TensorMetaRecord], src: str) -> tuple[list[str], int]:
    """Mirror of wrap_tensor_subclasses: plain outputs by index, subclasses consume in order."""
    cursor = [0]
    exprs: list[str] = []
    tallied = 0
    for m in metas:
        if isinstance(m, PlainMeta):
            exprs.append(f"{src}[{m.unwrapped_idx}]")
            cursor[0] = max(cursor[0], m.unwrapped_idx + 1)
            tallied += 1
        else:
            exprs.append(_emit_wrap(e, m, src, cursor))
            tallied += m.arg_count
    return exprs, tallied


def _memory_format_expr(m: TensorMetaRecord) -> str:
    mf = m.memory_format
    if mf is None:
        return "None"
    if mf.memory_format is not None:
        return f"({mf.memory_format}, None, None)"
    return f"(None, {mf.size!r}, {mf.stride!r})"


def _view_replay_fn(name: str, ops: tuple[ViewOp, ...]) -> str:
    lines = [f"def {name}(base):", "    v = base"]
    for op in ops:
        args = "".join(", " + _literal(a) for a in op.args)
        args += "".join(f", {k}={_literal(a)}" for k, a in op.kwargs)
        call = f"{op.op}(v{args})"
        if op.out_index is not None:
            call += f"[{op.out_index}]"
        lines.append(f"    v = {call}")
    lines.append("    return v")
    return "\n".join(lines)


def _literal(a: Any) -> str:
    import torch

    if isinstance(a, torch.dtype | torch.layout | torch.memory_format):
        return str(a)
    if isinstance(a, torch.device):
        return f"torch.device({str(a)!r})"
    if isinstance(a, list):
        return "[" + ", ".join(_literal(x) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + ", ".join(_literal(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    return repr(a)


class PythonCodeGen(CodeGenVisitor):
    """Emits one helper per node; `self.inner` is the callable the next node wraps."""

    def __init__(self, ir: PythonifyIR) -> None:
        self.ir = ir
        self.inner = ""
        # The callable the autograd node's backward calls (the graph, or its CUDA-graph runner).
        self.backward_name = "compiled_backward"

    # -- forward_inference ---------------------------------------------------------------
    def visit_effect_tokens(self, node: EffectTokensWrapperNode) -> str:
        n = node.token_count
        return f'''def _effect_tokens_wrapper(args):
    """EffectTokensWrapper: the graph threads {n} effect token(s) through its side effects.
    Tokens are passed as None and the same number of leading outputs (the new tokens) dropped."""
    outs = {self.inner}([{", ".join(["None"] * n)}, *args])
    if outs is None:
        return None
    return list(outs)[{n}:]'''

    def visit_dispatch_subclass(self, node: AOTDispatchSubclassWrapperNode) -> str:
        e = _Emitter()
        e.emit("unwrapped = []")
        for i, m in enumerate(node.inp_metas):
            if isinstance(m, PlainMeta):
                e.emit(f"unwrapped.append(args[{i}])")
                continue
            var = e.fresh("_arg")
            tv = type_var(m.type_path)
            e.emit(f"{var} = args[{i}]")
            e.emit(f"if type({var}) is not {tv}:")
            e.emit(f"    raise AssertionError(f'expected {{{tv}}}, got {{type({var})}}')")
            _emit_unwrap(e, m, var, "unwrapped")
        e.emit(f"unwrapped.extend(args[{len(node.inp_metas)}:])")
        e.emit(f"outs = {self.inner}(unwrapped)")
        exprs, tallied = _emit_wrap_list(e, node.out_metas, "outs")
        result = "[" + ", ".join(exprs) + "]"
        if node.num_fw_outs_saved_for_bw is not None:
            e.emit(f"return {result} + list(outs[{tallied}:])")
        else:
            e.emit(f"return {result}")
        body = "\n".join(e.lines)
        return f'''def _subclass_wrapper(args):
    """AOTDispatchSubclassWrapper: unwrap subclass inputs into their inner tensors (and
    symbolic sizes), run the dense graph, rebuild subclass outputs. Trailing outputs saved for
    backward ({node.num_fw_outs_saved_for_bw}) stay dense."""
{body}'''

    def visit_functionalized_rng(self, node: FunctionalizedRngRuntimeWrapperNode) -> str:
        k = node.num_forward_returns
        ret = (
            f"return list(outs[:{k}]) + list(outs[{k + 1}:])"
            if node.return_new_outs
            else "return outs"
        )
        return f'''def _functionalized_rng_wrapper(args):
    """FunctionalizedRngRuntimeWrapper: pass the CUDA RNG (seed, offset) in, then advance the
    global offset by the graph's offset output (output {k})."""
    seed, offset = _cuda_rng_state_as_tuple()
    outs = {self.inner}([*args, seed, offset])
    _cuda_set_rng_offset(outs[{k}])
    {ret}'''

    def visit_fakified_out(self, node: FakifiedOutWrapperNode) -> str:
        metas = [
            None if m is None else (m.shape, m.stride, m.dtype, m.device) for m in node.out_metas
        ]
        return f"""# FakifiedOutWrapper: the first call after compile returns fake outputs with the compiled
# graph's strides (torch makes that call under fake tensors, e.g. in DDPOptimizer). That call
# happened during capture, so `pending` starts False; set it to re-arm the wrapper.
_FAKIFIED_OUT_METAS = {metas!r}
_fakified_state = {{"pending": False}}


def _fakified_out_wrapper(args):
    if _fakified_state["pending"]:
        _fakified_state["pending"] = False
        return [
            None if m is None else torch.empty_strided(m[0], m[1], dtype=_dtype(m[2]), device="meta")
            for m in _FAKIFIED_OUT_METAS
        ]
    return {self.inner}(args)"""

    # -- autograd_assembly ---------------------------------------------------------------
    def visit_autograd(self, node: AOTAutogradWrapperNode) -> str:
        return _autograd_function(node, fw=self.inner, bw=self.backward_name)

    def visit_runtime(self, node: RuntimeWrapperNode) -> str:
        return _runtime_wrapper(node, self.inner)

    def visit_debug_assert(self, node: DebugAssertWrapperNode) -> str:
        checks = []
        for i, rg in enumerate(node.flat_requires_grad):
            if rg is None:
                checks.append(
                    f"    if isinstance(args[{i}], torch.Tensor):\n"
                    f"        raise AssertionError('expected non-Tensor for arg {i}, got Tensor')"
                )
            elif not rg:
                checks.append(
                    f"    if args[{i}].requires_grad:\n"
                    f"        raise AssertionError('input {i} would not require grad')"
                )
        body = "\n".join(checks)
        return f'''def _debug_assert_wrapper(args):
    """DebugAssertWrapper (functorch config.debug_assert): inputs compiled as not requiring grad
    must still not require grad."""
{body}
    return {self.inner}(args)'''

    # -- dispatch ------------------------------------------------------------------------
    def visit_synthetic_base(self, node: AOTSyntheticBaseWrapperNode) -> str:
        lines = [f"    bases = [None] * {len(node.base_groups)}"]
        for b in sorted(node.base_groups):
            group = node.base_groups[b]
            lines.append(f"    bases[{b}] = _synthetic_base([args[i] for i in {group!r}])")
        others = ", ".join(f"args[{i}]" for i in node.other_arg_indices)
        lines.append(f"    new_args = [*bases, {others}]" if others else "    new_args = bases")
        meta_mut = node.aliased_arg_idx_with_metadata_mutations
        if meta_mut:
            lines.append("    meta_mutated = [" + ", ".join(f"args[{i}]" for i in meta_mut) + "]")
        lines.append(f"    outs = {self.inner}(new_args)")
        if meta_mut:
            k = len(meta_mut)
            lines += [
                f"    for inp, updated in zip(meta_mutated, outs[-{k}:]):",
                "        inp.as_strided_(updated.size(), updated.stride(), updated.storage_offset())",
                f"    return outs[:-{k}]",
            ]
        else:
            lines.append("    return outs")
        body = "\n".join(lines)
        return f'''def _synthetic_base_wrapper(args):
    """AOTSyntheticBaseWrapper: mutated inputs that alias each other were compiled against one
    synthetic base per storage; groups (base -> original args): {node.base_groups!r}.
    Metadata mutations of aliased args {meta_mut!r} come back as extra outputs."""
{body}'''

    def visit_dedupe(self, node: AOTDedupeWrapperNode) -> str:
        keep = [i for i, k in enumerate(node.keep_arg_mask) if k]
        return f'''def _dedupe_wrapper(args):
    """AOTDedupeWrapper: the graph saw each duplicated tensor once.
    keep_arg_mask={node.keep_arg_mask!r}, add_dupe_map={node.add_dupe_map!r}."""
    return {self.inner}([{", ".join(f"args[{i}]" for i in keep)}])'''

    def visit_cudagraph_setup(self, node: CUDAGraphSetupNode) -> tuple[str, str]:
        from . import cudagraph_codegen

        return cudagraph_codegen.wrap_source(node, self.inner)


_FN_NAMES = {
    "EffectTokensWrapper": "_effect_tokens_wrapper",
    "AOTDispatchSubclassWrapper": "_subclass_wrapper",
    "FunctionalizedRngRuntimeWrapper": "_functionalized_rng_wrapper",
    "FakifiedOutWrapper": "_fakified_out_wrapper",
    "AOTDispatchAutograd": "_autograd_apply",
    "RuntimeWrapper": "_runtime_wrapper",
    "DebugAssertWrapper": "_debug_assert_wrapper",
    "AOTSyntheticBaseWrapper": "_synthetic_base_wrapper",
    "AOTDedupeWrapper": "_dedupe_wrapper",
}


def _s(v: int | None) -> str:
    return "" if v is None else str(v)


def _autograd_function(node: AOTAutogradWrapperNode, fw: str, bw: str) -> str:
    nm = len(node.mutated_inp_runtime_indices)
    no = node.num_outputs
    a, b = (_s(v) for v in node.tensors_saved_for_bw_with_vc_check_slice)
    c, d = (_s(v) for v in node.tensors_saved_for_bw_no_vc_check_slice)
    e_, f_ = (_s(v) for v in node.symints_saved_for_bw_slice)
    nfr = node.num_forward_returns
    fwd: list[str] = []
    call = f"fw_outs = list({fw}(list(deduped_flat_tensor_args)))"
    if node.disable_amp:
        fwd += ["with torch._C._DisableAutocast():", f"    {call}"]
    else:
        fwd.append(call)
    fwd += [
        "# Saved for backward; views are detached so autograd saves the view itself, not its base.",
        f"ctx.save_for_backward(*[x.detach() if x._is_view() else x for x in fw_outs[{a}:{b}]])",
        f"ctx._tensors_no_vc_check = [x.detach() if x._is_view() else x for x in fw_outs[{c}:{d}]]",
        f"ctx.symints = fw_outs[{e_}:{f_}]",
        f"raw_returns = fw_outs[:{nfr}]",
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
        elif o.output_type not in _NON_ALIAS:
            fwd.append(f"raw_returns[{ri}] = _TensorAlias(raw_returns[{ri}])  # {o.output_type}")
    returns_meta = [info for info in node.input_info if info.mutated_out_of_graph] + list(
        node.output_info
    )
    non_diff = [i for i, m in enumerate(returns_meta) if i < nm + no and not m.requires_grad]
    fwd.append(
        "ctx.mark_non_differentiable(*[raw_returns[i] for i in "
        f"{non_diff!r} if isinstance(raw_returns[i], torch.Tensor)])"
    )
    fwd += ["ctx._materialize_non_diff_grads = False", "return tuple(raw_returns)"]

    expected = no + nm + node.num_intermediate_bases
    inp_surviving = [
        i
        for i, idx in enumerate(node.mutated_inp_runtime_indices)
        if node.input_info[idx].mutates_data and node.input_info[idx].requires_grad
    ]
    out_surviving = [
        nm + i
        for i, o in enumerate(node.output_info)
        if o.output_type in _NON_ALIAS and o.is_tensor and o.requires_grad_for_backward
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
        metas = ", ".join(_tangent_meta_literal(m) for m in node.tangent_metas)
        bwd += [
            f"if len(tangents) != {len(node.tangent_metas)}:",
            "    raise RuntimeError('The grad inputs should be same number as forward output tangents')",
            f"tangents = _flatten_tangents(tangents, [{metas}])",
        ]
    else:
        mfs = [_memory_format_expr(m) for m in node.tangent_metas]
        if surviving:
            bwd.append(
                f"tangents = [_coerce_tangent(t, mf) for t, mf in zip(tangents, [{', '.join(mfs)}])]"
            )
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
        e = _Emitter(indent=1)
        exprs, _ = _emit_wrap_list(e, node.grad_input_metas, "out")
        impl += e.lines
        impl.append("    return (" + ", ".join(exprs) + ("," if len(exprs) == 1 else "") + ")")
    else:
        impl.append("    return tuple(out)")
    bwd += impl
    any_rg = any(i.requires_grad for i in node.input_info)
    if any_rg:
        bwd.append("if torch.is_grad_enabled():")
    else:
        bwd.append(
            "if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad "
            "for t in all_args):"
        )
    bwd += ["    return _double_backward(impl, all_args)", "return impl()"]
    return f'''class CompiledFunction(torch.autograd.Function):
    """AOTDispatchAutograd: the compiled forward and backward stitched into one autograd node.

    forward returns {nm} mutated input(s), {no} user output(s) and {node.num_intermediate_bases}
    intermediate base(s); outputs that alias are wrapped in _TensorAlias so autograd does not
    see them (RuntimeWrapper regenerates them). Saved tensors: fw_outs[{a}:{b}] (version
    checked), fw_outs[{c}:{d}] (not checked); saved symints fw_outs[{e_}:{f_}]."""

    @staticmethod
    def forward(ctx, *deduped_flat_tensor_args):
{_indent(chr(10).join(fwd), 2)}

    @staticmethod
    def backward(ctx, *grads):
{_indent(chr(10).join(bwd), 2)}


def _autograd_apply(args):
    return CompiledFunction.apply(*args)'''


def _tangent_meta_literal(m: TensorMetaRecord) -> str:
    if isinstance(m, PlainMeta):
        return f"(None, {_memory_format_expr(m)}, None)"
    assert isinstance(m, SubclassMeta)
    attrs = ", ".join(
        f"({a!r}, {'None' if isinstance(am, OpaqueLeaf) else _tangent_meta_literal(am)})"
        for a, am in m.attrs
    )
    return f"({type_var(m.type_path)}, {_memory_format_expr(m)}, [{attrs}])"


def _runtime_wrapper(node: RuntimeWrapperNode, inner: str) -> str:
    epilogue_idx = list(node.mutated_inp_runtime_indices)
    for o in node.output_info:
        if o.output_type in ("alias_of_input", "is_input"):
            assert o.base_idx is not None
            epilogue_idx.append(o.base_idx)
    nm = len(node.mutated_inp_runtime_indices)
    expected = nm + node.num_outputs + node.num_intermediate_bases
    aliased = [i for i, o in enumerate(node.output_info) if o.output_type not in _NON_ALIAS]
    helpers: list[str] = []
    L: list[str] = [
        "orig_inputs = {" + ", ".join(f"{i}: args[{i}]" for i in epilogue_idx) + "}",
    ]
    if node.keep_input_mutations and node.mutated_graph_handled_indices_seen_by_autograd:
        idx = node.mutated_graph_handled_indices_seen_by_autograd
        L.append(
            "# In-graph input mutations bump version counters as eager would.\n"
            "torch.autograd.graph.increment_version((" + "".join(f"args[{i}], " for i in idx) + "))"
        )
    call = f"all_outs = _as_list({inner}(args_))"
    if node.disable_amp:
        call = f"with torch._C._DisableAutocast():\n    {call}"
    if node.trace_joint:
        L.append("args_ = list(args)")
        for i in node.indices_of_inps_to_detach:
            L.append(
                f"if isinstance(args_[{i}], torch.Tensor):\n    args_[{i}] = args_[{i}].detach()"
            )
        L += [
            "prev_view_replay = torch._C._is_view_replay_enabled()",
            "try:",
            "    if not prev_view_replay:",
            "        torch._C._set_view_replay_enabled(True)",
            "    with torch.enable_grad():",
            _indent(call, 2),
            "finally:",
            "    if torch._C._is_view_replay_enabled() != prev_view_replay:",
            "        torch._C._set_view_replay_enabled(prev_view_replay)",
        ]
    else:
        L += [
            "args_ = args",
            "grad_enabled = torch.is_grad_enabled()",
            "try:",
            "    if grad_enabled:",
            "        torch._C._set_grad_enabled(False)",
            _indent(call, 1),
            "finally:",
            "    if grad_enabled:",
            "        torch._C._set_grad_enabled(True)",
        ]
    L += [
        f"if len(all_outs) != {expected}:",
        f"    raise AssertionError(f'expected {expected} outputs, got {{len(all_outs)}}')",
        f"updated_inputs = all_outs[:{nm}]",
        f"fw_outs = all_outs[{nm}:]",
    ]
    L += _mutation_epilogue(node)
    if aliased:
        L.append("ret_outs = [")
        n_user = len(node.output_info)
        for i, o in enumerate(node.output_info):
            out = f"fw_outs[{i}].alias" if node.trace_joint else f"fw_outs[{i}]"
            replay = "None"
            if o.view_ops is not None and o.output_type not in _NON_ALIAS + ("is_input",):
                replay = f"_replay_view_{i}"
                helpers.append(_view_replay_fn(replay, o.view_ops))
            if o.output_type in _NON_ALIAS:
                L.append(f"    fw_outs[{i}],  # {o.output_type}")
            elif o.output_type == "is_input":
                L.append(f"    orig_inputs[{o.base_idx}],  # is_input")
            elif o.output_type == "alias_of_input":
                L.append(
                    f"    _gen_alias_from_base(orig_inputs[{o.base_idx}], {out}, "
                    f"{o.requires_grad!r}, {replay}),  # alias_of_input"
                )
            else:
                assert o.base_idx is not None
                if o.output_type in (
                    "alias_of_intermediate",
                    "alias_of_intermediate_save_as_output",
                ):
                    base = f"fw_outs[{o.base_idx + n_user}]"
                elif o.base_idx in aliased:
                    base = f"_unwrap_alias(fw_outs[{o.base_idx}])"
                else:
                    base = f"fw_outs[{o.base_idx}]"
                L.append(
                    f"    _gen_alias_from_base({base}, {out}, {o.requires_grad!r}, {replay}),"
                    f"  # {o.output_type}"
                )
        L.append("]")
    else:
        L.append("ret_outs = fw_outs")
    if node.grad_enabled_mutation is not None:
        L.append(
            f"torch._C._set_grad_enabled({node.grad_enabled_mutation!r})  # grad mode set inside fn"
        )
    L.append("return ret_outs")
    kinds = [o.output_type for o in node.output_info]
    src = f'''def _runtime_wrapper(args):
    """RuntimeWrapper (trace_joint={node.trace_joint}): run the compiled fn with grad mode {"on" if node.trace_joint else "off"},
    copy mutated inputs {node.mutated_inp_runtime_indices!r} back, regenerate aliased outputs.
    Output kinds: {kinds!r}."""
{_indent(chr(10).join(L))}'''
    return "\n\n\n".join([*helpers, src])


def _mutation_epilogue(node: RuntimeWrapperNode) -> list[str]:
    out: list[str] = []
    for i, idx in enumerate(node.mutated_inp_runtime_indices):
        meta: InputInfo = node.input_info[idx]
        if not meta.mutates_data and not meta.mutates_metadata:
            continue
        oi, ui = f"orig_inputs[{idx}]", f"updated_inputs[{i}]"
        u = f"_unwrap_alias({ui})" if node.trace_joint else ui
        if meta.mutates_storage_metadata:
            out += [f"with torch.no_grad():  # input {idx} saw set_()", f"    {oi}.set_({u})"]
        elif meta.mutates_metadata and not meta.mutates_data:
            out.append(f"_u = {u}  # input {idx}: metadata-only mutation")
            out.append(f"{oi}.as_strided_(_u.size(), _u.stride(), _u.storage_offset())")
        else:
            if meta.mutates_metadata:
                out.append(f"{oi}.as_strided_({ui}.size(), {ui}.stride(), {ui}.storage_offset())")
            if meta.is_leaf:
                out += [
                    f"if {oi}.requires_grad:  # input {idx}: data mutation hidden from autograd",
                    f"    {oi}.detach().copy_({ui})",
                    "else:",
                    f"    {oi}.copy_({ui})",
                ]
            else:
                out.append(f"{oi}.copy_({ui})  # input {idx}: data mutation")
    return out


def _graph_section(g: CompiledGraph) -> str:
    fn = f"compiled_{g.name}"
    if g.kind == "fx":
        return g.source
    realign = ""
    if g.realign_inputs:
        realign = f", realign={list(g.realign_inputs)!r}, writeback={list(g.realign_writeback)!r}"
    return (
        f"# Inductor's output code for the {g.name} graph, embedded verbatim.\n"
        f"_INDUCTOR_{g.name.upper()}_SOURCE = {_triple_quoted(g.source)}\n\n"
        f"{fn} = _load_inductor_graph(_INDUCTOR_{g.name.upper()}_SOURCE, {g.name!r}{realign})"
    )


def _guard_section(g: GuardNode) -> str:
    tensors = [
        (
            t.index,
            t.source,
            type_var(t.type_path)
            if t.type_path not in ("torch:Tensor", "torch.nn.parameter:Parameter")
            else None,
            t.dtype,
            t.device,
            t.shape,
            t.stride,
            t.requires_grad,
        )
        for t in g.tensors
    ]
    tens_lines = ",\n".join(
        f"    ({i}, {src!r}, {tv or 'None'}, {dt}, {dev!r}, {shape!r}, {stride!r}, {rg!r})"
        for i, src, tv, dt, dev, shape, stride, rg in tensors
    )
    values = [(v.index, v.source) for v in g.values]
    return f"""# Guards: what the graph was compiled for. Each entry: (index, source, subclass type,
# dtype, device, shape (None = dynamic dim), stride (None = not guarded), requires_grad).
_TENSOR_GUARDS = [
{tens_lines}
]
_SYMINT_GUARDS = {values!r}
_SAME_OBJECT = {g.same_object!r}
_SHARED_STORAGE = {g.shared_storage!r}
_GRAD_ENABLED = {g.grad_enabled!r}
# How the tensor leaves of the arguments aliased each other at compile time.
_ARG_SOURCES = {g.arg_sources!r}
_ARG_SAME_OBJECT = {g.arg_same_object!r}
_ARG_SHARED_STORAGE = {g.arg_shared_storage!r}


def _gather_arg_leaves(L):
    return [
{"".join(f"        {s},{chr(10)}" for s in g.arg_sources)}    ]"""


def _entry_section(ir: PythonifyIR, outer: str) -> str:
    e = ir.entry
    srcs = "\n".join(f"            {s}," for s in e.input_sources)
    return f'''ARG_NAMES = {e.arg_names!r}
IS_MODULE = {e.is_module!r}
INPUT_SOURCES = {e.input_sources!r}


def _gather_inputs(L, G):
    try:
        return [
{srcs}
        ]
    except (KeyError, AttributeError, IndexError, TypeError) as exc:
        raise PythonifyGuardError(
            f"cannot resolve a graph input ({{exc!r}}); inputs that are not arguments "
            "(parameters, buffers, globals, closure cells) need load(path, bind=fn)"
        ) from exc


def call(*args):
    """Run the compiled program: same outputs, input mutations, aliasing and autograd as
    torch.compile(fn)(*args) at capture time."""
    L, G = _bind_locals(args)
    flat = _gather_inputs(L, G)
    _check_guards(flat)
    _check_aliasing(_gather_arg_leaves(L), _ARG_SOURCES, _ARG_SAME_OBJECT, _ARG_SHARED_STORAGE)
    outs = {outer}(flat)
    return {e.output_expr}'''


def generate(ir: PythonifyIR) -> str:
    """The whole file."""
    gen = PythonCodeGen(ir)
    parts: list[str] = [runtime_source.header(ir)]
    parts.append(runtime_source.helpers(ir))
    parts.append("# " + "=" * 70 + "\n# 1. Compiled graphs\n# " + "=" * 70)
    for name in ("inference", "forward", "backward"):
        if name in ir.graphs:
            parts.append(_graph_section(ir.graphs[name]))
    cg = {n.graph_id: n for n in ir.cudagraphs}
    if cg:
        from . import cudagraph_codegen

        parts.append("# " + "=" * 70 + "\n# 2. CUDA graphs (capture/replay)\n# " + "=" * 70)
        parts.append(cudagraph_codegen.runtime_source(emulate=next(iter(cg.values())).emulate))
    graph_fn = {n: f"compiled_{n}" for n in ir.graphs}
    for gid, cg_node in cg.items():
        gen.inner = graph_fn[gid]
        name, src = cg_node.accept(gen)
        parts.append(src)
        graph_fn[gid] = name
    gen.backward_name = graph_fn.get("backward", "compiled_backward")
    gen.inner = graph_fn["forward" if ir.training else "inference"]
    for title, nodes in (
        ("3. forward_inference wrappers (inner-most first)", ir.forward_inference),
        ("4. autograd assembly", ir.autograd_assembly),
        ("5. dispatch wrappers", ir.dispatch),
    ):
        parts.append("# " + "=" * 70 + f"\n# {title}\n# " + "=" * 70)
        if not nodes:
            parts.append("# (none active)")
        for node in nodes:
            parts.append(node.accept(gen))
            gen.inner = _FN_NAMES[node.wrapper]
    parts.append("# " + "=" * 70 + "\n# 6. Guards and entry point\n# " + "=" * 70)
    parts.append(_guard_section(ir.guards))
    parts.append(_entry_section(ir, gen.inner))
    return "\n\n\n".join(p.rstrip() for p in parts) + "\n"


__all__ = ["PythonCodeGen", "generate"]
