"""The warm-cache subject (Note [The warm subject] in pyfy_fuzz/case/subjects/warm.py): the stock
compile again, after a Dynamo reset, served from AOTAutograd's cache in the case's directory.

Most tests run aot_eager under the settings that make torch cache it (force_autograd_cache with
the bundled cache: torch's precompile path), so the whole warm path runs in a second; one slow
test runs Inductor, which torch caches by default."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._functorch.config as fconfig

from generators._spec import CallPlan
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.case.subjects import WARM, CacheCounts, served, warm_applies
from pyfy_fuzz.corpus.repro import render_repro
from pyfy_fuzz.schema.messages import SERVED, CaseOutcome
from tests.findings import values_finding

from .oracles.helpers import spec

TRAIN = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
    ["v1"],
    plan=CallPlan(calls=2, backward=True),
)
CACHED_AOT_EAGER = {"force_autograd_cache": True, "bundled_autograd_cache": True}


@contextmanager
def _perturbed(*modules: str) -> Iterator[None]:
    """plain_compile in `modules` hands back a compile whose outputs are off by one: a bug of
    the compile(s) that module makes (compile_once: cold; warm: warm)."""

    def off_by_one(compiled: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            out = compiled(*args)
            return out + 1 if isinstance(out, torch.Tensor) else out

        return call

    saved = []
    for name in modules:
        module = importlib.import_module(f"pyfy_fuzz.case.subjects.{name}")
        real = module.plain_compile
        saved.append((module, real))
        module.plain_compile = lambda *a, real=real, **kw: off_by_one(real(*a, **kw))
    try:
        yield
    finally:
        for module, real in saved:
            module.plain_compile = real


def test_served_reads_what_the_cache_did() -> None:
    assert served(CacheCounts(hit=2, miss=0, bypass=0, saved=0)) == "hit"
    assert served(CacheCounts(hit=1, miss=1, bypass=0, saved=1)) == "partial"
    assert served(CacheCounts(hit=0, miss=1, bypass=0, saved=1)) == "miss"
    assert served(CacheCounts(hit=0, miss=0, bypass=1, saved=0)) == "bypass"
    later = CacheCounts(hit=5, miss=3, bypass=1, saved=2)
    assert later.since(CacheCounts(hit=4, miss=3, bypass=1, saved=1)) == CacheCounts(1, 0, 0, 1)
    with pytest.raises(ValueError, match="warm"):
        CaseOutcome("ok", "module", warm="lukewarm")  # type: ignore[arg-type]
    assert set(SERVED) >= {"hit", "partial", "miss", "bypass", "unsaved"}


def test_warm_applies_only_where_torch_consults_the_cache() -> None:
    assert warm_applies("inductor") and not warm_applies("aot_eager")
    with fconfig.patch(**CACHED_AOT_EAGER):
        assert warm_applies("aot_eager")
    with fconfig.patch(enable_autograd_cache=False):
        assert not warm_applies("inductor")


def test_aot_eager_by_default_has_no_warm_subject() -> None:
    r = run_case(TRAIN, backend="aot_eager")
    assert r.status == "ok" and r.warm is None and "warm_run_s" not in r.timings


def test_the_warm_compile_is_served_from_the_cache_and_matches() -> None:
    with fconfig.patch(**CACHED_AOT_EAGER):
        r = run_case(TRAIN, backend="aot_eager")
    assert r.status == "ok", r.reason
    assert r.warm == "hit" and "warm_run_s" in r.timings
    assert r.findings == [], [f.explanation for f in r.findings]


def test_a_bug_only_the_warm_compile_has_is_its_own_finding() -> None:
    with fconfig.patch(**CACHED_AOT_EAGER), _perturbed("warm"):
        r = run_case(TRAIN, backend="aot_eager")
    assert r.warm == "hit"
    subjects = {f.subject for f in r.findings}
    assert subjects == {WARM}, [(f.subject, f.explanation) for f in r.findings]
    outputs = next(f for f in r.findings if f.oracle == "outputs")
    assert outputs.kind == "compile-divergence" and "eager" in outputs.explanation


def test_a_bug_both_compiles_have_is_the_cold_ones() -> None:
    with fconfig.patch(**CACHED_AOT_EAGER), _perturbed("compile_once", "warm"):
        r = run_case(TRAIN, backend="aot_eager")
    assert r.findings and {f.subject for f in r.findings} == {"torch.compile"}


def test_a_plan_without_backward_leaves_nothing_to_serve() -> None:
    """torch saves the entry only once the lazily lowered backward exists: a forward-only plan
    on inputs that require grad saves none, and the warm subject is not run (never judged)."""
    forward_only = spec([("sin", ("a0",), ("v0",))], ["v0"], plan=CallPlan(calls=1, backward=False))
    with fconfig.patch(**CACHED_AOT_EAGER):
        r = run_case(forward_only, backend="aot_eager")
    assert r.warm == "unsaved" and "warm_run_s" not in r.timings


def test_warm_repro_fills_the_cache_then_compiles_again(tmp_path: Path) -> None:
    finding = values_finding(WARM)
    source = render_repro(TRAIN, finding, backend="inductor")
    assert source.index("fill_cache(cold, make_inputs())") < source.index("torch._dynamo.reset()")
    assert 'os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()' in source
    assert "torch.compile (warm cache)" in source
    # torch has no such bug: the script runs through and says so (exit 0)
    path = tmp_path / "repro.py"
    path.write_text(source)
    done = subprocess.run(
        [sys.executable, "-I", str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fixed" in done.stdout


@pytest.mark.slow
@pytest.mark.inductor
def test_stock_inductor_is_served_warm() -> None:
    """Inductor is cached by torch's defaults: no setting of ours makes the warm subject."""
    r = run_case(TRAIN, backend="inductor")
    assert r.status == "ok", r.reason
    assert r.warm == "hit" and r.findings == [], [f.explanation for f in r.findings]
