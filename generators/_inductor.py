"""What in a program makes Inductor worth its compile time (issue 36, item 5).

A campaign on CPU compiles most cases with aot_eager (cheap, exact) and a share with Inductor.
Several wrapper bugs exist only under Inductor, because what it does before the wrappers run
changes what they see: its reinplacing pass turns a functionalized write back into an in-place
one (a write through a view, a view-inverse op such as `slice_scatter`), it keeps some input
mutations inside the graph, and its partitioner recomputes or saves differently (random ops
above all). `inductor_reasons(spec)` names which of these a spec has, read off the spec alone
(torch-free); the campaign's backend mix gives such programs Inductor far more often than the
rest (`pyfy_fuzz/campaign/explore.py`, Note [Inductor by content]).
"""

from __future__ import annotations

from pyfy_fuzz.schema.spec import RANDOM_OPS, ProgramSpec

from ._stmts import INPLACE
from ._vocabulary import by_name

__all__ = ["INDUCTOR_REASONS", "inductor_reasons"]

# What inductor_reasons can name, most telling first.
INDUCTOR_REASONS = ("view_inverse", "write_through_view", "input_mutation", "rng")


def _aten_class(name: str) -> str | None:
    op = by_name().get(name)
    return None if op is None else op.cls


def _views(spec: ProgramSpec) -> set[str]:
    """Names that are views: view arguments and the results of view statements."""
    out = {f"a{i}" for i, inp in enumerate(spec.inputs) if inp.kind in ("view", "set_shared")}
    for s in spec.body:
        if s.op == "view" or (s.op == "aten" and _aten_class(str(s.args[0])) == "view"):
            out.update(s.outs)
    return out


def _writes(spec: ProgramSpec) -> list[str]:
    """The values the body writes in place (the first argument of an in-place statement)."""
    out = []
    for s in spec.body:
        if s.op in INPLACE or s.op == "data_mul_":
            out.append(str(s.args[0]))
        elif s.op == "aten" and _aten_class(str(s.args[0])) == "inplace":
            out.append(str(s.args[1]))
    return out


def inductor_reasons(spec: ProgramSpec) -> tuple[str, ...]:
    """Which of INDUCTOR_REASONS the program has, in that order."""
    found = set()
    if any(s.op == "aten" and _aten_class(str(s.args[0])) == "view_inverse" for s in spec.body):
        found.add("view_inverse")
    writes = _writes(spec)
    if set(writes) & _views(spec):
        found.add("write_through_view")
    if any(w.startswith("a") for w in writes):
        found.add("input_mutation")
    if any(s.op in RANDOM_OPS for s in spec.body):
        found.add("rng")
    return tuple(r for r in INDUCTOR_REASONS if r in found)
