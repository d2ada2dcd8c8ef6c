"""RuntimeWrapper (runtime_wrappers.py): the epilogue around every compiled call.

It runs the compiled function with grad mode off (inference) or with view replay on (training),
then does in plain torch what the graph could not: copies mutated inputs back into the caller's
tensors, and regenerates outputs that alias an input or an intermediate as real views.

Note [Regenerating aliased outputs]
-----------------------------------
A compiled graph cannot return a view of its input that autograd and the caller see as a view:
functionalization made every output a fresh tensor. For each aliased output torch records how it
relates to its base (OutputType) and, when it can, the ViewMeta sequence that made it. The file
replays that sequence on the caller's base (`_replay_view_<i>`), else reuses the compiled
output's `_view_func`, else falls back to as_strided: gen_alias_from_base's order. requires_grad
is then patched to what eager gives. In training the forward hides these outputs from
autograd.Function in a `_TensorAlias` (see autograd.py), which the epilogue unwraps.

Note [Copying input mutations back]
-----------------------------------
A data mutation the graph did not apply in place comes back as an extra leading output; the
epilogue copies it into the caller's tensor, through `.detach()` for a leaf that requires grad
(eager would have raised on the in-place op otherwise; the graph already recorded it). A
metadata mutation is applied with as_strided_, a storage mutation (set_) with set_ under
no_grad, as torch's _apply_mutations does.

Note [Saved-tensor hooks inlined]
---------------------------------
Saved-tensor hooks that are both fx GraphModules (`torch.autograd.graph.saved_tensors_hooks(
pack_gm, unpack_gm)`, as activation quantization and offloading install them) are not called
by a compiled region: AOTAutograd traces them into the forward graph's end and the backward
graph's start (graph_compile.maybe_inline_graph_saved_tensors_hooks), for the saved tensors
functorch.config.saved_tensors_hooks_filtering_mode selects. The runtime wrapper of such a
training graph then runs with the ambient hooks disabled (`_disable_saved_tensors_hooks`,
fail_if_non_empty=False), so autograd.Function's save_for_backward does not pack again what
the graph packed; Dynamo guards on which hooks were on top (AUTOGRAD_SAVED_TENSORS_HOOKS).
The file does both: `_SavedHooksDisabled` around this wrapper where the capture saw the
graphs inline them (`disable_saved_hooks`), and a guard on the hooks' code
(file_runtime.inlined_saved_hooks; the file cannot know their identity, so equal code passes
where Dynamo would recompile to the same graphs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from .. import records as R
from ..file_runtime import inlined_saved_hooks
from ..meta import (
    NON_ALIAS_OUTPUTS,
    EmitContext,
    InputInfo,
    IRNode,
    OutputInfo,
    PathFacts,
    Registration,
    ViewOp,
)
from .source import indent, literal

__all__ = [
    "FIELDS",
    "FUNCTION",
    "REGISTRATION",
    "RUNTIME",
    "RuntimeWrapperNode",
    "emit",
    "paths",
    "record",
]

# Fields of torch's RuntimeWrapper that `record` reads.
FIELDS = ("indices_of_inps_to_detach", "trace_joint", "disable_amp")
FUNCTION = "_runtime_wrapper"


@dataclass
class RuntimeWrapperNode(IRNode):
    """The runtime epilogue: detach, grad mode, input mutations, output alias regeneration."""

    wrapper: ClassVar[str] = "RuntimeWrapper"
    indices_of_inps_to_detach: list[int] = field(default_factory=list)  # training: detached args
    trace_joint: bool = False  # training (the graph is the autograd.Function's forward)
    disable_amp: bool = False  # run the graph under _DisableAutocast
    keep_input_mutations: bool = False  # aot_config.keep_inference_input_mutations
    input_info: list[InputInfo] = field(default_factory=list)  # per graph input
    output_info: list[OutputInfo] = field(default_factory=list)  # per user output
    mutated_inp_runtime_indices: list[int] = field(default_factory=list)  # leading outputs
    # in-graph input mutations whose version counters the epilogue bumps
    mutated_graph_handled_indices_seen_by_autograd: list[int] = field(default_factory=list)
    num_outputs: int = 0  # user outputs
    num_intermediate_bases: int = 0  # trailing outputs: bases of aliased intermediates
    grad_enabled_mutation: bool | None = None  # grad mode the function set inside itself
    # training graphs that inlined GraphModule saved-tensor hooks: the ambient hooks are off
    # around the call (Note [Saved-tensor hooks inlined])
    disable_saved_hooks: bool = False

    def __post_init__(self) -> None:
        if len(self.output_info) != self.num_outputs:
            raise ValueError("output_info needs one entry per user output")
        if any(i >= len(self.input_info) for i in self.mutated_inp_runtime_indices):
            raise ValueError("a mutated input index is out of range")


# Where the wrapper sits in the stack (Note [The wrapper registry] in wrappers/__init__.py).
REGISTRATION = Registration(
    node=RuntimeWrapperNode, segment="autograd_assembly", order=5, helpers=1
)


def record(w: Any, aot_config: Any, meta: Any) -> RuntimeWrapperNode:
    """RuntimeWrapper always wraps the compiled function."""
    return RuntimeWrapperNode(
        indices_of_inps_to_detach=list(w.indices_of_inps_to_detach),
        trace_joint=bool(w.trace_joint),
        disable_amp=bool(w.disable_amp),
        keep_input_mutations=bool(aot_config.keep_inference_input_mutations),
        input_info=R.input_infos(meta),
        output_info=R.output_infos(meta),
        mutated_inp_runtime_indices=list(meta.mutated_inp_runtime_indices),
        mutated_graph_handled_indices_seen_by_autograd=list(
            meta.mutated_graph_handled_indices_seen_by_autograd
        ),
        num_outputs=int(meta.num_outputs),
        num_intermediate_bases=int(meta.num_intermediate_bases),
        grad_enabled_mutation=meta.grad_enabled_mutation,
        disable_saved_hooks=bool(w.trace_joint) and inlined_saved_hooks() is not None,
    )


# --------------------------------------------------------------------------- runtime (emitted)


class _TensorAlias:
    """Hides an aliased output from autograd.Function (torch's TensorAlias)."""

    __slots__ = ("alias",)

    def __init__(self, alias):
        self.alias = alias


def _unwrap_alias(x):
    if not isinstance(x, _TensorAlias):
        raise AssertionError(f"expected TensorAlias, got {type(x)}")
    return x.alias


def _gen_alias_from_base(base, target, target_requires_grad, replay=None):
    """Rebuild an output that aliases `base` (an input or an intermediate).

    With a recorded view sequence, replay it on the base; otherwise reuse the compiled output's
    view function, and fall back to as_strided. requires_grad is patched to what eager gives.
    """

    def patch_requires_grad(out):
        if base.requires_grad and not target_requires_grad:
            out = out.detach()
        elif not base.requires_grad and target_requires_grad:
            out.requires_grad_(True)
        return out

    if replay is not None:
        out = replay(base)
        if out.shape != target.shape:
            raise AssertionError(
                f"view replay gave shape {tuple(out.shape)}, expected {tuple(target.shape)}"
            )
        return patch_requires_grad(out)
    if target._base is not None:
        b = target._base
        if base is not b and (
            base.size() != b.size()
            or base.stride() != b.stride()
            or base.storage_offset() != b.storage_offset()
        ):
            reshaped = base.as_strided(b.size(), b.stride(), b.storage_offset())
        else:
            reshaped = base
        out = target._view_func(reshaped)
        if out is not None and out.shape == target.shape:
            return patch_requires_grad(out)
    size, stride, offset = target.size(), target.stride(), target.storage_offset()
    if base.is_complex() and not target.is_complex():
        out = torch.view_as_real(base).as_strided(size, stride, offset)
    elif not base.is_complex() and target.is_complex():
        out = torch.view_as_complex(base).as_strided(size, stride, offset)
    else:
        out = base.as_strided(size, stride, offset)
    out = patch_requires_grad(out)
    if out.dtype != target.dtype:
        out = out.view(target.dtype)
    return out


class _SavedHooksDisabled:
    """The ambient saved-tensor hooks off for the compiled call, as torch's
    _disable_saved_tensors_hooks (Note [Saved-tensor hooks inlined]); a hook pushed inside
    raises with the message."""

    def __enter__(self):
        self.prev = torch._C._autograd._saved_tensors_hooks_get_disabled_error_message()
        message = "saved-tensor hooks inlined into this file's graphs: none may be pushed here"
        torch._C._autograd._saved_tensors_hooks_disable(message, False)

    def __exit__(self, *exc):
        if self.prev is None:
            torch._C._autograd._saved_tensors_hooks_enable()
        else:
            torch._C._autograd._saved_tensors_hooks_disable(self.prev, False)
        return False


RUNTIME = ("_TensorAlias", "_unwrap_alias", "_gen_alias_from_base", "_SavedHooksDisabled")


# --------------------------------------------------------------------------- emit


def _view_replay_fn(name: str, ops: tuple[ViewOp, ...]) -> str:
    """A function that replays a recorded ViewMeta sequence on a base."""
    lines = [f"def {name}(base):", "    v = base"]
    for op in ops:
        args = "".join(", " + literal(a) for a in op.args)
        args += "".join(f", {k}={literal(a)}" for k, a in op.kwargs)
        call = f"{op.op}(v{args})"
        if op.out_index is not None:
            call += f"[{op.out_index}]"
        lines.append(f"    v = {call}")
    lines.append("    return v")
    return "\n".join(lines)


def _call_lines(node: RuntimeWrapperNode, inner: str) -> list[str]:
    """Run the compiled function: grad mode off for inference, view replay on for training."""
    call = f"all_outs = _as_list({inner}(args_))"
    if node.disable_amp:
        call = f"with torch._C._DisableAutocast():\n    {call}"
    if not node.trace_joint:
        return [
            "args_ = args",
            "grad_enabled = torch.is_grad_enabled()",
            "try:",
            "    if grad_enabled:",
            "        torch._C._set_grad_enabled(False)",
            indent(call, 1),
            "finally:",
            "    if grad_enabled:",
            "        torch._C._set_grad_enabled(True)",
        ]
    lines = ["args_ = list(args)"]
    for i in node.indices_of_inps_to_detach:
        lines.append(
            f"if isinstance(args_[{i}], torch.Tensor):\n    args_[{i}] = args_[{i}].detach()"
        )
    return lines + [
        "prev_view_replay = torch._C._is_view_replay_enabled()",
        "try:",
        "    if not prev_view_replay:",
        "        torch._C._set_view_replay_enabled(True)",
        "    with torch.enable_grad():",
        indent(call, 2),
        "finally:",
        "    if torch._C._is_view_replay_enabled() != prev_view_replay:",
        "        torch._C._set_view_replay_enabled(prev_view_replay)",
    ]


def _mutation_epilogue(node: RuntimeWrapperNode) -> list[str]:
    """Note [Copying input mutations back]."""
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


def _regenerated_outputs(node: RuntimeWrapperNode, helpers: list[str]) -> list[str]:
    """Note [Regenerating aliased outputs]: one list entry per user output."""
    aliased = [i for i, o in enumerate(node.output_info) if o.output_type not in NON_ALIAS_OUTPUTS]
    lines = ["ret_outs = ["]
    n_user = len(node.output_info)
    for i, o in enumerate(node.output_info):
        out = f"fw_outs[{i}].alias" if node.trace_joint else f"fw_outs[{i}]"
        replay = "None"
        if o.view_ops is not None and o.output_type not in NON_ALIAS_OUTPUTS + ("is_input",):
            replay = f"_replay_view_{i}"
            helpers.append(_view_replay_fn(replay, o.view_ops))
        if o.output_type in NON_ALIAS_OUTPUTS:
            lines.append(f"    fw_outs[{i}],  # {o.output_type}")
        elif o.output_type == "is_input":
            lines.append(f"    orig_inputs[{o.base_idx}],  # is_input")
        elif o.output_type == "alias_of_input":
            lines.append(
                f"    _gen_alias_from_base(orig_inputs[{o.base_idx}], {out}, "
                f"{o.requires_grad!r}, {replay}),  # alias_of_input"
            )
        else:
            assert o.base_idx is not None
            if o.output_type in ("alias_of_intermediate", "alias_of_intermediate_save_as_output"):
                base = f"fw_outs[{o.base_idx + n_user}]"
            elif o.base_idx in aliased:
                base = f"_unwrap_alias(fw_outs[{o.base_idx}])"
            else:
                base = f"fw_outs[{o.base_idx}]"
            lines.append(
                f"    _gen_alias_from_base({base}, {out}, {o.requires_grad!r}, {replay}),"
                f"  # {o.output_type}"
            )
    return lines + ["]"]


def emit(node: RuntimeWrapperNode, ctx: EmitContext) -> str:
    epilogue_idx = list(node.mutated_inp_runtime_indices)
    for o in node.output_info:
        if o.output_type in ("alias_of_input", "is_input"):
            assert o.base_idx is not None
            epilogue_idx.append(o.base_idx)
    nm = len(node.mutated_inp_runtime_indices)
    expected = nm + node.num_outputs + node.num_intermediate_bases
    helpers: list[str] = []
    L: list[str] = ["orig_inputs = {" + ", ".join(f"{i}: args[{i}]" for i in epilogue_idx) + "}"]
    if node.keep_input_mutations and node.mutated_graph_handled_indices_seen_by_autograd:
        idx = node.mutated_graph_handled_indices_seen_by_autograd
        L.append(
            "# In-graph input mutations bump version counters as eager would.\n"
            "torch.autograd.graph.increment_version((" + "".join(f"args[{i}], " for i in idx) + "))"
        )
    L += _call_lines(node, ctx.inner)
    L += [
        f"if len(all_outs) != {expected}:",
        f"    raise AssertionError(f'expected {expected} outputs, got {{len(all_outs)}}')",
        f"updated_inputs = all_outs[:{nm}]",
        f"fw_outs = all_outs[{nm}:]",
    ]
    L += _mutation_epilogue(node)
    if any(o.output_type not in NON_ALIAS_OUTPUTS for o in node.output_info):
        L += _regenerated_outputs(node, helpers)
    else:
        L.append("ret_outs = fw_outs")
    if node.grad_enabled_mutation is not None:
        L.append(
            f"torch._C._set_grad_enabled({node.grad_enabled_mutation!r})  # grad mode set inside fn"
        )
    L.append("return ret_outs")
    if node.disable_saved_hooks:
        L = ["with _SavedHooksDisabled():  # the graphs pack what they save", indent("\n".join(L))]
    kinds = [o.output_type for o in node.output_info]
    src = f'''def _runtime_wrapper(args):
    """RuntimeWrapper (trace_joint={node.trace_joint}): run the compiled fn with grad mode {"on" if node.trace_joint else "off"},
    copy mutated inputs {node.mutated_inp_runtime_indices!r} back, regenerate aliased outputs.
    Output kinds: {kinds!r}."""
{indent(chr(10).join(L))}'''
    return "\n\n\n".join([*helpers, src])


# --------------------------------------------------------------------------- paths


def paths(node: RuntimeWrapperNode, facts: PathFacts) -> list[str]:
    out = []
    infos = node.input_info
    if any(i.mutates_data for i in infos):
        out.append("runtime/input_mutation/data")
    if any(i.mutates_metadata for i in infos):
        out.append("runtime/input_mutation/metadata")
    if any(i.mutates_storage_metadata for i in infos):
        out.append("runtime/input_mutation/storage")
    if any(i.mutated_out_of_graph for i in infos):
        out.append("runtime/input_mutation/out_of_graph")
    if node.indices_of_inps_to_detach:
        out.append("runtime/detach")
    if node.grad_enabled_mutation is not None:
        out.append("runtime/grad_mode_mutation")
    if node.disable_amp:
        out.append("runtime/disable_amp")
    if node.disable_saved_hooks:
        out.append("runtime/saved_hooks_inlined")
    for o in node.output_info:
        if o.output_type != "non_alias":
            out.append(f"runtime/output/{o.output_type}")
    if node.num_intermediate_bases:
        out.append("runtime/intermediate_bases")
    return out
