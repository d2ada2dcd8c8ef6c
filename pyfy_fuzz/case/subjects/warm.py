"""The warm-cache subject: torch.compile served from AOTAutograd's cache.

Note [The warm subject]
A user's second process does not compile: Dynamo traces, AOTAutograd looks its key up in the
cache and, on a hit, rebuilds the runtime wrappers from the entry's serialized metadata
(`GenericAOTAutogradResult.wrap_post_compile`) around the compiled graphs the FX graph cache
hands back. That path never runs the wrappers' pre-compile halves, so a wrapper whose
post_compile depends on state the pre-compile left behind (rather than on the metadata) goes
wrong only there. The warm subject is that path: after the stock (cold) compile has run the
plan, and so filled the case's cache directories (`stock.case_caches`), Dynamo is reset and a
fresh copy of the program is compiled again in the same directories.

It must behave like the cold subject, and both like eager: its observation is judged against
eager by the same oracles, and a finding it shares with the cold subject (same identity but for
the subject) is the cold one's. What is left carries subject "torch.compile-warm".

torch caches only what it can serialize: Inductor's compiles, and others under
`functorch.config.force_autograd_cache`; a graph it cannot serialize bypasses the cache
(`autograd_cache.py`: `BypassAOTAutogradCache`). A bypassed or missed warm compile is just a
second cold compile, so it is never judged as warm: `Served` says what the cache did, from
torch's own counters, and the campaign reports the share of cases that were really served warm.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch._dynamo

from generators import Program
from pyfy_fuzz.case.recording import Target
from pyfy_fuzz.case.subjects.compile_once import plain_compile
from pyfy_fuzz.schema.finding import OracleSubject
from pyfy_fuzz.schema.messages import SERVED, Served

__all__ = [
    "CacheCounts",
    "SERVED",
    "Served",
    "WARM",
    "served",
    "warm_applies",
    "warm_target",
]

WARM: OracleSubject = "torch.compile-warm"  # the subject's name


@dataclass(frozen=True)
class CacheCounts:
    """AOTAutograd cache events (torch._dynamo.utils.counters["aot_autograd"]), or the events
    between two readings."""

    hit: int  # entries loaded, wrappers rebuilt from metadata
    miss: int  # looked up, not there (compiled, then saved)
    bypass: int  # not cacheable: compiled without the cache
    saved: int  # entries written

    @staticmethod
    def now() -> CacheCounts:
        from torch._dynamo.utils import counters

        c = counters["aot_autograd"]
        return CacheCounts(
            c["autograd_cache_hit"],
            c["autograd_cache_miss"],
            c["autograd_cache_bypass"],
            c["autograd_cache_saved"],
        )

    def since(self, before: CacheCounts) -> CacheCounts:
        return CacheCounts(
            self.hit - before.hit,
            self.miss - before.miss,
            self.bypass - before.bypass,
            self.saved - before.saved,
        )


def served(warm: CacheCounts) -> Served:
    """What the cache did for the warm compile, from its events."""
    if warm.bypass and not warm.hit:
        return "bypass"
    if not warm.hit:
        return "miss"
    return "hit" if not warm.miss and not warm.bypass else "partial"


def warm_applies(backend: str) -> bool:
    """Would torch consult AOTAutograd's cache for this compile? Inductor's compiles (stock),
    or any under force_autograd_cache; never with the cache turned off."""
    import torch._functorch.config as fconfig

    if not getattr(fconfig, "enable_autograd_cache", False):
        return False
    return backend == "inductor" or bool(getattr(fconfig, "force_autograd_cache", False))


def warm_target(program: Program, backend: str) -> Target:
    """Dynamo reset, then the stock compile of a fresh copy, in the case's cache directories
    the cold compile filled."""
    torch._dynamo.reset()
    fn = program.make_fn()
    module = fn if isinstance(fn, torch.nn.Module) else None
    return Target(WARM, plain_compile(fn, backend, program.plan, program.device), module)
