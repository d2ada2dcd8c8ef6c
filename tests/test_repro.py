"""repro.py: a short plain-torch script that checks the one aspect of a finding.

Rendering is checked for every corpus entry and for hand-built programs covering every oracle
and every kind of definition a program can need (fast); the inputs a repro builds are checked
against the program's own, value for value and alias for alias (Hypothesis); and some repros
run where pyfy-fuzz cannot be imported: real torch bugs of the corpus exit 1, a clean program
exits 0, a bug planted in a pythonified file exits 1 (slow).
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators import materialize, programs, spec_from_dict
from generators._spec import (
    CallPlan,
    FunctionSpec,
    InputSpec,
    ModuleSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
    ViewStep,
)
from generators.source import RELATE_FUNCTIONS
from oracles.compare import bitwise_equal
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.corpus import _repro_helpers as H
from pyfy_fuzz.corpus._repro_check import read_check
from pyfy_fuzz.corpus.entry import entry_files, readme
from pyfy_fuzz.corpus.repro import (
    BACKENDS,
    MAX_LINES,
    ReproStopped,
    check_repro,
    render_repro,
    repro_record,
)
from pyfy_fuzz.pythonify import pythonify
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts
from pyfy_fuzz.schema.finding import Finding

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
# Entries the renderer writes: every one but those `migrate` kept as they were (fixed bugs of
# ours that no longer reproduce, with no differences to render a check from).
ENTRIES = sorted(
    p.parent
    for p in CORPUS.glob("*/case.json")
    if json.loads(p.read_text()).get("migrated_by") != "kept"
)
ALLOWED = {"torch", "functorch", *sys.stdlib_module_names}
_RUFF = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))


def finding(kind: str, oracle: str, subject: str, d: Difference | None) -> dict[str, Any]:
    """A finding's dict as the campaign hands it to render_repro: its differences as data."""
    diffs = () if d is None else (replace(d, subject=subject),)
    return {
        "kind": kind,
        "oracle": oracle,
        "subject": subject,
        "explanation": Finding.explain(subject, diffs),
        "exc_type": d.exc.type if d is not None and d.exc is not None else None,
        "differences": [x.to_dict() for x in diffs],
    }


def _case(entry: Path) -> dict[str, Any]:
    return dict(json.loads((entry / "case.json").read_text()))


def _render_case(case: dict[str, Any]) -> str:
    return render_repro(
        spec_from_dict(case["spec"]), case, backend=case["backend"], device=case["device"]
    )


def _imports(source: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def _well_formed(source: str) -> None:
    """Python, at most MAX_LINES lines, torch and the standard library only, the header the issue
    template wants."""
    compile(source, "repro.py", "exec")
    assert len(source.splitlines()) <= MAX_LINES, f"{len(source.splitlines())} lines:\n{source}"
    assert _imports(source) <= ALLOWED, _imports(source) - ALLOWED
    assert "pyfy_fuzz" not in source and "import generators" not in source
    lines = source.splitlines()
    assert lines[0].startswith('"""') and lines[1].startswith("python repro.py: exit 1")


def _undefined_names(paths: list[Path]) -> str:
    """ruff's pyflakes checks (undefined names, unused imports) over generated scripts; the
    programs' own unused intermediates (F841) are left alone."""
    if not Path(_RUFF).exists():
        pytest.skip("ruff is not installed")
    run = subprocess.run(
        [_RUFF, "check", "--isolated", "--no-cache", "--select", "F", "--ignore", "F841"]
        + [str(p) for p in paths],
        capture_output=True,
        text=True,
    )
    return "" if run.returncode == 0 else run.stdout[-3000:]


# -- hand-built programs: every oracle, every definition ----------------------------------------

# a0 mutated, a1 read: compiled for independent arguments, then called with them overlapping
SEQUENCE = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((4,)), RootSpec((4,))),
    inputs=(InputSpec("root", root=0), InputSpec("root", root=1)),
    body=(Stmt("mul_", ("a0", 2)), Stmt("add", ("a0", "a1"), ("v0",))),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1, variant="strided", sequence=("overlap+no_grad",)),
)
# An argument mutated in place (a non-leaf: autograd also saves it for the mul), then read.
MUTATED = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((3,), grad="nonleaf"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("mul_", ("a0", 2)), Stmt("mul", ("a0", "a0"), ("v0",))),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=2),
)

PLAIN = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((3, 4), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("sin", ("a0",), ("v0",)), Stmt("mul", ("v0", "a0"), ("v1",))),
    outputs=(OutSpec("ref", "v1"),),
    plan=CallPlan(calls=2),
)
# a0 a root, a1 a transposed slice of it, a2 a0 again, a3 set_ onto its storage
ALIASED = ProgramSpec(
    family="synthetic_base",
    roots=(RootSpec((3, 4)),),
    inputs=(
        InputSpec("root"),
        InputSpec("view", views=(ViewStep("slice", (1, 0, 4, 2)), ViewStep("transpose", (0, 1)))),
        InputSpec("dup", of=0),
        InputSpec("set_shared", views=(ViewStep("as_strided", ((2, 2), (4, 1), 1)),)),
    ),
    # (no mutation: with a0 mutated, the view output crashes torch.compile, see VIEW_OF_A_VIEW)
    body=(Stmt("view", ("a1", "slice", 0, 0, 1, 1), ("v0",)),),
    outputs=(OutSpec("ref", "v0"), OutSpec("ref", "a2"), OutSpec("size", "a3", 0)),
    plan=CallPlan(calls=1, backward=False, variant="aliasing"),
)
SECOND = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((3,), grad="leaf", layout="strided"), RootSpec((2, 3), grad="nonleaf")),
    inputs=(InputSpec("root"), InputSpec("root", root=1), InputSpec("int", value=2)),
    body=(Stmt("mul", ("a0", "a1"), ("v0",)), Stmt("sum", ("v0",), ("v1",))),
    outputs=(OutSpec("tuple", items=(OutSpec("ref", "v1"), OutSpec("ref", "a2"))),),
    plan=CallPlan(calls=1, second_backward="retain", tangents="ones"),
)
TWO = ProgramSpec(
    family="subclass",
    roots=(RootSpec((2, 3), grad="leaf", subclass="two_tensor"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("mul2", ("a0",), ("v0",)),),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1),
)
MIRROR = ProgramSpec(
    family="subclass",
    roots=(RootSpec((4,), subclass="mirror", layout="offset"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("sin", ("a0",), ("v0",)),),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1, backward=False),
)
FUNCTION = ProgramSpec(
    family="autograd_function",
    roots=(RootSpec((3,), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("apply_fn", (1, "a0"), ("v0", "v1")), Stmt("register_hook", ("a0",))),
    outputs=(OutSpec("ref", "v0"),),
    functions=(
        FunctionSpec(),  # unused: not in the repro
        FunctionSpec(
            style="setup_context", body="sin", non_differentiable=True, once_differentiable=True
        ),
    ),
    plan=CallPlan(calls=2, saved_tensor_hooks=True),
)
MODULE = ProgramSpec(
    family="module",
    roots=(RootSpec((2, 3)),),
    inputs=(InputSpec("root"),),
    body=(
        Stmt("batchnorm", ("a0",), ("v0",)),
        Stmt("add", ("v0", "p0"), ("v1",)),
        Stmt("add_", ("b0", 1)),
    ),
    outputs=(OutSpec("ref", "v1"),),
    module=ModuleSpec(params=((3,),), buffers=((3,),), batchnorm=3, full_backward_hook=True),
    plan=CallPlan(calls=2),
)
EFFECT = ProgramSpec(
    family="effects",
    roots=(RootSpec((3,), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("effect_op", ("a0",)), Stmt("sin", ("a0",), ("v0",))),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1),
)
HOOKED = ProgramSpec(
    family="autograd_function",
    roots=(RootSpec((3,), grad="nonleaf"), RootSpec((3,), grad="leaf")),
    inputs=(InputSpec("root"), InputSpec("root", root=1)),
    body=(
        Stmt("register_hook", ("a0", 1)),
        Stmt("register_hook", ("a0", 2)),
        Stmt("post_accumulate_hook", ("a1",)),
        Stmt("mul", ("a0", "a1"), ("v0",)),
    ),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=2, grad_fn_hooks=True),
)
AOT = ProgramSpec(
    family="dedupe",
    roots=(RootSpec((3,), dtype="float64"),),
    inputs=(InputSpec("root"), InputSpec("dup", of=0)),
    body=(Stmt("add_", ("a0", 1)), Stmt("mul", ("a0", "a1"), ("v0",))),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1, backward=False, frontend="aot", dynamic=True),
)
CUDAGRAPH = ProgramSpec(
    family="cudagraph",
    roots=(RootSpec((4,)),),
    inputs=(InputSpec("root"),),
    body=(Stmt("rand_like", ("a0",), ("v0",)), Stmt("add", ("v0", "a0"), ("v1",))),
    outputs=(OutSpec("ref", "v1"), OutSpec("none")),
    plan=CallPlan(calls=3, backward=False, mode="reduce-overhead"),
)
GRAD_MODE = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((2,), dtype="bfloat16", grad="leaf", layout="expanded"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("set_grad_enabled", (False,)), Stmt("sin", ("a0",), ("v0",))),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1, variant="dtype"),
)
CD, TC = "compile-divergence", "torch.compile"
V = {"expected": "[1]", "actual": "[2]"}
P0, P1 = CallRef("plan", 0), CallRef("plan", 1)
RAISED = ExcFacts("RuntimeError", "boom", "backward")


