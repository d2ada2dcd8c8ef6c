"""run_case end to end: real eager, torch.compile and pythonify on small programs, with planted
bugs in the pythonify implementation (the file) and one real torch bug."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from generators._spec import (
    CallPlan,
    FunctionSpec,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
    ViewStep,
)
from pyfy_fuzz.case.ground_truth import nondeterminism
from pyfy_fuzz.case.observe import Target, observe_subject
from pyfy_fuzz.case.runner import case_backend, run_case
from pyfy_fuzz.case.subjects import BundledPythonify, Produced
from pyfy_fuzz.pythonify import PythonifyUnsupported

from .oracles.helpers import spec

MUT = spec([("add_", ("a0", 1), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="none")
TRAIN = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
    ["v1"],
    plan=CallPlan(calls=2, variant="shape"),
)


def test_clean_program_has_no_findings_and_compiles_twice():
    """Twice: the capture, and the stock torch.compile the case is judged on (Note [The stock
    reference] in subjects/stock.py); no recompile."""
    torch._dynamo.utils.counters.clear()
    r = run_case(MUT)
    assert r.status == "ok" and r.findings == [] and r.unsupported is None
    assert "runtime/input_mutation/data" in r.wrapper_paths
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 2
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
        roots=(RootSpec((3,), grad="none", dtype="int64"), RootSpec((2,), grad="none")),
        inputs=(InputSpec("root", root=0), InputSpec("root", root=1)),
        body=(Stmt("sin", ("a0",), ("v0",)),),
        outputs=(OutSpec("ref", "v0"), OutSpec("ref", "a1")),
        plan=CallPlan(
            calls=1, variant="dtype"
        ),  # float32 -> float64: only a1 changes (int64 stays)
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
    assert nondeterminism(a, b) is not None
    fn = program.make_fn()
    assert (
        nondeterminism(
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


# ------------------------------------------------ false alarms of the 10-minute campaign


@contextlib.contextmanager
def _compiled_plant(wrap: Any) -> Iterator[None]:
    """A planted torch bug: the stock torch.compile a case is judged on, wrapped."""
    # the module (the package's attribute of that name is the function)
    compile_once = importlib.import_module("pyfy_fuzz.case.subjects.compile_once")
    real = compile_once.plain_compile
    compile_once.plain_compile = lambda *a, **kw: wrap(real(*a, **kw))
    try:
        yield
    finally:
        compile_once.plain_compile = real


def _compile_findings(r: Any) -> list[Any]:
    return [f for f in r.findings if f.subject == "torch.compile"]


# An unused rand_like, then a randn_like that is returned.
DEAD_RAND = spec(
    [("rand_like", ("a0",), ("v0",)), ("randn_like", ("a0",), ("v1",))],
    ["v1"],
    grad="none",
    plan=CallPlan(calls=1),
)


def test_unused_random_op_keeps_eagers_random_numbers():
    """by_design: rng-dead-code. Without fallback_random the unused rand_like is dead-code-
    eliminated under aot_eager and randn_like draws other numbers than eager's."""
    r = run_case(DEAD_RAND)
    assert r.status == "ok" and r.findings == [], [f.explanation for f in r.findings]


def test_a_random_draw_torch_compile_adds_is_still_reported():
    def extra_draw(fn: Any) -> Any:
        def call(*args: Any) -> Any:
            torch.rand(1)  # the stream moves: every later draw differs from eager's
            return fn(*args)

        return call

    with _compiled_plant(extra_draw):
        r = run_case(DEAD_RAND)
    assert [(f.kind, f.oracle) for f in _compile_findings(r)] == [("compile-divergence", "outputs")]


# An out-of-bounds as_strided of a0 (3 elements); dead unless returned.
_OOB = ("view", ("a0", "as_strided", (10,), (1,), 0), ("v0",))


@pytest.mark.parametrize(
    "s",
    [
        spec([_OOB, ("sin", ("a0",), ("v1",))], ["v1"], grad="none", plan=CallPlan(calls=1)),
        # in bounds for the view argument's storage, out of bounds once the aliasing variant
        # passes a compact copy: only the variant call raises (the guards oracle's)
        spec(
            [("view", ("a0", "as_strided", (4,), (1,), 0), ("v0",)), ("sin", ("a0",), ("v1",))],
            ["v1"],
            grad="none",
            shape=(4,),
            views=(ViewStep("slice", (0, 1, 4, 1)),),
            plan=CallPlan(calls=1, variant="aliasing"),
        ),
    ],
    ids=["plan-call", "variant-call"],
)
def test_error_of_a_statement_whose_result_is_dead_is_by_design(s: ProgramSpec) -> None:
    r = run_case(s, keep_evidence=True)
    assert r.status == "ok" and r.findings == [], [f.explanation for f in r.findings]
    assert "dead-code-error" in r.excused
    assert r.evidence is not None and all(c.raised is None for c in r.evidence.eager.calls)


