"""generators.inductor_reasons (issue 36, item 5): what in a spec makes Inductor worth it."""

from __future__ import annotations

from generators import InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt, ViewStep, inductor_reasons
from generators._vocabulary import table


def _spec(
    body: tuple[Stmt, ...], inputs: tuple[InputSpec, ...] = (InputSpec("root"),)
) -> ProgramSpec:
    return ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((2, 3)),),
        inputs=inputs,
        body=body,
        outputs=(OutSpec("ref", ref="a0"),),
    )


def _op(cls: str) -> str:
    return next(op.name for op in table().ops if op.cls == cls)


def test_a_pure_program_has_no_reason() -> None:
    assert inductor_reasons(_spec((Stmt("sin", ("a0",), ("v0",)),))) == ()


def test_each_reason_is_read_off_the_spec() -> None:
    write_view = (Stmt("view", ("a0", "transpose", 0, 1), ("v0",)), Stmt("mul_", ("v0", 2)))
    assert inductor_reasons(_spec(write_view)) == ("write_through_view",)
    assert inductor_reasons(_spec((Stmt("add_", ("a0", 1)),))) == ("input_mutation",)
    view_arg = (InputSpec("view", views=(ViewStep("transpose", (0, 1)),)),)
    assert inductor_reasons(_spec((Stmt("zero_", ("a0",)),), view_arg)) == (
        "write_through_view",
        "input_mutation",
    )
    scatter = Stmt("aten", (_op("view_inverse"), "a0", "a0"), ("v0",))
    assert inductor_reasons(_spec((scatter,))) == ("view_inverse",)
    aten_view = Stmt("aten", (_op("view"), "a0"), ("v0",))
    aten_write = Stmt("aten", (_op("inplace"), "v0"), ())
    assert inductor_reasons(_spec((aten_view, aten_write))) == ("write_through_view",)
    assert inductor_reasons(_spec((Stmt("dropout", ("a0",), ("v0",)),))) == ("rng",)
