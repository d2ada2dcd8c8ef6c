"""The statement groups a family adds to the mix (its Profile's weights): effects, random
numbers, custom autograd.Functions, tensor hooks and BatchNorm. Like the groups of _stmts.py,
each draws one legal statement and updates the builder's model, or returns False.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import event

from ._build import Builder
from ._model import HOOK_STYLES, Val, numel
from ._spec import FunctionSpec, Stmt
from ._stmts import bind, fresh, mutable, tensors

__all__ = [
    "BREAKING_EFFECTS",
    "TOKEN_EFFECTS",
    "BACKWARD_FORMS",
    "stmt_autograd_grad",
    "stmt_backward",
    "stmt_batchnorm",
    "stmt_effect",
    "stmt_function",
    "stmt_hook",
    "stmt_rng",
]


# The effects that thread effect tokens through the graph (EffectTokensWrapper), and those
# that break it (Dynamo runs them in Python between two graphs; Note [Regions] in pythonify).
TOKEN_EFFECTS = ("aten_print", "print_hop", "effect_op")
BREAKING_EFFECTS = ("graph_break", "print")


def stmt_effect(b: Builder, kinds: tuple[str, ...] = TOKEN_EFFECTS + BREAKING_EFFECTS) -> bool:
    """A side effect of `kinds`: aten._print, the print HOP, an ordered effectful custom op,
    or a graph break, explicit or Python's print."""
    kind = b.pick(kinds)
    cands = tensors(b, lambda v: not v.subclass)
    if kind in ("print_hop", "effect_op") and not cands:
        kind = "aten_print"
    args: tuple[object, ...] = ()
    if kind in ("print_hop", "effect_op"):
        args = (b.pick(cands).name,)
    b.body.append(Stmt(kind, args))
    event(f"effect: {kind}")
    return True


def stmt_rng(b: Builder) -> bool:
    cands = tensors(b, lambda v: v.is_float and not v.subclass)
    if not cands:
        return False
    v = b.pick(cands)
    ops = ["rand_like", "randn_like", "dropout", "bernoulli"]
    if numel(v.shape) == 0:  # eager's dropout returns an empty input as-is: not a new value
        ops.remove("dropout")
    op = b.pick(ops)
    rg = v.requires_grad and op == "dropout"
    out = fresh(b, v, v.shape, v.dtype, rg)
    bind(b, out, Stmt(op, (v.name,), (out.name,)))
    event(f"rng: {op}")
    return True


def _backward_may_mutate(b: Builder, v: Val) -> bool:
    """Can a custom Function's backward write into v (AOTAutograd: a forward input mutated in
    the backward, autograd/mutation_in_backward)? v must be an argument that requires grad,
    its own storage, not saved by an earlier op: the engine runs the earlier ops' backward
    nodes after this one (lower sequence numbers), and one that saved v would find it
    modified. Later ops run theirs first."""
    return (
        b.grad_on
        and b.backward
        and v.requires_grad
        and v.input_index is not None
        and not v.is_view
        and not v.overlapping
        and not v.subclass
        and not v.param
        and v.family not in b.saved_families
        and v.name not in b.dup_names
    )


def stmt_function(b: Builder, target: Val | None = None) -> bool:
    """Apply a new custom autograd.Function to a float value."""
    if target is None:
        cands = tensors(b, lambda v: v.is_float and not v.subclass)
        if not cands:
            return False
        target = b.pick(cands)
    v = target
    bodies = ["scale", "sin", "view"]
    if mutable(b, v, b.grad_on) and not v.is_view:
        bodies.append("dirty")
    if _backward_may_mutate(b, v):
        bodies.append("bw_mutate")
    style, body = b.pick(("ctx", "setup_context")), b.pick(bodies)
    non_differentiable = b.chance(3)
    materialize_grads, once_differentiable = not b.chance(3), b.chance(3)
    # One draw for the rest (it was backward_print's, 1 in 4 still): a new draw of its own
    # moved where Hypothesis's shrinking ends (tests/generators/test_shrinking.py).
    extra = b.integer(0, 11)
    w = _second_input(b, v, extra, body)
    fn = FunctionSpec(
        style=style,
        body=body,
        non_differentiable=non_differentiable,
        materialize_grads=materialize_grads,
        once_differentiable=once_differentiable,
        backward_print=extra >= 9,
        arity=1 if w is None else 2,
        two_outputs=extra == 6 and not non_differentiable,
        backward_record=extra == 5,
    )
    k = len(b.functions)
    b.functions.append(fn)
    if w is not None:
        event("autograd.Function: two inputs" + (" (the same tensor twice)" if w is v else ""))
        return _apply_two(b, k, fn, v, w)
    return _apply_one(b, k, fn, v)