def D(oracle: str, locus: str, prop: str, call: CallRef = P0, **kw: Any) -> Difference:
    """A difference of torch.compile's, as an oracle records it."""
    return Difference(oracle, TC, call, locus, prop, **kw)  # type: ignore[arg-type]


# (name, spec, finding): one per oracle and per way a check is read
CASES = [
    (
        "outputs",
        PLAIN,
        finding(CD, "outputs", TC, D("outputs", "output", "values", P1, index=0, **V)),
    ),
    (
        "exceptions",
        PLAIN,
        finding("crash", "exceptions", TC, D("exceptions", "exception", "raised", exc=RAISED)),
    ),
    ("grads", PLAIN, finding(CD, "grads", TC, D("grads", "grad", "values", name="a0", **V))),
    (
        "through",  # Note [The front-end axis]: the call made through a checkpoint
        replace(PLAIN, plan=replace(PLAIN.plan, through="checkpoint")),
        finding(CD, "grads", TC, D("grads", "grad", "values", name="a0", **V)),
    ),
    (
        "through-reentrant",
        replace(PLAIN, plan=replace(PLAIN.plan, through="checkpoint_reentrant")),
        finding(CD, "outputs", TC, D("outputs", "output", "values", P1, index=0, **V)),
    ),
    (
        "autograd",
        PLAIN,
        finding(
            CD,
            "autograd",
            TC,
            D("autograd", "output", "requires_grad", index=0, expected=True, actual=False),
        ),
    ),
    (
        "grad_fn",
        PLAIN,
        finding(
            CD,
            "autograd",
            TC,
            D("autograd", "output", "grad_fn", P1, index=0, expected="MulBackward0", actual=None),
        ),
    ),
    ("seq_nr", PLAIN, finding(CD, "seq_nr", TC, D("seq_nr", "seq_nr", "unmapped", note="mul"))),
    ("seq_nr-order", PLAIN, finding(CD, "seq_nr", TC, D("seq_nr", "seq_nr", "order", note="o"))),
    ("interpreter-crash", PLAIN, finding("interpreter-crash", "interpreter", TC, None)),
    ("hang", PLAIN, finding("hang", "timeout", TC, None)),
    ("harness", PLAIN, finding("harness-error", "harness", "pyfy-fuzz", None)),
    (
        "mutation",
        ALIASED,
        finding(CD, "mutation", TC, D("mutation", "input", "values", name="a0", **V)),
    ),
    (
        "mutation-shape",
        ALIASED,
        finding(
            CD,
            "mutation",
            TC,
            D("mutation", "input", "shape", name="a3", expected=[2, 2], actual=[4]),
        ),
    ),
    (
        "aliasing-base",
        ALIASED,
        finding(
            CD,
            "aliasing",
            TC,
            D("aliasing", "output", "base", index=0, expected="input:a1", actual="other"),
        ),
    ),
    (
        "aliasing-is",
        ALIASED,
        finding(
            CD,
            "aliasing",
            TC,
            D("aliasing", "output", "is_input", index=1, expected=["a0"], actual=[]),
        ),
    ),
    (
        "aliasing-storage",
        ALIASED,
        finding(
            CD,
            "aliasing",
            TC,
            D("aliasing", "output", "shares_inputs", index=0, expected=["a0"], actual=[]),
        ),
    ),
    (
        "aliasing-write",
        ALIASED,
        finding(
            CD,
            "aliasing",
            TC,
            D(
                "aliasing",
                "write",
                "changed_inputs",
                CallRef("probe", probe="in-place"),
                index=0,
                expected=["a0", "a1"],
                actual=[],
            ),
        ),
    ),
    (
        "autograd-write",
        ALIASED,
        finding(
            CD,
            "autograd",
            TC,
            D(
                "autograd",
                "write",
                "allowed",
                CallRef("probe", probe="in-place"),
                index=1,
                expected="allowed",
                actual="refused (RuntimeError)",
            ),
        ),
    ),
    (
        "guards",
        ALIASED,
        finding(
            CD,
            "guards",
            TC,
            D("outputs", "output", "values", CallRef("variant", relation="aliasing"), index=0, **V),
        ),
    ),
    (
        "guards-crash",
        ALIASED,
        finding(
            "crash",
            "guards",
            TC,
            D(
                "guards",
                "exception",
                "raised",
                CallRef("variant", relation="aliasing"),
                exc=ExcFacts("BackendCompilerFailed(RuntimeError)", "boom", "compile"),
            ),
        ),
    ),
    (
        "second-grads",
        SECOND,
        finding(CD, "grads", TC, D("grads", "grad2", "values", name="a0", **V)),
    ),
    (
        "second-raises",
        SECOND,
        finding(
            CD,
            "grads",
            TC,
            D("grads", "second_backward", "raised", expected="RuntimeError", actual="no error"),
        ),
    ),
    (
        "two-tensor",
        TWO,
        finding(CD, "outputs", TC, D("outputs", "output", "values", index=0, inner="a", **V)),
    ),
    (
        "mirror",
        MIRROR,
        finding(
            CD, "outputs", TC, D("outputs", "output", "stride", index=0, expected=[1], actual=[2])
        ),
    ),
    (
        "function",
        FUNCTION,
        finding(
            CD,
            "grads",
            TC,
            D("grads", "grad", "presence", P1, name="a0", expected="None", actual="a tensor"),
        ),
    ),
    (
        "module",
        MODULE,
        finding(CD, "grads", TC, D("grads", "grad", "values", P1, name="self.p0", **V)),
    ),
    (
        "module-buffer",
        MODULE,
        finding(CD, "mutation", TC, D("mutation", "input", "values", name="self.b0", **V)),
    ),
    ("effect", EFFECT, finding(CD, "outputs", TC, D("outputs", "output", "values", index=0, **V))),
    ("aot", AOT, finding(CD, "mutation", TC, D("mutation", "input", "values", name="a0", **V))),
    (
        "cudagraph",
        CUDAGRAPH,
        finding(CD, "cudagraph", TC, D("cudagraph", "later", "values", index=0, **V)),
    ),
    (
        "grad-mode",
        GRAD_MODE,
        finding(
            CD,
            "autograd",
            TC,
            D("autograd", "grad_mode", "enabled", expected=True, actual=False),
        ),
    ),
    (
        "guards-dtype",
        GRAD_MODE,
        finding(
            CD,
            "guards",
            TC,
            D(
                "outputs",
                "output",
                "dtype",
                CallRef("variant", relation="dtype"),
                index=0,
                expected="torch.float64",
                actual="torch.bfloat16",
            ),
        ),
    ),
    (
        "hooks",
        HOOKED,
        finding(CD, "grads", TC, D("grads", "hooks", "ran", expected=["a", "b"], actual=["a"])),
    ),
    (
        "versions",
        MUTATED,
        finding(
            CD,
            "versions",
            TC,
            D("versions", "version", "moved", P1, name="a0", expected=True, actual=False),
        ),
    ),
    (
        "saved",
        MUTATED,
        finding(
            CD,
            "versions",
            TC,
            D(
                "versions",
                "saved_probe",
                "outcome",
                CallRef("probe", probe="saved"),
                expected="backward raised RuntimeError",
                actual="backward ran",
            ),
        ),
    ),
    (
        # bumped_backward reads tree_leaves: the helpers' names are imported too (the 11-27
        # 1-hour campaign's version-probe repro died of a NameError)
        "version-probe",
        MUTATED,
        finding(
            CD,
            "mutation",
            TC,
            D(
                "mutation",
                "version_probe",
                "outcome",
                CallRef("probe", probe="version"),
                expected="backward raised RuntimeError",
                actual="backward ran",
            ),
        ),
    ),
    (
        "retained-grad",
        SECOND,
        finding(CD, "grads", TC, D("grads", "grad", "values", name="a1", **V)),
    ),
    (
        "again",
        replace(SEQUENCE, plan=CallPlan(calls=1, variant="strided", sequence=("again",))),
        finding(
            CD,
            "guards",
            TC,
            D("grads", "grad", "values", CallRef("sequence", 0, relation="again"), name="a0", **V),
        ),
    ),
    (
        "sequence",
        SEQUENCE,
        finding(
            CD,
            "guards",
            TC,
            D(
                "outputs",
                "output",
                "values",
                CallRef("sequence", 0, relation="overlap+no_grad"),
                index=0,
                **V,
            ),
        ),
    ),
    # Note [A broken process]: the file's calls, then the canary in the same process
    ("process-broken", PLAIN, finding("process-broken", "canary", "pythonify", None)),
]
# What each hand-built program must (and must not) bring into its repro.
MUST = {
    "process-broken": [
        "raised = outcome(pythonified.call)",
        "broken = canary()",
        'def canary(device="cpu"):',
        'raise SystemExit(f"BUG: pythonified.py leaves the process broken: {broken}")',
    ],
    "two-tensor": [
        "from torch.testing._internal.two_tensor import TwoTensor",
        "TwoTensor(a0, a0 * 2)",
    ],
    "mirror": [
        "class MirrorTensor(torch.Tensor):",
        "MirrorTensor(torch.randn((7,), generator=g)[3:].view((4,)).detach(), 'm')",
    ],
    "function": [
        "class Fn1(torch.autograd.Function):",
        "@once_differentiable",
        "def _double_grad(grad):",
        "saved_tensors_hooks",
    ],
    "module": [
        "class Program(torch.nn.Module):",
        "self.bn = torch.nn.BatchNorm1d(3)",
        "register_full_backward_hook",
        "fn.zero_grad()",
    ],
    "effect": ['torch.library.custom_op("pyfy_gen::record"', "_register_effectful_op"],
    "hooks": [
        "HOOK_LOG = []",
        "a0.register_hook(_log_grad_a)",
        "a1.register_post_accumulate_grad_hook(_log_accumulated)",
        "a.grad_fn.register_prehook(_log_node_pre)",
        'return sorted(e[0] for e in take_hook_log() if "." not in e[0])',
    ],
    "aot": ["aot_function(", "dynamic=True", "a1 = a0  # the same tensor again"],
    "cudagraph": ['mode="reduce-overhead"', "fallback_random = True", "torch.manual_seed(seed)"],
    "aliasing-base": [
        "a1 = a0[:, 0:4:2].transpose(0, 1)",
        ".set_(a0.untyped_storage(), 1, (2, 2), (4, 1))",
        "def base_of(",
    ],
    "guards": [
        "def make_variant_inputs(seed=0):",
        "a1 = a1.detach().clone()  # shares nothing now",
    ],
    "seq_nr": ["def unmapped(graphs):", "force_non_lazy_backward_lowering = True"],
    "seq_nr-order": ["def order_differences(fn, graphs):"],
    "second-grads": ["donated_buffer = False", "loss.backward(retain_graph=True)"],
    "versions": ["before = versions(args)", "return moved(args, before)", "def versions("],
    "saved": [
        "saved = save_products(args)",
        "return backward_saved(saved)",
        "def save_products(",
        "make_inputs(4)",
    ],
    "retained-grad": ["retain_grads(args)", "return args[1].grad", "def retain_grads("],
    "again": [
        "for seed, make in ((0, make_inputs), (0, make_variant_inputs), (0, (lambda seed: args))):",
        "args = make(seed)",
    ],
    "sequence": [
        "def make_call_0_inputs(seed=0):",
        "for seed, make, during in ((0, make_inputs, nullcontext), (0, make_variant_inputs, "
        "nullcontext), (0, make_call_0_inputs, torch.no_grad)):",
        "with during():",
        "from contextlib import nullcontext",
        "def to_overlapping(args):",
        "return to_overlapping((a0, a1))",
    ],
}
MUST["through"] = [
    "out = torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False, early_stop=False)"
]
MUST["through-reentrant"] = [
    "out = torch.utils.checkpoint.checkpoint(fn, *make_inputs(seed), use_reentrant=True)"
]
MUST_NOT = {
    "function": ["class Fn0("],
    "outputs": ["TwoTensor", "MirrorTensor", "class Fn", "tree_leaves"],
}


