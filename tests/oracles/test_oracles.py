"""Each oracle reports the one planted difference it owns, with the right kind; honest
subjects give no finding. Planted subjects wrap eager's own function (see helpers)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

import oracles
from generators._spec import CallPlan, ViewStep
from oracles import Evidence, Finding
from oracles.by_design import recording
from pyfy_fuzz.schema.difference import CallRef, Difference

from .helpers import edited, evidence, mapped, observe, on_clones, spec

MUT = spec([("add_", ("a0", 1), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="none")
GRAD = spec([("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))], ["v1"])
VIEW = spec([("view", ("a0", "slice", 0, 0, 2, 1), ("v0",))], ["v0"], grad="none")


def only(found: list[Finding], oracle: str, kind: str) -> Finding:
    hits = [f for f in found if f.oracle == oracle]
    assert hits, f"{oracle} did not report: {[f.oracle for f in found]}"
    assert hits[0].kind == kind, hits[0]
    return hits[0]


@pytest.mark.parametrize("s", [MUT, GRAD, VIEW], ids=["mutation", "grad", "view"])
def test_honest_subjects_give_no_findings(s):
    ev = evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=lambda fn: fn)
    assert oracles.check_all(ev) == []


def test_outputs_values_exact_under_aot_eager():
    ev = evidence(GRAD, compiled_wrap=mapped(lambda o: o + 1e-6))
    f = only(oracles.check_all(ev), "outputs", "compile-divergence")
    assert "output 0: values differ" in f.explanation and "call 0" in f.explanation


def test_outputs_tolerant_backend_accepts_rounding_but_not_errors():
    near = evidence(GRAD, compiled_wrap=mapped(lambda o: o * (1 + 1e-7)), backend="inductor")
    assert [f for f in oracles.check_all(near) if f.oracle == "outputs"] == []
    far = evidence(GRAD, compiled_wrap=mapped(lambda o: o * 1.01), backend="inductor")
    only(oracles.check_all(far), "outputs", "compile-divergence")


def test_outputs_dtype_and_stride():
    ev = evidence(GRAD, compiled_wrap=mapped(lambda o: o.double()))
    assert (
        "dtype torch.float32 vs torch.float64"
        in only(oracles.check_all(ev), "outputs", "compile-divergence").explanation
    )
    s = spec([("mul2", ("a0",), ("v0",))], ["v0"], grad="none", shape=(2, 3))
    ev = evidence(s, compiled_wrap=mapped(lambda o: o.t().contiguous().t()))
    assert "stride" in only(oracles.check_all(ev), "outputs", "compile-divergence").explanation


def test_dropped_input_mutation():
    ev = evidence(MUT, compiled_wrap=on_clones)
    f = only(oracles.check_all(ev), "mutation", "compile-divergence")
    assert "input a0 after the call: values differ" in f.explanation


def test_mutation_compared_for_pythonify_against_torch_compile():
    ev = evidence(MUT, compiled_wrap=lambda fn: fn, pythonified_wrap=on_clones)
    found = oracles.check_all(ev)
    f = only(found, "mutation", "pythonify-divergence")
    assert f.subject == "pythonify" and "torch.compile" in f.explanation


def test_view_returned_as_copy_is_an_aliasing_finding():
    ev = evidence(VIEW, compiled_wrap=mapped(lambda o: o.clone()))
    found = [f for f in oracles.check_all(ev) if f.oracle == "aliasing"]
    assert len(found) == 1, "one finding per oracle and pair: call facts and probe merged"
    assert "shares storage with inputs" in found[0].explanation
    # ... and the in-place probe saw that a write no longer reaches the input
    assert "writing into output 0 changed inputs ['a0'] vs []" in found[0].explanation


def test_new_aliasing_between_input_and_output():
    s = spec([("mul2", ("a0",), ("v0",))], ["v0"], grad="none")

    # Returns a view of the input with eager's values: new aliasing (seeds/002).
    def wrap(fn):
        def call(a0):
            out = fn(a0)
            a0.copy_(out)
            return a0[:]

        return call

    ev = evidence(s, compiled_wrap=wrap)
    found = oracles.check_all(ev)
    assert any(
        f.oracle == "aliasing" and "shares storage with inputs [] vs ['a0']" in f.explanation
        for f in found
    )


def test_detached_output_is_an_autograd_finding():
    ev = evidence(GRAD, compiled_wrap=mapped(lambda o: o.detach()))
    found = oracles.check_all(ev)
    f = only(found, "autograd", "compile-divergence")
    assert "requires_grad True vs False" in f.explanation
    # The gradient that follows is the same bug (Note [Consequences]): folded into it.
    assert not [g for g in found if g.oracle == "grads"] and f.consequences[0][0] == "grads"


class _Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return 2 * g


def test_wrong_gradient():
    ev = evidence(GRAD, compiled_wrap=mapped(lambda o: _Double.apply(o).clone()))
    found = oracles.check_all(ev)
    # A wrong gradient alone (no autograd metadata differs) is a grads finding of its own.
    assert [g.oracle for g in found] == ["grads"]
    f = only(found, "grads", "compile-divergence")
    assert "grad of a0: values differ" in f.explanation


class _SinOnce(torch.autograd.Function):
    """sin whose backward is right once and zero after: a compiled backward that consumed its
    saved state on the first run."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.runs = 0
        return x.sin()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        ctx.runs += 1
        return g * x.cos() if ctx.runs == 1 else torch.zeros_like(g)


