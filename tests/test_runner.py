"""run_case end to end: real eager, torch.compile and pythonify on small programs, with planted
bugs in the pythonify implementation (the file) and one real torch bug."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from generators._spec import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt, ViewStep
from pyfy_fuzz.observe import Target, observe_subject
from pyfy_fuzz.pythonify import PythonifyUnsupported
from pyfy_fuzz.runner import _nondeterminism, run_case
from pyfy_fuzz.subjects import BundledPythonify, Produced

from .oracles.helpers import spec

MUT = spec([("add_", ("a0", 1), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="none")
TRAIN = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
    ["v1"],
    plan=CallPlan(calls=2, variant="shape"),
)


def test_clean_program_has_no_findings_and_compiles_once():
    torch._dynamo.utils.counters.clear()
    r = run_case(MUT)
    assert r.status == "ok" and r.findings == [] and r.unsupported is None
    assert "runtime/input_mutation/data" in r.wrapper_paths
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    assert set(r.timings) >= {"materialize_s", "eager_s", "compile_s", "oracles_s", "total_s"}


def test_training_program_with_guard_variant_is_clean():
    r = run_case(TRAIN)
    assert r.status == "ok" and r.findings == [], [f.explanation for f in r.findings]
    assert "autograd/training" in r.wrapper_paths


class _Plant(BundledPythonify):
    """The bundled generator with a bug appended to the file it writes."""

    def __init__(self, patch: str) -> None:
        super().__init__()
        self.patch = patch

    def produce(self, fn: Any, args: Any, path: Path, **kw: Any) -> Produced:
        out = super().produce(fn, args, path, **kw)
        out.path.write_text(out.path.read_text() + "\n" + self.patch)
        return out


def test_planted_generator_bug_is_a_pythonify_divergence():
    patch = "_call = call\ndef call(*args):\n    out = _call(*args)\n    return out * 2\n"
    r = run_case(MUT, impl=_Plant(patch))
    kinds = {(f.kind, f.oracle, f.subject) for f in r.findings}
    assert ("pythonify-divergence", "outputs", "pythonify") in kinds, kinds
    assert not any(f.subject == "torch.compile" for f in r.findings)


def test_planted_missing_guard_is_guard_unsound():
    patch = "def _check_guards(*args, **kwargs):\n    return None\n"
    r = run_case(TRAIN, impl=_Plant(patch))
    found = [f for f in r.findings if f.kind == "guard-unsound"]
    assert found and found[0].oracle == "guards", [f.explanation for f in r.findings]


def test_missing_guard_with_right_values_breaks_guard_parity():
    """Elementwise: without its guards the file computes the right values for the variant
    shape, yet torch.compile recompiled for it: the file lacks a guard torch has."""
    shapely = spec(
        [("sin", ("a0",), ("v0",))], ["v0"], grad="none", plan=CallPlan(calls=1, variant="shape")
    )
    assert run_case(shapely).findings == []  # with its guards: a PythonifyGuardError, fine
    r = run_case(shapely, impl=_Plant("def _check_guards(*args, **kwargs):\n    return None\n"))
    (f,) = r.findings
    assert (f.kind, f.oracle, f.subject) == ("pythonify-divergence", "guards", "pythonify")
    assert "guards rejected the inputs" in f.explanation and "it guards a0" in f.explanation


def test_guard_parity_ignores_inputs_the_graph_does_not_read():
    """Dynamo also guards a tensor the function only returns; the file need not (its graph
    never reads it), so a variant that changes only that tensor is no finding."""
    passthrough = ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((3,), grad="none", dtype="float64"), RootSpec((2,), grad="none")),
        inputs=(InputSpec("root", root=0), InputSpec("root", root=1)),
        body=(Stmt("sin", ("a0",), ("v0",)),),
        outputs=(OutSpec("ref", "v0"), OutSpec("ref", "a1")),
        plan=CallPlan(calls=1, variant="dtype"),  # float32 -> float64: only a1 changes
    )
    r = run_case(passthrough, keep_evidence=True)
    assert r.evidence is not None and r.evidence.compiled.variant.recompiled
    assert r.findings == [], [f.explanation for f in r.findings]


class _Declines(BundledPythonify):
    def produce(self, *a: Any, **kw: Any) -> Produced:
        raise PythonifyUnsupported("planted", "test")


class _Crashes(BundledPythonify):
    def produce(self, *a: Any, **kw: Any) -> Produced:
        raise ZeroDivisionError("planted crash in the generator")


def test_unsupported_still_compares_torch_compile():
    r = run_case(MUT, impl=_Declines())
    assert r.status == "ok" and r.findings == [] and "planted" in (r.unsupported or "")


def test_implementation_crash_is_a_pythonify_crash():
    r = run_case(MUT, impl=_Crashes())
    (f,) = r.findings
    assert (f.kind, f.subject, f.exc_type) == ("crash", "pythonify", "ZeroDivisionError")


def test_torch_aliasing_guard_bug_is_found():
    """torch 2.13: Dynamo does not guard on storage shared through set_; a second call with
    unaliased inputs reuses the synthetic-base graph and returns the stale value."""
    s = ProgramSpec(
        family="synthetic_base",
        roots=(RootSpec((4, 3)),),
        inputs=(
            InputSpec("root"),
            InputSpec("set_shared", views=(ViewStep("as_strided", ((1,), (1,), 10)),)),
        ),
        body=(Stmt("mul_", ("a0", 2)), Stmt("neg", ("a1",), ("v0",))),
        outputs=(OutSpec("ref", "v0"),),
        plan=CallPlan(calls=1, variant="aliasing", backward=False),
    )
    r = run_case(s)
    kinds = {(f.kind, f.oracle) for f in r.findings}
    if ("compile-divergence", "guards") not in kinds:
        pytest.skip(f"this torch ({torch.__version__}) guards set_-shared storage: {kinds}")
    assert "variant call (aliasing)" in next(
        f.explanation for f in r.findings if f.oracle == "guards"
    )


def test_nondeterministic_eager_is_discarded():
    from generators import materialize

    program = materialize(MUT)
    count = iter(range(100))

    def drifting(a0: torch.Tensor) -> torch.Tensor:
        return a0 + next(count)

    a = observe_subject(program, Target("eager", drifting))
    b = observe_subject(program, Target("eager", drifting))
    assert _nondeterminism(a, b) is not None
    fn = program.make_fn()
    assert (
        _nondeterminism(
            observe_subject(program, Target("eager", fn)),
            observe_subject(program, Target("eager", fn)),
        )
        is None
    )


def test_bad_backend_is_rejected():
    with pytest.raises(ValueError, match="backend must be one of"):
        run_case(MUT, backend="nope")


def test_retained_second_backward_is_compared_not_refused():
    """by_design: donated-buffer-retain-graph -- donation off for a retained second backward."""
    s = spec(
        [("mul2", ("a0",), ("v0",)), ("sin", ("v0",), ("v1",))],
        ["v1"],
        plan=CallPlan(calls=1, second_backward="retain"),
    )
    r = run_case(s, keep_evidence=True)
    assert r.findings == [], [f.explanation for f in r.findings]
    assert r.evidence is not None and isinstance(r.evidence.compiled.calls[0].second, list)


def test_module_state_does_not_make_eager_look_nondeterministic():
    """The probes change module state (BatchNorm running stats); eager's reproducibility run
    skips them, so the variant call must come before them or the two eager runs differ."""
    from generators._spec import ModuleSpec

    s = ProgramSpec(
        family="module",
        roots=(RootSpec((4, 2), grad="leaf"), RootSpec((4, 2))),
        inputs=(InputSpec("root", root=0), InputSpec("root", root=1)),
        body=(Stmt("batchnorm", ("a0",), ("v0",)), Stmt("add", ("v0", "a1"), ("v1",))),
        outputs=(OutSpec("ref", "v1"),),
        module=ModuleSpec(batchnorm=2),
        plan=CallPlan(calls=1, variant="aliasing"),
    )
    r = run_case(s)
    assert r.status == "ok", r.reason


def test_torch_backward_bug_is_reproduced_by_the_file_not_blamed_on_it():
    """torch 2.13 (triage T4): with the AOT front-end, the min-cut partitioner saves a
    duplicated non-leaf input that the forward mutates, and backward raises. The capture's
    forced backward hits the same error; the file must reproduce it, not fail to exist."""
    s = ProgramSpec(
        family="dedupe",
        roots=(RootSpec((4,), dtype="float64", grad="nonleaf"),),
        inputs=(InputSpec("root"), InputSpec("dup", of=0)),
        body=(Stmt("mul_", ("a1", 2)), Stmt("sin_", ("a0",))),
        outputs=(OutSpec("ref", "a0"),),
        plan=CallPlan(calls=1, frontend="aot"),
    )
    r = run_case(s)
    assert r.pythonified_path is not None, r.unsupported
    assert not [f for f in r.findings if f.subject == "pythonify"], [
        f.explanation for f in r.findings
    ]
    if not any(f.kind == "crash" and f.subject == "torch.compile" for f in r.findings):
        pytest.skip(f"this torch ({torch.__version__}) no longer has the bug")


@pytest.mark.parametrize(
    "spec_json",
    [
        # a non-leaf argument (made by a clone in make_inputs) mutated in place: eager's
        # backward also runs the clone's node, which is not the function's
        '{"body": [{"args": ["a1", 2], "ctx": null, "op": "mul_", "outs": []}], "family": '
        '"input_mutation", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, '
        '"value": 0, "views": []}, {"kind": "root", "of": 0, "root": 1, "value": 0, "views": '
        '[]}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "a0", "value": '
        '0}, {"items": [], "kind": "ref", "ref": "a0", "value": 0}], "plan": {"backward": true, '
        '"calls": 1, "dynamic": false, "frontend": "dynamo", "mode": null, "saved_tensor_hooks"'
        ': false, "second_backward": null, "tangents": "ones", "variant": null}, "roots": '
        '[{"dtype": "float32", "grad": "nonleaf", "layout": "contiguous", "shape": [], '
        '"subclass": null}, {"dtype": "float32", "grad": "nonleaf", "layout": "contiguous", '
        '"shape": [], "subclass": null}], "version": 1}',
        # sin_ of an intermediate: the partitioner computes sin's backward cos in the forward,
        # with sin_'s seq_nr; no eager node is named cos
        '{"body": [{"args": ["a0", "p0"], "ctx": null, "op": "add", "outs": ["v0"]}, {"args": '
        '["v0"], "ctx": null, "op": "sin_", "outs": []}], "family": "module", "functions": [], '
        '"inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": '
        '{"batchnorm": null, "buffers": [], "full_backward_hook": false, "params": [[0]], '
        '"tied": false}, "outputs": [{"items": [], "kind": "ref", "ref": "v0", "value": 0}], '
        '"plan": {"backward": true, "calls": 1, "dynamic": false, "frontend": "dynamo", "mode": '
        'null, "saved_tensor_hooks": false, "second_backward": null, "tangents": "ones", '
        '"variant": null}, "roots": [{"dtype": "float32", "grad": "none", "layout": '
        '"contiguous", "shape": [1, 0], "subclass": null}], "version": 1}',
    ],
    ids=["clone-of-a-nonleaf-argument", "cos-derived-in-forward"],
)
def test_seq_nr_order_false_positives_of_the_20_minute_campaign(spec_json: str) -> None:
    r = run_case(ProgramSpec.from_json(spec_json))
    assert not [f for f in r.findings if f.oracle == "seq_nr"], [f.explanation for f in r.findings]
