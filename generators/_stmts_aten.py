"""Statements drawn from torch's own op vocabulary (issue 36): `stmt_aten`.

The op and its arguments come from the derived table (`_vocabulary`, Note [Op classes] in
pyfy_fuzz/schema/vocabulary.py): a class first, then a value to act on, then an op of that
class with a recipe that torch ran on the value's shape and dtype, so the model's result -- a
view's geometry in the value's storage, a fresh result's shape and dtype -- is what eager does.

Note [An aten statement]
~~~~~~~~~~~~~~~~~~~~~~~~
`Stmt("aten", (name, arg, ...), outs)`: `name` is the overload (`aten.narrow.default`), and
each argument is a value's name (a ref, at the top level, so shrinking and dead-code analysis
see it) or tagged data: ("t", dtype, shape) a constant tensor, ("d", dtype, data) an integer
or bool tensor with these values, ("dtype", name), ("seq", [...]), ("l", literal); ("kw",
key, arg) a keyword argument; ("item", k) the element taken of a list result; ("spelling", s)
the call written as users write it, s "method" (`a0.narrow(0, 1, 2)`) or "function"
(`torch.narrow(a0, 0, 1, 2)`), where the recipe records that spelling (Note [Spellings] in
pyfy_fuzz/schema/vocabulary.py) -- without the tag, `torch.ops.aten.narrow.default(a0, 0, 1,
2)`. The tag is last, after an "item", and names no value: dead-code analysis, shrinking and
the pattern recognisers read the refs and the overload name (args[0]) as before. A spec so
holds its whole call and renders without the table (a corpus entry replays on a torch whose
table differs).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import event

from pyfy_fuzz.schema.spec import DTYPES
from pyfy_fuzz.schema.vocabulary import Recipe, VocabOp, shape_key

from ._build import Builder
from ._model import FLOATS, Geometry, Val, overlap
from ._spec import ProgramSpec, Stmt
from ._stmts import bind, fresh, mutable, tensors
from ._vocabulary import by_class, by_name

__all__ = ["ATEN_CLASSES", "pure_aten", "rounds", "stmt_aten"]

# The classes stmt_aten draws, each repeated by its odds; index 0 is where shrinking ends.
ATEN_CLASSES = (
    ("functional",) * 2
    + ("view",) * 3
    + ("inplace",) * 3
    + (
        "view_inverse",
        "view_inverse",
        "inplace_view",
    )
)


def _eligible(v: Val) -> bool:
    return (
        v.subclass is None
        and not v.overlapping  # the recipes ran on selves with a storage of their own size
        and v.dtype in DTYPES
        and v.ndim <= 3
        and all(1 <= n <= 4 for n in v.shape)
    )


def _contiguous(v: Val) -> bool:
    return v.geom is not None and v.geom.is_contiguous()


def _fits(r: Recipe, v: Val, cls: str, grad_on: bool) -> bool:
    """Whether torch ran recipe `r` with a self like v (shape, dtype, layout) and eager
    would accept it here."""
    if shape_key(v.shape) not in r.outs or r.dtypes.get(v.dtype) not in DTYPES:
        return False
    if not _contiguous(v) and not r.strided:
        return False
    rg = v.requires_grad and grad_on
    if cls == "inplace":
        return r.dtypes[v.dtype] == v.dtype and (r.differentiable or not rg)
    if rg and v.dtype in FLOATS and not r.differentiable and cls != "view":
        return False  # a result that needs a gradient torch has no formula for
    return True


def _candidates(cls: str, v: Val, grad_on: bool) -> list[tuple[VocabOp, Recipe]]:
    return [
        (op, r)
        for op in by_class().get(cls, ())
        if not (_absolute(op) and (v.geom is None or v.geom.offset != 0))
        for r in op.recipes
        if _fits(r, v, cls, grad_on)
    ]


def _absolute(op: VocabOp) -> bool:
    """A view whose storage offset is absolute in self's storage (as_strided, as_strided_):
    the recipes ran on selves at offset 0, where relative and absolute agree, so such an op
    acts only on a self at offset 0 (a self at offset 3 got eager's offset 0, the model's 3)."""
    return op.cls in ("view", "inplace_view") and op.name.split(".")[1].startswith("as_strided")


def _operand(b: Builder, v: Val, cls: str) -> Any:
    """A tensor like self: a program value of its shape and dtype (1 in 2), else a constant."""
    others = tensors(
        b,
        lambda w: (
            w.shape == v.shape
            and w.dtype == v.dtype
            and w.subclass is None
            # not self's memory, for an in-place op: index_add_ and its kin refuse self as
            # their source ("refer to a single memory location"), add_ would take it
            and (cls != "inplace" or not overlap(w, v))
        ),
    )
    if others and b.chance(2):
        return b.pick(others).name
    return ("t", v.dtype, v.shape)


def _args(b: Builder, op: VocabOp, r: Recipe, v: Val) -> tuple[Any, ...]:
    args: list[Any] = [op.name]
    for enc in r.args:
        if enc == "self":
            args.append(v.name)
        elif enc == ("like",):
            args.append(_operand(b, v, op.cls))
        else:
            args.append(enc)
    args += [("kw", k, ("t", v.dtype, v.shape) if enc == ("like",) else enc) for k, enc in r.kwargs]
    if r.item is not None:
        args.append(("item", r.item))
    spelling = b.pick(("aten", *r.spellings))  # index 0, the aten call, is where it shrinks
    event(f"aten spelling: {spelling}")
    if spelling != "aten":
        args.append(("spelling", spelling))
    return tuple(args)


def _operands(b: Builder, args: tuple[Any, ...]) -> list[Val]:
    return [b.vals[a] for a in args[1:] if isinstance(a, str) and a in b.vals]


def _geometry(v: Val, meta: tuple[Any, ...]) -> tuple[tuple[int, ...], Geometry | None, bool]:
    """A view's (or a metadata change's) shape, geometry in v's storage and self-overlap, from
    what torch did on a contiguous self at offset 0 (unknown geometry elsewhere)."""
    shape, stride, offset, overlapping = meta
    shape = tuple(shape)
    if not _contiguous(v):
        return shape, None, bool(overlapping)
    assert v.geom is not None
    return shape, Geometry(shape, tuple(stride), v.geom.offset + int(offset)), bool(overlapping)


def _view(b: Builder, op: VocabOp, r: Recipe, v: Val, args: tuple[Any, ...]) -> None:
    shape, geom, overlapping = _geometry(v, r.outs[shape_key(v.shape)])
    val = b.view_val(v, "aten", (), geom, shape)
    val = replace(val, name=b.fresh_name(), overlapping=val.overlapping or overlapping)
    if not r.differentiable and v.requires_grad:  # detach-like: a view autograd cuts
        val = replace(val, requires_grad=False, is_leaf=True, no_grad_view=True)
    bind(b, val, Stmt("aten", args, (val.name,)))


def _fresh(b: Builder, op: VocabOp, r: Recipe, v: Val, args: tuple[Any, ...]) -> None:
    meta = r.outs[shape_key(v.shape)]
    shape = tuple(meta[0]) if meta else v.shape
    dtype = r.dtypes[v.dtype]
    operands = _operands(b, args)
    rg = r.differentiable and any(w.requires_grad for w in operands)
    out = fresh(b, v, shape, dtype, rg)
    if out.geom is not None and meta:
        out = replace(out, geom=None)  # a reduction, a reshape, qr's Q: torch's strides
    if b.grad_on and rg:  # what its backward saves is unknown: nothing of it is written after
        b.saved_families.update(w.family for w in operands)
        b.saved_families.add(out.family)
    bind(b, out, Stmt("aten", args, (out.name,)))


def _inplace(b: Builder, op: VocabOp, r: Recipe, v: Val, args: tuple[Any, ...]) -> None:
    operands = [w for w in _operands(b, args) if w.name != v.name]
    if b.grad_on and any(w.requires_grad for w in operands) and v.is_float:
        for name, w in list(b.vals.items()):
            if w.family == v.family and not w.param:
                b.vals[name] = replace(w, requires_grad=True, is_leaf=False)
    if b.grad_on and (v.requires_grad or any(w.requires_grad for w in operands)):
        b.saved_families.add(v.family)
        b.saved_families.update(w.family for w in operands)
    b.body.append(Stmt("aten", args, ()))
    if v.input_index is not None or any(
        v.storage == w.storage for w in b.vals.values() if w.input_index is not None
    ):
        event("mutation: of an input's memory")


def _inplace_view(b: Builder, op: VocabOp, r: Recipe, v: Val, args: tuple[Any, ...]) -> None:
    shape, geom, overlapping = _geometry(v, r.outs[shape_key(v.shape)])
    b.vals[v.name] = replace(v, shape=shape, geom=geom, overlapping=v.overlapping or overlapping)
    b.body.append(Stmt("aten", args, ()))


def _legal(b: Builder, cls: str, v: Val) -> bool:
    """Eager's rules for the class on v, beyond what the recipe was seen to do."""
    if cls == "inplace":
        return mutable(b, v, b.grad_on)
    if cls == "inplace_view":  # an intermediate that is not a view (inputs: stmt_metadata)
        return (
            v.input_index is None
            and not v.param
            and not v.is_view
            and not (v.requires_grad and v.is_leaf)
            and v.name not in b.dup_names
            and _contiguous(v)
        )
    return True


