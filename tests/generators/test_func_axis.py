"""torch.func transforms inside the function (issue 36's front-end axis; Note [torch.func
transforms inside the function] in generators/_stmts_func.py): every form is legal in eager
and keeps the tensor's shape, dtype and autograd state as the model says; every subject
agrees on them; drawn on the Dynamo front-end only, never under saved-tensor hooks where it
differentiates."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from generators import materialize, programs
from generators._render_body import FUNC_BODIES, FUNC_FORMS
from generators._spec import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from generators._stmts_func import differentiates
from pyfy_fuzz.bench.measure import draw
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.schema.config import CATALOGUE


def _program(form: str, body: str, dtype: str = "float32", grad: str = "leaf") -> ProgramSpec:
    """`v0 = <form of a0>`, times the argument: the transform's result and its gradient."""
    return ProgramSpec(
        family="output_aliasing",
        roots=(RootSpec((3, 4), dtype=dtype, grad=grad),),
        inputs=(InputSpec("root"),),
        body=(Stmt("func", ("a0", (form, body)), ("v0",)), Stmt("mul", ("v0", "a0"), ("v1",))),
        outputs=(OutSpec("ref", "v1"),),
        plan=CallPlan(calls=2, backward=grad != "none", variant="shape"),
    )


@pytest.mark.parametrize("form", list(FUNC_FORMS))
def test_each_form_keeps_shape_dtype_and_grad_in_eager(form: str) -> None:
    for body in FUNC_BODIES:
        program = materialize(_program(form, body))
        (a0,) = program.module.make_inputs(0)
        out = program.module.make_fn()(a0)
        assert out.shape == a0.shape and out.dtype == a0.dtype and out.requires_grad, body


@pytest.mark.parametrize(
    ("form", "body", "backend"),
    [
        ("vmap", "sin", "aot_eager"),
        ("vmap_dim1", "tanh", "aot_eager"),
        ("vmap_inplace", "mul2", "aot_eager"),
        ("grad", "exp", "aot_eager"),
        ("grad_closure", "sin", "aot_eager"),
        ("vmap_grad", "tanh", "inductor"),
        ("jvp", "sin", "aot_eager"),
    ],
)
def test_every_subject_agrees_on_each_form(form: str, body: str, backend: str) -> None:
    """Eager, torch.compile and the pythonified file: the same values and gradients (a
    gradient of a gradient for grad), on a call that recompiles for a new shape too."""
    r = run_case(_program(form, body), backend=backend)
    assert r.status == "ok" and not r.findings, (r.unsupported, [f.explanation for f in r.findings])
    assert r.pythonified_path is not None, r.unsupported


def test_an_integer_tensor_is_only_batched() -> None:
    r = run_case(_program("vmap", "mul2", dtype="int64", grad="none"), backend="aot_eager")
    assert r.status == "ok" and not r.findings, [f.explanation for f in r.findings]


def test_transforms_are_drawn_on_dynamo_and_never_under_saved_tensor_hooks() -> None:
    """1500 programs (about 10 s): several forms, several families, all on the Dynamo
    front-end; a body that differentiates has no saved-tensor hooks of any kind around it."""
    forms: Counter[str] = Counter()
    families: set[str] = set()
    for spec in draw(programs(), 1500, seed=4):
        funcs = [s for s in spec.body if s.op == "func"]
        if not funcs:
            continue
        assert spec.plan.frontend == "dynamo", spec.body
        forms.update(str(s.args[1][0]) for s in funcs)
        families.add(spec.family)
        if differentiates(list(spec.body)):
            assert not spec.plan.saved_tensor_hooks and spec.plan.through != "checkpoint"
            assert not any(CATALOGUE[n].kind == "hooks" for n in spec.plan.config)
    assert len(forms) >= len(FUNC_FORMS) // 2, forms
    assert len(families) >= 4, families
    assert torch.is_grad_enabled()
