"""structured_trace and tlparse_index: a real compile's TORCH_TRACE log is written only inside
the block, torch's trace_log is left exactly as it was, and tlparse's index is made (or its
absence said once)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._logging._internal as internal

from pyfy_fuzz.corpus import trace
from pyfy_fuzz.corpus.trace import (
    TLPARSE_NOTICE,
    find_tlparse,
    structured_trace,
    tlparse_index,
    trace_logs,
)


def _fresh() -> Callable[[torch.Tensor], torch.Tensor]:
    """A new function object each time, so Dynamo compiles it again (no cache hit)."""

    def f(x: torch.Tensor) -> torch.Tensor:
        return (x.sin() + 1).relu() * 2

    return f


def _compile_and_run(backend: str = "aot_eager") -> None:
    torch.compile(_fresh(), backend=backend)(torch.randn(4, 4))
    torch._dynamo.reset()


def _state() -> tuple[Any, ...]:
    tl = internal.trace_log
    return (
        tl.handlers,
        list(tl.handlers),
        tl.level,
        tl.propagate,
        tl.disabled,
        vars(tl).get("isEnabledFor"),
    )


def _snapshot(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in directory.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "backend",
    ["aot_eager", pytest.param("inductor", marks=pytest.mark.inductor)],
)
def test_real_compile_is_traced_only_inside_the_block(tmp_path: Path, backend: str) -> None:
    before = _state()
    with structured_trace(tmp_path):
        _compile_and_run(backend)
    assert _state()[1:] == before[1:] and _state()[0] is before[0]
    logs = trace_logs(tmp_path)
    assert len(logs) == 1 and logs[0].name.startswith("dedicated_log_torch_trace_")
    text = logs[0].read_text()
    for entry in ('"dynamo_start"', '"dynamo_output_graph"', '"compilation_metrics"'):
        assert entry in text, entry
    assert '"aot_inference_graph"' in text or '"aot_forward_graph"' in text
    if backend == "inductor":
        assert '"inductor_output_code"' in text

    written = _snapshot(tmp_path)
    _compile_and_run(backend)  # outside the block: nothing more, anywhere in the directory
    assert _snapshot(tmp_path) == written


def test_no_compile_leaves_no_file(tmp_path: Path) -> None:
    with structured_trace(tmp_path / "trace"):
        torch.randn(3).sin()
    assert not (tmp_path / "trace").exists() or trace_logs(tmp_path / "trace") == []


def test_state_restored_on_exception(tmp_path: Path) -> None:
    before = _state()
    with pytest.raises(RuntimeError, match="boom"), structured_trace(tmp_path):
        _compile_and_run()
        raise RuntimeError("boom")
    after = _state()
    assert after[0] is before[0] and after[1:] == before[1:]
    assert '"dynamo_start"' in trace_logs(tmp_path)[0].read_text()
    written = _snapshot(tmp_path)
    _compile_and_run()
    assert _snapshot(tmp_path) == written


def test_nested_blocks_trace_to_their_own_directory(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    before = _state()
    with structured_trace(outer):
        with structured_trace(inner):
            _compile_and_run()
        inner_written = _snapshot(inner)
        outer_before = _snapshot(outer)
        _compile_and_run()  # the outer block's handler is back
        assert _snapshot(outer) != outer_before
    after = _state()
    assert after[0] is before[0] and after[1:] == before[1:]
    assert _snapshot(inner) == inner_written
    assert '"dynamo_start"' in trace_logs(inner)[0].read_text()
    assert '"dynamo_start"' in trace_logs(outer)[0].read_text()


def test_restores_a_set_level_propagate_and_handlers(tmp_path: Path) -> None:
    """Whatever trace_log had (here: a handler of someone else's, INFO, propagating) comes
    back, and that handler saw nothing of the traced block."""
    tl = internal.trace_log
    other = logging.NullHandler()
    seen: list[logging.LogRecord] = []
    other.handle = seen.append  # type: ignore[method-assign,assignment]
    saved = (list(tl.handlers), tl.level, tl.propagate)
    tl.addHandler(other)
    tl.setLevel(logging.INFO)
    tl.propagate = True
    try:
        before = _state()
        with structured_trace(tmp_path):
            _compile_and_run()
        after = _state()
        assert after[0] is before[0] and after[1:] == before[1:]
        assert seen == []
    finally:
        tl.handlers[:] = saved[0]
        tl.setLevel(saved[1])
        tl.propagate = saved[2]


def test_missing_internal_degrades_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(trace, "_internals_warned", set())
    monkeypatch.delattr(internal, "LazyTraceHandler")
    before = _state()
    ran = []
    for _ in range(2):
        with caplog.at_level(logging.WARNING, logger="pyfy_fuzz.corpus.trace"):
            with structured_trace(tmp_path):
                _compile_and_run()
                ran.append(True)
    assert ran == [True, True]
    # Untouched, apart from what torch does itself: its import-time lazy handler may have
    # removed itself on the compile's first record, as it would have without the block.
    after = _state()
    assert after[0] is before[0] and after[2:] == before[2:]
    assert not any(tmp_path.iterdir())
    messages = [r.getMessage() for r in caplog.records if r.name == "pyfy_fuzz.corpus.trace"]
    assert len(messages) == 1 and "\n" not in messages[0]
    assert "torch._logging._internal.LazyTraceHandler" in messages[0]


def test_tlparse_absent_gives_none_and_one_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(trace.shutil, "which", lambda *a, **k: None)
    monkeypatch.setattr(trace, "_tlparse_notice_given", False)
    (tmp_path / "dedicated_log_torch_trace_x.log").write_text("V0101 00:00:00.000 1 x.py:1] {}\n")
    with caplog.at_level(logging.WARNING, logger="pyfy_fuzz.corpus.trace"):
        assert find_tlparse() is None
        assert tlparse_index(tmp_path) is None
        assert tlparse_index(tmp_path) is None
    notices = [r.getMessage() for r in caplog.records if r.name == "pyfy_fuzz.corpus.trace"]
    assert notices == [TLPARSE_NOTICE]
    assert not (tmp_path / "tlparse").exists()


def test_no_trace_file_gives_none_without_running_tlparse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*a: Any, **k: Any) -> None:
        raise AssertionError("tlparse looked up with no trace to parse")

    monkeypatch.setattr(trace, "find_tlparse", fail)
    assert tlparse_index(tmp_path) is None


def test_tlparse_failure_gives_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake = tmp_path / "bin" / "tlparse"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'error: bad log' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(trace, "find_tlparse", lambda: str(fake))
    (tmp_path / "dedicated_log_torch_trace_x.log").write_text("junk\n")
    with caplog.at_level(logging.WARNING, logger="pyfy_fuzz.corpus.trace"):
        assert tlparse_index(tmp_path) is None
    assert any("exited 3" in r.getMessage() and "bad log" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(find_tlparse() is None, reason="tlparse not installed (pip install tlparse)")
def test_tlparse_present_makes_the_index(tmp_path: Path) -> None:
    with structured_trace(tmp_path):
        _compile_and_run()
    index = tlparse_index(tmp_path)
    assert index == tmp_path / "tlparse" / "index.html"
    assert index.is_file() and "<html" in index.read_text().lower()
    assert tlparse_index(tmp_path) == index  # --overwrite: a second run replaces the first
