"""repro.py end to end: a real torch bug exits 1, a clean program 0, a bug planted in the
pythonified file 1 (the unplanted file 0), and the repro needs nothing but torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generators import materialize
from generators._spec import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from pyfy_fuzz.pythonify import pythonify
from pyfy_fuzz.repro import _literal, render_repro
from pyfy_fuzz.runner import run_case

from .oracles.helpers import spec

# torch 2.13, aot_eager: a 0-d float64 argument mutated in place and returned loses the
# mutation under torch.compile (output and argument keep their old value).
ZERO_DIM_MUL = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((), dtype="float64"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("mul_", ("a0", 2)),),
    outputs=(OutSpec("ref", "a0"),),
    plan=CallPlan(calls=2, backward=False),
)
# An input mutated in place, then read: pythonify copies the mutation back in its graph.
MUT = spec(
    [("add_", ("a0", 1), ()), ("sin", ("a0",), ("v0",))],
    ["v0"],
    grad="none",
    plan=CallPlan(calls=2, variant="shape"),
)
# Runs the repro with pyfy_fuzz, generators and oracles unimportable (the editable install
# would find them even under -I), then checks none of them was loaded.
BLOCKED = ("pyfy_fuzz", "generators", "oracles")
ISOLATED = f"""
import runpy, sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"blocked in this test: {{name}}")

sys.meta_path.insert(0, Block())
sys.argv = ["repro.py"]
try:
    runpy.run_path("repro.py", run_name="__main__")
finally:
    assert not [m for m in sys.modules if m.split(".")[0] in {BLOCKED!r}]
"""


def _finding(kind: str, oracle: str, subject: str, explanation: str = "") -> dict[str, Any]:
    return {
        "signature": f"{kind}.{oracle}.000000000000",
        "kind": kind,
        "oracle": oracle,
        "subject": subject,
        "explanation": explanation or f"{subject} differs",
        "wrappers": [],
    }


def _start(directory: Path, isolated: bool = False) -> subprocess.Popen[str]:
    argv = [sys.executable, "-I", "-c", ISOLATED] if isolated else [sys.executable, "repro.py"]
    return subprocess.Popen(
        argv, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _wait(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=240)
    return proc.returncode, out


def _write(directory: Path, s: ProgramSpec, finding: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "repro.py").write_text(render_repro(s, finding, backend="aot_eager"))
    return directory


def _imports(source: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_repro_imports_only_torch_and_the_standard_library() -> None:
    source = render_repro(
        ZERO_DIM_MUL, _finding("crash", "exceptions", "pythonify"), backend="inductor"
    )
    tree = ast.parse(source)
    program = next(
        str(n.value.value)
        for n in tree.body
        if isinstance(n, ast.Assign)
        and getattr(n.targets[0], "id", None) == "PROGRAM"
        and isinstance(n.value, ast.Constant)
    )
    allowed = {"torch", "functorch", "__future__", *sys.stdlib_module_names}
    assert _imports(source) <= allowed, _imports(source) - allowed
    assert _imports(program) <= allowed, _imports(program) - allowed
    assert "BACKEND = 'inductor'" in source
    compile(source, "repro.py", "exec")


def test_render_repro_refuses_what_it_cannot_reproduce() -> None:
    finding = _finding("crash", "exceptions", "torch.compile")
    with pytest.raises(ValueError, match="backend"):
        render_repro(ZERO_DIM_MUL, finding, backend="eager")
    without = {k: v for k, v in finding.items() if k != "explanation"}
    with pytest.raises(ValueError, match="explanation"):
        render_repro(ZERO_DIM_MUL, without, backend="aot_eager")
    with pytest.raises(ValueError, match="device"):
        render_repro(ZERO_DIM_MUL, finding, backend="aot_eager", device="cuda; rm -rf")
    assert "DEVICE = 'cuda'" in render_repro(
        ZERO_DIM_MUL, finding, backend="aot_eager", device="cuda"
    )


def test_program_literal_round_trips_any_text() -> None:
    readable = _literal("def f(a0):\n    return a0.sin()\n")
    assert readable.startswith("'''\\\n")  # readable: a triple-quoted block
    for text in ("plain\n", "a '''quote''' and \\ backslash \\", "ends with '", "\\"):
        assert ast.literal_eval(_literal(text)) == text


@pytest.mark.slow
def test_real_torch_bug_exits_1_until_fixed(tmp_path: Path) -> None:
    result = run_case(ZERO_DIM_MUL)
    found = [f for f in result.findings if f.oracle == "outputs"]
    assert found and found[0].kind == "compile-divergence", result.findings
    assert result.pythonified_path is None  # the file is absent: compile vs eager only
    d = _write(tmp_path / "case", ZERO_DIM_MUL, found[0].to_dict())
    rc, out = _wait(_start(d))
    assert rc == 1, out
    assert "== torch.compile vs eager  (this finding)" in out
    assert "outputs: call 0: output 0: values differ" in out
    assert found[0].signature in out and "torch 2." in out


@pytest.mark.slow
def test_pythonify_bug_planted_in_the_file_exits_1_and_the_clean_file_0(tmp_path: Path) -> None:
    program = materialize(MUT)
    finding = _finding("pythonify-divergence", "mutation", "pythonify")
    clean, planted = (
        _write(tmp_path / "clean", MUT, finding),
        _write(tmp_path / "bad", MUT, finding),
    )
    pythonify(program.make_fn(), program.make_inputs(0), clean / "pythonified.py")
    text = (clean / "pythonified.py").read_text()
    copy_back = "copy_ = torch.ops.aten.copy_.default(arg0_1, add)"
    assert copy_back in text
    (planted / "pythonified.py").write_text(text.replace(copy_back, "copy_ = None"))
    # The clean run doubles as the isolation check: nothing from pyfy-fuzz may load.
    procs = [_start(clean, isolated=True), _start(planted)]
    (rc_clean, out_clean), (rc_bad, out_bad) = (_wait(p) for p in procs)
    assert rc_clean == 0, out_clean
    assert "RESULT: not reproduced" in out_clean
    assert rc_bad == 1, out_bad
    assert "mutation: call 0: input a0 after the call: values differ" in out_bad
    assert "== pythonify vs torch.compile  (this finding)" in out_bad


@pytest.mark.slow
def test_clean_program_exits_0(tmp_path: Path) -> None:
    s = spec(
        [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
        ["v1"],
        plan=CallPlan(calls=2, variant="shape", second_backward="retain"),
    )
    d = _write(tmp_path / "case", s, _finding("compile-divergence", "grads", "torch.compile"))
    rc, out = _wait(_start(d))
    assert rc == 0, out
    assert "no differences" in out and "(no pythonified.py next to this file" in out
