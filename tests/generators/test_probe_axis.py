"""Metadata reads (issue 36; Note [Reading a tensor's metadata] in generators/_stmts_probe.py):
an int a tensor reports, a branch on a predicate about it, a write through `__setitem__`,
drawn in any family, legal in eager, and agreed on by every subject."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from generators import inductor_reasons, materialize, programs
from generators._render_body import PROBE_INTS, PROBE_PREDICATES, probe_expr
from generators._spec import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from pyfy_fuzz.bench.measure import draw
from pyfy_fuzz.case.dead_code import dead_statements
from pyfy_fuzz.case.runner import run_case

# A leaf's sine scaled by its own length, a branch on whether it requires grad (the later
# call passes one that does not: the guard must send it the other way), a row written through
# __setitem__, a stride read after a transpose.
PROGRAM = ProgramSpec(
    family="output_aliasing",
    roots=(RootSpec((3, 2), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(
        Stmt("sin", ("a0",), ("v0",)),
        Stmt("probe", ("v0", ("int", "len")), ("v1",)),
        Stmt("probe", ("a0", ("if", "requires_grad")), ("v2",)),
        Stmt("clone", ("v2",), ("v3",)),
        Stmt("setitem", ("v3", 1, 5)),
        Stmt("view", ("v3", "transpose", 0, 1), ("v4",)),
        Stmt("probe", ("v4", ("int", "stride", 1)), ("v5",)),
    ),
    outputs=(OutSpec("ref", "v1"), OutSpec("ref", "v3"), OutSpec("ref", "v5")),
    plan=CallPlan(calls=2, variant="no_requires_grad"),
)


def _probes(spec: ProgramSpec) -> list[tuple[str, str]]:
    return [(str(s.args[1][0]), str(s.args[1][1])) for s in spec.body if s.op == "probe"]


def test_metadata_reads_are_drawn_across_families_and_forms() -> None:
    """1000 programs (about 6 s): both kinds, several forms of each, setitem, families."""
    families: Counter[str] = Counter()
    forms: Counter[tuple[str, str]] = Counter()
    setitems = 0
    for spec in draw(programs(), 1000, seed=0):
        probes = _probes(spec)
        setitems += sum(s.op == "setitem" for s in spec.body)
        if probes:
            families[spec.family] += 1
        forms.update(probes)
    assert len(families) >= 6, families
    ints = {f for k, f in forms if k == "int"}
    preds = {f for k, f in forms if k == "if"}
    assert len(ints) >= len(PROBE_INTS) // 2, ints
    assert len(preds) >= len(PROBE_PREDICATES) // 3, preds
    assert setitems >= 5, setitems


def test_the_aot_front_end_reads_no_data_and_branches_on_nothing() -> None:
    """aot_function has no guards and no data at trace time: only ints there, never item()."""
    seen = 0
    for spec in draw(programs(), 1500, seed=2):
        if spec.plan.frontend != "aot":
            continue
        for kind, form in _probes(spec):
            seen += 1
            assert kind == "int" and form != "item", (kind, form)
    assert seen, "no aot-front-end program read metadata"


def test_grad_is_read_only_of_a_leaf_and_eager_runs_every_read() -> None:
    """A non-leaf's .grad warns: only arguments and parameters are asked. Every drawn read
    renders, and eager runs the first dozen programs (the model said each read is legal)."""
    checked = 0
    for spec in draw(programs(), 600, seed=3):
        if not _probes(spec):
            continue
        for s in spec.body:
            if s.op == "probe" and s.args[1][1] == "grad":
                assert str(s.args[0])[0] in "ap", s
        program = materialize(spec)
        checked += 1
        if checked <= 12:
            program.make_fn()(*program.make_inputs(0))
    assert checked >= 10, checked


def test_probe_renders_as_users_write_it() -> None:
    assert probe_expr("x", ("int", "size", 1)) == "x * x.size(1)"
    assert probe_expr("x", ("int", "item")) == "x * x.flatten()[0].item()"
    assert probe_expr("x", ("if", "grad")) == "x * 2 if x.grad is None else x + 1"
    assert probe_expr("x", ["if", "size_gt", 0]) == "x * 2 if x.size(0) > 2 else x + 1"  # JSON
    with pytest.raises(ValueError, match="unknown probe"):
        probe_expr("x", ("while", "size"))
    source = materialize(PROGRAM).source
    assert "v3[1] = 5" in source and "v5 = v4 * v4.stride(1)" in source


def test_an_unused_read_is_dead_and_setitem_is_a_write() -> None:
    unused = replace(PROGRAM, outputs=(OutSpec("ref", "v3"),))
    assert 1 in dead_statements(unused) and 6 in dead_statements(unused)
    written = replace(
        PROGRAM, body=(Stmt("setitem", ("a0", 0, 1)),), outputs=(OutSpec("ref", "a0"),)
    )
    written = replace(written, roots=(RootSpec((3, 2)),))
    assert "input_mutation" in inductor_reasons(written)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_every_subject_agrees_on_the_reads_and_follows_the_guard(backend: str) -> None:
    """The later call's argument does not require grad: eager takes the other arm, and so must
    torch.compile (its guard on requires_grad) and the bundled file (which refuses the call,
    read as the recompile, or runs the graph compiled for it)."""
    result = run_case(PROGRAM, backend=backend)
    assert result.status == "ok" and result.unsupported is None, result
    assert not [f for f in result.findings if f.oracle != "seq_nr"], [
        f.explanation for f in result.findings
    ]
