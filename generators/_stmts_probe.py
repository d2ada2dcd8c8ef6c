"""Statements that read a tensor's metadata as Python values (Note [Reading a tensor's metadata]).

Note [Reading a tensor's metadata]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
User code asks a tensor about itself -- `x.size(0)`, `x.shape[1]`, `len(x)`, `x.stride(0)`,
`x.is_contiguous()`, `x.requires_grad`, `x.grad is None`, `x.dtype` -- and computes with the
answer or branches on it. Eager answers from the tensor as it is at that point. Dynamo answers
from what it tracked while tracing (TensorVariable's cached properties, the fake tensor's
metadata, a SymInt under dynamic shapes) and guards on what it read; AOTAutograd traces with
the answer baked in; the bundled file runs the graph Dynamo produced. An answer that is stale
(a property cached before an in-place metadata change, a meta function whose strides differ
from the kernel's) or a guard that is missing (a parameter's `.grad` set by the previous
call's backward) shows up as a wrong value or the wrong branch, where no other statement looks.

The group draws, on any family, one of:

- an int the tensor reports, times or plus the tensor (`_render_body.PROBE_INTS`):
  `v * v.size(0)`, `v + v.storage_offset()`, ...; `v * v.flatten()[0].item()` on the Dynamo
  front-end only (a graph break, or with `capture_scalar_outputs` an unbacked symbol;
  aot_function's trace has no data to read);
- a branch on a predicate (`_render_body.PROBE_PREDICATES`), `v * 2 if <pred> else v + 1`:
  both arms keep v's shape, dtype and autograd state, so the model needs no answer. Dynamo
  front-end only: aot_function has no guards, and specializing on the first call is what it
  promises;
- (one in five) a write through `__setitem__`, `v[i] = n`, Dynamo's own path for what
  `index_put_` spells, under stmt_inplace's rules (`mutable`).

No bool tensor is read (bool times an int is int64, so the result would change dtype); the
autograd predicates read `.grad` only of a leaf (eager warns for a non-leaf).
"""

from __future__ import annotations

from hypothesis import event

from ._build import Builder
from ._model import Val
from ._render_body import PROBE_INTS, PROBE_PREDICATES
from ._spec import Stmt
from ._stmts import GradMode, bind, fresh, mutable, number_operand, own_ctx, tensors

__all__ = ["stmt_probe"]

# Whether a form takes a dim argument: its template names one (`{1}`).
_NEEDS_DIM = {f: "{1}" in t for f, t in {**PROBE_INTS, **PROBE_PREDICATES}.items()}


def stmt_probe(b: Builder) -> bool:
    """One metadata read (Note [Reading a tensor's metadata])."""
    if b.chance(5) and _setitem(b):
        return True
    cands = tensors(b, lambda v: v.dtype != "bool")
    if not cands:
        return False
    v = b.pick(cands)
    dynamo = b.profile.frontend == "dynamo"
    if dynamo and b.chance(2):
        kind, forms = "if", [p for p in PROBE_PREDICATES if _asks(v, p)]
    else:
        kind, forms = "int", [f for f in PROBE_INTS if _asks(v, f) and (dynamo or f != "item")]
    form = b.pick(forms)
    args: tuple[object, ...] = (kind, form)
    if _NEEDS_DIM[form]:
        args = (*args, b.integer(0, v.ndim - 1))
    ctx = own_ctx(b)
    with GradMode(b, ctx):
        out = fresh(b, v, v.shape, v.dtype, v.requires_grad)
        bind(b, out, Stmt("probe", (v.name, args), (out.name,), ctx))
    event(f"probe: {kind} {form}")
    return True


def _asks(v: Val, form: str) -> bool:
    """Whether eager answers `form` about v without raising or warning."""
    if _NEEDS_DIM[form] or form == "len":
        return v.ndim >= 1
    if form == "item":
        return v.subclass is None and all(s > 0 for s in v.shape)
    if form == "grad":  # a non-leaf's .grad warns, and is None
        return v.is_leaf and (v.input_index is not None or v.param)
    return True


def _setitem(b: Builder) -> bool:
    """`v[i] = n`: a write of one row by a number (a constant, or a number argument v may
    meet), where eager lets v be written; never under inference_mode, where compiling the
    write through the view `v[i]` breaks the process (pytorch#180823: Note [The context axis]
    in _strategy.py)."""
    if b.inference_on:
        return False
    cands = tensors(
        b,
        lambda v: (
            mutable(b, v, b.grad_on) and v.ndim >= 1 and v.shape[0] > 0 and v.subclass is None
        ),
    )
    if not cands:
        return False
    v = b.pick(cands)
    b.body.append(Stmt("setitem", (v.name, b.integer(0, v.shape[0] - 1), number_operand(b, v, 2))))
    event("mutation: __setitem__")
    return True