def test_second_backward_is_compared():
    s = spec([("sin", ("a0",), ("v0",))], ["v0"], plan=CallPlan(calls=1, second_backward="retain"))
    ev = evidence(s, compiled_wrap=lambda fn: _SinOnce.apply)
    found = oracles.check_all(ev)
    f = only(found, "grads", "compile-divergence")
    assert "grad after the second backward of a0: values differ" in f.explanation
    assert "call 0: grad of a0" not in f.explanation
    assert [g for g in found if g.oracle == "outputs"] == []


def test_raising_where_eager_does_not_is_a_crash():
    def boom(fn):
        def call(*a):
            raise IndexError("planted")

        return call

    f = only(oracles.check_all(evidence(GRAD, compiled_wrap=boom)), "exceptions", "crash")
    assert f.exc_type == "IndexError" and "planted" in f.explanation


def test_not_raising_where_eager_does_is_a_divergence():
    s = spec([("sigmoid", ("a0",), ("v0",)), ("sin_", ("v0",), ())], ["v0"], grad="leaf")
    # eager: sigmoid saves its output for backward; the in-place sin_ on it makes backward fail
    _, eager = observe(s, None, "eager")
    assert eager.calls[0].raised is not None and eager.calls[0].raised.phase == "backward"

    def safe(fn):
        def call(a0):
            return a0.sigmoid().sin()

        return call

    f = only(oracles.check_all(evidence(s, compiled_wrap=safe)), "exceptions", "compile-divergence")
    assert "returned; eager raised RuntimeError" in f.explanation


def test_stale_static_output_is_a_cudagraph_finding():
    s = spec([("mul2", ("a0",), ("v0",))], ["v0"], grad="none", plan=CallPlan(calls=3))

    def static(fn):
        buf: list[torch.Tensor] = []

        def call(a0):
            out = fn(a0)
            if not buf:
                buf.append(out)
            else:
                buf[0].copy_(out)  # a replay writing into the one static output
            return buf[0]

        return call

    f = only(
        oracles.check_all(evidence(s, pythonified_wrap=static, compiled_wrap=lambda fn: fn)),
        "cudagraph",
        "pythonify-divergence",
    )
    assert "output 0 of call 0 changed after later calls" in f.explanation


