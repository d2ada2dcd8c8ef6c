"""make_inputs() as Python: the program's roots, its arguments over them (views, duplicates,
set_-shared storage, ints) and the "aliasing" branch of a later call.

A root is drawn by the program's `_root` (generators/_prelude.py); a later call's other
relationships change the roots there or the arguments in `relate` (generators/_relations.py).
"""

from __future__ import annotations

from ._render_body import DTYPE_BY_NAME, ints_literal, view_expr
from ._spec import InputSpec, ProgramSpec, RootSpec

__all__ = ["aliasing_variant", "make_inputs_source"]


def _root_expr(k: int, r: RootSpec) -> str:
    sub = repr(r.subclass)
    # The "relation" variant grows the first root only: sizes it shared with other roots
    # (one symbol under dynamic shapes) now differ.
    first = "" if k == 0 else ", first=False"
    return (
        f"r{k} = _root(g, {tuple(r.shape)!r}, {DTYPE_BY_NAME[r.dtype]}, {r.layout!r}, {r.grad!r}, "
        f"{sub}, variant{first})"
    )


def _input_expr(i: int, inp: InputSpec) -> str:
    if inp.kind == "root":
        return f"a{i} = r{inp.root}"
    if inp.kind == "view":
        expr = f"r{inp.root}"
        for step in inp.views:
            expr = view_expr(expr, step.op, step.args)
        return f"a{i} = {expr}"
    if inp.kind == "dup":
        return f"a{i} = a{inp.of}"
    if inp.kind == "set_shared":
        size, stride, offset = inp.views[0].args
        where = f"{ints_literal(size)}, {ints_literal(stride)}, {offset}"
        return f"a{i} = _set_shared(r{inp.root}, {where})"
    if inp.scalar:
        return f"a{i} = {inp.value!r}"
    raise ValueError(f"unknown input kind {inp.kind!r}")


def aliasing_variant(spec: ProgramSpec) -> tuple[tuple[int, ...], tuple[int, int] | None]:
    """What the "aliasing" relationship does to `spec`'s arguments: (the aliased arguments,
    which become copies that share nothing; or, without any, the (first, last) tensor
    arguments of which the last becomes the first again -- two with identical roots where
    there are, so only the aliasing guards can tell -- or None). The program's make_inputs
    and a repro.py both read it, so the two cannot disagree."""
    aliased = tuple(
        i for i, inp in enumerate(spec.inputs) if inp.kind in ("view", "dup", "set_shared")
    )
    tensors = [i for i, inp in enumerate(spec.inputs) if not inp.scalar]
    if aliased or len(tensors) < 2:
        return aliased, None
    plain = [i for i in tensors if spec.inputs[i].kind == "root"]
    twins = [
        (i, j)
        for i in plain
        for j in plain
        if i < j and spec.roots[spec.inputs[i].root] == spec.roots[spec.inputs[j].root]
    ]
    return aliased, twins[0] if twins else (tensors[0], tensors[-1])


def make_inputs_source(spec: ProgramSpec) -> str:
    lines = [
        "_LAST_ARGS = []",
        "",
        "",
        "def make_inputs(seed=0, variant=None):",
        '    """The arguments for one call; a `variant` call\'s relationships to call 0 differ'
        ' (shape, dtype, aliasing, ...)."""',
        '    if variant and "again" in variant.split("+") and _LAST_ARGS:',
        "        return _LAST_ARGS[0]",
        "    g = torch.Generator().manual_seed(seed)",
    ]
    lines += [f"    {_root_expr(k, r)}" for k, r in enumerate(spec.roots)]
    lines += [f"    {_input_expr(i, inp)}" for i, inp in enumerate(spec.inputs)]
    names = ", ".join(f"a{i}" for i in range(len(spec.inputs)))
    lines.append(f"    args = ({names}{',' if len(spec.inputs) == 1 else ''})")
    aliased, twin = aliasing_variant(spec)
    lines.append('    if variant and "aliasing" in variant.split("+"):')
    if aliased:
        lines.append(
            f"        args = tuple(_unalias(a) if i in {aliased!r} else a"
            " for i, a in enumerate(args))"
        )
    elif twin is not None:
        first, last = twin
        lines.append(
            f"        args = tuple(args[{first}] if i == {last} else a for i, a in enumerate(args))"
        )
    else:
        lines.append("        pass")
    lines.append("    args = relate(args, variant)")
    lines.append('    _LAST_ARGS[:] = [args]  # what an "again" call passes once more')
    lines.append("    return args")
    return "\n".join(lines)
