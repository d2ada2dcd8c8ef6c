"""Python number arguments (issue 36; Note [Scalar arguments] in generators/_stmts_scalar.py):
ints and floats passed beside tensors, read by statements in any family on the Dynamo
front-end, and changed by the "scalars" call relationship, so that Dynamo's specialization,
its value guard and its dynamic symbols all run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

from generators import materialize, programs
from generators._relations import to_other_scalars
from generators._spec import (
    CallPlan,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    SpecError,
    Stmt,
    spec_from_dict,
    validate,
)
from generators._variants import variant_changes
from pyfy_fuzz.bench.measure import draw
from pyfy_fuzz.case.runner import run_case

# A float scaling a leaf's function, an int added in place into a fresh tensor: every number
# read, a backward through the float.
PROGRAM = ProgramSpec(
    family="output_aliasing",
    roots=(RootSpec((3, 2), grad="leaf"),),
    inputs=(InputSpec("root"), InputSpec("float", value=1.5), InputSpec("int", value=2)),
    body=(
        Stmt("sin", ("a0",), ("v0",)),
        Stmt("smul", ("v0", "a1"), ("v1",)),
        Stmt("rsub", ("v1", "a2"), ("v2",)),
        Stmt("clone", ("v2",), ("v3",)),
        Stmt("add_", ("v3", "a2")),
    ),
    outputs=(OutSpec("ref", "v3"),),
    plan=CallPlan(calls=2, variant="scalars"),
)


def _reads(spec: ProgramSpec) -> list[str]:
    """The statements that read a number argument."""
    names = {f"a{k}" for k, i in enumerate(spec.inputs) if i.scalar}
    return [s.op for s in spec.body if any(isinstance(a, str) and a in names for a in s.args)]


def test_number_arguments_are_drawn_and_read_across_families() -> None:
    """600 programs of each of three seeds (about 12 s): the axis is not one family's. One
    seed's draw is not enough: the "scalars" relationship came 0, 14 and 21 times in seeds
    0-2 once the torch.func group came in."""
    families: Counter[str] = Counter()
    ops: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    variants = 0
    for spec in (s for seed in (0, 1, 2) for s in draw(programs(), 600, seed=seed)):
        read = _reads(spec)
        if not read:
            continue
        assert spec.plan.frontend == "dynamo" and spec.plan.mode is None
        families[spec.family] += 1
        ops.update(read)
        kinds.update(i.kind for i in spec.inputs if i.scalar)
        variants += "scalars" in (spec.plan.variant or "")
    assert len(families) >= 5, families
    assert {"smul", "sadd", "rsub"} <= set(ops), ops
    assert set(ops) & {"add_", "mul_", "fill_"}, ops  # in place, through stmt_inplace
    assert kinds["int"] and kinds["float"], kinds
    assert variants >= 3, variants


def test_a_number_meets_only_tensors_whose_dtype_it_keeps() -> None:
    """A float never meets an integer or bool tensor, an int never a bool one: eager's result
    keeps the tensor's dtype, which is all the model knows."""
    for spec in draw(programs(), 600, seed=1):
        values = {f"a{k}": i.value for k, i in enumerate(spec.inputs) if i.scalar}
        program = None
        for s in spec.body:
            if s.op in ("smul", "sadd", "rsub", "add_", "mul_", "fill_") and s.args[1] in values:
                program = program or materialize(spec)
                if type(values[s.args[1]]) is float:
                    assert "torch.float" in program.source or "torch.bfloat16" in program.source


def test_the_scalars_relationship_changes_each_number_and_keeps_its_type() -> None:
    x = torch.randn(2)
    got = to_other_scalars((x, 2, 1.5, True, None))
    assert got[0] is x and got[3] is True and got[4] is None  # bool is not an int here
    assert type(got[1]) is int and got[1] == 3
    assert type(got[2]) is float and got[2] == 3.25
    assert variant_changes(PROGRAM, "scalars")
    plain = replace(PROGRAM, inputs=PROGRAM.inputs[:1], body=PROGRAM.body[:1])
    assert not variant_changes(replace(plain, outputs=(OutSpec("ref", "v0"),)), "scalars")


def test_make_inputs_passes_the_numbers_and_their_changed_values() -> None:
    program = materialize(PROGRAM)
    first = program.make_inputs(0)
    later = program.make_inputs(1, "scalars")
    assert first[1:] == (1.5, 2) and type(first[1]) is float
    assert later[1:] == (3.25, 3)


def test_a_float_argument_survives_json_and_a_wrong_value_type_is_refused() -> None:
    back = spec_from_dict(json.loads(json.dumps(asdict(PROGRAM))))
    assert back == PROGRAM and type(back.inputs[1].value) is float
    with pytest.raises(SpecError, match=r"inputs\[2\]\.value"):
        validate(replace(PROGRAM, inputs=(*PROGRAM.inputs[:2], InputSpec("int", value=1.5))))


@pytest.mark.parametrize("dynamic", [False, True])
def test_every_subject_agrees_when_the_numbers_change(dynamic: bool) -> None:
    """Static: torch specializes both numbers and recompiles on the later call, the file's
    value guards refuse it (read as the recompile). Dynamic: the int is a SymInt input, the
    float a tensor Dynamo makes of it; both files and torch.compile follow the new values."""
    spec = replace(PROGRAM, plan=replace(PROGRAM.plan, dynamic=dynamic))
    result = run_case(spec)
    assert result.status == "ok" and result.unsupported is None, result
    # Dynamic: torch's backward node for the product by the tensorified float carries no
    # seq_nr (a torch finding of the seq_nr oracle, triaged in reports/): every value agrees.
    assert not [f for f in result.findings if f.oracle != "seq_nr"], [
        f.explanation for f in result.findings
    ]


def test_the_repro_passes_the_numbers_and_changes_them_as_the_program_does(tmp_path: Path) -> None:
    """repro.py builds its own arguments: the float stays a float literal, and the variant call
    changes the numbers with the program's own `to_other_scalars`."""
    from pyfy_fuzz.corpus.repro import render_repro
    from pyfy_fuzz.schema.difference import CallRef, Difference
    from pyfy_fuzz.schema.finding import Finding

    on_variant = CallRef("variant", relation="scalars", recompiled=True)
    d = Difference(
        "outputs", "torch.compile", on_variant, "output", "values", 0, expected="[1]", actual="[2]"
    )
    finding = Finding(
        "compile-divergence",
        "outputs",
        "torch.compile",
        (),
        Finding.explain("torch.compile", (d,)),
        differences=(d,),
        aspect=d.aspect,
    ).to_dict()
    source = render_repro(PROGRAM, finding, backend="aot_eager")
    assert "a1 = 1.5" in source and "a2 = 2" in source
    assert "def to_other_scalars(" in source
    assert "return to_other_scalars((a0, a1, a2))" in source  # make_variant_inputs
    # It runs with torch alone, the variant call included: the planted difference is not
    # torch's, so it says the bug is fixed.
    path = tmp_path / "repro.py"
    path.write_text(source)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
