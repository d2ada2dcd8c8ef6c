"""The CUDA-graph oracle against torch's cudagraph trees (Note [The CUDA-graph reference]):
what it excuses of torch, and what it holds the file to, on observations as a GPU run makes
them (built here on CPU: the oracle reads plain data)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import oracles
from generators._spec import CallPlan
from oracles.by_design import recording
from oracles.cudagraph import OVERWRITTEN
from pyfy_fuzz.case.recording import exc_obs

from .helpers import edited, evidence, spec

TWO_CALLS = spec(
    [("sin", ("a0",), ("v0",))], ["v0"], grad="none", plan=CallPlan(calls=2, backward=False)
)
STALE = f"<unreadable: RuntimeError: Error: {OVERWRITTEN} by a subsequent run. Stack trace: ...>"


def _stale_output(subject: str, device: str, what: str = STALE) -> oracles.Evidence:
    ev = evidence(TWO_CALLS, pythonified_wrap=lambda fn: fn, device=device, mode="reduce-overhead")
    ev = replace(ev, capture=ev.compiled)  # the file's own reference: as torch.compile ran
    return edited(ev, subject, 0, outputs_later=[what])


def test_torchs_overwritten_output_is_by_design_on_cuda_only() -> None:
    with recording() as excused:
        assert oracles.cudagraph.check(_stale_output("compiled", "cuda")) == []
    assert excused == ["cudagraph-overwritten-output"]
    (f,) = oracles.cudagraph.check(_stale_output("compiled", "cpu"))  # no trees on CPU
    assert f.subject == "torch.compile"


def test_only_the_documented_error_is_excused() -> None:
    other = "<unreadable: RuntimeError: CUDA error: an illegal memory access was encountered>"
    (f,) = oracles.cudagraph.check(_stale_output("compiled", "cuda", other))
    assert "changed after later calls" in f.explanation


def test_the_file_has_no_such_contract() -> None:
    (f,) = oracles.cudagraph.check(_stale_output("pythonified", "cuda"))
    assert f.subject == "pythonify"


def _runs(torch_skips: int, skipped: str | None) -> oracles.Evidence:
    ev = evidence(
        TWO_CALLS,
        pythonified_wrap=lambda fn: fn,
        device="cuda",
        mode="reduce-overhead",
        backend="inductor",
    )
    runner = {"captures": 0 if skipped else 1, "replays": 0, "eager_runs": 2, "skipped": skipped}
    return replace(
        ev,
        capture=ev.compiled,
        compiled=replace(ev.compiled, extra={"cudagraph_skips": torch_skips}),
        pythonified=replace(ev.pythonified, extra={"_cudagraph_inference": runner}),
    )


@pytest.mark.parametrize(
    "torch_skips, skipped, expect",
    [
        (0, None, None),
        (1, "graph mutates non-static inputs [0]", None),
        (1, None, "torch_skipped"),
        (0, "capture failed: RuntimeError: x", "file_skipped"),
    ],
)
def test_the_file_replays_where_torch_replays(
    torch_skips: int, skipped: str | None, expect: str | None
) -> None:
    found = oracles.cudagraph.check(_runs(torch_skips, skipped))
    if expect is None:
        assert found == []
        return
    (f,) = found
    assert (f.subject, f.aspect) == ("pythonify", f"cudagraph_skip: {expect}")
    assert f.differences[0].locus == "cudagraph_skip"


def test_skips_are_not_compared_off_cuda_or_after_a_raise() -> None:
    ev = _runs(1, None)
    assert oracles.cudagraph.check(replace(ev, device="cpu")) == []
    assert oracles.cudagraph.check(replace(ev, mode=None)) == []
    # aot_eager's reference (the cudagraphs backend) applies input writes outside its graphs
    assert oracles.cudagraph.check(replace(ev, backend="aot_eager")) == []
    # torch's count covers a variant call's recompile, which the file refuses or reuses for
    variant = replace(ev.compiled.calls[0], variant="shape")
    assert (
        oracles.cudagraph.check(replace(ev, compiled=replace(ev.compiled, variant=variant))) == []
    )
    # "the file captured every graph" needs a capture
    never = {"captures": 0, "replays": 0, "eager_runs": 2, "skipped": None}
    quiet = replace(ev, pythonified=replace(ev.pythonified, extra={"_cudagraph_inference": never}))
    assert oracles.cudagraph.check(quiet) == []
    raised = exc_obs(RuntimeError("x"), "call")
    assert oracles.cudagraph.check(edited(ev, "compiled", 1, raised=raised)) == []
