"""The wrapper families: each declared once, beside the builder that draws its programs.

A family is one `@family(...)` declaration on its builder (_family.py): its name and profile
(how it biases the builder), the wrapper paths that mean its target was reached, and what it
generates (its `<name>_programs` docstring). `FAMILIES`, `PROFILES` and `FAMILY_TARGETS` are
read off the declarations, in the order they are made here: `programs()` draws a family by its
place in `FAMILIES`, so a new family goes last (and gets a factory in _public.py).

Each family builds the structure its wrapper needs first (forced statements), then draws a
few random statements, outputs and a call plan (`_strategy.build`). Forced structure comes
first so that shrinking deletes the random tail and keeps what makes the wrapper fire.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from hypothesis import event

from ._build import DTYPE_PARTNER, Builder, Profile
from ._family import DECLARATIONS, family, weights
from ._model import Geometry, Val, contiguous_strides, numel, overlap
from ._spec import ModuleSpec, OutSpec, Stmt
from ._stmts import (
    bind,
    fresh,
    mutable,
    note_saved,
    stmt_detach,
    stmt_grad_mode,
    stmt_inplace,
    stmt_metadata,
    stmt_unary,
    stmt_view,
    tensors,
)
from ._stmts_extra import TOKEN_EFFECTS, stmt_effect, stmt_function, stmt_hook, stmt_rng

__all__ = ["DECLARATIONS", "FAMILIES", "FAMILY_TARGETS", "PROFILES", "reached"]


# ------------------------------------------------------------------ inputs per family


def _plain_inputs(b: Builder, lo: int = 1) -> None:
    for _ in range(b.integer(lo, b.profile.max_inputs)):
        b.input_root(b.add_root())
    if b.profile.frontend == "dynamo" and b.profile.mode is None and b.chance(8):
        b.input_scalar()


def _mutable_root(
    b: Builder,
    ndim_min: int = 0,
    nonempty: bool = False,
    grad: str | None = None,
    dtype: str | None = None,
) -> Val:
    """A root whose memory may be written in place: no leaf requiring grad, no expand."""
    layouts = ["contiguous", "offset"] + (["strided"] if ndim_min else [])
    layout = "contiguous" if not b.chance(3) else b.pick(layouts)
    grad = grad or b.pick(("none", "nonleaf"))
    return b.add_root(ndim_min=ndim_min, grad=grad, layout=layout, nonempty=nonempty, dtype=dtype)


def _forced_mutation(b: Builder, target: Val, ctx: str | None = "draw") -> None:
    if not stmt_inplace(b, target=target, ctx=ctx):
        stmt_inplace(b, target=target, ctx="no_grad")


# ------------------------------------------------------------------ family builders


@family(
    Profile("dedupe", weights(), frontend="aot"),
    targets=("dedupe/",),
    doc="The same tensor passed twice and mutated in place, through the AOT front-end "
    "(Dynamo dedupes repeated arguments itself): AOTDedupeWrapper.",
)
def _dedupe(b: Builder) -> None:
    root = _mutable_root(b)
    first = b.input_root(root)
    # Another argument between the two copies (x, y, x) or after them (x, x, y): the kept
    # args' positions then differ from their order, which a wrong keep mask would get wrong.
    other = b.pick(("none", "between", "after")) if b.chance(2) else "none"
    if other == "between":
        b.input_root(b.add_root())
    dup = b.input_dup(first)
    if other == "after":
        b.input_root(b.add_root())
    event(f"dedupe: other argument {other}")
    event("aim: dedupe/duplicate_args")
    _forced_mutation(b, b.vals[dup.name] if b.chance(2) else b.vals[first.name])
    _denser_duplicates(b, root, first)


def _denser_duplicates(b: Builder, root: Val, first: Val) -> None:
    """Issue 28's denser shapes, drawn last (a draw before the pair moved where shrinking
    ends): the tensor a third time, a second duplicated pair (written too: a write-back to
    the wrong argument shows as a wrong value), or views of another argument beside the pair;
    and Dynamo instead of AOT as the front-end (1 in 3), which dedupes arguments itself."""
    dense = b.pick(("thrice", "two pairs", "pair+views")) if b.chance(2) else "pair"
    event(f"dedupe: {dense}")
    if dense == "thrice":
        b.input_dup(first)
    elif dense == "two pairs":
        twin = b.input_root(b.add_twin(b.root_vals.index(root)))
        b.input_dup(twin)
        _forced_mutation(b, b.vals[twin.name])
    elif dense == "pair+views":
        root = b.add_root(ndim_min=1, nonempty=True)
        b.input_root(root)
        view = b.input_view(root)
        _return_new(b, partial(stmt_unary, b, target=b.vals[view.name]))
    if b.chance(3):
        b.profile = replace(b.profile, frontend="dynamo")
        event("dedupe: through Dynamo")


@family(
    Profile("synthetic_base", weights()),
    targets=("synthetic_base/",),
    doc="Mutually aliased arguments (base and view, two views, set_-shared storage; 1-D or n-D; "
    "overlapping or disjoint), one of them mutated: AOTSyntheticBaseWrapper.",
)
def _synthetic_base(b: Builder) -> None:
    # AOT refuses, by design ("does not yet handle non-differentiable view input
    # mutations"), aliases with mixed ._base states (a view with a set_-shared tensor) and,
    # when training, aliases that are not differentiable views of each other (set_-shared
    # tensors of a root that requires grad). Those shapes would only hit the same refusal.
    shape = b.pick(("base+view", "two views", "two set_", "base+set_"))
    shared = shape.endswith("set_")
    root = _mutable_root(b, ndim_min=1, nonempty=True, grad="none" if shared else None)
    event(f"aliasing: {shape}")
    parts = shape.split("+") if "+" in shape else [shape[4:]] * 2
    aliased = [_alias(b, root, part) for part in parts]
    if b.chance(3):
        b.input_root(b.add_root(grad="none" if shared else None))
    a, c = aliased
    overlapping = overlap(a, c)
    event("aliasing: overlapping" if overlapping else "aliasing: disjoint")
    if not overlapping and not b.chance(4) and not shape.startswith("base"):
        # AOT needs no synthetic base for disjoint aliases; mostly, pass the base as well.
        aliased.append(b.input_root(root))
    event("aim: synthetic_base/" + ("nd" if max(a.ndim, c.ndim) > 1 else "1d"))
    _mutate_one_read_the_others(b, aliased)


def _mutate_one_read_the_others(b: Builder, aliased: list[Val]) -> None:
    """One alias that touches another written in place (sometimes its metadata first), every
    other read: Dynamo drops arguments the graph never reads."""
    touching = [v for v in aliased if any(w is not v and overlap(v, w) for w in aliased)]
    writable = [v for v in touching if mutable(b, v, grad_on=False)]
    target = b.vals[b.pick(writable or touching or aliased).name]
    if b.chance(5) and stmt_metadata(b, target=target):
        event("aim: synthetic_base/metadata_mutation")
        target = b.vals[target.name]
    # Not under inference_mode: with aliased arguments in training that hits one torch crash
    # ("outs_to_grad length != tangents length", see the issue note) in most examples.
    _forced_mutation(b, target, ctx="no_grad" if b.chance(2) else None)
    # Dynamo drops arguments the graph never reads: read every other alias.
    for other in aliased:
        if other.name != target.name:
            _return_new(b, partial(stmt_unary, b, target=b.vals[other.name]))


def _alias(b: Builder, root: Val, part: str) -> Val:
    """One aliased argument of root: the root itself, a set_-shared tensor, or views of it."""
    made = None
    if part == "base":
        made = b.input_root(root)
    elif part == "set_":
        made = b.input_set_shared(root)
    return made or b.input_view(root)


def _windows(b: Builder) -> tuple[Val, list[Val]]:
    """Two n-D windows of one storage with equal strides (rows padded or not), the second
    shifted along one dimension by fewer steps than the window is long there: a partial
    overlap, row-shifted (dim 0) or column-shifted (the last)."""
    rank = b.integer(2, 3)
    size = tuple(b.integer(2, 3) for _ in range(rank))
    pad = b.integer(0, 1)
    stride = [1]
    for n in reversed(size[1:]):
        stride.insert(0, stride[0] * n + pad)
    d = b.integer(0, rank - 1)
    shift = b.integer(1, size[d] - 1) * stride[d]
    extent = sum((n - 1) * st for n, st in zip(size, stride, strict=True)) + 1
    root = b.add_root(
        shape=(extent + shift,), grad=b.pick(("none", "nonleaf")), layout="contiguous"
    )
    event("aim: inputs/nd_windows")
    event(f"aliasing: windows shifted along dim {d} of {rank}")
    first = b.input_window(root, size, tuple(stride), 0)
    return root, [first, b.input_window(root, size, tuple(stride), shift)]


@family(
    Profile("input_mutation", weights(inplace=6, metadata=2, grad_mode=1, identity=2, data=1)),
    targets=("runtime/input_mutation/",),
    doc="Data and metadata mutation of arguments, under no_grad/inference_mode, and grad-mode "
    "changes inside the function: RuntimeWrapper's mutation epilogue.",
)
def _input_mutation(b: Builder) -> None:
    _plain_inputs(b)
    ins = tensors(b, lambda v: v.input_index is not None)
    writable = [v for v in ins if mutable(b, v, grad_on=False)]  # no_grad is the fallback
    if not writable:  # e.g. only expanded roots: add one that can be written
        writable = [b.input_root(_mutable_root(b))]
    target = b.pick(writable)
    # "metadata break": Dynamo breaks the graph at it (stmt_metadata), where "metadata" moves
    # the program to AOT; it took a second "data"'s place, keeping the pick's range (a new
    # draw moved where shrinking ends, tests/generators/test_shrinking.py), after "metadata"
    # (where shrinking a metadata mutation should end).
    kinds = ("data", "metadata", "metadata break", "grad_mode", "nonleaf view")
    kind = b.pick((*kinds, "dtype alias", "windows"))
    if kind in ("dtype alias", "windows"):  # issue 17's aliased arguments, one written
        if kind == "windows":
            _, aliased = _windows(b)
        else:  # pytorch#194747: one storage read as two dtypes
            dtype = b.pick(tuple(DTYPE_PARTNER))
            root = _mutable_root(b, ndim_min=1, nonempty=True, grad="none", dtype=dtype)
            aliased = [b.input_root(root), b.input_view(root, as_dtype=True)]
        _mutate_one_read_the_others(b, aliased)
        return
    if kind == "nonleaf view":  # a view of a non-leaf written where autograd does not record
        root = b.add_root(ndim_min=1, nonempty=True, dtype="float32", grad="nonleaf")
        view = b.input_view(root)
        ctx = b.pick(("no_grad", "inference_mode"))
        event(f"aim: inputs/nonleaf_view_written/{ctx}")
        if stmt_inplace(b, target=view, ctx=ctx):
            _return_new(b, lambda: stmt_unary(b, target=b.vals[view.name]), limit=1)
            return
        kind = "data"
    event(f"aim: {'graph/break' if kind == 'metadata break' else f'runtime/input_mutation/{kind}'}")
    if kind.startswith("metadata") and stmt_metadata(b, target, kind == "metadata break"):
        return
    if kind == "grad_mode":
        stmt_grad_mode(b)
    _forced_mutation(b, target)


@family(
    Profile("output_aliasing", weights(view=8, identity=2)),
    targets=("runtime/output/",),
    doc="Outputs that are an input, views of inputs or of intermediates, or one tensor twice: "
    "RuntimeWrapper's output alias regeneration.",
)
def _output_aliasing(b: Builder) -> None:
    _plain_inputs(b)
    kinds = (
        "input",
        "base too",
        "input view",
        "intermediate view",
        "twice",
        "views of one base",
        "offset view after a write",
    )
    kind = b.pick(kinds)
    event(f"aim: output alias: {kind}")
    ins = tensors(b, lambda v: v.input_index is not None)
    if not ins:
        return
    if kind == "base too":  # AOTAutograd tells this alias apart only when it requires grad
        ins = [v for v in ins if v.requires_grad] or ins
    x = b.pick(ins)
    if kind == "offset view after a write" and _offset_view_after_write(b, x):
        return
    if kind == "input":
        # Dynamo hands back an unmutated input itself; only a mutated one reaches AOT.
        if stmt_inplace(b, target=x) or stmt_inplace(b, target=x, ctx="no_grad"):
            b.outputs.append(OutSpec("ref", ref=x.name))
            return
        kind = "input view"
    src = x
    if kind in ("intermediate view", "views of one base", "base too"):
        new = _new_values(b, lambda: stmt_unary(b))
        src = b.vals[new[-1]] if new else x
        if kind == "base too" and new:  # the view's base is itself an output
            b.outputs.append(OutSpec("ref", ref=src.name))
    made: list[str] = []
    for _ in range(2 if kind == "views of one base" else 1):
        made += _new_values(b, lambda: _view_of(b, src))
    refs = made or [x.name]
    if kind == "twice":
        refs = [refs[-1], refs[-1]]
    b.outputs += [OutSpec("ref", ref=r) for r in refs]
    if kind == "views of one base" and made and src is not x and b.chance(3):
        # and the base's detach(), a non-differentiable alias of the same storage (PR #195357)
        if stmt_detach(b, target=b.vals[src.name]):
            b.outputs.append(OutSpec("ref", ref=b.body[-1].outs[0]))


def _offset_view_after_write(b: Builder, x: Val) -> bool:
    """x (or a view of it: a sibling of the output) written in place, then x[1:] along a
    dimension returned: a view with a storage offset, regenerated from a mutated base."""
    dims = [d for d, n in enumerate(x.shape) if n >= 2]
    if not dims:
        return False
    target = x
    if b.chance(2):  # the sibling: a view of x written, the output another view of x
        made = _new_values(b, lambda: _view_of(b, x))
        target = b.vals[made[-1]] if made else x
    sibling = target is not x
    if not (stmt_inplace(b, target=target) or stmt_inplace(b, target=target, ctx="no_grad")):
        return False
    x = b.vals[x.name]
    step, val = b.offset_slice(x, b.pick(dims))
    val = replace(val, name=b.fresh_name())
    bind(b, val, Stmt("view", (x.name, step.op, *step.args), (val.name,)))
    b.outputs.append(OutSpec("ref", ref=val.name))
    event("aim: inputs/offset_view_after_write")
    event("output alias: offset view after " + ("a sibling's write" if sibling else "a write"))
    return True


def _new_values(b: Builder, make: Callable[[], object]) -> list[str]:
    """Run one statement-drawing call; the names of the values it bound."""
    before = set(b.vals)
    make()
    return [n for n in b.vals if n not in before]


def _return_new(b: Builder, make: Callable[[], object], limit: int | None = None) -> None:
    """Run `make` and return (as outputs) the values it bound, the first `limit` of them."""
    b.outputs += [OutSpec("ref", ref=n) for n in _new_values(b, make)[:limit]]


def _view_of(b: Builder, v: Val) -> None:
    """A view statement on v (a few tries: some drawn views are illegal on v)."""
    for _ in range(3):
        if stmt_view(b, target=v):
            return


@family(
    Profile("subclass", {"unary": 6, "binary": 4, "view": 3, "inplace": 2}, float_only=True),
    targets=("subclass/",),
    doc="TwoTensor, TwoTensor of TwoTensors and MirrorTensor (a one-tensor traceable wrapper "
    "subclass) arguments: "
    "AOTDispatchSubclassWrapper.",
)
def _subclass(b: Builder) -> None:
    kind = b.pick(("two_tensor", "mirror", "nested_two_tensor"))
    event(f"aim: subclass/{kind}")
    grad = b.pick(("none", "leaf"))
    root = b.add_root(subclass=kind, grad=grad, layout="contiguous")
    x = b.input_root(root)
    if b.chance(3):  # a view of the subclass argument beside it, one of the two mutated
        event("aim: subclass/aliased")
        view = b.input_view(root)
        target = b.pick([v for v in (x, view) if mutable(b, v, grad_on=False)] or [view])
        stmt_inplace(b, target=target, ctx="no_grad" if target.requires_grad else None)
    elif b.chance(2):
        b.input_root(b.add_root(grad="none", layout="contiguous"))
    _return_new(b, lambda: stmt_unary(b, target=x))  # the subclass must reach the graph


def _with_result(b: Builder) -> None:
    """One statement whose value is returned, so the graph is not empty."""
    _return_new(b, lambda: stmt_unary(b))


@family(
    Profile("effects", weights(effect=3)),
    targets=("tokens/",),
    doc="aten._print, the print higher-order op and an ORDERED effectful custom op: "
    "EffectTokensWrapper.",
)
def _effects(b: Builder) -> None:
    _plain_inputs(b)
    stmt_effect(b, TOKEN_EFFECTS)  # the aim; the random tail draws the graph-breaking ones too
    _with_result(b)
    event("aim: tokens/forward")


@family(
    Profile("rng", weights(rng=3), float_only=True),
    targets=("rng/",),  # CUDA only; on CPU the family is judged by eager parity instead
    doc="rand_like, randn_like, dropout, bernoulli under a fixed seed "
    "(FunctionalizedRngRuntimeWrapper on CUDA; eager parity on CPU).",
)
def _rng(b: Builder) -> None:
    _plain_inputs(b)
    stmt_rng(b)


@family(
    Profile("autograd_function", weights(function=3, hook=2), float_only=True),
    targets=("autograd/",),
    doc="Custom autograd.Functions (ctx and setup_context styles; save_for_backward, "
    "mark_dirty, mark_non_differentiable, set_materialize_grads, once_differentiable, view "
    "outputs, an effect in backward) and tensor hooks: AOTDispatchAutograd.",
)
def _autograd_function(b: Builder) -> None:
    root = b.add_root(grad=b.pick(("leaf", "nonleaf")), dtype="float32")
    b.input_root(root)
    if b.chance(2):
        b.input_root(b.add_root())
    if b.chance(3):
        stmt_hook(b)
    if b.chance(3):
        stmt_unary(b)
    _return_new(b, lambda: stmt_function(b), limit=1)
    event("aim: autograd/custom_function")


@family(
    Profile("module", weights(batchnorm=3, data=2), float_only=True),
    targets=("module/",),
    doc="nn.Modules with parameters, buffers, tied parameters and BatchNorm running stats.",
)
def _module(b: Builder) -> None:
    x = b.add_root(ndim_min=1, dtype="float32", grad=b.pick(("none", "leaf")), layout="contiguous")
    b.input_root(x)
    if b.chance(3):
        b.input_root(b.add_root(dtype="float32"))
    shape = x.shape
    params = [shape[-1:]] if b.chance(2) else [shape]
    if b.chance(2):
        params.append(shape)
    tied = b.chance(4)
    buffers = [shape] if b.chance(3) else []
    bn = (
        shape[1]
        if len(shape) in (2, 3)
        and shape[0] * (shape[2] if len(shape) == 3 else 1) > 1
        and shape[1] > 0
        and b.chance(2)
        else None
    )
    b.module = ModuleSpec(
        params=tuple(tuple(p) for p in params),
        tied=tied,
        buffers=tuple(tuple(s) for s in buffers),
        batchnorm=bn,
        full_backward_hook=b.chance(10),
    )
    names = [f"p{i}" for i in range(len(params))] + ([f"p{len(params)}"] if tied else [])
    for i, shape_i in enumerate(params):
        b.vals[f"p{i}"] = _param_val(b, f"p{i}", tuple(shape_i), param=True)
    for i, s in enumerate(buffers):
        b.vals[f"b{i}"] = _param_val(b, f"b{i}", tuple(s), param=False)
    if tied:
        first = b.vals["p0"]
        b.vals[names[-1]] = replace(first, name=names[-1])
    # A statement that reads a parameter, so autograd sees it.
    p = b.vals["p0"]
    out = fresh(b, x, shape, "float32", True)
    op = b.pick(("mul", "add"))
    note_saved(b, op, [b.vals["a0"], p], out)
    bind(b, out, Stmt(op, ("a0", p.name), (out.name,)))
    event("aim: module/parameters")
    if buffers and b.chance(2):
        stmt_inplace(b, target=b.vals["b0"], ctx="no_grad")
        event("module: buffer mutated")


def _param_val(b: Builder, name: str, shape: tuple[int, ...], param: bool) -> Val:
    return Val(
        name=name,
        dtype="float32",
        geom=Geometry(shape, contiguous_strides(shape), 0),
        shape=shape,
        storage=b.new_id(),
        storage_numel=numel(shape),
        family=b.new_id(),
        requires_grad=param,
        is_leaf=True,
        param=param,
    )


@family(
    Profile("cudagraph", weights(), mode="reduce-overhead", min_calls=2),
    targets=("cudagraph/",),
    doc="Programs compiled with mode='reduce-overhead' and called several times: CUDA-graph "
    "capture and replay (emulated on CPU).",
)
def _cudagraph(b: Builder) -> None:
    """What a replay must get right beyond copying plain inputs into static buffers: an
    nn.Module's parameters and buffers, which are static inputs used in place (an optimiser
    step between calls must be seen by the next replay), and random numbers drawn inside the
    graph (a replay must draw new ones, as eager does). New shapes between calls (the plan's
    variant, under dynamic=True) re-record a graph."""
    shape = b.pick(("plain", "module", "rng"))
    event(f"cudagraph: {shape}")
    if shape == "module":
        _module(b)
        event("aim: cudagraph/static_inputs")
    else:
        _plain_inputs(b)
        if shape == "rng":
            stmt_rng(b)
        _with_result(b)
    event("aim: cudagraph/replay")


@family(
    Profile("later_aliasing", weights()),
    targets=("plan/aliased_later/",),
    doc="Arguments distinct in call 0 that a later call aliases (one tensor twice, two views of "
    "one storage, a partial overlap), or aliased ones it overlaps otherwise, one written and "
    "another read: the guards, and every wrapper's aliasing assumptions.",
)
def _later_aliasing(b: Builder) -> None:
    """Arguments kept apart in call 0 that a later call aliases (the same tensor twice, two
    views of one storage, a partial overlap), or views of one root that a later call
    overlaps otherwise, with one written in place and another read: a graph compiled for
    call 0's aliasing reads a stale value or writes back to the wrong argument where the
    later call's differs. Most upstream wrapper bugs take this shape (issue 28). The later
    call is the family's, not drawn (`Builder.later`); the program may stay on Dynamo or
    go through AOT, and several arguments of one shape may be written (a write-back to the
    wrong one shows as a wrong value)."""
    shape = b.pick(("twins", "three", "views"))
    if b.chance(3):
        b.profile = replace(b.profile, frontend="aot")
    root = _mutable_root(b, ndim_min=1, nonempty=True)
    if shape == "views":  # aliased in call 0; later, another overlap
        args = [b.input_root(root), b.input_view(root)]
        relation = "shift"
    else:
        index = b.root_vals.index(root)
        args = [b.input_root(root)] + [
            b.input_root(b.add_twin(index)) for _ in range(2 if shape == "three" else 1)
        ]
        # overlap takes arguments needing no grad, of two elements at least (to_overlapping)
        apart = root.requires_grad or numel(root.shape) < 2
        relation = b.pick(("aliasing", "share") if apart else ("aliasing", "share", "overlap"))
    event(f"later aliasing: {shape}, then {relation}")
    # Read before the write orders wrong differently; not for views of one root, whose
    # write would then change what the read saved for backward.
    read_first = shape != "views" and b.chance(3)
    readers = args[1:] if shape != "three" else args[2:]
    if read_first:
        for other in readers:
            _return_new(b, partial(stmt_unary, b, target=b.vals[other.name]))
    for target in args[:1] if shape != "three" else args[:2]:
        _forced_mutation(b, b.vals[target.name], ctx=None if b.chance(2) else "draw")
    if not read_first:
        for other in readers:
            _return_new(b, partial(stmt_unary, b, target=b.vals[other.name]))
    b.later = relation
    event("aim: plan/aliased_later/mutate_read")


# ------------------------------------------------------------------ read off the declarations

FAMILIES = tuple(DECLARATIONS)
PROFILES: dict[str, Profile] = {name: f.profile for name, f in DECLARATIONS.items()}
# Family -> the path prefixes any one of which means "target reached".
FAMILY_TARGETS: dict[str, tuple[str, ...]] = {name: f.targets for name, f in DECLARATIONS.items()}


def reached(paths: list[str], family: str) -> bool:
    """Whether `paths` include the target of generator `family`."""
    try:
        prefixes = FAMILY_TARGETS[family]
    except KeyError:
        known = sorted(FAMILY_TARGETS)
        raise ValueError(f"unknown family {family!r}; expected one of {known}") from None
    return any(p.startswith(prefixes) for p in paths)
