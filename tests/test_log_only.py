"""Work Dynamo does only for its logs is left out of a case's compiles, and nothing a case
observes changes (Note [Work only for logs] in pyfy_fuzz/case/subjects/log_only.py)."""

from __future__ import annotations

import logging
import re

import pytest
import torch
import torch._dynamo.guards as guards
import torch._dynamo.symbolic_convert as convert

import pyfy_fuzz.case.runner as runner
from generators._spec import CallPlan
from pyfy_fuzz.case.subjects import log_only_skipped

from .oracles.helpers import spec

TRAIN = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
    ["v1"],
    plan=CallPlan(calls=2, backward=True),
)


def test_inside_no_guard_profile_and_no_names_for_logs_that_are_off() -> None:
    profile, named = guards.profile_guard_manager, convert.get_funcname
    with log_only_skipped():
        assert guards.profile_guard_manager(None, {}, 1) == 0.0
        assert convert.get_funcname(convert.__file__, 1) is None
        torch.compile(lambda x: x.sin() + 1, backend="aot_eager")(torch.ones(2))
    assert (guards.profile_guard_manager, convert.get_funcname) == (profile, named)


def test_a_debug_log_that_prints_the_name_gets_torchs_name() -> None:
    log = convert.trace_call_log
    level = log.level
    log.setLevel(logging.DEBUG)
    try:
        with log_only_skipped():
            line = next(
                n for n in range(1, 400) if convert.get_funcname(convert.__file__, n) is not None
            )
            got = convert.get_funcname(convert.__file__, line)
    finally:
        log.setLevel(level)
    assert got is not None and got == convert.get_funcname(convert.__file__, line)


@pytest.mark.parametrize(
    "backend",
    ["aot_eager", pytest.param("inductor", marks=[pytest.mark.slow, pytest.mark.inductor])],
)
def test_a_case_observes_the_same_without_the_log_only_work(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same case with torch's own logging work and without: the same observations of
    every subject, findings and wrapper paths."""
    skipped = runner.run_case(TRAIN, backend=backend, keep_evidence=True)
    monkeypatch.setattr(runner, "log_only_skipped", _as_torch_does)
    stock = runner.run_case(TRAIN, backend=backend, keep_evidence=True)
    assert skipped.status == stock.status == "ok"
    assert [f.signature for f in skipped.findings] == [f.signature for f in stock.findings]
    assert skipped.wrapper_paths == stock.wrapper_paths
    assert skipped.evidence is not None and stock.evidence is not None
    for subject in ("eager", "compiled", "pythonified", "capture"):
        assert _printed(getattr(skipped.evidence, subject)) == _printed(
            getattr(stock.evidence, subject)
        ), subject


def _printed(obs: object) -> str:
    """An observation as printed (it holds tensors: values, dtypes, metadata, errors), less
    autograd's sequence numbers, which count on across the process's cases, and objects'
    addresses and each case's temporary directory in messages."""
    text = re.sub(r"(Backward\d*'), \d+", r"\1", repr(obs))
    return re.sub(r"0x[0-9a-f]+|pyfy-case-\w+", "", text)


def _as_torch_does() -> object:
    import contextlib

    return contextlib.nullcontext()