@pytest.mark.parametrize(("name", "spec", "found"), CASES, ids=[c[0] for c in CASES])
def test_hand_built_repros_are_short_standalone_and_bring_what_they_use(
    name: str, spec: ProgramSpec, found: dict[str, Any]
) -> None:
    source = render_repro(spec, found, backend="aot_eager")
    _well_formed(source)
    for text in MUST.get(name, []):
        assert text in source, f"{name}: expected {text!r} in\n{source}"
    for text in MUST_NOT.get(name, []):
        assert text not in source, f"{name}: {text!r} unexpected in\n{source}"


def test_generated_scripts_define_every_name_they_use(tmp_path: Path) -> None:
    paths = []
    for i, (name, spec, found) in enumerate(CASES):
        for backend in ("aot_eager", "inductor"):
            paths.append(tmp_path / f"{i}-{name}-{backend}.py")
            paths[-1].write_text(render_repro(spec, found, backend=backend))
    for i, entry in enumerate(ENTRIES):
        paths.append(tmp_path / f"corpus-{i}.py")
        paths[-1].write_text(_render_case(_case(entry)))
    assert not _undefined_names(paths)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(), st.sampled_from(CASES), st.sampled_from(BACKENDS))
def test_any_program_and_finding_render_a_script_that_defines_what_it_uses(
    spec: ProgramSpec, case: tuple[str, ProgramSpec, dict[str, Any]], backend: str
) -> None:
    source = render_repro(spec, case[2], backend=backend)
    compile(source, "repro.py", "exec")
    assert _imports(source) <= ALLOWED
    # at most MAX_LINES, unless the program alone (its definitions, f, make_inputs) is long:
    # an unshrunk program with several custom Functions or MirrorTensor can be. A process-broken
    # repro's canary (~20 lines, Note [A broken process]) comes on top: it is the check itself.
    program = re.split(r"\ndef (observe|outcome|run)\(", source)[0]
    canary = len(H.source(H.canary, False)) if case[2]["kind"] == "process-broken" else 0
    assert len(source.splitlines()) - canary <= MAX_LINES or len(program.splitlines()) > 45
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "repro.py"
        path.write_text(source)
        assert not _undefined_names([path])


