"""The explore mode of a worker: a Hypothesis loop over `generators.programs` that shrinks
what it finds.

The test function (`_Explorer.one`) runs each drawn spec as a case (`worker.run_one`) and
raises for the first finding nobody has seen; Hypothesis then shrinks *that* bug (its coarse
key: the predicate is "the target is still found", so the shrink cannot slip to another bug),
every improvement reported so the campaign holds the smallest spec even if the worker dies
mid-shrink. The spec reducer then polishes Hypothesis's result (Note [Shrinking budget]), and
the smallest spec runs once more into a staging directory of the corpus for its entry.
Failing examples also go to the Hypothesis database inside the corpus: a campaign restarted
after kill -9 replays them first and finishes the shrink. Each Hypothesis run ends at a
finding (shrunk, reported) and the next starts with a derived seed, until the deadline, a
Stop, or the worker's recycling.

The configuration is the campaign's, as it is (`WorkerConfig.campaign`): the families and
size limits, the pinned knobs (--config) and the backend mix are applied to the strategy here.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, event, given, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from generators import ProgramSpec, SpecError, inductor_reasons, programs
from oracles.identity import PENDING, KnownBug
from pyfy_fuzz.campaign.config import CampaignConfig, WorkerConfig
from pyfy_fuzz.campaign.steering import AXES, POOL_MAX, splice
from pyfy_fuzz.campaign.worker import Channel, recycle_reason, run_one
from pyfy_fuzz.case.subjects import PythonifyImpl
from pyfy_fuzz.corpus.store import Corpus, staging_name
from pyfy_fuzz.corpus.trace import TRACE_DIR, structured_trace, tlparse_index
from pyfy_fuzz.schema.messages import (
    Done,
    Explore,
    FindingDict,
    Found,
    Improved,
    Note,
    Shrunk,
    Started,
)

__all__ = [
    "HYPOTHESIS_SHARE",
    "HYPOTHESIS_SHRINK_CASES",
    "REFRESH_CASES",
    "explore",
]

# Note [Shrinking budget]
# Every shrink case is a case not spent exploring. Hypothesis's shrinker works on the choice
# sequence and tries many near-identical programs; the spec reducer (shrink.py) drops whole
# arguments, statements and outputs and stops at its fixpoint. On the 10-minute seed-0
# campaign an even split of the time spent 40% of all cases shrinking; a 30% share capped at
# 30 cases, 32%; capped at 15, 31% (a median of 36 cases a bug, the reducer's ~20 of them
# reaching its fixpoint). So Hypothesis gets a first pass of a few cases (its cheapest
# simplifications come first) and the reducer the rest of the time.
HYPOTHESIS_SHARE = 0.3
HYPOTHESIS_SHRINK_CASES = 5
# A Hypothesis run draws from the pool it started with; once the pool has grown, a new run
# starts after this many cases (Note [Steering] in steering.py).
REFRESH_CASES = 20


class _Stop(BaseException):
    """Leave the Hypothesis loop at once (a BaseException: Hypothesis must not treat it as a
    failure of the test)."""


class _Abandon(BaseException):
    """Stop shrinking: another worker owns this signature, or the shrink ran out of time."""


class _Interesting(Exception):
    """The test 'fails': the case shows the target signature."""


class _Refresh(BaseException):
    """End this Hypothesis run: the steering pool has grown (Note [Steering])."""


@dataclass
class _Run:
    """One Hypothesis run: no target until a case shows an unknown bug; then the run shrinks
    that bug (its coarse key: Note [Bug identity] in oracles/identity.py) and nothing else."""

    target: str | None = None  # the coarse key being shrunk
    best: tuple[str, FindingDict] | None = None  # (spec JSON, finding)
    shrink_end: float = 0.0
    shrink_cases: int = 0  # cases Hypothesis ran on the target so far
    recycle: str | None = None
    pool: int = 0  # the steering pool's size when the run started
    cases: int = 0  # cases the run explored


class _Explorer:
    def __init__(
        self, ch: Channel, config: WorkerConfig, impl: PythonifyImpl, deadline: float
    ) -> None:
        self.ch, self.config, self.impl, self.deadline = ch, config, impl, deadline
        self.cases = 0
        self.run = _Run()
        c = config.campaign
        self.steer = c.coverage and c.steer  # draws from the pool (Note [Steering])
        self.pool: list[ProgramSpec] = []
        for text in config.seeds if self.steer else ():
            try:
                self.pool.append(ProgramSpec.from_json(text))
            except SpecError:
                pass
        self.pooled = False  # the example being drawn came from the pool

    def mark_pooled(self, spec: ProgramSpec) -> ProgramSpec:
        self.pooled = True
        return spec

    def one(self, spec: ProgramSpec) -> None:
        """The Hypothesis test function."""
        ch, run = self.ch, self.run
        ch.poll()
        now = time.monotonic()
        if ch.stopping or now > self.deadline:
            raise _Stop
        if run.best is not None and ch.known.match(run.best[1]) is not None:
            run.best = None  # another worker found it first and owns its shrink, or a known
            raise _Abandon  # bug's shrunk program turned out to be inside this one
        if run.target is not None and (
            now > run.shrink_end or run.shrink_cases >= HYPOTHESIS_SHRINK_CASES
        ):
            raise _Abandon
        if ch.broken is not None:  # a shrink's candidate broke it (_polish)
            run.recycle = f"recycled: {ch.broken.describe()}"
            raise _Stop
        if run.target is None and (why := recycle_reason(self.config, self.cases)):
            run.recycle = why
            raise _Stop
        spec_json = spec.to_json()
        if spec_json in ch.avoid:
            return  # it killed a worker before; the campaign already has it
        ch.send(Started(spec_json, shrinking=run.target))
        outcome = replace(run_one(ch, self.config, self.impl, spec), pooled=self.pooled)
        self.pooled = False
        self.cases += 1
        run.cases += 1
        run.shrink_cases += run.target is not None
        ch.send(Done(outcome, spec_json, shrinking=run.target))
        if self.steer and run.target is None and outcome.new_arcs and outcome.status == "ok":
            self.pool.append(spec)  # it reached an arc first: kept (Note [Steering])
            del self.pool[:-POOL_MAX]
        if ch.broken is not None:  # Note [A broken process]: a fresh process goes on
            ch.send(Note(f"worker recycled: {ch.broken.describe()}"))
            run.recycle = f"recycled: {ch.broken.describe()}"
            raise _Stop  # a bug being shrunk is saved as Hypothesis left it (interrupted)
        findings = _wanted(self.config.campaign, outcome.findings)
        found = {f["coarse"]: f for f in reversed(findings)}  # first one wins
        if run.target is None:
            new = [f["coarse"] for f in findings if ch.known.match(f) is None]
            if not new:
                if len(self.pool) > run.pool and run.cases >= REFRESH_CASES:
                    raise _Refresh  # the next run draws from the grown pool
                return
            run.target = new[0]
            # Hypothesis gets half the shrink time; the spec reducer polishes with the rest.
            run.shrink_end = time.monotonic() + HYPOTHESIS_SHARE * self.config.campaign.shrink_s
            ch.send(Found(found[run.target], spec_json))
        elif run.target in found:
            ch.send(Improved(found[run.target], spec_json))
        else:
            return
        run.best = (spec_json, found[run.target])
        # One raise site: Hypothesis tells bugs apart by where they are raised, and would
        # not shrink "found" and "improved" as one bug.
        raise _Interesting(run.target)


def _wanted(c: CampaignConfig, findings: Sequence[FindingDict]) -> list[FindingDict]:
    """The findings this worker shrinks and reports: all of them, but only those against
    `stop_on_subject` in a campaign that stops at one (the self-test's "the planted bug was
    caught": shrinking and saving torch's own bugs met on the way took its budget once the
    grammar drew torch's whole vocabulary; the campaign still reads every case's findings)."""
    subject = c.stop_on_subject
    return [f for f in findings if subject is None or f.get("subject") == subject]


def explore(ch: Channel, config: WorkerConfig, impl: PythonifyImpl, job: Explore) -> str:
    """Hypothesis runs until the deadline, recycling or stop; each run ends at a finding
    (shrunk, reported) and the next starts with a derived seed. Returns why it ended."""
    explorer = _Explorer(ch, config, impl, job.deadline)  # monotonic: system-wide on Linux
    database = DirectoryBasedExampleDatabase(str(Corpus(config.campaign.corpus).hypothesis_dir))
    for restart in itertools.count():
        explorer.run = run = _Run(pool=len(explorer.pool))
        strategy = _strategy(config.campaign, explorer)
        phases = [Phase.generate, Phase.shrink]
        if config.replay_database and restart == 0:
            phases.insert(0, Phase.reuse)  # finish shrinks a killed campaign left in the DB
        test = settings(
            database=database,
            max_examples=10**9,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            phases=phases,
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,
            print_blob=False,
            derandomize=False,
        )(seed(_sub_seed(job.seed, restart))(given(strategy)(explorer.one)))
        try:
            test()
        except (_Interesting, _Abandon, _Refresh):
            pass
        except Exception as exc:  # Flaky (the target did not reproduce), a generator error
            ch.send(Note(f"hypothesis run ended: {type(exc).__name__}: {str(exc)[:200]}"))
        except _Stop:
            if run.best is not None:
                _shrunk(ch, config, impl, run.best, polish=False)
            return run.recycle or "stopped"
        if run.best is not None:
            _shrunk(ch, config, impl, run.best, polish=not ch.stopping)
        if run.target is not None and run.best is not None:
            # Known to this worker until the campaign says what the shrink settled on.
            paths = frozenset(run.best[1].get("identity_paths", ()))
            ch.known.add(KnownBug(run.target, paths, PENDING))
    raise AssertionError("unreachable")


def _strategy(
    c: CampaignConfig, explorer: _Explorer | None = None
) -> st.SearchStrategy[ProgramSpec]:
    """What the campaign draws: its families and size limits, under its pinned knobs, with
    its backend mix; with a steering pool, mutations of its programs beside fresh ones."""
    drawn = programs(c.wrappers, max_ops=c.max_ops, max_inputs=c.max_inputs)
    if explorer is not None and explorer.pool:
        drawn = st.one_of(drawn, _pooled(c, tuple(explorer.pool)).map(explorer.mark_pooled))
    return _with_partner(_with_config(drawn, c.config), c.mix.partner, c.mix.share)


def _pooled(c: CampaignConfig, pool: tuple[ProgramSpec, ...]) -> st.SearchStrategy[ProgramSpec]:
    """A pool program spliced with a fresh program of its family (Note [Steering])."""
    families: dict[str, st.SearchStrategy[ProgramSpec]] = {}

    def family(name: str) -> st.SearchStrategy[ProgramSpec]:
        if name not in families:
            families[name] = programs((name,), max_ops=c.max_ops, max_inputs=c.max_inputs)
        return families[name]

    def mutate(kept: ProgramSpec) -> st.SearchStrategy[ProgramSpec]:
        return st.builds(
            splice,
            st.just(kept),
            family(kept.family),
            st.booleans(),
            st.frozensets(st.sampled_from(AXES), min_size=1),
        )

    return st.sampled_from(pool).flatmap(mutate)


def _with_config(
    strategy: st.SearchStrategy[ProgramSpec], knobs: tuple[str, ...] | None
) -> st.SearchStrategy[ProgramSpec]:
    """Every spec under `knobs` (--config) in place of the configuration it drew."""
    if knobs is None:
        return strategy
    return strategy.map(lambda spec: replace(spec, plan=replace(spec.plan, config=knobs)))


def _with_partner(
    strategy: st.SearchStrategy[ProgramSpec], partner: str | None, share: int
) -> st.SearchStrategy[ProgramSpec]:
    """About one spec in `share` names the partner as its backend (CallPlan.backend). Drawn
    beside the program, so Hypothesis shrinks it toward the campaign's base backend: a bug the
    partner is not needed for is saved as the base's. An Inductor partner goes where it counts
    (Note [Inductor by content])."""
    if partner is None or share <= 1:
        return strategy

    def pick(drawn: tuple[ProgramSpec, int]) -> ProgramSpec:
        spec, k = drawn
        if not _takes_partner(spec, partner, share, k):
            return spec
        reasons = inductor_reasons(spec) if partner == "inductor" else ()
        event(f"backend: {partner}" + (f" for {reasons[0]}" if reasons else ""))
        return replace(spec, plan=replace(spec.plan, backend=partner))

    return st.tuples(strategy, st.sampled_from(range(2 * share))).map(pick)


# Note [Inductor by content]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# Inductor changes what the wrappers see only where the program has something for it to
# change: a write through a view or a view-inverse op its reinplacing pass turns back into an
# in-place write, an input mutation it keeps in the graph, random ops its partitioner
# recomputes (generators.inductor_reasons). On CPU, where Inductor is the campaign's partner,
# such a program is compiled by it 6 times in 2*share (30% at share 10), any other 1 time in
# 2*share (5%): about the same share of Inductor compiles as one in `share` overall, spent
# where Inductor-only bugs live. With Inductor as the base (CUDA) the partner is aot_eager,
# drawn one time in `share` whatever the program.
_INDUCTOR_SLOTS = 6


def _takes_partner(spec: ProgramSpec, partner: str, share: int, k: int) -> bool:
    """Whether slot `k` of range(2 * share) gives this spec the partner backend; the slots
    that do are the last ones, so shrinking (toward 0) goes back to the base."""
    last = 2 * share - 1
    if partner != "inductor":
        return k >= last - 1
    reasons = inductor_reasons(spec)
    return k == last or (bool(reasons) and k > last - _INDUCTOR_SLOTS)


def _polish(
    ch: Channel,
    config: WorkerConfig,
    impl: PythonifyImpl,
    spec_json: str,
    finding: FindingDict,
) -> tuple[str, FindingDict, str]:
    from pyfy_fuzz.campaign.shrink import reduce

    target = finding["coarse"]
    best = [(spec_json, finding)]  # the reducer only ever accepts smaller specs

    def still_fails(spec: ProgramSpec) -> bool:
        ch.poll()
        if ch.stopping or ch.broken is not None:
            raise _Stop
        candidate = spec.to_json()
        if candidate in ch.avoid:
            return False
        ch.send(Started(candidate, shrinking=target))
        outcome = run_one(ch, config, impl, spec)
        ch.send(Done(outcome, candidate, shrinking=target))
        hit = [f for f in outcome.findings if f["coarse"] == target]
        if hit:
            best[0] = (candidate, hit[0])
            ch.send(Improved(hit[0], candidate))
        return bool(hit)

    deadline = time.monotonic() + (1.0 - HYPOTHESIS_SHARE) * config.campaign.shrink_s
    try:
        stopped = reduce(ProgramSpec.from_json(spec_json), still_fails, deadline=deadline).stopped
    except _Stop:
        stopped = "campaign stopped"
    return (*best[0], stopped)


def _sub_seed(stream_seed: int, restart: int) -> int:
    digest = hashlib.sha256(f"{stream_seed}/{restart}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _shrunk(
    ch: Channel,
    config: WorkerConfig,
    impl: PythonifyImpl,
    best: tuple[str, FindingDict],
    *,
    polish: bool,
) -> None:
    """Polish Hypothesis's result with the spec reducer (it drops arguments, statements and
    outputs Hypothesis's choice-sequence shrinking rarely can), then run the smallest spec once
    more into a staging directory of the corpus, so the entry gets the pythonified file of
    exactly that spec; tell the campaign."""
    spec_json, finding = best
    stopped = "not polished"
    if polish:
        spec_json, finding, stopped = _polish(ch, config, impl, spec_json, finding)
    if ch.broken is not None:
        # No staging run in a broken process: the campaign saves the smallest spec it was
        # told of (Novelty.finish_interrupted).
        return
    staging = os.path.join(config.campaign.corpus, staging_name(config.owner_pid))
    os.mkdir(staging)
    ch.send(Started(spec_json, shrinking=finding["coarse"]))
    # The entry keeps the compile's structured trace (what TORCH_TRACE writes), and tlparse's
    # HTML index of it where tlparse is installed.
    with structured_trace(Path(staging) / TRACE_DIR):
        outcome = run_one(ch, config, impl, ProgramSpec.from_json(spec_json), workdir=staging)
    tlparse_index(Path(staging) / TRACE_DIR)
    ch.send(Done(outcome, spec_json, shrinking=finding["coarse"]))
    findings = outcome.findings
    again = [f for f in findings if f["coarse"] == finding["coarse"]]
    ch.send(
        Shrunk(
            # The staging run's finding names the entry: its paths are the shrunk program's.
            finding=again[0] if again else finding,
            spec=spec_json,
            staging=staging,
            confirmed=bool(again),
            cut_by_budget=not polish,
            complete=stopped == "fixpoint",  # no candidate of the reducer still fails
            also=tuple(f for f in findings if f["coarse"] != finding["coarse"]),
        )
    )