def test_guard_error_is_fine_wrong_result_is_unsound():
    from pyfy_fuzz.pythonify import PythonifyGuardError

    s = spec(
        [("mul2", ("a0",), ("v0",))], ["v0"], grad="none", plan=CallPlan(calls=1, variant="shape")
    )

    def guarded(fn):
        def call(a0):
            if a0.shape != (3,):
                raise PythonifyGuardError("shape")
            return fn(a0)

        return call

    assert (
        oracles.check_all(evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=guarded)) == []
    )

    def unguarded(fn):
        def call(a0):
            return fn(a0)[:3] if a0.shape[0] > 3 else fn(a0)

        return call

    f = only(
        oracles.check_all(evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=unguarded)),
        "guards",
        "guard-unsound",
    )
    assert "variant call (shape)" in f.explanation

    # The file doing exactly what a wrong torch.compile does is torch.compile's finding only.
    ev = evidence(s, compiled_wrap=unguarded, pythonified_wrap=unguarded)
    found = oracles.check_all(ev)
    assert [(f.kind, f.subject) for f in found if f.oracle == "guards"] == [
        ("compile-divergence", "torch.compile")
    ]

    def wrong_error(fn):
        def call(a0):
            if a0.shape != (3,):
                raise RuntimeError("size mismatch")
            return fn(a0)

        return call

    f = only(
        oracles.check_all(evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=wrong_error)),
        "guards",
        "guard-unsound",
    )
    assert f.exc_type == "RuntimeError" and "expected PythonifyGuardError" in f.explanation


def test_by_design_applies_to_torch_compile_only():
    s = spec(
        [
            ("view", ("a0", "slice", 0, 0, 2, 1), ("v0",)),
            ("mul2", ("v0",), ("v1",)),
            ("view", ("v1", "slice", 0, 0, 1, 1), ("v2",)),
        ],
        ["v2"],
        grad="none",
    )
    ev = evidence(
        s, compiled_wrap=mapped(lambda o: o.clone()), pythonified_wrap=mapped(lambda o: o.clone())
    )
    with recording() as excused:
        found = oracles.check_all(ev)
    # the compiled output lost its intermediate _base: by design; the same copy handed out by
    # pythonify while torch.compile returns a view would not be (here both copy: no finding).
    assert [f for f in found if f.oracle == "aliasing"] == []
    assert "view-of-intermediate" in excused
    ev2 = evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=mapped(lambda o: o.clone()))
    assert only(oracles.check_all(ev2), "aliasing", "pythonify-divergence")


def test_by_design_list_is_documented():
    text = (Path(__file__).parents[2] / "docs" / "ORACLES.md").read_text(encoding="utf-8")
    assert oracles.by_design.as_markdown() in text, (
        "docs/ORACLES.md: regenerate the by-design table"
    )
    for b in oracles.BY_DESIGN:
        assert b.reason and b.what


def test_seq_nr_tables_and_invariants():
    from pyfy_fuzz.pythonify.graph_render import FxNodeMeta as N

    fw = (
        N("mul", "aten.mul.Tensor", 10, False, False),
        N("sin", "aten.sin.default", 11, False, False),
    )
    bw = (
        N("cos", "aten.cos.default", 11, False, True),
        N("mul_1", "aten.mul.Tensor", 10, False, True),
        N("add", "aten.add.Tensor", 10, True, True),
    )
    s = spec([("sin", ("a0",), ("v0",))], ["v0"])
    ev = evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=lambda fn: fn)
    ev.eager.extra["autograd_order"] = [("SinBackward0", 5), ("MulBackward0", 4)]
    ev = replace(
        ev,
        fx_meta={"forward": fw, "backward": bw},
        file_seq_nr={
            "forward": {"mul": 10, "sin": 11},
            "backward": {"cos": 11, "mul_1": 10, "add": 10},
        },
        file_grad_acc={"backward": ["add"]},
    )
    assert [f for f in oracles.check_all(ev) if f.oracle == "seq_nr"] == []
    ev.file_seq_nr["backward"]["cos"] = 12
    f = only(oracles.check_all(ev), "seq_nr", "pythonify-divergence")
    assert "node cos has seq_nr 12 in the file, 11 in torch's graph" in f.explanation
    ev.file_seq_nr["backward"]["cos"] = 11
    ev.fx_meta["backward"] = (*bw, N("neg", "aten.neg.default", 99, False, True))
    f = only(oracles.check_all(ev), "seq_nr", "compile-divergence")
    assert "name no forward node" in f.explanation and "neg" in f.explanation
    ev.fx_meta["backward"] = bw
    ev.eager.extra["autograd_order"] = [("MulBackward0", 5), ("SinBackward0", 4)]
    f = only(oracles.check_all(ev), "seq_nr", "compile-divergence")
    assert "maps to forward ['mul']; eager's 0-th backward node is SinBackward0" in f.explanation
    ev.eager.extra["autograd_order"] = [("CopySlices", 5), ("SinBackward0", 4)]  # not comparable
    assert [f for f in oracles.check_all(ev) if f.oracle == "seq_nr"] == []