def test_a_crash_where_eager_runs_calls_eager_then_the_compile_in_a_try() -> None:
    """The shape of a pt2 crash report: eager's call, then torch.compile's, whose exception is
    the bug. Where eager raises too, the script compares what each raises (outcome())."""
    line = D("exceptions", "exception", "raised", exc=ExcFacts("AssertionError", "boom", "call"))
    inline = render_repro(
        VIEW_OF_A_VIEW, finding("crash", "exceptions", TC, line), backend="aot_eager"
    )
    _well_formed(inline)
    assert "\nexpected = f(*make_inputs())  # eager runs\ntry:\n" in inline
    # eager raising is no bug report: exit 3 while `expected` is unbound (its excepthook)
    assert 'os._exit(2 if "expected" in globals() else 3)' in inline
    assert '    torch.compile(f, backend="aot_eager")(*make_inputs())\n' in inline
    # exit 1 only for the finding's own exception: its type and the words of its message
    assert "if not (type(e).__name__ == 'AssertionError' and 'boom' in str(e)):" in inline
    assert "def run(" not in inline and "def outcome(" not in inline
    with_backward = render_repro(*CASES[1][1:], backend="aot_eager")  # "exceptions"
    _well_formed(with_backward)
    assert "def run(fn):" in with_backward and "loss.backward()" in with_backward
    assert "\nexpected = run(f)  # eager runs\n" in with_backward
    both = finding(
        CD,
        "exceptions",
        TC,
        D("exceptions", "exception", "returned", exc=ExcFacts("RuntimeError", "b", "call")),
    )
    compared = render_repro(PLAIN, both, backend="aot_eager")
    _well_formed(compared)
    assert "def outcome(fn):" in compared and "def run(" not in compared


def test_pythonify_repros_load_the_file_next_to_them() -> None:
    found = finding(
        "pythonify-divergence",
        "aliasing",
        "pythonify",
        D("aliasing", "output", "is_input", index=0, expected=[], actual=["a0"]),
    )
    source = render_repro(MIRROR, found, backend="aot_eager")
    _well_formed(source)
    assert "os.path.dirname(os.path.abspath(__file__))" in source
    assert "pythonified.bind(f)" in source and "observe(pythonified.call)" in source
    assert "sys.modules['pyfy_program_" in source  # the file imports MirrorTensor by module
    module = render_repro(MODULE, found, backend="aot_eager")
    assert "pythonified.bind(m)" in module and "observe(pythonified.call)" in module
    assert "m.forward" not in module  # call() deletes it: later calls would run eager


