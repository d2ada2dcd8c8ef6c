"""The torch.compile that findings are judged on is the stock one.

Note [The stock reference]
The bundled generator's capture compiles under settings of its own: the backward lowered with
the forward (`force_non_lazy_backward_lowering`, so the backward graph exists when the file is
written) and AOTAutograd's and the FX graph caches off (so every wrapper runs its
post_compile where the recorder can see it). A user's torch.compile does neither: it lowers
the backward lazily at the first backward, and it consults and fills both caches. A bug that
only exists under the capture's settings is not a bug users meet, and a bug of the lazy or
cached paths would never be seen. So the capture is its own compile (its settings are
`pythonify.capture.CAPTURE_SETTINGS`, recorded in each corpus entry), and the torch.compile
subject is a second, plain `torch.compile` of a fresh copy of the program, run with torch's
defaults.

Two settings of the reference are pyfy-fuzz's, and only where a program needs them to be
comparable with eager at all (runner.py): Inductor's `fallback_random` (eager's random
numbers; by_design: inductor-rng) and `donated_buffer=False` for a plan that retains the graph
for a second backward (by_design: donated-buffer-retain-graph). `COMPARABILITY` names them;
every other knob of `STOCK_KNOBS` must hold torch's default while the reference compiles
(tests/test_stock.py reads them there).

Caches stay on, but each case gets its own AOTAutograd and FX graph cache directories
(`case_caches`), so a case never hits an entry another case wrote: it is served cold, as a
first compile in a fresh process would be. Inductor's kernel cache (compiled C++ by source
hash) stays shared: it stores only what a source compiles to.

Note [The CUDA-graph reference]
mode="reduce-overhead" asks torch for CUDA graphs, and only Inductor reads the mode: an
aot_autograd backend such as aot_eager logs that it ignores it. So on CUDA a reduce-overhead
case is judged on torch's own CUDA graphs (cudagraph trees, torch/_inductor/cudagraph_trees.py)
whichever backend it drew: Inductor with mode="reduce-overhead", and for aot_eager torch's
`cudagraphs` backend, aot_autograd with no-op compilers whose graphs cudagraph trees record
and replay (torch/_dynamo/backends/cudagraphs.py): the graphs aot_eager runs, under torch's
replay. `stock_compile` names both; the runner, the warm subject, the benchmark's bare compile
and repro.py all take it from there. On CPU torch skips CUDA graphs ("skipping cudagraphs due
to cpu device"): the reference is the compile a user writes, mode and all, and the file
replays against its emulation (pythonify/wrappers/cudagraph.py).
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfy_fuzz.schema.config import compile_knobs
from pyfy_fuzz.schema.spec import CallPlan

__all__ = [
    "COMPARABILITY",
    "RECOMPILE_LIMIT",
    "STOCK_KNOBS",
    "Knob",
    "case_caches",
    "drawn_config",
    "non_stock",
    "shared_code_limits",
]


@dataclass(frozen=True)
class Knob:
    """One torch configuration setting, by its config module and name."""

    module: str  # "torch._functorch.config"
    name: str  # "force_non_lazy_backward_lowering"

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"

    def _entry(self) -> Any:
        config = importlib.import_module(self.module)
        entries = getattr(config, "_config", None)
        if not isinstance(entries, dict) or self.name not in entries:
            raise RuntimeError(
                f"{self.qualname} is not a config entry of this torch: pyfy-fuzz's stock "
                "reference reads it (pyfy_fuzz/case/subjects/stock.py); update STOCK_KNOBS"
            )
        return entries[self.name]

    def default(self) -> object:
        """torch's default, as the config module declares it."""
        return self._entry().default

    def value(self) -> object:
        return getattr(importlib.import_module(self.module), self.name)


# The settings pyfy-fuzz has ever changed around a compile, and those that decide which
# runtime-wrapper path a compile takes (lazy backward, cache served or not).
STOCK_KNOBS: tuple[Knob, ...] = (
    Knob("torch._functorch.config", "force_non_lazy_backward_lowering"),
    Knob("torch._functorch.config", "enable_autograd_cache"),
    Knob("torch._functorch.config", "force_autograd_cache"),
    Knob("torch._functorch.config", "bundled_autograd_cache"),
    Knob("torch._functorch.config", "debug_assert"),
    Knob("torch._functorch.config", "donated_buffer"),
    Knob("torch._functorch.config", "view_replay_for_aliased_outputs"),
    Knob("torch._functorch.config", "functionalize_rng_ops"),
    Knob("torch._inductor.config", "fx_graph_cache"),
    Knob("torch._inductor.config", "fx_graph_remote_cache"),
    Knob("torch._inductor.config", "fallback_random"),
)