def test_backward_work_the_min_cut_moved_into_the_forward_is_not_a_broken_mapping():
    """Found by triage (issue 36, c730c8d88a65, a false alarm): the min-cut partitioner
    computes a gradient that needs no tangent in the forward graph and saves it (torch's Note
    [tangents_closure vs required_bw_nodes]); its accumulation `add`, backward work, rightly
    says so. A forward op of the user's marked as an accumulation is still reported."""
    from oracles.seq_nr import invariants
    from pyfy_fuzz.pythonify.graph_render import FxNodeMeta as N

    fw = (
        N("mul", "aten.mul.Tensor", 10, False, False),
        N("zeros", "aten.zeros.default", 11, False, True),  # le_'s gradient: no tangent
        N("add", "aten.add.Tensor", 10, True, True),
    )
    bw = (N("mul_1", "aten.mul.Tensor", 10, False, True),)
    assert invariants({"forward": fw, "backward": bw}) == []
    user_op = (*fw[:2], N("add", "aten.add.Tensor", 10, True, False))
    (d,) = invariants({"forward": user_op, "backward": bw})
    assert d.prop == "forward_grad_acc" and "forward node add" in d.note


def test_version_probe():
    # eager's sin saves its input: bumping the input's version makes backward refuse.
    s = spec([("sin", ("a0",), ("v0",))], ["v0"], grad="nonleaf")
    _, eager = observe(s, None, "eager")
    assert eager.version_probe is not None and eager.version_probe != "ok"

    def saves_copy(fn):
        def call(a0):
            return a0.clone().sin()  # saves a copy: the bump goes unnoticed

        return call

    # torch.compile vs eager: which tensors are saved is the partitioner's choice (by design)
    ev = evidence(s, compiled_wrap=saves_copy)
    with recording() as excused:
        assert [f for f in oracles.check_all(ev) if f.oracle == "mutation"] == []
    assert "partitioner-saved-tensors" in excused
    # pythonify vs torch.compile: same graphs, so the same refusals
    ev = evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=saves_copy)
    f = only(oracles.check_all(ev), "mutation", "pythonify-divergence")
    assert "version counters" in f.explanation


def test_views_in_spec_are_compared_with_their_base():
    s = spec(
        [("add_", ("a0", 1), ()), ("mul2", ("a0",), ("v0",))],
        ["v0"],
        grad="none",
        views=(ViewStep("slice", (0, 0, 2, 1)),),
        shape=(4,),
    )
    ev = evidence(s, compiled_wrap=on_clones)
    f = only(oracles.check_all(ev), "mutation", "compile-divergence")
    assert "a0._base" in f.explanation


def test_unknown_by_design_id_is_an_error():
    with pytest.raises(KeyError):
        oracles.by_design.excuse("nope")


def test_excuses_are_recorded_by_the_innermost_recording_only():
    """Note [Excuses are recorded, not stored]: a nested recording (a discarded re-check) keeps
    its excuses; outside any recording nothing is kept; each entry once, in order."""
    excuse = oracles.by_design.excuse
    excuse("grad-fn-type")  # no recording open: nothing to record into, no error
    with recording() as outer:
        excuse("grad-fn-type")
        with recording() as inner:
            excuse("view-of-intermediate")
        excuse("grad-fn-type")
        excuse("dead-code-error")
    assert outer == ["grad-fn-type", "dead-code-error"]
    assert inner == ["view-of-intermediate"]


