"""The upstream patterns (docs/PATTERNS.md): each program shape that a 2025-26 PyTorch issue or
PR about AOTAutograd's runtime wrappers needed is found among drawn programs.

Each pattern is a predicate over a ProgramSpec and the families that draw it; the test draws
from those families (generation only, no shrinking) until one program has the shape. A pattern
marked GPU-only in PATTERNS.md shows its bug on CUDA only; its shape is still drawn on CPU.
The table in PATTERNS.md and PATTERNS below name the same issues (a test keeps them equal).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from generators import ProgramSpec, Stmt, programs
from generators._vocabulary import by_name
from pyfy_fuzz.schema.paths import spec_paths
from pyfy_fuzz.schema.spec import RANDOM_OPS

DOC = Path(__file__).resolve().parents[2] / "docs" / "PATTERNS.md"
SETTINGS = settings(
    database=None,
    max_examples=20000,
    phases=[Phase.generate],
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    deadline=None,
)
IDENTITY = ("dropout_eval", "to_same", "contiguous")  # ops that return their argument


def _inputs(spec: ProgramSpec) -> set[str]:
    return {f"a{k}" for k, i in enumerate(spec.inputs) if not i.scalar}


def _aten_class(s: Stmt) -> str | None:
    """An aten statement's class in the vocabulary (Note [Op classes]); None for other ops."""
    if s.op != "aten":
        return None
    op = by_name().get(str(s.args[0]))
    return None if op is None else op.cls


def _written(spec: ProgramSpec, name: str, after: int = -1) -> bool:
    return any(
        (s.op.endswith("_") and s.args[:1] == (name,))
        or (_aten_class(s) == "inplace" and s.args[1:2] == (name,))
        for s in spec.body[after + 1 :]
    )


def _views(spec: ProgramSpec) -> dict[str, str]:
    """view name -> what it views: view statements, and aten ops of the view class."""
    out = {s.outs[0]: str(s.args[0]) for s in spec.body if s.op == "view"}
    out.update({s.outs[0]: str(s.args[1]) for s in spec.body if _aten_class(s) == "view"})
    return out


# Reductions: the sum statement, and the vocabulary's reductions by name.
_REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "nansum", "logsumexp")


def _reduces(s: Stmt) -> str | None:
    """What a reduction statement reduces."""
    if s.op == "sum":
        return str(s.args[0])
    if s.op == "aten" and str(s.args[0]).split(".")[1] in _REDUCTIONS:
        return str(s.args[1])
    return None


def _returned(spec: ProgramSpec) -> set[str]:
    out: set[str] = set()
    for o in spec.outputs:
        out |= {o.ref} if o.kind == "ref" else {i.ref for i in o.items if i.kind == "ref"}
    return out


def _identity_then_write(spec: ProgramSpec) -> bool:
    return any(
        s.op in IDENTITY and str(s.args[0]) in _inputs(spec) and _written(spec, s.outs[0], k)
        for k, s in enumerate(spec.body)
    )


def _identity_returned(spec: ProgramSpec) -> bool:
    return any(s.op in IDENTITY and s.outs[0] in _returned(spec) for s in spec.body)


def _read_then_written(spec: ProgramSpec) -> bool:
    """An argument read by a statement, then written in place, with a backward."""
    return spec.plan.backward and any(
        not s.op.endswith("_") and a in _inputs(spec) and _written(spec, str(a), k)
        for k, s in enumerate(spec.body)
        for a in s.args
    )


def _clone_then_original_written(spec: ProgramSpec) -> bool:
    return spec.plan.backward and any(
        s.op == "clone" and str(s.args[0]) in _inputs(spec) and _written(spec, str(s.args[0]), k)
        for k, s in enumerate(spec.body)
    )


def _synthetic_base_view_out(spec: ProgramSpec) -> bool:
    """Two arguments of one root, one written, a view of the other returned."""
    roots = [i.root for i in spec.inputs if i.kind in ("root", "view")]
    if len(roots) == len(set(roots)):
        return False
    views = {s.outs[0]: str(s.args[0]) for s in spec.body if s.op == "view"}
    written = {str(s.args[0]) for s in spec.body if s.op.endswith("_")}
    return any(views.get(r) in _inputs(spec) - written for r in _returned(spec)) and bool(
        written & _inputs(spec)
    )


