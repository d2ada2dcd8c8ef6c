"""Editing a spec by its value names, for the shrinker (shrink.py; torch-free).

Values are named by refs (``a<i>`` arguments, ``v<k>`` intermediates, ``p<i>``/``b<i>`` module
parameters/buffers). `remove` drops statements (or values) and, transitively, every statement
and output that reads what they bound; `without_input` drops an argument and renumbers the
later ones so the names stay dense, as `render` requires; `rename` replaces refs wherever they
are read. None of them checks the result: the shrinker's `candidates` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from pyfy_fuzz.schema.spec import FunctionSpec, ModuleSpec, OutSpec, ProgramSpec, Stmt

__all__ = [
    "SIMPLE_FUNCTION",
    "inline_number",
    "is_ref",
    "out_refs",
    "param_names",
    "remove",
    "rename",
    "renumber",
    "stmt_refs",
    "used_names",
    "without_input",
]

# A value name; constants in Stmt.args (dtype names, view op names, numbers) never match.
_REF = re.compile(r"[avpb]\d+")
SIMPLE_FUNCTION = FunctionSpec()  # a custom Function with every flag at its plain default


def is_ref(x: object) -> bool:
    return isinstance(x, str) and _REF.fullmatch(x) is not None


def stmt_refs(s: Stmt) -> list[str]:
    return [x for x in s.args if is_ref(x)]


def out_refs(out: OutSpec) -> Iterator[str]:
    if out.kind in ("ref", "size"):
        yield out.ref
    for item in out.items:
        yield from out_refs(item)


def used_names(spec: ProgramSpec) -> set[str]:
    """Every name read by a statement or an output."""
    names = {r for s in spec.body for r in stmt_refs(s)}
    names.update(r for o in spec.outputs for r in out_refs(o))
    return names


def param_names(m: ModuleSpec | None) -> set[str]:
    if m is None:
        return set()
    names = {f"p{i}" for i in range(len(m.params) + m.tied)}
    return names | {f"b{i}" for i in range(len(m.buffers))}


def rename(spec: ProgramSpec, names: dict[str, str]) -> ProgramSpec:
    """Replace refs everywhere they are read (statement args, outputs), all at once."""
    if not names:
        return spec

    def arg(x: Any) -> Any:
        return names.get(x, x) if is_ref(x) else x

    def out(o: OutSpec) -> OutSpec:
        return replace(o, ref=names.get(o.ref, o.ref), items=tuple(out(i) for i in o.items))

    body = tuple(replace(s, args=tuple(arg(x) for x in s.args)) for s in spec.body)
    return replace(spec, body=body, outputs=tuple(out(o) for o in spec.outputs))


def _prune_out(out: OutSpec, gone: set[str]) -> OutSpec | None:
    """`out` without what names a removed value; None when nothing is left of it."""
    if out.kind != "tuple":
        return None if out.kind in ("ref", "size") and out.ref in gone else out
    items = tuple(p for p in (_prune_out(i, gone) for i in out.items) if p is not None)
    return replace(out, items=items) if items else None


def remove(
    spec: ProgramSpec, stmts: Iterable[int] = (), names: Iterable[str] = ()
) -> ProgramSpec | None:
    """Drop the statements at `stmts` and every statement or output that reads a value they
    bind or one of `names` (transitively). None if no output would be left."""
    drop, gone = set(stmts), set(names)
    body = []
    for k, s in enumerate(spec.body):
        if k in drop or any(r in gone for r in stmt_refs(s)):
            gone.update(s.outs)
        else:
            body.append(s)
    outputs = tuple(p for p in (_prune_out(o, gone) for o in spec.outputs) if p is not None)
    if not outputs:
        return None
    return replace(spec, body=tuple(body), outputs=outputs)


def inline_number(spec: ProgramSpec, i: int) -> ProgramSpec:
    """Every read of number argument i takes its value instead (`x * a2` -> `x * 2`): what is
    left of the argument then reads nothing, and `without_input` drops it alone."""
    name, value = f"a{i}", spec.inputs[i].value
    body = tuple(
        replace(s, args=tuple(value if is_ref(x) and x == name else x for x in s.args))
        for s in spec.body
    )
    return replace(spec, body=body)


def without_input(spec: ProgramSpec, i: int) -> ProgramSpec | None:
    """Drop argument i, its duplicates and whatever reads them; renumber the later arguments."""
    drop = {i}
    for j, inp in enumerate(spec.inputs):  # dups point backwards: one sweep is transitive
        if inp.kind == "dup" and inp.of in drop:
            drop.add(j)
    if len(drop) >= len(spec.inputs):
        return None
    smaller = remove(spec, names=[f"a{j}" for j in drop])
    if smaller is None:
        return None
    kept = [j for j in range(len(spec.inputs)) if j not in drop]
    new = {old: k for k, old in enumerate(kept)}
    inputs = tuple(
        replace(spec.inputs[j], of=new[spec.inputs[j].of])
        if spec.inputs[j].kind == "dup"
        else spec.inputs[j]
        for j in kept
    )
    smaller = rename(smaller, {f"a{old}": f"a{k}" for old, k in new.items() if old != k})
    return replace(smaller, inputs=inputs)


def renumber(prefix: str, removed: int, count: int) -> dict[str, str]:
    """Names `<prefix><k>` for k > removed move down by one (k < count)."""
    return {f"{prefix}{k}": f"{prefix}{k - 1}" for k in range(removed + 1, count)}