def test_every_corpus_entry_renders_a_short_standalone_repro() -> None:
    assert ENTRIES, "no corpus entries"
    lengths = []
    for entry in ENTRIES:
        source = _render_case(_case(entry))
        _well_formed(source)
        lengths.append(len(source.splitlines()))
    assert sorted(lengths)[len(lengths) // 2] <= 50, lengths  # most are a screen long


def test_inductor_compares_with_tolerance_and_sets_its_config() -> None:
    exact = render_repro(*CASES[0][1:], backend="aot_eager")
    tolerant = render_repro(*CASES[0][1:], backend="inductor")
    assert "rtol=0, atol=0" in exact and "rtol=0" not in tolerant
    # stock settings, cold caches (Note [The stock reference]); fallback_random only for a
    # program that draws random numbers
    assert "fallback_random" not in tolerant and "fx_graph_cache" not in tolerant
    assert 'os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()' in tolerant
    assert 'backend="inductor"' in tolerant


def test_render_repro_refuses_what_it_cannot_reproduce() -> None:
    found = CASES[0][2]
    with pytest.raises(ValueError, match="backend"):
        render_repro(PLAIN, found, backend="eager")
    with pytest.raises(ValueError, match="subject"):
        render_repro(PLAIN, {k: v for k, v in found.items() if k != "subject"}, backend="inductor")
    with pytest.raises(ValueError, match="device"):
        render_repro(PLAIN, found, backend="aot_eager", device="cuda; rm -rf")
    assert '.to("cuda")' in render_repro(PLAIN, found, backend="aot_eager", device="cuda")


# -- make_inputs: the program's own values and aliasing ----------------------------------------


def _definition(source: str, name: str) -> str:
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    segment = ast.get_source_segment(source, node)
    assert segment is not None
    return segment


def _same_inputs(ours: tuple[Any, ...], theirs: tuple[Any, ...]) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert type(a) is type(b)
        if not isinstance(a, torch.Tensor):
            assert a == b
            continue
        assert (a.dtype, a.shape, a.requires_grad, a.is_leaf) == (
            b.dtype,
            b.shape,
            b.requires_grad,
            b.is_leaf,
        )
        assert (a._base is None) == (b._base is None)
        if hasattr(a, "__tensor_flatten__"):
            for attr in a.__tensor_flatten__()[0]:
                assert torch.equal(getattr(a, attr), getattr(b, attr))
        else:
            assert (a.stride(), a.storage_offset()) == (b.stride(), b.storage_offset())
            # the very values the campaign drew (NaN where a view(dtype) reads bits as one)
            assert bitwise_equal(a.detach(), b.detach())
    tensors = [(i, a, b) for i, (a, b) in enumerate(zip(ours, theirs, strict=True))]
    tensors = [(i, a, b) for i, a, b in tensors if isinstance(a, torch.Tensor)]
    for _, a, b in tensors:
        for _, x, y in tensors:
            assert (a is x) == (b is y)
            assert (a._base is x) == (b._base is y)
            if not hasattr(a, "__tensor_flatten__") and not hasattr(x, "__tensor_flatten__"):
                shared = a.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
                assert shared == (b.untyped_storage().data_ptr() == y.untyped_storage().data_ptr())


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_make_inputs_builds_the_programs_own_inputs(spec: ProgramSpec) -> None:
    program = materialize(spec)
    namespace = {
        "torch": torch,
        **{
            k: getattr(program.module, k)
            for k in ("TwoTensor", "MirrorTensor")
            if hasattr(program.module, k)
        },
    }
    guards = finding(
        "compile-divergence",
        "guards",
        "torch.compile",
        D("outputs", "output", "values", CallRef("variant", relation="x"), index=0, **V),
    )
    source = render_repro(spec, guards, backend="aot_eager")
    exec(_definition(source, "make_inputs"), namespace)  # noqa: S102 - our own generated code
    for seed in (0, 1):
        _same_inputs(namespace["make_inputs"](seed), program.make_inputs(seed))
    if spec.plan.variant is not None and "again" not in spec.plan.variant.split("+"):
        exec(_definition(source, "make_variant_inputs"), namespace)  # noqa: S102
        for fn in RELATE_FUNCTIONS.values():  # the relationships' functions it calls
            if f"def {fn.__name__}(" in source:
                exec(_definition(source, fn.__name__), namespace)  # noqa: S102
        try:
            theirs = program.make_inputs(0, spec.plan.variant)
        except Exception as exc:  # this variant does not exist for the program: nor for ours
            with pytest.raises(type(exc)):
                namespace["make_variant_inputs"](0)
            return
        _same_inputs(namespace["make_variant_inputs"](0), theirs)


# -- README.md: a pt2 bug report -------------------------------------------------------------


def test_readme_is_a_pt2_bug_report() -> None:
    case = _case(ENTRIES[0]) | {
        "title": "torch.compile (aot_eager): output values differ from eager",
        "differences": [
            D("outputs", "output", "values", index=0, expected="[0]", actual="[1.541]").to_dict()
        ],
        "python": "3.11.7",
        "os": "Linux-6.1",
        "collect_env": "PyTorch version: 2.13.0",
        "triage": "T1: a known one",
    }
    files = entry_files(case, has_pythonified=False)
    assert set(files) == {"repro.py", "program.py", "README.md"}
    text = files["README.md"]
    assert text.startswith("# torch.compile (aot_eager): output values differ from eager\n")
    for section in (
        "## Expected vs actual",
        "## Repro",
        "## Backend / mode / config",
        "## Versions",
        "## pyfy-fuzz details",
    ):
        assert f"\n{section}\n" in text, section
    assert "- Expected (eager, call 0): output 0 is [0]" in text
    assert "- Actual (torch.compile): output 0 is [1.541]" in text
    assert f"```python\n{files['repro.py']}```" in text
    assert "- Python: 3.11.7" in text and "- OS: Linux-6.1" in text
    assert "PyTorch version: 2.13.0" in text and "T1: a known one" in text
    assert f"pyfy-fuzz replay corpus/{case['signature']}" in text
    assert readme(case, has_pythonified=False) == text


# -- running them ---------------------------------------------------------------------------------


def _write(directory: Path, source: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "repro.py").write_text(source)
    return directory


def test_check_repro_runs_without_pyfy_fuzz_and_says_what_it_could_not(tmp_path: Path) -> None:
    ok = _write(tmp_path / "ok", "print('fine')\n")
    assert check_repro(ok) == (0, "fine\n")
    bug = _write(tmp_path / "bug", "raise SystemExit('BUG: differs')\n")
    assert check_repro(bug)[0] == 1
    leaks = _write(tmp_path / "leaks", "import pyfy_fuzz\n")
    code, tail = check_repro(leaks)
    assert (
        code == 2 and "import of pyfy_fuzz halted" in tail
    )  # an exception it does not check: no verdict
    slow = _write(tmp_path / "slow", "import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    code, tail = check_repro(slow, timeout=3)
    assert code is None and "started" in tail
    assert repro_record(bug, 1, "BUG")["verdict"] == "reproduces"
    assert repro_record(ok, 0, "")["verdict"] == "passes"
    assert repro_record(slow, None, "")["verdict"] == "timeout"
    assert repro_record(slow, -11, "")["verdict"] == "interpreter died"
    # an interpreter crash's repro shows its bug by dying (the campaign's de9a entry)
    assert repro_record(slow, -11, "", "interpreter-crash")["verdict"] == "reproduces"
    assert repro_record(slow, 1, "", "interpreter-crash")["verdict"] == "reproduces"


def _expected_torch_bugs() -> list[Path]:
    """One corpus entry of a torch bug per oracle. Left out: findings with random ops, which
    the campaign now compiles with fallback_random (by design: eager's numbers)."""
    by_oracle: dict[str, Path] = {}
    for entry in ENTRIES:
        case = _case(entry)
        random = any(
            s["op"] in ("rand_like", "randn_like", "dropout", "bernoulli")
            for s in case["spec"]["body"]
        )
        if case["expected"] == "fail" and not random:
            by_oracle.setdefault(case["oracle"], entry)
    return list(by_oracle.values())


def _run_side_by_side(scripts: dict[str, str], root: Path) -> dict[str, tuple[int | None, str]]:
    """Each script run on its own (check_repro: a process each), two at a time: most of a
    repro's time is one core's import and compile, and CI has two."""
    dirs = {name: _write(root / name, source) for name, source in scripts.items()}
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(check_repro, dirs.values())
        return dict(zip(dirs, done, strict=True))


@pytest.fixture(scope="module")
def torch_bug_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int | None, str]]:
    scripts = {e.name: _render_case(_case(e)) for e in _expected_torch_bugs()}
    return _run_side_by_side(scripts, tmp_path_factory.mktemp("torch-bugs"))


@pytest.mark.slow
@pytest.mark.parametrize("entry", _expected_torch_bugs(), ids=lambda p: p.name)
def test_a_real_torch_bug_of_the_corpus_exits_1(
    entry: Path, torch_bug_runs: dict[str, tuple[int | None, str]]
) -> None:
    code, tail = torch_bug_runs[entry.name]
    assert code == 1, tail
    assert "BUG: " in tail


CLEAN = [
    "outputs",
    "grads",
    "seq_nr",
    "seq_nr-order",
    "interpreter-crash",
    "aliasing-base",
    "aliasing-write",
    "guards",
    "second-raises",
    "two-tensor",
    "function",
    "module",
    "effect",
    "aot",
    "cudagraph",
    "grad-mode",
    "hooks",
    "versions",
    "saved",
    "retained-grad",
]


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int | None, str]]:
    cases = {c[0]: c for c in CASES}
    scripts = {
        name: render_repro(cases[name][1], cases[name][2], backend="aot_eager") for name in CLEAN
    }
    return _run_side_by_side(scripts, tmp_path_factory.mktemp("clean"))


@pytest.mark.slow
@pytest.mark.parametrize("name", CLEAN)
def test_a_clean_program_exits_0(name: str, clean_runs: dict[str, tuple[int | None, str]]) -> None:
    code, tail = clean_runs[name]
    assert code == 0, tail


