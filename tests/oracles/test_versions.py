"""The autograd-state oracles (issue 17): version counters moved per call, the saved probe,
and gradients of non-leaf arguments through retain_grad. Each plants its bug class in a tiny
subject wrapped around eager's function and shows the oracle catches it; honest subjects,
and eager's own mutations under no_grad, give nothing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import torch

import oracles
from generators._spec import ViewStep
from oracles.by_design import recording
from oracles.versions import diff_versions

from .helpers import evidence, observe, spec

# a0 mutated in place, then read (a non-leaf: the mutation is seen by autograd)
MUTATED = spec([("mul_", ("a0", 2), ()), ("mul", ("a0", "a0"), ("v0",))], ["v0"], grad="nonleaf")
# a0 only read
READ = spec([("sin", ("a0",), ("v0",))], ["v0"], grad="nonleaf")


def _quiet_write(fn: Any) -> Any:
    """The program's write lands through .data: values right, version counter untouched."""

    def call(a0: torch.Tensor) -> Any:
        a0.data.mul_(2)
        return a0 * a0

    return call


def _versions(found: list[Any]) -> list[Any]:
    return [f for f in found if f.oracle == "versions"]


@pytest.mark.parametrize("s", [MUTATED, READ], ids=["mutated", "read"])
def test_honest_subjects_agree_on_version_counters(s: Any) -> None:
    ev = evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=lambda fn: fn)
    assert oracles.check_all(ev) == []
    assert ev.eager.calls[0].versions_moved == (("a0",) if s is MUTATED else ())


def test_a_write_that_skips_the_version_counter_is_found() -> None:
    found = oracles.check_all(evidence(MUTATED, compiled_wrap=_quiet_write))
    (f,) = _versions(found)
    assert f.kind == "compile-divergence"
    assert "call 0: input a0: version counter not bumped by the call (mutated)" in f.explanation
    # the saved probe: eager's backward refuses a0 saved before the call, the subject's runs
    assert (
        "backward through tensors saved before the call: expected backward raised "
        "RuntimeError, got backward ran" in f.explanation
    )


def test_a_bump_of_an_untouched_input_is_found() -> None:
    def bumping(fn: Any) -> Any:
        def call(a0: torch.Tensor) -> Any:
            torch.autograd.graph.increment_version(a0)
            return fn(a0)

        return call

    (f,) = _versions(oracles.check_all(evidence(READ, compiled_wrap=bumping)))
    assert "input a0: version counter bumped by the call (not mutated)" in f.explanation
    assert "expected backward ran, got backward raised RuntimeError" in f.explanation


def test_pythonify_is_judged_against_torch_compile() -> None:
    ev = evidence(MUTATED, compiled_wrap=lambda fn: fn, pythonified_wrap=_quiet_write)
    (f,) = _versions(oracles.check_all(ev))
    assert (f.kind, f.subject) == ("pythonify-divergence", "pythonify")


