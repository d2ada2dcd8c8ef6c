"""False alarms of the first 10-minute campaign, each excused or discarded at its own depth --
and the real bugs next to them still reported. The end-to-end cases are in tests/test_runner.py;
here the oracle, the dead-statement analysis and the eager watch, without compiling."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import torch

import oracles
from generators._spec import CallPlan, FunctionSpec, OutSpec
from oracles.by_design import recording
from pyfy_fuzz.case.dead_code import dead_statements
from pyfy_fuzz.case.ground_truth import EagerQuirks

from .helpers import evidence, mapped, spec

# ---------------------------------------------------------------- custom-function-view-write

# v1 = Fn0.apply(a0 * 2), Fn0's forward returns x.view_as(x): eager refuses writes into v1.
CUSTOM_VIEW = replace(
    spec([("mul2", ("a0",), ("v0",)), ("apply_fn", (0, "v0"), ("v1",))], ["v1"]),
    functions=(FunctionSpec(body="view"),),
)


def _write_findings(found: list[oracles.Finding]) -> list[oracles.Finding]:
    return [f for f in found if f.oracle == "autograd" and "writing into output" in f.explanation]


def test_write_into_custom_function_view_allowed_by_torch_compile_is_by_design():
    # a non-view output of the compiled region, as AOTAutograd hands it out
    ev = evidence(CUSTOM_VIEW, compiled_wrap=mapped(lambda o: o.clone()))
    assert ev.eager.mutation_probe[0].raised is not None  # type: ignore[index]
    with recording() as excused:
        assert _write_findings(oracles.check_all(ev)) == []
    assert "custom-function-view-write" in excused


def test_write_into_custom_function_view_is_strict_for_pythonify():
    ev = evidence(
        CUSTOM_VIEW, compiled_wrap=lambda fn: fn, pythonified_wrap=mapped(lambda o: o.clone())
    )
    (f,) = _write_findings(oracles.check_all(ev))
    assert (f.kind, f.subject) == ("pythonify-divergence", "pythonify")


def test_other_refusals_of_a_write_are_still_reported():
    # eager refuses a write into a view of a leaf requiring grad: not a custom Function's view
    leaf_view = spec([("view", ("a0", "slice", 0, 0, 2, 1), ("v0",))], ["v0"])
    ev = evidence(leaf_view, compiled_wrap=mapped(lambda o: o.clone()))
    with recording() as excused:
        (f,) = _write_findings(oracles.check_all(ev))
    assert (f.kind, f.subject) == ("compile-divergence", "torch.compile")
    assert "refused (RuntimeError) vs allowed" in f.explanation
    assert "custom-function-view-write" not in excused

    # torch.compile refusing a write eager allows (an output turned into a leaf view)
    plain = spec([("mul2", ("a0",), ("v0",))], ["v0"])
    ev = evidence(plain, compiled_wrap=mapped(lambda o: o.detach().requires_grad_()[:]))
    (f,) = _write_findings(oracles.check_all(ev))
    assert "allowed vs refused (RuntimeError)" in f.explanation


# ---------------------------------------------------------------- dead-code-error


def _ref(name: str) -> OutSpec:
    return OutSpec("ref", name)


@pytest.mark.parametrize(
    ("body", "outputs", "dead"),
    [
        # unused pure statements, transitively; the output and what it needs are live
        (
            [("sin", ("a0",), ("v0",)), ("neg", ("v0",), ("v1",)), ("cos", ("a0",), ("v2",))],
            [_ref("v2")],
            [0, 1],
        ),
        # an in-place write keeps its target (and the view chain to it) live
        (
            [
                ("view", ("a0", "slice", 0, 0, 2, 1), ("v0",)),
                ("add_", ("v0", 1), ()),
                ("sin", ("a0",), ("v1",)),
            ],
            [_ref("v1")],
            [],
        ),
        # ... but a write into a fresh value nothing else reads is as dead as the value
        # (the 1-hour campaign's IndexError.ad598f021f8d: an index eager rejects)
        (
            [("neg", ("a0",), ("v0",)), ("index_put_", ("v0", 2), ()), ("sin", ("a0",), ("v1",))],
            [_ref("v1")],
            [0, 1],
        ),
        # not when the value is also read, or returned
        (
            [("neg", ("a0",), ("v0",)), ("add_", ("v0", 1), ()), ("sin", ("v0",), ("v1",))],
            [_ref("v1")],
            [],
        ),
        ([("neg", ("a0",), ("v0",)), ("fill_", ("v0", 2), ())], [_ref("v0")], []),
        # random ops, hooks and custom Functions are never dead (fallback_random keeps them)
        ([("rand_like", ("a0",), ("v0",)), ("sin", ("a0",), ("v1",))], [_ref("v1")], []),
        (
            [
                ("sin", ("a0",), ("v0",)),
                ("register_hook", ("v0",), ()),
                ("cos", ("a0",), ("v1",)),
            ],
            [_ref("v1")],
            [],
        ),
        ([("apply_fn", (0, "a0"), ("v0",)), ("sin", ("a0",), ("v1",))], [_ref("v1")], []),
        # an aten op of a pure class is dead like a hand-written one (the issue-36 triage's
        # a17: a dead slice_scatter eager rejects); an in-place one never is
        (
            [
                ("aten", ("aten.slice_scatter.default", "a0", "a0"), ("v0",)),
                ("aten", ("aten.narrow.default", "a0", 0, 0, 1), ("v1",)),
                ("aten", ("aten.sin_.default", "a0"), ("v2",)),
                ("sin", ("a0",), ("v3",)),
            ],
            [_ref("v3")],
            [0, 1],
        ),
        # a write by an aten op of the inplace class into a fresh value nothing else reads is
        # dead too, and a random op's new tensor is fresh (issue 36's fifth run's 7ed1:
        # `v0 = a0.bernoulli(); torch.ops.aten.index_add_.default(v0, ...)` eager rejects)
        (
            [
                ("bernoulli", ("a0",), ("v0",)),
                ("aten", ("aten.index_add_.default", "v0", 0, "a0", "a0"), ()),
                ("aten", ("aten.sin.default", "a0"), ("v1",)),
                ("aten", ("aten.mul_.Tensor", "v1", "a0"), ()),
                ("cos", ("a0",), ("v2",)),
            ],
            [_ref("v2")],
            [1, 2, 3],
        ),
        # a value returned inside a tuple, or only through its size, is used
        (
            [("sin", ("a0",), ("v0",)), ("cos", ("a0",), ("v1",)), ("neg", ("a0",), ("v2",))],
            [OutSpec("size", "v0"), OutSpec("tuple", items=(_ref("v1"),))],
            [2],
        ),
    ],
    ids=[
        "transitive",
        "inplace",
        "write-into-dead",
        "write-into-read",
        "write-into-output",
        "rng",
        "hook",
        "function",
        "aten",
        "aten-write-into-dead",
        "size-and-tuple",
    ],
)
def test_dead_statements(body: list, outputs: list, dead: list) -> None:  # type: ignore[type-arg]
    s = replace(spec(body, [], grad="none"), outputs=tuple(outputs))
    assert dead_statements(s) == dead


# ---------------------------------------------------------------- eager misbehaving


def test_eager_quirks_see_dropout_returning_its_empty_input():
    f = torch.nn.functional
    empty, full = torch.randn(0, 3), torch.randn(3)
    for call, expect in (
        (lambda: f.dropout(empty, 0.5, training=True), True),
        (lambda: torch.dropout(empty, 0.5, True), True),
        (lambda: f.dropout(full, 0.5, training=True), False),
        (lambda: f.dropout(empty, 0.5, training=True, inplace=True), False),  # documented
        (lambda: empty.sin(), False),
    ):
        quirks = EagerQuirks()
        with quirks:
            call()
        assert (quirks.found is not None) is expect, quirks.found


@pytest.mark.parametrize("variant", [None, "dtype"])
def test_compile_refusing_an_as_strided_view_chain_mutation_is_by_design(variant):
    """torch bans a mutation through an as_strided view in compile, saying so: no finding (the
    10-minute campaign's crash.exceptions.02b6ad7bf0af) -- on the guards oracle's variant call
    too (the next campaign's crash.guards.02b6ad7bf0af)."""
    from generators._spec import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
    from pyfy_fuzz.case.runner import run_case

    spec = ProgramSpec(
        family="input_mutation",
        roots=(RootSpec(()),),
        inputs=(InputSpec("root", 0),),
        body=(
            Stmt("view", ("a0", "unsqueeze", 0), ("v0",)),
            Stmt("view", ("v0", "as_strided", (1,), (1,), 0), ("v1",)),
            Stmt("zero_", ("v1",)),
        ),
        outputs=(OutSpec("ref", "v0"),),
        plan=CallPlan(calls=1, backward=False, variant=variant),
    )
    r = run_case(spec, backend="aot_eager")
    assert not [f for f in r.findings if f.subject == "torch.compile"], r.findings
    assert "compile-refuses-as-strided-view-mutation" in r.excused


def test_a_dtype_variant_changes_a_float64_argument():
    """The dtype variant left float64 arguments as they were, so the variant call repeated
    call 0; the file then raised torch's own backward error there (T4-mincut: `a0.sin_()` on
    a non-leaf) and it read as guard-unsound (the campaign's guard-unsound.guards.9cf52b73e6c5).
    float64 now becomes float32: the file's guard refuses it."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    spec = spec_from_dict(json.loads(SIN_VARIANT_SPEC))
    r = run_case(spec, backend="aot_eager")
    assert not [f for f in r.findings if f.kind == "guard-unsound"], r.findings


def test_an_error_of_a_dead_aten_write_is_by_design():
    """Issue 36's fifth run's compile-divergence.RuntimeError.7ed1713fac56: eager rejects an
    aten `index_add_` into a random op's result nothing reads; torch.compile drops the write
    with the value. dead_writes knew only the hand-written in-place ops."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    r = run_case(spec_from_dict(json.loads(DEAD_INDEX_ADD_SPEC)), backend="aot_eager")
    assert not r.findings, [f.explanation for f in r.findings]
    assert "dead-code-error" in r.excused


DEAD_INDEX_ADD_SPEC = '{"body": [{"args": ["a0"], "ctx": null, "op": "bernoulli", "outs": ["v0"]}, {"args": ["aten.index_add_.default", "v0", ["l", 0], ["d", "int64", [0]], ["t", "float32", [1, 4, 3]], ["kw", "alpha", ["l", -1]]], "ctx": null, "op": "aten", "outs": []}], "family": "rng", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "none", "ref": "", "value": 0}], "plan": {"backend": null, "backward": false, "calls": 1, "config": [], "dynamic": false, "frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, "second_backward": null, "sequence": [], "tangents": "ones", "through": null, "variant": "dtype"}, "roots": [{"dtype": "float32", "grad": "none", "layout": "contiguous", "shape": [1, 1], "subclass": null}], "version": 1}'  # noqa: E501


SIN_VARIANT_SPEC = '{"body": [{"args": ["a0"], "ctx": null, "op": "sin_", "outs": []}], "family": "dedupe", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "a0", "value": 0}], "plan": {"backward": true, "calls": 1, "dynamic": false, "frontend": "aot", "mode": null, "saved_tensor_hooks": false, "second_backward": null, "tangents": "ones", "variant": "dtype"}, "roots": [{"dtype": "float64", "grad": "nonleaf", "layout": "contiguous", "shape": [], "subclass": null}], "version": 1}'  # noqa: E501


def test_seq_nr_order_is_judged_only_where_groups_and_eager_nodes_correspond():
    """`index_put_` on a non-leaf, then `a0 + a0`: a group of recomputed forward ops shifted a
    positional comparison (the 10-minute campaign's seq_nr.6490641d1872): no seq_nr finding."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    spec = spec_from_dict(json.loads(SEQ_NR_ORDER_SPEC))
    r = run_case(spec, backend="aot_eager")
    assert not [f for f in r.findings if f.oracle == "seq_nr"], r.findings


SEQ_NR_ORDER_SPEC = '{"body": [{"args": ["a0", 0], "ctx": null, "op": "index_put_", "outs": []}, {"args": ["a0", "a0"], "ctx": null, "op": "add", "outs": ["v1"]}], "family": "dedupe", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "v1", "value": 0}], "plan": {"backward": true, "calls": 1, "dynamic": false, "frontend": "dynamo", "mode": null, "saved_tensor_hooks": false, "second_backward": null, "tangents": "ones", "variant": null}, "roots": [{"dtype": "float32", "grad": "nonleaf", "layout": "contiguous", "shape": [1], "subclass": null}], "version": 1}'  # noqa: E501


def test_the_saved_tensor_pack_hook_keeps_dtypes():
    """The generated pack hook was `t * 1`: a bool mask torch.compile saves for
    `torch.maximum(a0, a0)`'s backward (eager saves the floats) came back as int64 and
    `where` refused it (the campaign's crash.guards.f66d8de071c6). Which tensors are saved is
    torch.compile's to choose; the hook now copies them as they are."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    r = run_case(spec_from_dict(json.loads(MAXIMUM_HOOKS_SPEC)), backend="aot_eager")
    assert r.findings == [], r.findings


MAXIMUM_HOOKS_SPEC = '{"body": [{"args": ["a0", "a0"], "ctx": null, "op": "maximum", "outs": ["v1"]}], "family": "input_mutation", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "v1", "value": 0}], "plan": {"backward": true, "calls": 1, "dynamic": false, "frontend": "dynamo", "mode": null, "saved_tensor_hooks": true, "second_backward": null, "tangents": "ones", "variant": "dtype"}, "roots": [{"dtype": "float32", "grad": "leaf", "layout": "contiguous", "shape": [], "subclass": null}], "version": 1}'  # noqa: E501


# ---------------------------------------------------------------- error-at-compile-not-backward


def test_an_autograd_error_raised_at_the_call_instead_of_backward_is_by_design():
    """torch.compile traces the backward when it compiles, so eager's backward() error comes
    at the call: the same error, earlier (the issue's "when the error is raised"). A program
    that never calls backward is still a crash where eager runs (pytorch#185497)."""
    from generators._spec import CallPlan, Stmt
    from pyfy_fuzz.case.runner import run_case

    # sigmoid saves its output, which the program then writes under no_grad
    s = spec([], ["v0"], grad="nonleaf", plan=CallPlan(calls=1, backward=True))
    body = (Stmt("sigmoid", ("a0",), ("v0",)), Stmt("fill_", ("v0", 2), (), ctx="no_grad"))
    s = replace(s, body=body)
    torch._dynamo.reset()
    with_backward = run_case(s, backend="aot_eager")
    assert with_backward.findings == [] and "error-at-compile-not-backward" in with_backward.excused
    torch._dynamo.reset()
    forward_only = run_case(replace(s, plan=replace(s.plan, backward=False)), backend="aot_eager")
    (f, *_) = forward_only.findings
    assert (f.kind, f.subject) == ("crash", "torch.compile")
    assert "error-at-compile-not-backward" not in forward_only.excused


# ---------------------------------------------------------- a capture of a refused program


def _capture_crash(ev: oracles.Evidence) -> oracles.Evidence:
    """The same case where the file was never made: the capture raised while compiling."""
    from pyfy_fuzz.schema.observation import ExcObs

    crash = ExcObs("RuntimeError", ("RuntimeError",), "returned an invalid gradient", "compile")
    assert ev.pythonified is not None
    return replace(ev, pythonified=replace(ev.pythonified, setup_error=crash))


def test_a_capture_crash_on_a_program_eager_refuses_is_not_pythonifys():
    """Note [A capture of a program eager refuses]: eager refuses a write into a view of a
    leaf requiring grad; the capture's crash there is torch's handling of an invalid program."""
    leaf_view = spec(
        [("view", ("a0", "slice", 0, 0, 2, 1), ("v0",)), ("mul_", ("v0", 2), ())], ["v0"]
    )
    ev = _capture_crash(
        evidence(leaf_view, compiled_wrap=lambda fn: fn, pythonified_wrap=lambda fn: fn)
    )
    assert ev.eager.calls[0].raised is not None
    assert [f for f in oracles.check_all(ev) if f.subject == "pythonify"] == []


def test_a_capture_crash_on_a_program_eager_runs_is_pythonifys():
    plain = spec([("mul2", ("a0",), ("v0",))], ["v0"])
    ev = _capture_crash(
        evidence(plain, compiled_wrap=lambda fn: fn, pythonified_wrap=lambda fn: fn)
    )
    assert ev.eager.calls[0].raised is None
    (f,) = [f for f in oracles.check_all(ev) if f.subject == "pythonify"]
    assert f.kind == "crash"


# ------------------------------------------------------ a plan call torch.compile recompiled


def _guard_error_at_call_1(ev: oracles.Evidence, recompiled: bool) -> oracles.Evidence:
    """The file refuses call 1 (a module's buffer call 0 made require grad); torch.compile
    recompiled there, or did not."""
    from pyfy_fuzz.schema.observation import ExcObs

    guard = ExcObs(
        "pyfy_fuzz.pythonify.errors.PythonifyGuardError",
        ("PythonifyGuardError",),
        "L['self']._buffers['b0']: expected requires_grad=False, got True",
        "call",
    )
    assert ev.pythonified is not None
    calls = list(ev.pythonified.calls)
    calls[1] = replace(calls[1], raised=guard)
    compiled = list(ev.compiled.calls)
    compiled[1] = replace(compiled[1], recompiled=recompiled)
    return replace(
        ev,
        compiled=replace(ev.compiled, calls=compiled),
        pythonified=replace(ev.pythonified, calls=calls),
    )


def test_the_file_refusing_a_call_torch_compile_recompiled_is_its_contract():
    """Note [A plan call torch.compile recompiled]."""
    plain = spec([("mul2", ("a0",), ("v0",))], ["v0"])
    ev = evidence(plain, compiled_wrap=lambda fn: fn, pythonified_wrap=lambda fn: fn)
    crashes = [
        f
        for f in oracles.check_all(_guard_error_at_call_1(ev, recompiled=True))
        if f.subject == "pythonify" and f.oracle == "exceptions"
    ]
    assert crashes == []
    (f,) = [
        f
        for f in oracles.check_all(_guard_error_at_call_1(ev, recompiled=False))
        if f.subject == "pythonify" and f.oracle == "exceptions"
    ]
    assert f.kind == "crash"


# ------------------------------------------------- error-at-call-not-first-use (N11's form)

_FORBIDDEN = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
    "error-prone, it is forbidden."
)


def _no_grad_view_then_base_written() -> Any:
    """v0 = a0.sin(); with no_grad: v1 = v0[0:1]; v0.sin_() with grad on; return v1."""
    s = spec(
        [
            ("sin", ("a0",), ("v0",)),
            ("view", ("v0", "slice", 0, 0, 1, 1), ("v1",)),
            ("sin_", ("v0",), ()),
        ],
        ["v1"],
        shape=(3,),
        plan=CallPlan(calls=1, backward=False),  # eager's backward would meet the refusal
    )
    return replace(s, body=(s.body[0], replace(s.body[1], ctx="no_grad"), s.body[2]))


def _raises_forbidden(fn: Any) -> Any:
    def call(*args: Any) -> Any:
        raise RuntimeError(_FORBIDDEN)

    return call


def test_a_compile_that_raises_what_eager_raises_on_first_use_is_by_design():
    s = _no_grad_view_then_base_written()
    ev = evidence(s, compiled_wrap=_raises_forbidden)
    assert str(ev.eager.calls[0].outputs[0].grad_fn).startswith("<refused")  # type: ignore[union-attr]
    with recording() as excused:
        found = [f for f in oracles.check_all(ev) if f.oracle == "exceptions"]
    assert found == []
    assert "error-at-call-not-first-use" in excused


def test_another_error_at_the_call_is_still_a_crash():
    s = _no_grad_view_then_base_written()

    def other(fn: Any) -> Any:
        def call(*args: Any) -> Any:
            raise RuntimeError("something else went wrong")

        return call

    ev = evidence(s, compiled_wrap=other)
    found = [f for f in oracles.check_all(ev) if f.oracle == "exceptions"]
    assert found and all(f.kind == "crash" for f in found)


def test_no_later_call_is_judged_after_a_plan_call_eager_raised_in():
    """Issue 36's fifth run's compile-divergence.mutation.3efff8217842: call 0 raises in both
    (`p0.add_(1)` on a leaf parameter), after eager has run `p0.data = p0 * 2` and Dynamo,
    raising while tracing, has run nothing; the variant call then only inherits that state."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    r = run_case(spec_from_dict(json.loads(PARTIAL_CALL_SPEC)), backend="aot_eager")
    assert not r.findings, [f.explanation for f in r.findings]


def test_a_hook_run_by_a_backward_inside_the_compiled_call_logs() -> None:
    """Issue 36's run G's compile-divergence.grads.ead0d936522b: `a0.register_hook(h);
    a0.sum().backward(retain_graph=True)` in the function. Dynamo breaks the graph at the
    backward and compiles the hook's own frame while the compiled call runs, where
    `_log_call` folded away: "the hook did not run" (Note [Hook frames run as Python])."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    r = run_case(spec_from_dict(json.loads(HOOK_FRAME_SPEC)), backend="aot_eager")
    assert not r.findings, [f.explanation for f in r.findings]


HOOK_FRAME_SPEC = '{"body": [{"args": ["a0", 2, 0], "ctx": null, "op": "register_hook", "outs": []}, {"args": ["a0", "sum"], "ctx": null, "op": "backward", "outs": []}], "family": "autograd_function", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "a0", "value": 0}], "plan": {"backend": null, "backward": false, "calls": 1, "config": [], "dynamic": false, "frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, "second_backward": null, "sequence": [], "tangents": "ones", "through": null, "variant": null}, "roots": [{"dtype": "float32", "grad": "leaf", "layout": "contiguous", "shape": [], "subclass": null}], "version": 1}'  # noqa: E501


def test_no_later_call_is_judged_after_a_plan_call_torch_compile_raised_in() -> None:
    """Run G's compile-divergence.mutation.3efff8217842, the mirror of the test above: Dynamo
    refused call 0 (`set_` on a graph input) while eager ran it and changed the module's
    parameter, so the variant call starts from other values on the two sides."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.runner import run_case

    r = run_case(spec_from_dict(json.loads(COMPILE_RAISED_SPEC)), backend="aot_eager")
    assert not r.findings, [f.explanation for f in r.findings]


COMPILE_RAISED_SPEC = '{"body": [{"args": ["p0"], "ctx": null, "op": "data_assign", "outs": []}, {"args": ["p0"], "ctx": null, "op": "detach", "outs": ["v1"]}, {"args": ["v1", "a0"], "ctx": null, "op": "add_", "outs": []}], "family": "module", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": {"batchnorm": null, "buffers": [], "full_backward_hook": false, "params": [[1, 1]], "tied": false}, "outputs": [{"items": [], "kind": "ref", "ref": "v1", "value": 0}], "plan": {"backend": null, "backward": false, "calls": 1, "config": [], "dynamic": false, "frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, "second_backward": null, "sequence": [], "tangents": "ones", "through": null, "variant": "inference_mode"}, "roots": [{"dtype": "float32", "grad": "none", "layout": "contiguous", "shape": [1, 1], "subclass": null}], "version": 1}'  # noqa: E501


def test_a_write_into_a_dead_view_inverse_result_is_dead_code() -> None:
    """Run G's compile-divergence.RuntimeError.7ed1713fac56: `aten.index_add_` into the
    result of `unfold_copy` (a view-inverse op: a new tensor), never read."""
    from generators import spec_from_dict
    from pyfy_fuzz.case.dead_code import dead_writes

    assert dead_writes(spec_from_dict(json.loads(VIEW_COPY_WRITE_SPEC)))


VIEW_COPY_WRITE_SPEC = '{"body": [{"args": ["aten.unfold_copy.default", "a0", ["l", 0], ["l", 3], ["l", 2], ["spelling", "function"]], "ctx": null, "op": "aten", "outs": ["v1"]}, {"args": ["aten.index_add_.default", "v1", ["l", 0], ["d", "int64", [0]], ["t", "float32", [1, 4, 3]], ["kw", "alpha", ["l", -1]]], "ctx": null, "op": "aten", "outs": []}], "family": "rng", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "none", "ref": "", "value": 0}], "plan": {"backend": null, "backward": false, "calls": 1, "config": [], "dynamic": false, "frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, "second_backward": null, "sequence": [], "tangents": "ones", "through": null, "variant": "dtype"}, "roots": [{"dtype": "float32", "grad": "none", "layout": "contiguous", "shape": [3, 4], "subclass": null}], "version": 1}'  # noqa: E501


PARTIAL_CALL_SPEC = '{"body": [{"args": ["p0"], "ctx": null, "op": "data_assign", "outs": []}, {"args": ["p0", 1], "ctx": null, "op": "add_", "outs": []}], "family": "module", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}], "module": {"batchnorm": null, "buffers": [], "full_backward_hook": false, "params": [[]], "tied": false}, "outputs": [{"items": [], "kind": "ref", "ref": "p0", "value": 0}], "plan": {"backend": null, "backward": false, "calls": 1, "config": [], "dynamic": false, "frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, "second_backward": null, "sequence": [], "tangents": "ones", "through": null, "variant": "inference_mode"}, "roots": [{"dtype": "float32", "grad": "none", "layout": "contiguous", "shape": [], "subclass": null}], "version": 1}'  # noqa: E501
