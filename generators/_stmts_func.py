"""Statements that call a torch.func transform inside the function (Note [torch.func transforms
inside the function]).

Note [torch.func transforms inside the function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Users call `torch.func.vmap`, `grad` and `jvp` inside the code they compile (per-sample
gradients, Jacobian-vector products in a loss). Dynamo traces each transform through its
functorch interpreter, so the graph AOTAutograd receives holds the batched, differentiated or
dual-number ops the transform produced; AOTAutograd then functionalizes them, differentiates
them once more for the drive's backward (a gradient of a gradient, for `grad`) and partitions
the result. Eager runs the same transforms level by level. A transform that levels wrongly, a
batched write functionalization replays on the wrong slice, or a closed-over tensor whose
outer gradient is lost shows as a value or a gradient.

The group draws, on the Dynamo front-end, one form of `_render_body.FUNC_FORMS` over a tensor
v, with a body of `_render_body.FUNC_BODIES` (r the transform's own argument):

- `vmap` over dim 0, or over dim 1 (`in_dims=1, out_dims=1`), of an elementwise body; also a
  body that writes a copy of its slice in place (`r.clone().mul_(2)`);
- `grad` of `(body(r) * r).sum()`, and of `(body(r) * v).sum()`, which closes over v itself
  as a constant of the transform and a variable of the outer autograd;
- `vmap(grad(...))`, a per-row gradient;
- the tangent `jvp` returns for a ones tangent.

Every form returns a tensor of v's shape and dtype that requires grad as v does, so the model
needs no answer. The differentiating forms, and the elementwise bodies other than `mul2`,
are drawn on floating tensors only; no bool tensor (bool times 2 is int64), no subclass (a
traceable wrapper subclass under functorch's interpreters is another axis) and no transform
under inference_mode (eager refuses `grad` there). Dynamo only: aot_function would trace the
transforms with make_fx, which it does not document; a body that has one stays on Dynamo
where a metadata mutation would move it (`_stmts._dynamo_only`). functorch refuses `grad`
and `jvp`'s reverse-mode kin under saved-tensor hooks, so a plan whose body differentiates
this way installs none (`differentiates`).
"""

from __future__ import annotations

from hypothesis import event

from ._build import Builder
from ._model import FLOATS, Val
from ._render_body import FUNC_BODIES, FUNC_FORMS
from ._spec import Stmt
from ._stmts import bind, fresh, tensors

__all__ = ["differentiates", "stmt_func"]

# The forms that differentiate their body (float only), and those that batch over a dim.
_DIFFERENTIATING = frozenset({"grad", "grad_closure", "vmap_grad", "jvp"})
_BATCH_DIM = {"vmap": 0, "vmap_dim1": 1, "vmap_inplace": 0, "vmap_grad": 0}


def stmt_func(b: Builder) -> bool:
    """One torch.func transform of a value (Note [torch.func transforms inside the function])."""
    if b.profile.frontend != "dynamo" or b.inference_on:
        return False
    cands = tensors(b, lambda v: v.subclass is None and v.dtype != "bool")
    if not cands:
        return False
    v = b.pick(cands)
    forms = [f for f in FUNC_FORMS if _takes(v, f)]
    if not forms:
        return False
    form = b.pick(forms)
    body = b.pick([k for k in FUNC_BODIES if v.dtype in FLOATS or k == "mul2"])
    out = fresh(b, v, v.shape, v.dtype, v.requires_grad)
    if b.grad_on and v.requires_grad:  # the transforms' backward reads v and what they made
        b.saved_families.update({v.family, out.family})
    # (form, body) as one tuple: a string argument is a value's name (`_render_body._ref`)
    bind(b, out, Stmt("func", (v.name, (form, body)), (out.name,)))
    event(f"front-end: torch.func {form} inside")
    return True


def differentiates(body: list[Stmt]) -> bool:
    """Whether the body takes a torch.func gradient: functorch refuses saved-tensor hooks
    around one ("don't yet support saved tensor hooks"), so its plan installs none, neither
    the plan's nor a configuration's nor a non-reentrant checkpoint's."""
    return any(s.op == "func" and s.args[1][0] in _DIFFERENTIATING for s in body)


def _takes(v: Val, form: str) -> bool:
    """Whether eager runs `form` on v and keeps its dtype."""
    if form in _DIFFERENTIATING and v.dtype not in FLOATS:
        return False
    dim = _BATCH_DIM.get(form)
    return dim is None or (v.ndim > dim and v.shape[dim] > 0)
