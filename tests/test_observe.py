"""Observations: what is recorded about a call, an exception, aliasing and the probes."""

from __future__ import annotations

from typing import Any

import torch

from pyfy_fuzz.case.observe import _aliasing, observe_subject
from pyfy_fuzz.case.recording import Target, exc_obs, named_inputs
from pyfy_fuzz.schema.observation import ExcObs

from .oracles.helpers import spec


def test_exception_records_type_names_and_unwraps_dynamo():
    class TorchRuntimeError(RuntimeError):  # the name is what unwrap looks at
        pass

    try:
        try:
            raise IndexError("user error")
        except IndexError as inner:
            raise TorchRuntimeError("wrapped") from inner
    except TorchRuntimeError as exc:
        e = exc_obs(exc, "call")
    assert e.short_type == "IndexError" and e.message == "user error" and e.phase == "call"
    assert e.is_a(exc_obs(LookupError("x"), "call"))
    assert not exc_obs(LookupError("x"), "call").is_a(e)


def test_backend_compiler_failed_names_the_inner_type():
    class BackendCompilerFailed(RuntimeError):  # torch's constructor differs across releases
        def __init__(self, inner: BaseException) -> None:
            super().__init__("backend='aot_eager' raised:")
            self.inner_exception = inner

    exc = BackendCompilerFailed(AssertionError("boom"))
    e = exc_obs(exc, "call")
    assert e.short_type == "BackendCompilerFailed(AssertionError)"
    assert e.message.startswith("AssertionError: boom")
    assert e.is_a(exc_obs(exc, "call"))


def test_named_inputs_cover_bases_and_module_state():
    base = torch.randn(4)
    view = base[1:3]
    m = torch.nn.BatchNorm1d(2)
    names = [n for n, _ in named_inputs((base, view, 3), m)]
    assert names[:3] == ["a0", "a1", "a1._base"]
    assert "self.weight" in names and "self.running_mean" in names


def test_aliasing_facts():
    x = torch.randn(4)
    y = torch.randn(4)
    shared = torch.empty(0).set_(x.untyped_storage(), 1, (2,), (1,))
    outs = [x, x[1:], y.clone(), shared]
    facts = _aliasing(outs, named_inputs((x, y), None))
    assert facts[0].is_input == ("a0",) and facts[0].base == "none"
    assert facts[1].base == "input:a0" and facts[1].shares_storage_with_inputs == ("a0",)
    assert facts[2].shares_storage_with_inputs == () and facts[2].shares_storage_with_outputs == ()
    assert facts[3].base == "none" and facts[3].shares_storage_with_outputs == (0, 1)


def test_probes_see_writes_through_views_and_saved_tensors():
    from generators import materialize

    s = spec(
        [("view", ("a0", "slice", 0, 0, 2, 1), ("v0",)), ("sin", ("v0",), ("v1",))],
        ["v0", "v1"],
        grad="nonleaf",
        shape=(4,),
    )
    program = materialize(s)
    obs = observe_subject(program, Target("eager", program.make_fn()))
    probe = obs.mutation_probe
    assert isinstance(probe, list) and len(probe) == 2
    # a write into the view output reaches the argument (and, through it, nothing else)
    assert probe[0].raised is None and "a0" in probe[0].changed_inputs
    # sin saved its input (a view of a0): bumping a0's version makes backward refuse
    assert isinstance(obs.version_probe, ExcObs)
    later = obs.calls[0].outputs_later
    assert later is not None and len(later) == 2


def test_in_place_probe_changes_every_value():
    from oracles.compare import bitwise_equal
    from pyfy_fuzz.case.probes import _mutate

    x = torch.tensor([float("nan"), float("inf"), 7.0, 4096.0], dtype=torch.float16)
    before = x.clone()
    _mutate(x)
    assert not any(
        bitwise_equal(a.reshape(1), b.reshape(1)) for a, b in zip(x, before, strict=True)
    )