def _apply_one(b: Builder, k: int, fn: FunctionSpec, v: Val) -> bool:
    """Fn<k>.apply(v): the output as the body makes it (a dirty input is the output, a view
    output is a custom Function's view), and a second output where the spec has one."""
    rg = v.requires_grad and b.grad_on
    if fn.body == "dirty":
        out = replace(v, name=b.fresh_name(), requires_grad=rg, is_leaf=not rg, input_index=None)
        for name, w in list(b.vals.items()):
            if w.family == v.family:
                b.vals[name] = replace(
                    w, requires_grad=rg or w.requires_grad, is_leaf=not rg and w.is_leaf
                )
    elif fn.body == "view":
        out = replace(
            v,
            name=b.fresh_name(),
            is_view=True,
            custom_view=True,
            requires_grad=rg,
            is_leaf=not rg,
            input_index=None,
            param=False,
        )
    else:
        out = fresh(b, v, v.shape, v.dtype, v.requires_grad)
        if fn.body in ("sin", "bw_mutate") and rg:
            b.saved_families.add(v.family)
    outs = [out.name]
    b.vals[out.name] = out
    if fn.non_differentiable or fn.two_outputs:
        rg_extra = fn.two_outputs and v.requires_grad
        second = replace(fresh(b, v, v.shape, v.dtype, rg_extra), name=b.fresh_name())
        b.vals[second.name] = second
        outs.append(second.name)
    b.body.append(Stmt("apply_fn", (k, v.name), tuple(outs)))
    event(f"autograd.Function: {fn.style} {fn.body}")
    return True


def _second_input(b: Builder, v: Val, extra: int, body: str) -> Val | None:
    """The Function's second tensor input (FunctionSpec.arity 2), from the Function's one
    draw: 8, another float value of v's shape and dtype (v again where there is none); 7, v
    itself (F.apply(x, x)); else none. Bodies scale and sin only."""
    if extra not in (7, 8) or body not in ("scale", "sin"):
        return None
    if extra == 7:
        return v
    others = tensors(b, lambda w: w.name != v.name and w.shape == v.shape and w.dtype == v.dtype)
    others = [w for w in others if not w.subclass]
    return others[-1] if others else v


def _apply_two(b: Builder, k: int, fn: FunctionSpec, v: Val, w: Val) -> bool:
    """Fn<k>.apply(v, w): a fresh output requiring grad where either input does; sin saves
    both inputs; needs_input_grad picks the gradients backward returns."""
    rg = (v.requires_grad or w.requires_grad) and b.grad_on
    out = fresh(b, v, v.shape, v.dtype, v.requires_grad or w.requires_grad)
    if fn.body == "sin" and rg:
        b.saved_families.update({v.family, w.family})
    b.vals[out.name] = out
    outs = [out.name]
    if fn.non_differentiable or fn.two_outputs:
        second = replace(fresh(b, v, v.shape, v.dtype, fn.two_outputs and rg), name=b.fresh_name())
        b.vals[second.name] = second
        outs.append(second.name)
    b.body.append(Stmt("apply_fn", (k, v.name, w.name), tuple(outs)))
    event(f"autograd.Function: {fn.style} {fn.body}, two inputs")
    return True


def stmt_hook(b: Builder) -> bool:
    """A tensor hook: one that doubles the gradient, on an input or an intermediate; one that
    logs (the order hooks run in is observed), on an input only (Dynamo refuses a side effect
    in a hook it traces into the graph); or a post-accumulate-grad hook on a leaf input."""
    cands = tensors(b, lambda v: v.requires_grad and not v.subclass)
    if not cands or not b.grad_on:
        return False
    v = b.pick(cands)
    on_input = v.input_index is not None and not v.param
    kind = b.integer(0, 3) if on_input else 0  # HOOK_FUNCTIONS' index; 3: post-accumulate
    if kind == 3 and not v.is_leaf:
        kind = 1
    if kind == 3:
        b.body.append(Stmt("post_accumulate_hook", (v.name,)))
        event("hook: post-accumulate-grad on a leaf input")
        return True
    style = b.integer(0, len(HOOK_STYLES) - 1) if on_input else 0  # a constant, not a name
    b.body.append(Stmt("register_hook", (v.name, kind, style)))
    where = "an input" if v.input_index is not None else "an intermediate"
    event(f"hook: {'modifies the grad' if kind == 0 else 'logs'}, on {where}")
    event(f"hook: written as {HOOK_STYLES[style]}")
    return True


def stmt_batchnorm(b: Builder) -> bool:
    if b.module is None or b.module.batchnorm is None:
        return False
    c = b.module.batchnorm
    cands = tensors(
        b,
        lambda v: (
            v.dtype == "float32"
            and v.ndim in (2, 3)
            and v.shape[1] == c
            and v.shape[0] * (v.shape[2] if v.ndim == 3 else 1) > 1
            and not v.subclass
        ),
    )
    if not cands:
        return False
    v = b.pick(cands)
    out = fresh(b, v, v.shape, v.dtype, True)
    if b.grad_on:
        b.saved_families.add(v.family)
    bind(b, out, Stmt("batchnorm", (v.name,), (out.name,)))
    event("module: BatchNorm running stats updated")
    return True