def _swallow_errors(fn: Any) -> Any:
    """A torch.compile that returns where it must raise."""

    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:
            return args[0].sin()

    return call


def test_error_of_a_live_statement_is_reported_though_dead_code_raises_first():
    """The aliasing variant passes a compact copy: eager raises at the dead as_strided first;
    without it, at the returned one. A torch.compile that returns anyway has a real bug."""
    window = ("a0", "as_strided", (4,), (1,), 0)
    s = spec(
        [("view", window, ("v0",)), ("view", window, ("v1",))],
        ["v1"],
        grad="none",
        shape=(4,),
        views=(ViewStep("slice", (0, 1, 4, 1)),),
        plan=CallPlan(calls=1, variant="aliasing"),
    )
    assert run_case(s).findings == []  # torch.compile raises there too
    with _compiled_plant(_swallow_errors):
        r = run_case(s)
    found = [(f.kind, f.oracle) for f in _compile_findings(r)]
    assert found == [("compile-divergence", "guards")], found
    assert "dead-code-error" not in r.excused


def test_dead_code_reference_only_where_the_raising_statement_is_dead():
    """The decision itself, on observations (no compile): a subject that returns where eager
    raised is judged against the live program only if the error came from dead code."""
    from pyfy_fuzz.case.dead_code import dead_code_errors

    from .oracles.helpers import observe

    dead = spec([_OOB, ("sin", ("a0",), ("v1",))], ["v1"], grad="none", plan=CallPlan(calls=1))
    live = spec([_OOB, ("neg", ("v0",), ("v1",))], ["v1"], grad="none", plan=CallPlan(calls=1))
    both = spec(
        [_OOB, ("view", ("a0", "as_strided", (20,), (1,), 0), ("v1",))],
        ["v1"],
        grad="none",
        plan=CallPlan(calls=1),
    )
    for s, expect in ((dead, True), (live, False), (both, False)):
        _, eager = observe(s, None, "eager")
        _, compiled = observe(s, _swallow_errors)
        assert eager.calls[0].raised is not None and compiled.calls[0].raised is None
        assert (dead_code_errors(s, "cpu", eager, compiled) is not None) is expect, s.body
        _, raising = observe(s)  # a torch.compile that kept the dead code: nothing to decide
        assert dead_code_errors(s, "cpu", eager, raising) is None


def test_write_into_a_custom_function_view_output_is_by_design():
    """by_design: custom-function-view-write (eager refuses, torch.compile allows)."""
    s = replace(
        spec([("mul2", ("a0",), ("v0",)), ("apply_fn", (0, "v0"), ("v1",))], ["v1"]),
        functions=(FunctionSpec(body="view"),),
    )
    r = run_case(s)
    assert r.status == "ok" and r.findings == [], [f.explanation for f in r.findings]
    assert "custom-function-view-write" in r.excused


EMPTY_DROPOUT = [
    # eager's dropout returns the empty argument itself: the output *is* the input (a leaf)
    spec([("dropout", ("a0",), ("v0",))], ["v0"], shape=(0,), plan=CallPlan(calls=1)),
    # ... and the write into the "result" modifies the argument sin saved: eager's own
    # backward raises
    spec(
        [
            ("sin", ("a0",), ("v0",)),
            ("dropout", ("a0",), ("v1",)),
            ("mul_", ("v1", 2), ()),
            ("add", ("v0", "v1"), ("v2",)),
        ],
        ["v2"],
        grad="nonleaf",
        shape=(0,),
        plan=CallPlan(calls=1),
    ),
]


@pytest.mark.parametrize("s", EMPTY_DROPOUT, ids=["returned", "backward-trips"])
def test_eager_dropout_returning_its_empty_input_is_discarded(s: ProgramSpec) -> None:
    r = run_case(s)
    assert r.status == "discarded" and r.findings == [], [f.explanation for f in r.findings]
    assert "eager misbehaves: dropout" in (r.reason or "")


