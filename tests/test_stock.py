"""The torch.compile a case is judged on is stock (Note [The stock reference] in
pyfy_fuzz/case/subjects/stock.py): read torch's configuration *during* a real case, at each
compile Dynamo starts and at each lazily lowered backward, and check who ran under what."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch._dynamo.callback import CallbackArgs, CallbackTrigger, callback_handler

from generators._spec import CallPlan
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.case.subjects import (
    COMPARABILITY,
    STOCK_KNOBS,
    WARM,
    CacheCounts,
    case_caches,
    non_stock,
)
from pyfy_fuzz.pythonify.capture import CAPTURE_SETTINGS

from .oracles.helpers import spec

TRAIN = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
    ["v1"],
    plan=CallPlan(calls=2, backward=True),
)


@dataclass(frozen=True)
class _Seen:
    phase: str  # the runner phase (run_case's on_phase) the compile happened in
    trigger: CallbackTrigger
    non_stock: dict[str, tuple[object, object]]
    caches: tuple[str, str]  # where AOTAutograd's and the FX graph cache read and write


class _Watch(list[_Seen]):
    """What each compile start saw, the runner phase now, and AOTAutograd's cache events per
    phase."""

    phase = "?"

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[str, CacheCounts] = {}
        self._mark = CacheCounts.now()

    def on_start(self, args: CallbackArgs) -> None:
        from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache
        from torch._inductor.codecache import FxGraphCache

        where = (AOTAutogradCache._get_tmp_dir(), FxGraphCache._get_tmp_dir())
        self.append(_Seen(self.phase, args.callback_trigger, non_stock(), where))

    def on_phase(self, name: str) -> None:
        now = CacheCounts.now()
        self.cache[self.phase] = _plus(self.cache.get(self.phase), now.since(self._mark))
        self.phase, self._mark = name, now


def _plus(a: CacheCounts | None, b: CacheCounts) -> CacheCounts:
    if a is None:
        return b
    return CacheCounts(a.hit + b.hit, a.miss + b.miss, a.bypass + b.bypass, a.saved + b.saved)


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Watch]:
    """Wraps the handler's dispatch rather than registering a callback: run_case resets
    Dynamo, and torch._dynamo.reset() clears registered callbacks."""
    watch = _Watch()
    run = callback_handler.run_start_callbacks

    def run_and_watch(args: CallbackArgs) -> None:
        watch.on_start(args)
        run(args)

    monkeypatch.setattr(callback_handler, "run_start_callbacks", run_and_watch)
    try:
        yield watch
    finally:
        torch._dynamo.reset()


def _run(seen: _Watch, backend: str) -> None:
    torch._dynamo.utils.counters.clear()
    r = run_case(TRAIN, backend=backend, on_phase=seen.on_phase)
    assert r.status == "ok" and not r.findings, [f.explanation for f in r.findings]
    assert r.pythonified_path is not None, r.unsupported


def _check_stock_reference(seen: list[_Seen]) -> None:
    reference = [s for s in seen if s.phase in ("torch.compile", WARM)]
    capture = [s for s in seen if s.phase == "compile"]
    # The capture compiles under its own settings, the reference under torch's defaults.
    assert capture and all(s.trigger == CallbackTrigger.DYNAMO for s in capture)
    forced = "torch._functorch.config.force_non_lazy_backward_lowering"
    assert all(forced in s.non_stock for s in capture), capture
    assert [s.trigger for s in reference][:1] == [CallbackTrigger.DYNAMO], reference
    for s in reference:
        assert set(s.non_stock) <= set(COMPARABILITY), s.non_stock
        assert not s.non_stock, s.non_stock  # this program needs neither comparability knob
        assert all(Path(d).parent.name.startswith("pyfy-cache-") for d in s.caches), s.caches
    # torch lowered the reference's backward lazily, at its first backward
    assert CallbackTrigger.LAZY_BACKWARD in [s.trigger for s in reference], reference


def test_the_reference_compiles_with_torchs_defaults_and_lowers_its_backward_lazily(
    seen: _Watch,
) -> None:
    _run(seen, "aot_eager")
    _check_stock_reference(seen)


@pytest.mark.slow
@pytest.mark.inductor
def test_the_inductor_reference_fills_a_fresh_cache_of_its_own(seen: _Watch) -> None:
    """Inductor: AOTAutograd's cache is consulted by the reference (a miss: the case's cache
    directory is fresh) and filled; the warm subject, in the same directory, is served from it;
    the capture never consults it."""
    _run(seen, "inductor")
    seen.on_phase("done")
    _check_stock_reference(seen)
    cold, warm, capture = seen.cache["torch.compile"], seen.cache[WARM], seen.cache["compile"]
    assert cold.miss >= 1 and cold.hit == 0 and cold.saved >= 1, cold
    assert warm.hit >= 1 and warm.miss == 0 and warm.bypass == 0, warm
    assert capture == CacheCounts(0, 0, 0, 0), capture
    dirs = {s.caches for s in seen if s.phase in ("torch.compile", WARM)}
    assert len(dirs) == 1, dirs  # the warm compile reads what the cold one wrote


def test_the_capture_settings_are_what_the_stock_knobs_name() -> None:
    """Every setting the capture changes is a stock knob (so non_stock() sees it) and differs
    from torch's default (or it would not need setting)."""
    knobs = {k.qualname: k for k in STOCK_KNOBS}
    for name, value in CAPTURE_SETTINGS.items():
        assert name in knobs, name
        assert knobs[name].default() != value, name
    assert non_stock() == {}, "a test left a knob changed"


def test_each_case_gets_fresh_cache_directories_removed_after_it() -> None:
    from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache
    from torch._inductor.codecache import FxGraphCache

    before = (AOTAutogradCache._get_tmp_dir(), FxGraphCache._get_tmp_dir())
    with case_caches() as first:
        assert AOTAutogradCache._get_tmp_dir() == str(first / "aotautograd")
        assert FxGraphCache._get_tmp_dir_for_key("kabcd").startswith(str(first / "fxgraph"))
        (first / "aotautograd").mkdir()
    with case_caches() as second:
        assert second != first
    assert not first.exists() and not second.exists()
    assert (AOTAutogradCache._get_tmp_dir(), FxGraphCache._get_tmp_dir()) == before


def test_a_knob_this_torch_lacks_is_named_and_skipped_by_non_stock() -> None:
    from pyfy_fuzz.case.subjects import stock

    knob = stock.Knob("torch._functorch.config", "no_such_knob_in_any_torch")
    with pytest.raises(RuntimeError, match="no_such_knob_in_any_torch is not a config entry"):
        knob.default()
    saved = stock.STOCK_KNOBS
    try:
        stock.STOCK_KNOBS = (*saved, knob)
        assert stock.non_stock() == {}
    finally:
        stock.STOCK_KNOBS = saved
