"""`Tensor.backward()` inside the function (Note [Tensor.backward() inside the function] in
generators/_stmts_extra.py): drawn where every call can take it, in every form, and judged
equal where torch.compile is right."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from generators import materialize, programs
from generators._render_body import stmt_lines
from generators._spec import (
    CallPlan,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
)
from generators._stmts_extra import BACKWARD_FORMS
from pyfy_fuzz.bench.measure import draw
from pyfy_fuzz.case.runner import run_case

from .grad_inside import check_drawn_grad_inside


def _backwards(spec: ProgramSpec) -> list[Stmt]:
    return [s for s in spec.body if s.op == "backward"]


def _spec(form: str, config: tuple[str, ...] = ()) -> ProgramSpec:
    """x.sin() * w, a backward inside in `form`, then a use of the value: two leaf arguments."""
    args: tuple[object, ...] = ("v1", form) + (("a1",) if form == "inputs" else ())
    return ProgramSpec(
        family="output_aliasing",
        roots=(RootSpec((2, 3), grad="leaf"), RootSpec((3,), grad="leaf")),
        inputs=(InputSpec("root"), InputSpec("root", root=1)),
        body=(
            Stmt("sin", ("a0",), ("v0",)),
            Stmt("mul", ("v0", "a1"), ("v1",)),
            Stmt("backward", args),
            Stmt("mul2", ("v1",), ("v2",)),
        ),
        outputs=(OutSpec("ref", "v2"),),
        plan=CallPlan(calls=2, config=config),
    )


def test_each_form_is_one_line_of_the_function() -> None:
    lines = {f: stmt_lines(_backwards(_spec(f))[0]) for f in BACKWARD_FORMS}
    assert lines == {
        "sum": ["v1.sum().backward(retain_graph=True)"],
        "gradient": ["v1.backward(torch.ones_like(v1), retain_graph=True)"],
        "inputs": ["v1.sum().backward(inputs=[a1], retain_graph=True)"],
        "helper": ["(lambda t: t.sum().backward(retain_graph=True))(v1)"],
    }


def test_the_backward_inside_reaches_the_arguments_gradients() -> None:
    """Eager's `.grad` after the drive holds the inner backward's share too: the statement is
    not dead code (the drive's own backward alone gives less)."""
    plain = replace(_spec("sum"), body=tuple(s for s in _spec("sum").body if s.op != "backward"))
    grads = []
    for spec in (_spec("sum"), plain):
        program = materialize(spec)
        args = program.make_inputs(0)
        program.module.drive(program.make_fn(), args, 0)
        grads.append(args[1].grad.clone())
    assert not torch.allclose(grads[0], grads[1])


def test_a_backward_inside_is_drawn_where_every_call_can_take_it() -> None:
    # Three seeds, as the other statement groups' counts: how many of 1000 programs draw the
    # group moves with the draws.
    drawn = [s for seed in (0, 1, 2) for s in draw(programs(), 1000, seed=seed)]
    specs = [s for s in drawn if _backwards(s)]
    forms = Counter(str(b.args[1]) for s in specs for b in _backwards(s))
    assert len(forms) >= 3, forms
    for s in specs:
        assert all(fn.body != "bw_mutate" for fn in s.functions), s.functions
    check_drawn_grad_inside(specs)


@pytest.mark.parametrize("config", [(), ("trace_autograd_ops",)])
@pytest.mark.parametrize("form", BACKWARD_FORMS)
def test_a_backward_inside_is_no_difference_where_torch_compile_is_right(
    form: str, config: tuple[str, ...], tmp_path: Path
) -> None:
    """Leaf arguments: eager, torch.compile and the pythonified file agree, the file storing
    the gradients the traced graph made (Note [Gradients the graph stores] in pythonify)."""
    torch._dynamo.reset()
    result = run_case(_spec(form, config), workdir=tmp_path, keep_evidence=True)
    assert result.status == "ok" and not result.findings, result.findings
    assert result.evidence is not None
    assert all(c.raised is None for c in result.evidence.eager.calls)