def test_dropout_of_a_nonempty_tensor_is_still_compared():
    s = replace(EMPTY_DROPOUT[1], roots=(RootSpec((3,), grad="nonleaf"),))
    s = replace(s, body=s.body[:2] + s.body[3:])  # no write: eager's backward runs
    assert run_case(s).findings == []

    def doubled(fn: Any) -> Any:
        return lambda *args: fn(*args) * 2

    with _compiled_plant(doubled):
        r = run_case(s)
    assert r.status == "ok"
    assert ("compile-divergence", "outputs") in [(f.kind, f.oracle) for f in _compile_findings(r)]


def test_the_file_is_judged_on_the_compile_it_models() -> None:
    """Note [Two references] (oracles/evidence.py): torch.compile's compiling call gives
    eager's leaf for a view returned after grad mode is turned off, every later call a view
    with a grad_fn. The file, like any later call, gives the view: against the stock compile's
    call 0 that read as a pythonify divergence (found by a campaign); against the capture's
    compile, which had already run, it is none. With a second call torch's own divergence from
    eager shows, as torch's."""
    s = ProgramSpec(
        family="output_aliasing",
        roots=(RootSpec((1,), grad="leaf"),),
        inputs=(InputSpec("root"),),
        body=(
            Stmt("set_grad_enabled", (False,)),
            Stmt("view", ("a0", "slice", 0, 1, 3, 1), ("v0",)),
        ),
        outputs=(OutSpec("ref", "v0"),),
        plan=CallPlan(calls=1, backward=False, frontend="aot", tangents="ones"),
    )
    r = run_case(s)
    assert r.status == "ok" and r.pythonified_path is not None, r.unsupported
    assert not r.findings, [(f.subject, f.explanation) for f in r.findings]
    assert "capture_run_s" in r.timings
    r = run_case(replace(s, plan=replace(s.plan, calls=2)))
    assert {f.subject for f in r.findings} == {"torch.compile"}, [f.explanation for f in r.findings]


def test_hooks_are_observed_for_every_subject_and_a_dropped_one_is_a_finding():
    """The program's HOOK_LOG (tensor hooks that log, a post-accumulate-grad hook, hooks on
    each non-leaf argument's grad_fn) is read after each call: every subject runs the same
    hooks, and a file that drops its input hooks is reported by the grads oracle."""
    from tests.test_repro import HOOKED

    r = run_case(HOOKED, keep_evidence=True)
    assert r.findings == [] and r.unsupported is None, [f.explanation for f in r.findings]
    ev = r.evidence
    assert ev is not None and ev.pythonified is not None
    expected = ev.eager.calls[0].hooks
    assert len(expected) == 5 and any("node pre" in h for h in expected), expected
    assert sorted(ev.pythonified.calls[1].hooks) == sorted(expected)

    class _DropsAHook(BundledPythonify):
        def produce(self, fn: Any, args: Any, path: Path, **kw: Any) -> Produced:
            out = super().produce(fn, args, path, **kw)
            src = out.path.read_text()
            dropped = src.replace("    L['a0'].register_hook(G['_log_grad_b'])\n", "")
            assert dropped != src
            out.path.write_text(dropped)
            return out

    r = run_case(HOOKED, impl=_DropsAHook())
    assert any(
        f.oracle == "grads" and "hooks ran" in f.explanation and f.subject == "pythonify"
        for f in r.findings
    ), [f.explanation for f in r.findings]


def test_aliased_mutated_subclass_arguments_are_refused_by_design():
    """Two TwoTensor views of one base, one mutated: the capture's copies alias as the
    arguments do (they were plain tensors, so the file was compiled for unaliased inputs and
    gave values torch.compile did not), and torch refuses a synthetic base over subclasses
    with 'not supported today': a documented refusal, not a finding."""
    s = ProgramSpec(
        family="subclass",
        roots=(RootSpec((6,), subclass="two_tensor"),),
        inputs=(
            InputSpec("view", views=(ViewStep("slice", (0, 0, 3, 1)),)),
            InputSpec("view", views=(ViewStep("slice", (0, 2, 5, 1)),)),
        ),
        body=(Stmt("mul_", ("a0", 2)), Stmt("add1", ("a1",), ("v0",))),
        outputs=(OutSpec("ref", "v0"),),
        plan=CallPlan(calls=1, backward=False),
    )
    r = run_case(s)
    assert r.findings == [], [f.explanation for f in r.findings]
    assert "compile-refuses-subclass-synthetic-base" in r.excused, r.excused