# Knobs the runner sets for the reference too, where a program needs them to be compared
# with eager at all (Note [The stock reference]); the by_design entry that explains each.
COMPARABILITY: dict[str, str] = {
    "torch._inductor.config.fallback_random": "inductor-rng",
    "torch._functorch.config.donated_buffer": "donated-buffer-retain-graph",
}


def non_stock() -> dict[str, tuple[object, object]]:
    """Every knob of STOCK_KNOBS whose value now is not torch's default: name -> (value,
    default). Knobs this torch does not have are left out (older torch lacks some)."""
    out: dict[str, tuple[object, object]] = {}
    for knob in STOCK_KNOBS:
        try:
            value, default = knob.value(), knob.default()
        except (ImportError, AttributeError, RuntimeError):
            continue
        if value != default:
            out[knob.qualname] = (value, default)
    return out


# The cache classes whose directory a case moves, and the staticmethod/classmethod that
# names it (checked before patching: a torch that renamed it fails here, by name).
_CACHES: tuple[tuple[str, str, str], ...] = (
    ("torch._functorch._aot_autograd.autograd_cache", "AOTAutogradCache", "aotautograd"),
    ("torch._inductor.codecache", "FxGraphCache", "fxgraph"),
)


@contextlib.contextmanager
def case_caches() -> Iterator[Path]:
    """AOTAutograd's and the FX graph cache's directories, fresh for one case and removed
    after it (Note [The stock reference])."""
    root = Path(tempfile.mkdtemp(prefix="pyfy-cache-"))
    undo: list[tuple[Any, object]] = []
    try:
        for module, cls_name, sub in _CACHES:
            cls = getattr(importlib.import_module(module), cls_name)
            if "_get_tmp_dir" not in vars(cls):
                raise RuntimeError(
                    f"{module}.{cls_name}._get_tmp_dir is gone in this torch: pyfy-fuzz cannot "
                    "give each case its own cache (pyfy_fuzz/case/subjects/stock.py)"
                )
            undo.append((cls, vars(cls)["_get_tmp_dir"]))
            where = str(root / sub)
            setattr(cls, "_get_tmp_dir", staticmethod(lambda where=where: where))  # noqa: B010
        yield root
    finally:
        for cls, original in reversed(undo):
            setattr(cls, "_get_tmp_dir", original)  # noqa: B010
        shutil.rmtree(root, ignore_errors=True)


# Note [One code object, several compiles]
# A case compiles the program's function more than once in one process: the capture (the
# implementation's own compile, whose cache entry stays: Note [Two references]) and the stock
# compile, each caching a graph per guard set on the SAME code object. Dynamo's recompile
# limit (8 cache entries a code object, torch 2.13) counts them all, so a plan of a few calls
# whose guards differ (a variant, a sequence, probes outside the call site) made the stock
# compile fail with "Hard failure due to fullgraph=True" (FailOnRecompileLimitHit, the
# capture being fullgraph) where a user's one compile would not: the 1-hour campaign's
# pythonify-divergence.FailOnRecompileLimitHit.ab4dda07476f, and the issue's "fullgraph
# recompile-limit failure of the file". Dynamo's cache policy is not what a case tests: the
# limit is raised for the case to what every subject's compiles need.
RECOMPILE_LIMIT = 64


@contextlib.contextmanager
def shared_code_limits() -> Iterator[None]:
    """Note [One code object, several compiles]."""
    import torch._dynamo.config as dynamo_config

    name = "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"
    with dynamo_config.patch(**{name: max(RECOMPILE_LIMIT, getattr(dynamo_config, name))}):
        yield


@contextlib.contextmanager
def drawn_config(plan: CallPlan, device: str = "cpu") -> Iterator[tuple[str, ...]]:
    """The plan's compile knobs (Note [Drawn configurations] in schema/config.py), patched for
    every compile of the case; yields the knobs this torch lacks an entry for, which are
    skipped (the campaign notes them), never a crash. A knob for other devices (CUDA-only
    functionalize_rng on a CPU case) is left out: torch would ignore it. Call knobs are the
    program's drive's."""
    skipped: list[str] = []
    with contextlib.ExitStack() as stack:
        for knob in compile_knobs(plan.config, device):
            patches: list[tuple[Any, str, object]] = []
            for target, value in knob.settings:
                module, entry = target.rsplit(".", 1)
                try:
                    Knob(module, entry).default()
                except (ImportError, RuntimeError):
                    break
                patches.append((importlib.import_module(module), entry, value))
            else:
                for config, entry, value in patches:
                    stack.enter_context(config.patch(**{entry: value}))
                continue
            skipped.append(knob.name)
        yield tuple(skipped)