def test_backend_compiler_failed_is_judged_by_what_the_compiler_raised():
    class BackendCompilerFailed(RuntimeError):
        def __init__(self, inner: BaseException) -> None:
            super().__init__("backend raised")
            self.inner_exception = inner

    BackendCompilerFailed.__module__ = "torch._dynamo.exc"
    eager = exc_obs(RuntimeError("view modified in place"), "backward")
    same = exc_obs(BackendCompilerFailed(RuntimeError("view modified in place")), "call")
    crash = exc_obs(BackendCompilerFailed(AssertionError("internal")), "call")
    assert same.is_a(eager) and not crash.is_a(eager)


def test_a_dynamo_error_raised_from_none_is_the_users_error() -> None:
    """Dynamo raises TorchRuntimeError *from None* when fake-tensor propagation fails: the
    program's own RuntimeError survives only in the message, and must still count as eager's
    (a 20-minute campaign reported 7 false guard findings before this)."""
    import torch._dynamo

    def f(x: torch.Tensor) -> torch.Tensor:
        return x.view((1,))

    x = torch.randn(2)
    try:
        f(x)
    except RuntimeError as e:
        eager = exc_obs(e, "call")
    torch._dynamo.reset()
    try:
        torch.compile(f, backend="aot_eager")(x)
    except Exception as e:
        assert type(e).__name__ == "TorchRuntimeError" and e.__cause__ is None
        compiled = exc_obs(e, "call")
    assert compiled.is_a(eager)
    assert not eager.is_a(compiled)


def _recompile_fails(calls: list[int]) -> Any:
    """A backend whose first compile works and whose every later one raises."""

    def backend(gm: Any, example_inputs: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("the recompile fails")
        return gm.forward

    return backend


def test_a_recompile_that_raises_before_its_graph_exists_is_a_recompile() -> None:
    """Found by triage (issue 28): a later call whose guards failed and whose recompile raised
    counted as no recompile (no new graph), so its error was read as a reused graph's
    (REUSED_ALIASING) and named the wrong bug. Failed guards say it recompiled."""
    import torch._dynamo

    from generators import materialize
    from generators._spec import CallPlan

    s = spec(
        [("sin", ("a0",), ("v0",))], ["v0"], grad="none", plan=CallPlan(calls=1, variant="shape")
    )
    program = materialize(s)
    torch._dynamo.reset()
    compiled = torch.compile(program.make_fn(), backend=_recompile_fails([]), dynamic=False)
    obs = observe_subject(program, Target("torch.compile", compiled), probes=False)
    assert obs.variant is not None and obs.variant.raised is not None
    assert obs.variant.recompiled and obs.variant.recompile_reasons


def test_a_target_without_guards_runs_no_later_call() -> None:
    """Found by triage (issue 28): aot_function compiles once, at its first call that works;
    where call 0 raised, the variant call compiled the graph the probes then ran on with call
    0's kind of inputs (two entries of ours). `later_calls=False` runs none."""
    from generators import materialize
    from generators._spec import CallPlan

    s = spec([("sin", ("a0",), ("v0",))], ["v0"], plan=CallPlan(calls=1, variant="shape"))
    program = materialize(s)
    seen: list[tuple[int, ...]] = []

    def fn(*args: Any) -> Any:
        seen.append(tuple(args[0].shape))
        return program.make_fn()(*args)

    obs = observe_subject(program, Target("torch.compile", fn), probes=False, later_calls=False)
    assert obs.variant is None and obs.sequence == [] and seen == [(3,)]


def test_a_refused_write_that_wrote_first_is_not_blamed_on_the_next_one():
    """Eager's write into an inference tensor outside inference_mode writes, then raises; the
    next output's write must not be said to change it (the issue-36 triage's 26d5)."""
    from dataclasses import replace

    from generators import materialize

    s = spec([("mul2", ("a0",), ("v0",))], ["v0", "a0"], shape=(3,), grad="none")
    s = replace(s, body=(replace(s.body[0], ctx="inference_mode"),))
    program = materialize(s)
    obs = observe_subject(program, Target("eager", program.make_fn()))
    probe = obs.mutation_probe
    assert isinstance(probe, list) and len(probe) == 2
    assert probe[0].raised is not None  # an inference tensor, written outside inference_mode
    assert probe[1].raised is None and probe[1].changed_outputs == ()