_APPLY = {
    "view": _view,
    "functional": _fresh,
    "view_inverse": _fresh,
    "inplace": _inplace,
    "inplace_view": _inplace_view,
}


def stmt_aten(b: Builder) -> bool:
    """One call of an aten op from torch's vocabulary on a value of the program; False where
    no op of the drawn class fits any value."""
    cls = b.pick(ATEN_CLASSES)
    if b.inference_on and cls in ("view", "inplace_view"):
        return False  # no view under inference_mode (Note [The context axis])
    values = [v for v in tensors(b, _eligible) if _legal(b, cls, v)]
    fitting = [(v, opts) for v in values if (opts := _candidates(cls, v, b.grad_on))]
    if not fitting:
        return False
    v, options = b.pick(fitting)
    op, recipe = b.pick(options)
    args = _args(b, op, recipe, v)
    _APPLY[cls](b, op, recipe, v, args)
    event(f"aten: {cls}")
    return True


def rounds(spec: ProgramSpec) -> bool:
    """The program calls an op of the vocabulary whose values may round otherwise once
    decomposed (VocabOp.rounding), or one the installed torch's table does not know: its
    values are compared at the dtype's tolerance, even under aot_eager (by design:
    decomposition-rounding)."""
    names = {str(s.args[0]) for s in spec.body if s.op == "aten"}
    if not names:
        return False
    known = by_name()
    return any(name not in known or known[name].rounding for name in names)


def aten_class(stmt: Stmt) -> str | None:
    """The vocabulary class of an aten statement's op (Note [Op classes]), or None for
    another statement or an op the installed table does not know."""
    if stmt.op != "aten":
        return None
    op = by_name().get(str(stmt.args[0]))
    return None if op is None else op.cls


def pure_aten(stmt: Stmt) -> bool:
    """An aten statement torch.compile may drop when nothing uses its result: an op of the
    vocabulary's functional, view or view-inverse class (no write, no side effect), as the
    runner's dead-code excuse counts the hand-written pure ops (the issue-36 triage's a17: a
    dead slice_scatter eager rejects). An op the installed table does not know is not."""
    return aten_class(stmt) in ("functional", "view", "view_inverse")