def test_evidence_is_frozen():
    ev = Evidence(eager=None, compiled=None, pythonified=None)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        ev.backend = "inductor"  # type: ignore[misc]


def test_probe_call_crash_is_reported():
    """The probes call the subject beyond the plan's calls (where replays happen)."""
    s = spec([("mul2", ("a0",), ("v0",))], ["v0"], plan=CallPlan(calls=2))

    def third_call_fails(fn):
        n = [0]

        def call(a0):
            n[0] += 1
            if n[0] > 2:
                raise RuntimeError("replay broke")
            return fn(a0)

        return call

    f = only(oracles.check_all(evidence(s, compiled_wrap=third_call_fails)), "exceptions", "crash")
    assert "in-place probe call: raised RuntimeError" in f.explanation


def test_variant_raising_another_type_than_eager():
    s = spec(
        [("mul2", ("a0",), ("v0",))], ["v0"], grad="none", plan=CallPlan(calls=1, variant="shape")
    )

    def eager_like(fn):
        def call(a0):
            if a0.shape != (3,):
                raise TypeError("planted")
            return fn(a0)

        return call

    from pyfy_fuzz.case.recording import exc_obs

    ev = evidence(s, compiled_wrap=eager_like)
    assert ev.eager.variant is not None
    ev = edited(ev, "eager", raised=exc_obs(RuntimeError("eager refuses the variant"), "call"))
    f = only(oracles.check_all(ev), "guards", "compile-divergence")
    (d,) = f.differences
    assert (d.prop, d.exc.type, d.ref_exc.type) == ("other", "TypeError", "RuntimeError")  # type: ignore[union-attr]


def test_compiler_crash_is_not_eagers_runtime_error():
    from pyfy_fuzz.case.recording import exc_obs

    class BackendCompilerFailed(RuntimeError):
        pass

    BackendCompilerFailed.__module__ = "torch._dynamo.exc"
    assert not exc_obs(BackendCompilerFailed("x"), "call").is_a(exc_obs(RuntimeError("y"), "call"))


def test_signed_zero_is_a_pythonify_difference():
    s = spec([("mul2", ("a0",), ("v0",))], ["v0"], grad="none")
    ev = evidence(
        s, compiled_wrap=mapped(lambda o: o * 0), pythonified_wrap=mapped(lambda o: (o * 0).abs())
    )
    found = oracles.check_all(ev)
    assert any(f.oracle == "outputs" and f.subject == "pythonify" for f in found)


def test_refused_grad_fn_is_compared():
    from oracles._calls import PairContext, diff_autograd

    s = spec([("sin", ("a0",), ("v0",))], ["v0"])
    ev = evidence(s, compiled_wrap=lambda fn: fn)
    ref, got = ev.eager.calls[0], ev.compiled.calls[0]
    out0 = replace(got.outputs[0], grad_fn="<refused: RuntimeError>")
    got = replace(got, outputs=[out0, *got.outputs[1:]])
    assert diff_autograd(ref, got, PairContext(ev, "torch.compile", True))


def test_signature_leaves_out_path_refinements():
    """A refinement (a finer variant of a path that is also emitted) must not rename a finding
    already in a corpus: the checked-in entries were signed before synthetic_base/storage."""
    from pyfy_fuzz.schema.paths import REFINEMENTS

    base = ("runtime/input_mutation/data", "synthetic_base/1d", "synthetic_base/inference")
    d = (Difference("outputs", "torch.compile", CallRef("plan", 0), "output", "values", 0),)

    def made(paths: tuple[str, ...]) -> Finding:
        return Finding("compile-divergence", "guards", "torch.compile", paths, "x", differences=d)

    plain = made(base)
    for refinement in sorted(REFINEMENTS):
        assert made((*base, refinement)).signature == plain.signature
    other = made(base[:2])
    assert other.signature != plain.signature
