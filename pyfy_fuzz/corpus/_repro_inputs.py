"""make_inputs() of a repro.py: the program's arguments in plain code (torch-free).

Note [Same values]
~~~~~~~~~~~~~~~~~~
generators' `_root` draws each root's storage from one CPU generator seeded with the call's
seed, root after root, then moves it, adds autograd and the layout's view. Writing the same
draws in the same order (`torch.randn(storage_shape, generator=g)`, `.to(dtype)` after the
draw) gives the very values the campaign ran with, so value-dependent bugs reproduce. A root no
argument uses is still drawn while a later root needs the generator's state after it. The
layout's view is detached (no `_base`) exactly where `_root` detaches it.
"""

from __future__ import annotations

import math

from generators.source import (
    DTYPE_BY_NAME,
    RELATE_FUNCTIONS,
    RELATE_TOKENS,
    aliasing_variant,
    ints_literal,
    view_expr,
)
from pyfy_fuzz.schema.spec import FLOAT_DTYPES, ProgramSpec, RootSpec, variant_tokens


def inputs_source(spec: ProgramSpec, device: str, name: str, variant: str | None) -> list[str]:
    """`def <name>(seed=0)`: the roots drawn in the campaign's order, then the arguments made
    from them with their aliasing written out (views, one tensor twice, set_ sharing); with
    `variant`, the variant call's inputs (other shape, dtype, or aliasing)."""
    names: dict[int, str] = {}  # root -> the variable holding it
    for i, inp in enumerate(spec.inputs):
        if inp.kind == "root" and inp.root not in names:
            names[inp.root] = f"a{i}"
    lines = ["g = torch.Generator().manual_seed(seed)"]
    used = {inp.root for inp in spec.inputs if inp.kind in ("root", "view", "set_shared")}
    for k, r in enumerate(spec.roots):
        if k in used:
            names.setdefault(k, f"r{k}")
            lines += _root_lines(r, names[k], device, _root_variant(k, variant))
        elif any(j > k for j in used):  # not an argument, but later roots draw after it
            draw = _draw(r, _root_variant(k, variant))
            lines.append(f"{draw}  # not an argument: keeps the later values")
    for i, inp in enumerate(spec.inputs):
        if inp.kind == "root" and names[inp.root] != f"a{i}":
            lines.append(f"a{i} = {names[inp.root]}  # the same tensor")
        elif inp.kind == "view":
            expr = names[inp.root]
            for step in inp.views:
                expr = view_expr(expr, step.op, step.args)
            lines.append(f"a{i} = {expr}")
        elif inp.kind == "dup":
            lines.append(f"a{i} = a{inp.of}  # the same tensor again")
        elif inp.kind == "set_shared":
            lines.append(f"a{i} = {_set_shared(names[inp.root], inp.views[0].args, device)}")
        elif inp.scalar:
            lines.append(f"a{i} = {inp.value!r}")
    tokens = variant_tokens(variant)
    if "aliasing" in tokens:
        lines += _unaliased(spec)
    args = ", ".join(f"a{i}" for i in range(len(spec.inputs)))
    ret = f"return {args}," if len(spec.inputs) == 1 else f"return {args}" if args else "return ()"
    changes = [RELATE_FUNCTIONS[t].__name__ for t in RELATE_TOKENS if t in tokens]
    if changes:  # the program's own relate() functions, defined below, in relate()'s order
        expr = f"({args}{',' if len(spec.inputs) == 1 else ''})"
        for name_ in changes:
            expr = f"{name_}({expr})"
        ret = f"return {expr}"
    what = f"  # {variant} unlike make_inputs" if variant else "  # the values pyfy-fuzz drew"
    return [f"def {name}(seed=0):{what}", *(f"    {x}" for x in lines), f"    {ret}"]


def _set_shared(root: str, args: tuple[object, ...], device: str) -> str:
    """A tensor set_ onto the root's storage: shares its memory, has no _base."""
    size, stride, offset = args
    on = "" if device == "cpu" else f", device={root}.device"
    return (
        f"torch.empty(0, dtype={root}.dtype{on})"
        f".set_({root}.untyped_storage(), {offset}, {ints_literal(size)}, {ints_literal(stride)})"
    )


