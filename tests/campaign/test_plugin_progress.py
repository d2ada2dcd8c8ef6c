"""The --pythonify torch plug-in (against a stand-in torch.compile that accepts pythonify=) and
the progress display."""

from __future__ import annotations

import io
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from generators import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from pyfy_fuzz.campaign.progress import make_progress, status_line
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.case.subjects.impl import PluginUnavailable, TorchPythonify, torch_has_pythonify


def test_stock_torch_has_no_pythonify_and_the_plugin_says_so() -> None:
    assert not torch_has_pythonify()
    with pytest.raises(PluginUnavailable, match="has no torch.compile"):
        TorchPythonify()


@pytest.fixture
def torch_with_pythonify(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.compile(..., pythonify=PATH): compiles, and writes the file on the first call (the
    bundled generator plays upstream's part)."""
    real = torch.compile

    def compile_(fn: Any, *, pythonify: str | None = None, **kw: Any) -> Any:
        if pythonify is None:
            return real(fn, **kw)
        from pyfy_fuzz.pythonify import pythonify as bundled

        state: dict[str, Any] = {}

        def call(*args: Any) -> Any:
            if "compiled" not in state:
                r = bundled(
                    fn,
                    args,
                    Path(pythonify),
                    backend=kw["backend"],
                    dynamic=bool(kw.get("dynamic")),
                    mode=kw.get("mode"),
                )
                state["compiled"] = r.compiled
            return state["compiled"](*args)

        return call

    monkeypatch.setattr(torch, "compile", compile_)


def test_the_plugin_feeds_the_runner(torch_with_pythonify: None, tmp_path: Path) -> None:
    spec = ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((3,)),),
        inputs=(InputSpec("root", 0),),
        body=(Stmt("mul_", ("a0", 2)), Stmt("sin", ("a0",), ("v0",))),
        outputs=(OutSpec("ref", "v0"),),
        plan=CallPlan(calls=2, backward=False),
    )
    impl = TorchPythonify()
    r = run_case(spec, impl=impl, workdir=tmp_path)
    assert r.status == "ok" and r.unsupported is None, r.unsupported
    assert r.pythonified_path is not None and r.pythonified_path.is_file()
    assert not r.findings, [f.explanation for f in r.findings]
    aot = ProgramSpec(
        **{**spec.__dict__, "plan": CallPlan(calls=1, backward=False, frontend="aot")}
    )
    assert "torch.compile only" in (run_case(aot, impl=impl, workdir=tmp_path).unsupported or "")


def _stats() -> Any:
    return SimpleNamespace(
        elapsed=75.0,
        budget_s=600.0,
        cases=150,
        per_min=120.0,
        shrink_cases=40,
        new={"a": 1, "b": 2},
        known_seen=Counter({"k": 3}),
        wrapper_hits=Counter({"dedupe/duplicate_args": 9, "synthetic_base/nd": 2}),
        deaths=Counter({"hang": 1}),
        new_by_kind=lambda: Counter({"crash": 2}),
    )


def test_plain_progress_is_a_log_line() -> None:
    out = io.StringIO()
    p = make_progress("auto", _stats(), out)  # StringIO is not a terminal: plain
    p.start()
    p.stop()
    line = out.getvalue().strip()
    assert line == status_line(_stats())
    assert "[1m15s / 10m] cases 150 (120/min, 40 shrinking)" in line
    assert "new findings 2: crash 2" in line and "worker deaths 1" in line


def test_rich_progress_renders_the_panel() -> None:
    out = io.StringIO()
    p = make_progress("rich", _stats(), out)
    p.start()
    time.sleep(0.01)
    p.update()
    p.stop()
    text = out.getvalue()
    for part in (
        "1m15s / 10m",
        "150",
        "120/min",
        "crash: 2",
        "dedupe/duplicate_args 9",
        "2 reached",
        "hang 1",
    ):
        assert part in text, part