def _views_and_detach_out(spec: ProgramSpec) -> bool:
    """Views of one intermediate returned beside a detach of it (PR #195357)."""
    views = {s.outs[0]: str(s.args[0]) for s in spec.body if s.op == "view"}
    detached = {s.outs[0]: str(s.args[0]) for s in spec.body if s.op == "detach"}
    out = _returned(spec)
    bases = [views[r] for r in out if r in views and views[r] not in _inputs(spec)]
    return any(detached.get(r) in bases for r in out)


def _write_then_detach_out(spec: ProgramSpec) -> bool:
    detached = {s.outs[0]: str(s.args[0]) for s in spec.body if s.op == "detach"}
    return any(
        detached.get(r) in _inputs(spec) and _written(spec, detached[r]) for r in _returned(spec)
    )


def _write_then_reduced_view(spec: ProgramSpec) -> bool:
    """A reduction of a view of an argument written in place (#163929's view: a transpose,
    one of the views drawn)."""
    viewed = _views(spec)
    return any(
        (r := _reduces(s)) is not None
        and viewed.get(r) in _inputs(spec)
        and _written(spec, viewed[r])
        for s in spec.body
    )


# upstream number -> (families that draw it, the program shape)
PATTERNS: dict[str, tuple[list[str], Callable[[ProgramSpec], bool]]] = {
    "139789": (
        ["later_aliasing"],
        lambda s: (
            s.plan.variant in ("overlap", "share", "aliasing")
            and "plan/aliased_later/mutate_read" in spec_paths(s)
        ),
    ),
    "198095": (["synthetic_base"], _synthetic_base_view_out),
    "195422": (["input_mutation"], _identity_then_write),
    "115249": (["output_aliasing"], _identity_returned),
    "197738": (
        ["module"],
        lambda s: any(
            x.op in ("data_mul_", "data_assign") and str(x.args[0])[0] == "p" for x in s.body
        ),
    ),
    "194534": (
        ["input_mutation"],
        lambda s: any(x.op == "data_mul_" and str(x.args[0]) in _inputs(s) for x in s.body),
    ),
    "190758": (
        ["rng"],
        lambda s: (
            "memory_budget" in s.plan.config
            and s.plan.backward
            and any(x.op in RANDOM_OPS for x in s.body)
        ),
    ),
    "197039": (["input_mutation"], _read_then_written),
    "185876": (["input_mutation"], _clone_then_original_written),
    "195357": (["output_aliasing"], _views_and_detach_out),
    "172248": (["autograd_function"], lambda s: any(f.backward_record for f in s.functions)),
    "181146": (
        ["autograd_function"],
        lambda s: any(
            x.op == "apply_fn" and len(set(x.args[1:])) < len(x.args[1:]) for x in s.body
        ),
    ),
    "175496": (["input_mutation"], _write_then_detach_out),
    "163929": (["input_mutation"], _write_then_reduced_view),
    "191002": (
        ["output_aliasing"],
        lambda s: any(r.layout == "offset" for r in s.roots) and bool(_returned(s)),
    ),
    "154839": (
        ["cudagraph"],
        lambda s: any(str(r) in _inputs(s) and _written(s, str(r)) for r in _returned(s)),
    ),
}


def test_the_document_lists_exactly_these_patterns() -> None:
    listed = set(re.findall(r"^\| \[?#?(\d{6})", DOC.read_text(), flags=re.M))
    assert listed == set(PATTERNS), (sorted(listed - set(PATTERNS)), sorted(set(PATTERNS) - listed))
    assert len(PATTERNS) >= 15


@pytest.mark.parametrize("number", sorted(PATTERNS))
def test_each_upstream_pattern_is_drawn(number: str) -> None:
    families, has = PATTERNS[number]
    spec = find(programs(families), has, settings=SETTINGS)
    assert has(spec)