def _root_variant(k: int, variant: str | None) -> str | None:
    """The variant root k is drawn with (generators' `_root_expr`): "relation" grows the first
    root only."""
    if k == 0:
        return variant
    return "+".join(t for t in variant_tokens(variant) if t != "relation") or None


def _variant_of(r: RootSpec, variant: str | None) -> tuple[tuple[int, ...], str]:
    """A root's shape and dtype, in the variant call (generators' `_root`)."""
    shape, dtype = tuple(r.shape), r.dtype
    tokens = variant_tokens(variant)
    if "shape" in tokens or "relation" in tokens:
        shape = tuple(n + 1 for n in shape)
    if "dtype" in tokens and dtype in ("float32", "float64", "float16", "bfloat16"):
        dtype = "float64" if dtype == "float32" else "float32"
    return shape, dtype


def _storage_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """The shape of the storage a root is a view of (generators' `_root`)."""
    if layout == "transposed":
        return shape[:-2] + (shape[-1], shape[-2])
    if layout == "strided":
        return shape[:-1] + (2 * shape[-1],)
    if layout == "expanded":
        return (1,) + shape[1:]
    if layout == "offset":
        return (math.prod(shape) + 3,)
    return shape


def _draw(r: RootSpec, variant: str | None) -> str:
    """The draw that makes a root's storage (Note [Same values])."""
    shape, dtype = _variant_of(r, variant)
    storage = _storage_shape(shape, r.layout)
    if dtype in FLOAT_DTYPES:
        expr = f"torch.randn({storage!r}, generator=g)"
        return expr if dtype == "float32" else f"{expr}.to({DTYPE_BY_NAME[dtype]})"
    if dtype == "bool":
        return f"torch.randint(0, 2, {storage!r}, generator=g).bool()"
    expr = f"torch.randint(-4, 5, {storage!r}, generator=g)"
    return expr if dtype == "int64" else f"{expr}.to({DTYPE_BY_NAME[dtype]})"


def _root_lines(r: RootSpec, name: str, device: str, variant: str | None) -> list[str]:
    """`name = <the root>`: the draw, then its device, grad kind, layout and subclass."""
    shape, _ = _variant_of(r, variant)
    expr = _draw(r, variant) + ("" if device == "cpu" else f'.to("{device}")')
    comment = ""
    if r.grad == "nonleaf":
        expr += ".requires_grad_().clone()"
        comment = "  # a non-leaf"
    view = {
        "transposed": ".transpose(-1, -2)",
        "strided": "[..., ::2]",
        "expanded": f".expand({shape!r})",
        "offset": f"[3:].view({shape!r})",
    }.get(r.layout, "")
    if view:
        expr += view if r.grad == "nonleaf" else f"{view}.detach()"  # detached: no _base
    leaf = ".requires_grad_()" if r.grad == "leaf" else ""
    if r.subclass == "two_tensor":
        return [f"{name} = {expr}{comment}", f"{name} = TwoTensor({name}, {name} * 2){leaf}"]
    if r.subclass == "nested_two_tensor":
        pairs = f"TwoTensor({name}, {name} * 2), TwoTensor({name} * 3, {name} + 1)"
        return [f"{name} = {expr}{comment}", f"{name} = TwoTensor({pairs}){leaf}"]
    if r.subclass == "mirror":
        return [f"{name} = MirrorTensor({expr}, 'm'){leaf}{comment}"]
    return [f"{name} = {expr}{leaf}{comment}"]


def _unaliased(spec: ProgramSpec) -> list[str]:
    """The aliasing variant (generators' make_inputs): aliased arguments become copies that
    share nothing; without any, the last tensor argument is the first one again (a twin)."""
    aliased, twin = aliasing_variant(spec)
    if aliased:
        return [
            f"a{i} = a{i}.detach().clone()"
            + (".requires_grad_()" if spec.roots[_root_of(spec, i)].grad != "none" else "")
            + "  # shares nothing now"
            for i in aliased
        ]
    if twin is None:
        return []
    first, last = twin
    return [f"a{last} = a{first}  # one tensor passed twice"]


def _root_of(spec: ProgramSpec, i: int) -> int:
    inp = spec.inputs[i]
    return _root_of(spec, inp.of) if inp.kind == "dup" else inp.root
