"""Statements that read a Python number argument (Note [Scalar arguments]).

Note [Scalar arguments]
~~~~~~~~~~~~~~~~~~~~~~~
Users pass Python numbers to compiled functions beside tensors: a scale, an offset, a count.
What torch does with one depends on how it is compiled, and each way is its own path through
Dynamo, AOTAutograd and the generated file:

- `dynamic=False` (and the first compile under automatic dynamic): Dynamo specializes the
  value, bakes it into the graph and guards it (CONSTANT_MATCH); another value recompiles.
- `dynamic=True`, or a second compile after the value changed: an int becomes a SymInt graph
  input, a float a SymFloat that Dynamo passes to the graph as a float64 tensor
  (`pass_arg_as_tensor`) and AOTAutograd's `tensorify_python_scalars` pass turns back into
  tensor arithmetic (a restart of Dynamo's analysis where it cannot).

So the axis draws, for any family on the Dynamo front-end, Python int and float arguments
(`InputSpec` kinds "int" and "float", `Builder.input_scalar`) and statements that read them:
out of place (`x * s`, `x + s`, `s - x`) and in place (`x.add_(s)`, `x.mul_(s)`, through
stmt_inplace's operands). The "scalars" call relationship (`to_other_scalars` in
_relations.py) passes other values of the same types on a later call, so the guard, the
recompile and the dynamic symbol all run. Typing follows eager's promotion without a model of
it: a float only meets floating tensors (an int tensor times a float is the default dtype),
an int never meets a bool tensor (bool plus an int is int64), so the result keeps the
tensor's dtype.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import event

from ._build import Builder
from ._spec import Stmt
from ._stmts import GradMode, bind, fresh, mutable, own_ctx, scalar_partners, tensors

__all__ = ["SCALAR_OPS", "stmt_scalar"]

# Over (tensor, scalar): v * s, v + s, s - v (_render_body's _SCALAR).
SCALAR_OPS = ("smul", "sadd", "rsub")


def stmt_scalar(b: Builder) -> bool:
    """`v <op> s` for a tensor v and a Python number argument s: a result of v's shape and
    dtype, requiring grad as v does; or, one in three, `v.add_(s)` / `v.mul_(s)` where eager
    lets v be written (Note [Scalar arguments])."""
    if b.chance(3) and _in_place(b):
        return True
    cands = [v for v in tensors(b) if scalar_partners(b, v)]
    if not cands:
        return False
    v = b.pick(cands)
    s = b.pick(scalar_partners(b, v))
    op = b.pick(SCALAR_OPS)
    ctx = own_ctx(b)
    with GradMode(b, ctx):
        out = replace(fresh(b, v, v.shape, v.dtype, v.requires_grad), subclass=v.subclass)
        bind(b, out, Stmt(op, (v.name, s), (out.name,), ctx))
    return True


def _in_place(b: Builder) -> bool:
    """`v.add_(s)` or `v.mul_(s)`: neither saves anything for backward (a product by a number
    needs only the number), so only `mutable`'s rules apply."""
    cands = [v for v in tensors(b, lambda v: mutable(b, v, b.grad_on)) if scalar_partners(b, v)]
    if not cands:
        return False
    v = b.pick(cands)
    op = b.pick(("add_", "mul_"))
    b.body.append(Stmt(op, (v.name, b.pick(scalar_partners(b, v)))))
    event(f"mutation: {op} by a number argument")
    return True