# An input mutated in place, then read: pythonify copies the mutation back in its graph.
MUT = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((3,), grad="none"),),
    inputs=(InputSpec("root"),),
    body=(Stmt("add_", ("a0", 1)), Stmt("sin", ("a0",), ("v0",))),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=2),
)


@pytest.mark.slow
def test_a_bug_planted_in_the_pythonified_file_exits_1_and_the_clean_file_0(
    tmp_path: Path,
) -> None:
    program = materialize(MUT)
    found = finding(
        "pythonify-divergence",
        "mutation",
        "pythonify",
        D("mutation", "input", "values", name="a0", **V),
    )
    source = render_repro(MUT, found, backend="aot_eager")
    clean, planted = _write(tmp_path / "clean", source), _write(tmp_path / "bad", source)
    pythonify(program.make_fn(), program.make_inputs(0), clean / "pythonified.py")
    text = (clean / "pythonified.py").read_text()
    copy_back = "copy_ = torch.ops.aten.copy_.default(arg0_1, add)"
    assert copy_back in text
    (planted / "pythonified.py").write_text(text.replace(copy_back, "copy_ = None"))
    assert check_repro(clean) == (0, check_repro(clean)[1])
    code, tail = check_repro(planted)
    assert code == 1 and "BUG: input a0 after the call: values differ" in tail, tail


# Found while writing these tests (torch 2.13, aot_eager): an argument mutated in place while
# another argument is a view of it (a synthetic base), and a view of that view returned:
# AOTAutograd's view replay asserts "incorrect out shape after application of ViewMeta
# sequence". Eager runs it.
VIEW_OF_A_VIEW = ProgramSpec(
    family="synthetic_base",
    roots=(RootSpec((3, 4)),),
    inputs=(InputSpec("root"), InputSpec("view", views=(ViewStep("slice", (1, 0, 4, 2)),))),
    body=(Stmt("add_", ("a0", 1)), Stmt("view", ("a1", "slice", 0, 0, 1, 1), ("v0",))),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1, backward=False),
)


@pytest.mark.slow
def test_a_finding_of_run_case_becomes_a_repro_that_exits_1(tmp_path: Path) -> None:
    result = run_case(VIEW_OF_A_VIEW)
    crash = result.findings[0]
    assert (crash.kind, crash.exc_type) == ("crash", "AssertionError"), result.findings
    source = render_repro(VIEW_OF_A_VIEW, crash.to_dict(), backend="aot_eager")
    _well_formed(source)
    assert len(source.splitlines()) <= 35
    code, tail = check_repro(_write(tmp_path / "case", source))
    assert code == 1 and "incorrect out shape after application of ViewMeta sequence" in tail


# A view returned by a custom Function, its base written in place, through a reentrant
# checkpoint: eager's backward raises autograd's RuntimeError, Dynamo's (tracing the Function
# again in the recompute) InternalTorchDynamoError with the same words. That type subclasses
# RuntimeError, and the repro's isinstance check called it the same error (the campaign's
# "the repro misses the bug: ours", 386ae35c1133): a Dynamo exception is not eager's error by
# its own type, for the repro as for the oracle (ExcObs.is_a).
WRAPPED = ProgramSpec(
    family="autograd_function",
    roots=(RootSpec((), grad="nonleaf"),),
    inputs=(InputSpec("root"),),
    body=(
        Stmt("cos", ("a0",), ("v0",)),
        Stmt("apply_fn", (0, "v0"), ("v1",)),
        Stmt("aten", ("aten.squeeze_.dims", "v0", ("l", (0,))), ()),
        Stmt("apply_fn", (1, "v1"), ("v4",)),
    ),
    outputs=(OutSpec("ref", "v1"),),
    functions=(FunctionSpec(arity=1, body="view", style="setup_context"),) * 2,
    plan=CallPlan(calls=3, second_backward="retain", through="checkpoint_reentrant"),
)


def test_an_error_dynamo_wraps_as_its_own_is_not_eagers_for_the_repro(tmp_path: Path) -> None:
    result = run_case(WRAPPED)
    (wrapped,) = [f for f in result.findings if f.exc_type == "InternalTorchDynamoError"]
    source = render_repro(WRAPPED, wrapped.to_dict(), backend="aot_eager")
    code, tail = check_repro(_write(tmp_path / "case", source))
    assert code == 1 and "raises differently" in tail, tail


# -- the repro calls as the campaign called -----------------------------------------------------

# Found by triage (issue 36, d70addddf442): an offset argument and a flat view of it, the first
# written. Call 0's compile raises; the "shift" call compiles a graph for shifted aliases, and
# the in-place probe's fresh call, whose arguments that graph's guards let through, runs on it
# and reads out of bounds. Compiled afresh at the probe's arguments, the repro met call 0's
# error instead and exited 2 (Note [A probe's call runs on the graphs the calls before it
# compiled]).
PROBE_AFTER_SHIFT = ProgramSpec(
    family="later_aliasing",
    roots=(RootSpec((2, 3), layout="offset"),),
    inputs=(InputSpec("root"), InputSpec("view", views=(ViewStep("reshape", (6,)),))),
    body=(Stmt("index_put_", ("a0", 0)),),
    outputs=(OutSpec("ref", "a1"),),
    plan=CallPlan(calls=1, variant="shift", backward=False),
)


def test_a_probe_after_a_later_call_runs_where_the_campaign_ran_it(tmp_path: Path) -> None:
    result = run_case(PROBE_AFTER_SHIFT)
    (probe,) = [f for f in result.findings if f.differences[0].call.kind == "probe"]
    assert not probe.differences[0].call.recompiled
    source = render_repro(PROBE_AFTER_SHIFT, probe.to_dict(), backend="aot_eager")
    assert "(make_inputs, 0, nullcontext), (make_variant_inputs, 0, nullcontext)" in source
    assert "def make_variant_inputs(" in source
    code, tail = check_repro(_write(tmp_path / "case", source))
    assert code == 1 and "setStorage" in tail, tail


