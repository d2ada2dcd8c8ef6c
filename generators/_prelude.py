"""The helpers every rendered program defines first: its arguments' roots, and `drive`, which
makes one call as the plan says (seed, call site, backward, gradients).

They are real functions, emitted with `inspect.getsource` (`prelude_source`, Note [The emitted
source is the imported source] in pyfy_fuzz/schema/sourcepin.py), written as the program
shows them. Besides torch they name what the program defines around them: DEVICE, PLAN,
CALL_CONTEXT, GRAPH_HOOKS and NO_RETAIN (`_render.render`), the subclasses, the saved-tensor hooks
(`_saved_hooks`), the hooks (`_hooks`) and the relationship functions (`_relations`). This
module never calls them (nor imports torch).
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import emitted_source
from ._relations import variant_context
from ._spec import ProgramSpec

if TYPE_CHECKING:  # the program imports torch; here the helpers are source, never called
    import torch
    from torch.testing._internal.two_tensor import TwoTensor

    from ._hooks import _hook_grad_fns
    from ._saved_hooks import _pack, _unpack

__all__ = [
    "METADATA_OPS",
    "PRELUDE_FUNCTIONS",
    "call_site",
    "compile_site",
    "drive",
    "mark_inputs",
    "no_retain",
    "prelude_source",
    "saved_hooks",
    "through",
]

# Note [Arguments whose grad is not retained]
# ---------------------------------------------------------------------------------------------
# drive() calls retain_grad on each non-leaf argument requiring grad before a call that runs
# backward, so that their gradients are compared too. Eager (torch 2.13) trips an internal
# assert when such an argument gets an in-place metadata change (t_, transpose_, ...) and then
# any other in-place op: the retain-grad hook stays on the old grad_fn ("out != nullptr",
# variable.cpp; reported once, triage of 2026-11-26, RG1). Eager is the reference, so a
# program that does that would compare torch.compile against eager's crash, hiding whatever
# torch.compile does (the campaign merged D2 into it). Those arguments are not retained.
METADATA_OPS = ("t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_", "set_", "resize_")


def no_retain(spec: ProgramSpec) -> tuple[int, ...]:
    """The arguments (by position) the body changes in place with a metadata op."""
    named = {str(s.args[0]) for s in spec.body if s.op in METADATA_OPS and s.args}
    return tuple(k for k in range(len(spec.inputs)) if f"a{k}" in named)


# ------------------------------------------------------------------ defined by the program
# render() writes these (DEVICE before the helpers, the rest after them); declared here, never
# emitted, so that the helpers type-check as they will run.
DEVICE = "cpu"  # the device every tensor lives on
PLAN: dict[str, Any] = {}  # the spec's CallPlan, as a dict
CALL_CONTEXT: str | None = None  # the configuration's call-site context
GRAPH_HOOKS: Any = None  # the configuration's GraphModule saved-tensor hooks, or None
NO_RETAIN: tuple[int, ...] = ()  # Note [Arguments whose grad is not retained]
MirrorTensor: Any = None  # the one-tensor wrapper subclass (`_render.MIRROR`)

# ------------------------------------------------------------------ the helpers (emitted)
# Their long lines and layout are the program's: ruff would rewrap _drive's two long lines,
# so formatting is off around it.
# ruff: noqa: E501


def _root(g, shape, dtype, layout, grad, subclass=None, variant=None, first=True):
    """A root tensor: its own storage, the layout asked for, and its grad kind; a variant
    call's root grows ("shape"; "relation": the first root only) or changes dtype."""
    tokens = variant.split("+") if variant else []
    if "shape" in tokens or ("relation" in tokens and first):
        shape = tuple(n + 1 for n in shape)
    if "dtype" in tokens and dtype.is_floating_point:  # float32 <-> float64, halves -> float32
        dtype = torch.float64 if dtype == torch.float32 else torch.float32
    n = 1
    for s in shape:
        n *= s
    if layout == "transposed":
        storage_shape = shape[:-2] + (shape[-1], shape[-2])
    elif layout == "strided":
        storage_shape = shape[:-1] + (2 * shape[-1],)
    elif layout == "expanded":
        storage_shape = (1,) + shape[1:]
    elif layout == "offset":
        storage_shape = (n + 3,)
    else:
        storage_shape = shape
    if dtype.is_floating_point:
        s = torch.randn(storage_shape, generator=g).to(dtype)
    elif dtype == torch.bool:
        s = torch.randint(0, 2, storage_shape, generator=g).bool()
    else:
        s = torch.randint(-4, 5, storage_shape, generator=g).to(dtype)
    s = s.to(DEVICE)  # the storage moves, before autograd and views are layered on it
    if grad == "nonleaf":
        s = s.requires_grad_().clone()
    if layout == "transposed":
        t = s.transpose(-1, -2)
    elif layout == "strided":
        t = s[..., ::2]
    elif layout == "expanded":
        t = s.expand(shape)
    elif layout == "offset":
        t = s[3:].view(shape)
    else:
        t = s
    if grad != "nonleaf":
        t = t.detach()
    if subclass == "two_tensor":
        t = TwoTensor(t, t * 2)
    elif subclass == "nested_two_tensor":
        t = TwoTensor(TwoTensor(t, t * 2), TwoTensor(t * 3, t + 1))
    elif subclass == "mirror":
        t = MirrorTensor(t, "m")
    if grad == "leaf":
        t.requires_grad_()
    return t