def test_a_set_beside_another_mutation_of_the_argument_is_refused_by_design():
    """a0.set_(a0 * 2) then a0.mul_(2): AOTAutograd replays a set_ of a graph input only when
    the input's other mutations stay in the graph too, and says 'not supported today'
    otherwise (found by issue 17's set_ metadata mutations: a documented refusal)."""
    s = ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((4,), grad="none"), RootSpec((4,), grad="leaf")),
        inputs=(InputSpec("root", root=0), InputSpec("root", root=1)),
        body=(
            Stmt("mul", ("a0", 2), ("v0",)),
            Stmt("set_", ("a0", "v0")),
            Stmt("mul_", ("a0", 2)),
            Stmt("mul", ("a0", "a1"), ("v1",)),
        ),
        outputs=(OutSpec("ref", "v1"),),
        plan=CallPlan(calls=1, frontend="aot"),
    )
    r = run_case(s)
    assert r.findings == [], [f.explanation for f in r.findings]
    assert "compile-refuses-set-with-other-mutations" in r.excused, r.excused


def test_a_mirror_tensor_rebuilt_with_torchs_outer_stride_is_no_finding() -> None:
    """MirrorTensor.__tensor_unflatten__ honours the outer size and stride torch asks for, as
    torch's subclass contract says (the 10-minute campaign of 2026-11-27 saved our subclass
    returning its inner tensor's stride for an empty (2, 0) view as a torch crash,
    crash.AssertionError.f40c9f70ebe5: a bug of ours)."""
    from generators import spec_from_dict

    s = spec_from_dict(
        {
            "body": [
                {"args": ["a1"], "ctx": None, "op": "zero_", "outs": []},
                {"args": ["a0"], "ctx": None, "op": "sin", "outs": ["v0"]},
            ],
            "family": "subclass",
            "functions": [],
            "inputs": [
                {"kind": "root", "of": 0, "root": 0, "value": 0, "views": []},
                {
                    "kind": "view",
                    "of": 0,
                    "root": 0,
                    "value": 0,
                    "views": [
                        {"args": [2, 1], "op": "reshape"},
                        {"args": [1, 0, 0, 2], "op": "slice"},
                    ],
                },
            ],
            "module": None,
            "outputs": [{"items": [], "kind": "ref", "ref": "v0", "value": 0}],
            "plan": {"backward": True, "calls": 2, "config": ["debug_assert"]},
            "roots": [
                {
                    "dtype": "float32",
                    "grad": "none",
                    "layout": "contiguous",
                    "shape": [2],
                    "subclass": "mirror",
                }
            ],
            "version": 1,
        }
    )
    r = run_case(s, backend="aot_eager")
    assert r.status == "ok", r
    assert [f for f in r.findings if f.kind == "crash"] == [], [f.explanation for f in r.findings]


def test_the_file_regenerates_aliased_outputs_as_torch_does_without_view_replay() -> None:
    """Under view_replay_for_aliased_outputs=False (the `no_view_replay` knob) torch
    regenerates an aliased output with as_strided, not by replaying its views; the file did
    replay them and raised (the 10-minute campaign of 2026-11-27,
    crash.AssertionError.b7163e17c9ab: a bug of ours)."""
    from generators import spec_from_dict

    s = spec_from_dict(
        {
            "body": [
                {"args": ["a0", 2], "ctx": None, "op": "fill_", "outs": []},
                {"args": ["a1", "unfold", 0, 1, 2], "ctx": None, "op": "view", "outs": ["v2"]},
            ],
            "family": "synthetic_base",
            "functions": [],
            "inputs": [
                {
                    "kind": "set_shared",
                    "of": 0,
                    "root": 0,
                    "value": 0,
                    "views": [{"args": [[3], [1], 6], "op": "as_strided"}],
                },
                {
                    "kind": "set_shared",
                    "of": 0,
                    "root": 0,
                    "value": 0,
                    "views": [{"args": [[1], [1], 7], "op": "as_strided"}],
                },
            ],
            "module": None,
            "outputs": [{"items": [], "kind": "ref", "ref": "v2", "value": 0}],
            "plan": {"backward": False, "calls": 1, "config": ["no_view_replay"]},
            "roots": [
                {"dtype": "int64", "grad": "none", "layout": "contiguous", "shape": [3, 1, 3]},
                {"dtype": "float32", "grad": "none", "layout": "contiguous", "shape": []},
            ],
            "version": 1,
        }
    )
    r = run_case(s, backend="aot_eager")
    assert r.status == "ok", r
    assert [f.explanation for f in r.findings if f.subject == "pythonify"] == []