# Two overlapping views of one non-leaf root, the second transposed and written in place, the
# first read. The drive retains the first's grad before a backward, not the second's (Note
# [Arguments whose grad is not retained]: eager asserts "out != nullptr" on it, which the CI
# smoke campaign found); the repro must do the same. torch.compile leaves the first's
# retained grad None (its gradient goes to the synthetic base), eager fills it.
RETAINED = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((63,), grad="nonleaf"),),
    inputs=(
        InputSpec("view", views=(ViewStep("as_strided", ((3, 3, 3), (13, 4, 1), 0)),)),
        InputSpec("view", views=(ViewStep("as_strided", ((3, 3, 3), (13, 4, 1), 26)),)),
    ),
    body=(
        Stmt("transpose_", ("a1", 0, 2)),
        Stmt("sin_", ("a1",)),
        Stmt("neg", ("a0",), ("v0",)),
    ),
    outputs=(OutSpec("ref", "v0"),),
    plan=CallPlan(calls=1),
)
# Found by the CI smoke campaign: a view made under no_grad of a tensor requiring grad. The
# in-place probe calls outside the plan's call site (the no_grad knob), so its repro must too:
# there eager refuses the write and the compile's output allows it.
NO_GRAD_VIEW = ProgramSpec(
    family="module",
    roots=(RootSpec((4,), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(
        Stmt("add", ("a0", "p0"), ("v0",)),
        Stmt("view", ("v0", "unfold", 0, 1, 2), ("v1",), ctx="no_grad"),
    ),
    outputs=(OutSpec("ref", "v1"),),
    module=ModuleSpec(params=((4,),)),
    plan=CallPlan(calls=1, config=("no_grad",)),
)


def test_the_repro_retains_grads_exactly_where_the_drive_does() -> None:
    """drive() calls retain_grad on non-leaf arguments before a call that runs backward (and
    only then; not on one changed in place by a metadata op); each repro call does too, and a
    probe's fresh call (made apart from the drive) neither retains nor runs under the call
    site."""
    raised = finding(
        CD,
        "exceptions",
        TC,
        D("exceptions", "exception", "returned", exc=ExcFacts("RuntimeError", "x", "call")),
    )
    with_backward = render_repro(RETAINED, raised, backend="aot_eager")
    _well_formed(with_backward)
    assert "    retain_grads(args, skip=(1,))\n" in with_backward
    assert "def retain_grads(" in with_backward
    no_backward = replace(RETAINED, plan=replace(RETAINED.plan, backward=False))
    assert "retain_grads" not in render_repro(no_backward, raised, backend="aot_eager")
    leaves_only = replace(RETAINED, roots=(RootSpec((63,), grad="none"),))
    assert "retain_grads" not in render_repro(leaves_only, raised, backend="aot_eager")
    probe = finding(
        CD,
        "autograd",
        TC,
        D(
            "autograd",
            "write",
            "allowed",
            CallRef("probe", probe="in-place"),
            index=0,
            expected="refused (E)",
            actual="allowed",
        ),
    )
    for spec in (RETAINED, NO_GRAD_VIEW):
        source = render_repro(spec, probe, backend="aot_eager")
        _well_formed(source)
        assert "retain_grads" not in source and "no_grad():  # the case's call site" not in source
    for spec, backward in ((RETAINED, True), (no_backward, False)):  # and the drive itself
        program = materialize(spec)
        args = program.make_inputs(0)
        with contextlib.suppress(RuntimeError):  # eager's assert, once retained
            program.module.drive(program.make_fn(), args)
        assert [a.retains_grad for a in args] == [backward, False]


@pytest.mark.slow
@pytest.mark.parametrize("spec", [RETAINED, NO_GRAD_VIEW], ids=["retained", "probe"])
def test_campaign_findings_that_depend_on_the_drive_become_repros_that_exit_1(
    spec: ProgramSpec, tmp_path: Path
) -> None:
    """Each saved repro runs as the campaign ran the case; these two did not (CI smoke, 11-26)."""
    result = run_case(spec)
    assert result.findings, result
    source = render_repro(spec, result.findings[0].to_dict(), backend="aot_eager")
    code, tail = check_repro(_write(tmp_path / "case", source))
    assert code == 1, tail


def test_check_repro_stops_when_told_and_leaves_no_process(tmp_path: Path) -> None:
    slow = _write(tmp_path / "slow", "import time\ntime.sleep(60)\n")
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    t0 = time.monotonic()
    with pytest.raises(ReproStopped):
        check_repro(slow, timeout=60, stop=stop)
    assert time.monotonic() - t0 < 10


@pytest.mark.slow
def test_a_crash_repro_exits_1_for_its_own_exception_2_for_another_3_for_eagers(
    tmp_path: Path,
) -> None:
    """Note [A repro's exit codes]: exit 1 proves the finding's own exception (its type and
    the words of its message); any other error is 'not reproduced' (2), never 1; the
    reference raising is 3."""
    entry = CORPUS / "crash.RuntimeError.fab079acb56d"  # expand: ... too few dimensions!
    case = _case(entry)
    own = _write(tmp_path / "own", _render_case(case))
    d = dict(case["differences"][0])
    d["exc"] = {**d["exc"], "message": "a message torch never raises here"}
    other = _write(tmp_path / "other", _render_case({**case, "differences": [d]}))
    # the reference raising (here: its program refuses) is no bug report: exit 3
    refusing = _render_case(case).replace("def f(a0):\n", "def f(a0):\n    assert False\n", 1)
    eager = _write(tmp_path / "eager", refusing)
    scripts = ("own", "other", "eager")
    runs = dict(zip(scripts, map(check_repro, (own, other, eager)), strict=True))
    assert runs["own"][0] == 1 and "BUG:" in runs["own"][1], runs["own"]
    assert runs["other"][0] == 2 and "another error, not this bug" in runs["other"][1], runs
    assert runs["eager"][0] == 3 and "AssertionError" in runs["eager"][1], runs["eager"]


def test_a_crash_repro_checks_the_differences_exception_not_the_findings_key() -> None:
    """A reused graph's crash is identified by its aspect (REUSED_ALIASING), not by an
    exception type: the repro still checks the exception the difference recorded (found by
    the smoke campaign: it checked for type 'Exception' and called the real bug another
    error)."""
    exc = ExcFacts("RuntimeError", "setStorage: sizes [1], out of bounds for storage of size 4")
    d = D("guards", "exception", "raised", CallRef("variant", relation="aliasing"), exc=exc)
    found = finding(CD, "guards", TC, d) | {"exc_type": None}
    source = render_repro(ALIASED, found, backend="aot_eager")
    _well_formed(source)
    # every run of the message, in order: another op's "out of bounds" is another bug (torch
    # 2.15's triage: as_strided_scatter's on 2.13 passed for setStorage's)
    check = "re.search('setStorage: sizes.*?out of bounds for storage of size', str(e), re.S)"
    assert f"type(e).__name__ == 'RuntimeError' and {check}" in source
    assert "\nimport re\n" in source
    pattern = "setStorage: sizes.*?out of bounds for storage of size"
    assert re.search(pattern, exc.message, re.S)
    other = "as_strided_scatter: sizes [1], out of bounds for storage of size 4"
    assert not re.search(pattern, other, re.S)


def test_a_compiler_failures_words_are_checked_as_str_gives_them() -> None:
    """BackendCompilerFailed records "RuntimeError: <message>"; str() of what the compiler
    raised has no such prefix, so the check's words must not either (a re-render of the
    checked-in U1 entry said "another error" for its own exception)."""
    message = "RuntimeError: While executing unfold, functionalization encountered a tensor"
    exc = ExcFacts("BackendCompilerFailed(RuntimeError)", message, "call")
    found = finding("crash", "exceptions", TC, D("exceptions", "exception", "raised", exc=exc))
    source = render_repro(PLAIN, found, backend="aot_eager")
    assert "'While executing unfold, functionalization encountered a tensor' in str(e)" in source


def _saved_runs(root: Path) -> dict[str, tuple[int | None, str]]:
    """Every rendered checked-in entry's own repro.py, run alone, two at a time."""
    entries = [e for e in ENTRIES if _case(e)["kind"] != "hang"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((e.name for e in entries), pool.map(check_repro, entries), strict=True))


@pytest.fixture(scope="module")
def saved_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int | None, str]]:
    return _saved_runs(tmp_path_factory.mktemp("saved"))


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda p: p.name)
def test_every_checked_in_repro_shows_its_own_finding(
    entry: Path, saved_runs: dict[str, tuple[int | None, str]]
) -> None:
    """The entry's repro.py as checked in, run where pyfy-fuzz cannot be imported: a torch
    bug exits 1 with a BUG line naming the entry's own first difference (the check read off
    its identity), an interpreter crash dies; a fixed bug of ours exits 0."""
    case = _case(entry)
    if case["kind"] == "hang":
        pytest.skip("a hang's repro runs until its timeout")
    code, tail = saved_runs[entry.name]
    if case["expected"] == "pass":
        assert code == 0, tail
        return
    if case["kind"] == "interpreter-crash":
        assert code is not None and code < 0, tail
        return
    assert code == 1 and "BUG: " in tail, tail
    check = read_check(spec_from_dict(case["spec"]), case)
    if check.compare in ("values", "equal", "presence", "later"):  # names the property
        assert check.label in tail, (check.label, tail)