def _set_shared(root, size, stride, offset):
    """A tensor over root's storage made with set_: shares memory, has no _base."""
    t = torch.empty(0, dtype=root.dtype, device=root.device)
    t.set_(root.untyped_storage(), offset, size, stride)
    return t


def _leaves(fn, args):
    """Tensors whose .grad a backward fills: arguments requiring grad (a non-leaf one's grad is
    retained: drive calls retain_grad), then parameters."""
    found = []  # type: ignore[var-annotated]
    params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
    for t in [*torch.utils._pytree.tree_leaves(args), *params]:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if not any(t is f for f in found):
                found.append(t)
    return found


def _unretained(t, args):
    return any(t is args[k] for k in NO_RETAIN if k < len(args))


def _grad_of(leaf):
    """A copy of leaf.grad; None for a non-leaf whose grad was not retained (reading it would
    only warn)."""
    if not (leaf.is_leaf or leaf.retains_grad) or leaf.grad is None:
        return None
    return leaf.grad.clone()


def drive(call, args, seed=0, module=None, variant=None):
    """One call as PLAN says: seed, call, then backward through the outputs requiring grad.

    `module` is the nn.Module whose parameters count as leaves (defaults to `call`); a variant
    call's context (no_grad, inference_mode) replaces the call site's. Returns
    {"out", "grad_enabled_after", "grads", "second"}: grads of the leaves after the first
    backward (None without one); after the second backward, its grads or the exception it
    raised. Errors in the call or the first backward propagate; grad mode is restored.
    """
    leaves = _leaves(call if module is None else module, args)
    again = variant is not None and "again" in variant.split("+")
    for leaf in leaves:
        if not again:  # "again": the call before's arguments, their gradients accumulate
            leaf.grad = None
        if PLAN["backward"] and not leaf.is_leaf and not _unretained(leaf, args):
            leaf.retain_grad()  # only a backward reads the .grad kept
    mark_inputs(args)
    if PLAN["grad_fn_hooks"]:
        _hook_grad_fns(args)
    with saved_hooks():
        return _drive(call, args, seed, leaves, variant)


def mark_inputs(args):
    """The plan's mark_dynamic knob: dim 0 of each tensor argument of size >= 2 is marked
    dynamic (maybe_mark_dynamic: torch may still specialise it), before every call."""
    if "mark_dynamic" not in PLAN["config"]:
        return
    for a in torch.utils._pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor) and a.dim() and a.shape[0] >= 2:
            torch._dynamo.maybe_mark_dynamic(a, 0)