def test_a_view_and_its_base_share_one_counter() -> None:
    # a0 is a slice of the root: a write through it moves the root's counter too.
    s = spec(
        [("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))],
        ["v0"],
        grad="none",
        views=(ViewStep("slice", (0, 0, 2, 1)),),
    )
    _, eager = observe(s, name="eager")
    assert eager.calls[0].versions_moved == ("a0", "a0._base")


def test_mutation_under_no_grad_moves_the_counter_too() -> None:
    s = spec([("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="leaf")
    s = replace(s, body=(replace(s.body[0], ctx="no_grad"), s.body[1]))
    _, eager = observe(s, name="eager")
    assert eager.calls[0].versions_moved == ("a0",)
    assert eager.saved_probe not in (None, "ok")  # a0 saved before, mutated: backward refuses


def test_a_raised_call_is_not_compared() -> None:
    ev = evidence(MUTATED, compiled_wrap=lambda fn: fn)
    ref, got = ev.eager.calls[0], ev.compiled.calls[0]
    assert diff_versions(ref, replace(got, versions_moved=None), None) == []  # type: ignore[arg-type]


def test_the_gradient_of_a_non_leaf_argument_is_compared() -> None:
    # Before retain_grad, a non-leaf argument's gradient was never observed: its source leaf
    # is made inside make_inputs, not passed. A subject that doubles what reaches it is found.
    s = spec([("sin", ("a0",), ("v0",))], ["v0"], grad="nonleaf")

    def doubling(fn: Any) -> Any:
        def call(a0: torch.Tensor) -> Any:
            a0.register_hook(lambda g: g * 2)
            return fn(a0)

        return call

    ev = evidence(s, compiled_wrap=doubling)
    assert ev.eager.calls[0].leaves == ("a0",)
    (f,) = [f for f in oracles.check_all(ev) if f.oracle == "grads"]
    assert "grad of a0: values differ" in f.explanation


def test_changes_that_cancel_out_are_no_mutation_to_torch_compile() -> None:
    """unsqueeze_ then squeeze_: eager bumps the counter twice, AOTAutograd sees no mutation
    (by_design: net-noop-mutation-version) -- excused for torch.compile alone."""
    s = spec(
        [("unsqueeze_", ("a0", 0), ()), ("squeeze_", ("a0", 0), ()), ("sin", ("a0",), ("v0",))],
        ["v0"],
        grad="none",
    )

    def unbumped(fn: Any) -> Any:
        return lambda a0: a0.sin()

    ev = evidence(s, compiled_wrap=unbumped, pythonified_wrap=unbumped)
    assert ev.eager.calls[0].versions_moved == ("a0",) and ev.eager.calls[0].unchanged == ("a0",)
    with recording() as excused:
        found = oracles.check_all(ev)
    assert not _versions(found) and "net-noop-mutation-version" in excused
    # the file is judged on torch.compile, which it must match: no excuse there
    ev = evidence(s, compiled_wrap=lambda fn: fn, pythonified_wrap=unbumped)
    (f,) = _versions(oracles.check_all(ev))
    assert f.subject == "pythonify"


def _counted(fn: Any) -> Any:
    """The program, then a0's counter moved: torch.compile's copy_ of a write eager did not
    count."""

    def call(a0: torch.Tensor) -> Any:
        out = fn(a0)
        torch.autograd.graph.increment_version(a0)
        return out

    return call


# a write through .data of a0, which eager does not count (autograd's to ignore)
DATA_WRITE = spec([("data_mul_", ("a0",), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="none")


@pytest.mark.parametrize("shape", [(3,), (0,)], ids=["elements", "empty"])
def test_a_bump_where_eager_wrote_through_data_is_one_verdict_at_every_shape(shape: Any) -> None:
    """Found by triage (issue 28): a `.data` write eager does not count, which torch.compile
    counts (pytorch#139152), was dropped for an input with elements (eager changed it
    without a bump: eager's quirk, Note [Version counters]) and reported for an empty one,
    where no write shows. One verdict: not reported at either shape."""

    s = replace(DATA_WRITE, roots=(replace(DATA_WRITE.roots[0], shape=shape),))
    ev = evidence(s, compiled_wrap=_counted)
    assert ev.eager.calls[0].versions_moved == ()
    assert ev.compiled.calls[0].versions_moved == ("a0",)
    assert _versions(oracles.check_all(ev)) == []


def test_eager_quirk_is_one_verdict_for_every_call_of_the_case() -> None:
    """Found by triage (issue 36, 731b70b7b63c): eager wrote an input without moving its
    counter on every call, but on call 1 the write left the values as they were (0 * 0.5), so
    that call alone showed no quirk and torch.compile's (right) bump was reported."""

    ev = evidence(DATA_WRITE, compiled_wrap=_counted)
    assert len(ev.eager.calls) >= 2 and ev.eager.calls[1].unchanged == ()
    ev.eager.calls[1] = replace(ev.eager.calls[1], unchanged=("a0",))  # a write of no effect
    assert _versions(oracles.check_all(ev)) == []