def test_between_two_backwards_the_repro_reads_the_grads_as_the_drive_does(tmp_path: Path) -> None:
    """The drive reads each argument's .grad between the backwards; on a view whose base was
    written that read rebuilds its grad_fn, which the second backward takes -- a repro that
    does not read them shows another second backward (the issue's grads.a2b7)."""
    second = [c for c in CASES if c[0] in ("second-grads", "second-raises")]
    assert len(second) == 2
    for _, spec, found in second:
        source = render_repro(spec, found, backend="aot_eager")
        _well_formed(source)
        read = source.index("and a.requires_grad and (a.is_leaf or a.retains_grad)]")
        assert source.index("retain_graph=True") < read < source.rindex("loss.backward()")
        assert "args = make_inputs(" in source
    first = render_repro(
        SECOND,
        finding(CD, "grads", TC, D("grads", "grad", "values", name="a1", **V)),
        backend="aot_eager",
    )
    assert "a.retains_grad)]" not in first  # one backward: nothing read between


def test_a_backward_node_without_seq_nr_is_its_own_check_not_an_unmapped_one() -> None:
    """The two seq_nr mapping kinds are two entries (the oracle's no_seq_nr and unmapped), and
    each repro checks its own: a node with no seq_nr is not counted as unmapped."""
    from types import SimpleNamespace

    from pyfy_fuzz.corpus import _repro_helpers as H

    def node(name: str, **meta: Any) -> SimpleNamespace:
        return SimpleNamespace(name=name, meta=meta)

    graphs = {
        "forward": [node("mul", seq_nr=5)],
        "backward": [
            node("mul_1", seq_nr=5, autograd_backward=True),
            node("as_strided", seq_nr=None, autograd_backward=True),
            node("neg", seq_nr=-1, autograd_backward=True),
            node("sin_1", seq_nr=9, autograd_backward=True),
            node("add", seq_nr=9, autograd_backward=True, is_gradient_acc=True),
        ],
    }
    assert [n.name for n in H.unmapped(graphs)] == ["sin_1"]
    assert [n.name for n in H.no_seq_nr(graphs)] == ["as_strided", "neg"]
    no_seq = D("seq_nr", "seq_nr", "no_seq_nr", note="backward node as_strided has no seq_nr")
    spec = CASES[0][1]
    source = render_repro(spec, finding(CD, "seq_nr", TC, no_seq), backend="aot_eager")
    assert "no_seq_nr(graphs)" in source and "unmapped(graphs)" not in source


def test_a_later_calls_exception_is_compared_call_by_call_under_the_campaigns_dynamic() -> None:
    """Two renderer bugs the GPU corpus's triage found: outcome() returned at the first call
    that raised, so an earlier call raising on both sides hid the variant's difference
    (guards.8569), and without `dynamic=False` a later call of other shapes recompiled with
    dynamic shapes, another compile than pyfy-fuzz's (versions.700a)."""
    returned = D(
        "exceptions",
        "exception",
        "returned",
        CallRef("variant", relation="shape"),
        exc=ExcFacts("RuntimeError", "boom", "call", ""),
    )
    spec = replace(SEQUENCE, plan=CallPlan(calls=2, variant="shape"))
    source = render_repro(spec, finding(CD, "guards", TC, returned), backend="aot_eager")
    outcome = _definition(source, "outcome")
    assert "        try:" in outcome and outcome.rstrip().endswith("return raised"), outcome
    assert "dynamic=False" in source
    one_call = render_repro(MUTATED, CASES[0][2], backend="aot_eager")
    assert "dynamic=" not in one_call


def test_a_crash_at_a_later_call_runs_each_call_alone_and_raises_the_last() -> None:
    """Issue 36's run G's crash.RuntimeError.dbbb: the crash was at the third call, after a
    call that raised on both sides; run(fn) made the calls in one loop with no try, so eager
    "raised" and the repro exited 3. Each call runs alone, and only the last one's error is
    raised."""
    raised = D(
        "exceptions",
        "exception",
        "raised",
        CallRef("variant", relation="shape"),
        exc=ExcFacts("RuntimeError", "boom", "call", ""),
    )
    spec = replace(SEQUENCE, plan=CallPlan(calls=2, variant="shape"))
    source = render_repro(spec, finding("crash", "exceptions", TC, raised), backend="aot_eager")
    _well_formed(source)
    run = _definition(source, "run")
    assert "        try:" in run and run.rstrip().endswith("raise raised"), run
    assert "\nexpected = run(f)  # eager runs\n" in source


def test_a_modules_buffers_version_is_read_off_the_module() -> None:
    """Run G's compile-divergence.versions.a872: the version that moved was a module buffer's,
    and the repro's versions(args) only looks at the arguments: the repro passed."""
    moved = D("versions", "version", "moved", name="self.b0", expected=False, actual=True)
    source = render_repro(MODULE, finding(CD, "versions", TC, moved), backend="aot_eager")
    _well_formed(source)
    observe = _definition(source, "observe")
    assert "before = fn.b0._version" in observe, observe
    assert "return fn.b0._version != before" in observe, observe


def test_an_outputs_is_inference_is_called_not_compared_as_a_method() -> None:
    """Tensor.is_inference is a method: `out.is_inference` compares two bound methods, which
    always differ, so such a repro could never say fixed (the issue-36 triage's e9be)."""
    d = D("autograd", "output", "is_inference", index=0, expected=True, actual=False)
    spec = CASES[0][1]
    check = read_check(spec, finding(CD, "autograd", TC, d))
    assert check.fact.endswith(".is_inference()"), check.fact


def test_an_inputs_values_are_read_after_the_backwards_the_campaign_ran() -> None:
    """observe reads the arguments after the drive's backwards: a custom Function whose
    backward writes a forward input shows only then (the issue-36 triage's f88a)."""
    d = D("mutation", "input", "values", name="a0", **V)
    writes = replace(MUTATED, functions=(FunctionSpec(body="bw_mutate"),))
    for second, backward in ((None, "first"), ("retain", "second-outcome")):
        plan = replace(writes.plan, backward=True, second_backward=second)
        spec = replace(writes, plan=plan)
        assert read_check(spec, finding(CD, "mutation", TC, d)).backward == backward
    no_backward = replace(writes, plan=replace(writes.plan, backward=False))
    assert read_check(no_backward, finding(CD, "mutation", TC, d)).backward == ""
    plain = replace(MUTATED, plan=replace(MUTATED.plan, backward=True))
    assert read_check(plain, finding(CD, "mutation", TC, d)).backward == ""  # stays short