def compile_site():
    """What is active around a call when torch.compile compiles at it: the plan's saved-tensor
    hooks (drive wraps the call and its backward in them), the call site, and no_grad where a
    reentrant checkpoint's forward makes the first call. A compile made apart from the drive
    (pythonify's capture) is made inside this, so it sees what the stock compile sees at its
    first call."""
    stack = contextlib.ExitStack()
    if PLAN.get("through") == "checkpoint_reentrant":  # its forward is a Function's: no_grad
        stack.enter_context(torch.no_grad())
    stack.enter_context(saved_hooks())
    stack.enter_context(call_site())
    return stack


def saved_hooks():
    """The saved-tensor hooks around a call and its backward: the plan's logging ones, and
    inside them, on top, the configuration's GraphModule pair (GRAPH_HOOKS; Note [Saved-tensor
    hooks as graphs])."""
    stack = contextlib.ExitStack()
    if PLAN["saved_tensor_hooks"]:
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(_pack, _unpack))
    if GRAPH_HOOKS is not None:
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(*GRAPH_HOOKS))
    return stack


def call_site(variant=None):
    """The call-site context a variant call names, else the plan's configuration's
    (CALL_CONTEXT: no_grad, inference_mode or autocast), around the call only: backward runs
    outside it, as a training step's would."""
    context = variant_context(variant) or CALL_CONTEXT
    if context == "no_grad":
        return torch.no_grad()
    if context == "inference_mode":
        return torch.inference_mode()
    if context == "autocast":
        return torch.autocast(torch.device(DEVICE).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


# fmt: off
def _drive(call, args, seed, leaves, variant=None):
    torch.manual_seed(seed)
    try:
        with call_site(variant):
            out = through(call, args)
        result = {"out": out, "grad_enabled_after": torch.is_grad_enabled(), "grads": None, "second": None}
    finally:
        torch.set_grad_enabled(True)
    diff = [o for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not (PLAN["backward"] and diff):
        return result
    g = torch.Generator().manual_seed(1000 + seed)
    terms = []
    for o in diff:
        if PLAN["tangents"] == "ones":
            t = torch.ones(o.shape, dtype=o.dtype, device=o.device)
        else:
            t = torch.randn(o.shape, generator=g).to(o.device, o.dtype)
        terms.append((o * t).sum())
    loss = sum(terms)
    loss.backward(retain_graph=PLAN["second_backward"] == "retain")  # type: ignore[union-attr]
    result["grads"] = [_grad_of(leaf) for leaf in leaves]
    if PLAN["second_backward"]:
        try:
            loss.backward()  # type: ignore[union-attr]
            result["second"] = [_grad_of(leaf) for leaf in leaves]
        except RuntimeError as exc:
            result["second"] = exc
    return result
# fmt: on


def through(call, args):
    """The call as PLAN's front-end makes it (Note [The front-end axis]): directly, or
    through torch.utils.checkpoint, which runs it again in backward."""
    if PLAN.get("through") == "checkpoint":
        return torch.utils.checkpoint.checkpoint(call, *args, use_reentrant=False, early_stop=False)
    if PLAN.get("through") == "checkpoint_reentrant":
        return torch.utils.checkpoint.checkpoint(call, *args, use_reentrant=True)
    return call(*args)


def _unalias(t):
    """A copy with the same values and autograd role, sharing nothing."""
    c = t.detach().clone()
    return c.requires_grad_() if t.requires_grad else c


# The helpers, in the order the program defines them.
PRELUDE_FUNCTIONS = (
    _root,
    _set_shared,
    _leaves,
    _unretained,
    _grad_of,
    drive,
    mark_inputs,
    compile_site,
    saved_hooks,
    call_site,
    _drive,
    through,
    _unalias,
)


def prelude_source() -> str:
    """The helpers' source, as the rendered program defines them after its header."""
    return "\n" + emitted_source(*PRELUDE_FUNCTIONS)


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