# The 1-hour campaign's pythonify-divergence.FailOnRecompileLimitHit.ab4dda07476f: an effect op,
# a variant and two sequence calls of other guards, probes outside the autocast call site.
_RECOMPILES = (
    '{"body": [{"args": ["a1"], "ctx": null, "op": "effect_op", "outs": []}], "family": '
    '"effects", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, '
    '"views": []}, {"kind": "root", "of": 0, "root": 1, "value": 0, "views": []}], "module": '
    'null, "outputs": [{"items": [], "kind": "ref", "ref": "a0", "value": 0}], "plan": '
    '{"backend": null, "backward": false, "calls": 1, "config": ["autocast"], "dynamic": false, '
    '"frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, '
    '"second_backward": null, "sequence": ["dtype", "shape+dtype"], "tangents": "ones", '
    '"variant": "aliasing"}, "roots": [{"dtype": "float32", "grad": "leaf", "layout": '
    '"contiguous", "shape": [], "subclass": null}, {"dtype": "float64", "grad": "leaf", '
    '"layout": "contiguous", "shape": [1, 1], "subclass": null}], "version": 1}'
)


def test_the_capture_and_the_stock_compile_do_not_share_a_recompile_limit():
    """Note [One code object, several compiles]: under Dynamo's default limit the stock
    compile hit FailOnRecompileLimitHit on the capture's cache entries, a pythonify finding."""
    from generators import ProgramSpec
    from pyfy_fuzz.case.subjects import stock

    s = ProgramSpec.from_json(_RECOMPILES)
    torch._dynamo.reset()
    assert run_case(s, backend="aot_eager").findings == []
    torch._dynamo.reset()
    original, stock.RECOMPILE_LIMIT = stock.RECOMPILE_LIMIT, 8  # Dynamo's default
    try:
        found = run_case(s, backend="aot_eager").findings
    finally:
        stock.RECOMPILE_LIMIT = original
    assert any(f.exc_type and "RecompileLimit" in f.exc_type for f in found) or any(
        "FailOnRecompileLimitHit" in f.explanation for f in found
    ), [f.explanation for f in found]


def test_an_aot_front_end_program_that_changes_grad_mode_is_not_compiled_by_inductor(
    tmp_path: Path,
) -> None:
    """Note [The AOT front-end under Inductor keeps no grad mode]: symbolic_trace drops the
    no_grad block, so the output would require grad (the issue-36 triage's N36d.5)."""
    no_grad = ProgramSpec(
        family="dedupe",
        roots=(RootSpec((3,), grad="leaf"),),
        inputs=(InputSpec("root"),),
        body=(Stmt("mul2", ("a0",), ("v0",), ctx="no_grad"),),
        outputs=(OutSpec("ref", "v0"),),
        plan=CallPlan(calls=1, frontend="aot", backend="inductor"),
    )
    assert case_backend(no_grad, "aot_eager") == "aot_eager"
    plain = replace(no_grad, body=(Stmt("mul2", ("a0",), ("v0",)),))
    assert case_backend(plain, "aot_eager") == "inductor"
    dynamo = replace(no_grad, plan=replace(no_grad.plan, frontend="dynamo"))
    assert case_backend(dynamo, "aot_eager") == "inductor"
    result = run_case(no_grad, workdir=tmp_path)
    assert result.status == "ok" and not result.findings, result.findings
    # ... and the campaign's case.json names the backend the case ran with, so its title and
    # repro do too (5a54cc07b932 said Inductor for a case run under aot_eager).
    from pyfy_fuzz.campaign.books import NewFinding
    from pyfy_fuzz.campaign.config import CampaignConfig
    from pyfy_fuzz.campaign.saving import case_record
    from tests.findings import values_finding

    config = CampaignConfig(budget_s=60, corpus=tmp_path / "corpus", progress="quiet")
    new = NewFinding(values_finding(), no_grad.to_json(), (1,), None)
    assert case_record(new, config, {}).backend == "aot_eager"
    new = NewFinding(values_finding(), plain.to_json(), (1,), None)
    assert case_record(new, config, {}).backend == "inductor"