# Note [torch.autograd.grad inside the function]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `g = torch.autograd.grad(v.sum(), t, retain_graph=True, allow_unused=True,
# materialize_grads=True)[0]`: a backward run in the middle of the forward (issue 36's
# front-end axis: torch machinery inside the compiled function). Dynamo breaks the graph there
# by default, so autograd runs the first region's compiled backward before the call returns;
# with the `trace_autograd_ops` knob it traces the grad into one graph. The result is a
# tensor of t's shape and dtype that requires no grad (no create_graph), zeros where v does
# not depend on t, laid out as the backward formulas made it (the gradient of a sum is an
# expand: the model takes its strides as unknown and its elements as overlapping).
# retain_graph keeps the graph for the drive's backward. Drawn only where the drive runs a
# backward, so the model already forbids writes to what the graph saved (eager checks their
# versions at this grad too), with grad on and outside inference_mode (eager refuses a grad
# of what requires none), and through Dynamo only: the AOT front-end traces the grad while it
# traces the function, which aot_function does not document (a dedupe program lost an
# argument's gradient that way, unjudged), and a body that takes one keeps to Dynamo where a
# metadata mutation would move it (`_stmts._front_end`).


def _differentiable(b: Builder) -> list[Val]:
    """The values a gradient taken inside the function may start from, or none where the
    plan cannot take one at every call (Note [torch.autograd.grad inside the function])."""
    if not (b.backward and b.grad_on) or b.inference_on or b.profile.frontend != "dynamo":
        return []
    return tensors(b, lambda v: v.requires_grad and v.is_float and not v.subclass)


def stmt_autograd_grad(b: Builder) -> bool:
    """A gradient taken inside the function (Note [torch.autograd.grad inside the
    function])."""
    cands = _differentiable(b)
    if not cands:
        return False
    v, t = b.pick(cands[::-1]), b.pick(cands)  # the latest value, of an argument
    # its layout is the backward formulas': the gradient of a sum is an expand (stride 0)
    out = replace(fresh(b, t, t.shape, t.dtype, False), geom=None, overlapping=True)
    bind(b, out, Stmt("autograd_grad", (v.name, t.name), (out.name,)))
    event("front-end: torch.autograd.grad inside")
    return True


# Note [Tensor.backward() inside the function]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `v.sum().backward(retain_graph=True)` in the middle of the forward: the gradient goes into
# the `.grad` of every leaf v depends on, arguments and parameters, as a training step's
# helper does. It yields no value; what it changes is `.grad`, which the drive compares
# after its own backward (accumulated on top). Dynamo breaks the graph there by default;
# with `trace_autograd_ops` it rewrites the call as torch.autograd.grad plus
# `inductor.accumulate_grad_` on each leaf it knows (Tensor.backward in Dynamo's
# variables/tensor.py), so the compiled graph itself writes its inputs' `.grad`. The forms:
#   sum       `v.sum().backward(retain_graph=True)`: the leaves found automatically;
#   helper    `(lambda t: t.sum().backward(retain_graph=True))(v)`: the loss made and
#             differentiated in a function Dynamo inlines, as a training step's helper;
#   gradient  `v.backward(torch.ones_like(v), retain_graph=True)`: a gradient argument;
#   inputs    `v.sum().backward(inputs=[t], retain_graph=True)`: one leaf argument or
#             parameter t, even one v does not depend on (its .grad stays None in eager).
# The conditions are torch.autograd.grad's (Note [torch.autograd.grad inside the function]),
# and one more: no custom Function whose backward writes its input in place (bw_mutate) may
# be in the graph, since the drive's backward would then unpack what the inner backward
# changed, which eager refuses at backward time and a compiled graph need not notice.
BACKWARD_FORMS = ("sum", "helper", "gradient", "inputs")


def stmt_backward(b: Builder) -> bool:
    """A Tensor.backward() called inside the function (Note [Tensor.backward() inside the
    function])."""
    if any(fn.body == "bw_mutate" for fn in b.functions):
        return False
    cands = _differentiable(b)
    if not cands:
        return False
    v = b.pick(cands[::-1])  # the latest value first
    form = b.pick(BACKWARD_FORMS)
    leaves = [t for t in cands if t.is_leaf and (t.input_index is not None or t.param)]
    if form == "inputs" and not leaves:
        form = "sum"
    args: tuple[object, ...] = (v.name, form)
    if form == "inputs":
        args += (b.pick(leaves).name,)
    b.body.append(Stmt("backward", args))
    event(f"front-end: Tensor.backward inside ({form})")
    return True
