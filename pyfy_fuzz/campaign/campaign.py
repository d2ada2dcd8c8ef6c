"""`pyfy-fuzz run`: a budgeted campaign of worker processes that saves shrunk findings.

    result = run_campaign(CampaignConfig(budget_s=600, corpus=Path("corpus")))
    result.exit_code, result.summary

The campaign process does no torch work itself. Workers explore (Hypothesis, shrinking their
own findings); the campaign keeps the books: which signatures are known (the corpus's plus
this run's), the smallest spec seen for each new one, what killed a worker. A case that kills
or hangs its worker becomes a finding with its spec and is reduced here with `shrink.reduce`,
each candidate run on a serve worker. Everything is saved through `Corpus`, atomically, and
the run ends within its budget plus `grace_s` (Note [Ending on time]). Campaigns may share a
corpus at once (Note [Shards share a corpus] in corpus.py).

`Campaign` is the loop: it starts and refills the pool's slots and hands each event to the
part whose job it is, each a module of its own --
- novelty.py: which findings are new, the pending shrinks, sightings (`Novelty`);
- saving.py: entries into the corpus, sightings added at the end (`Saving`);
- reductions.py: the serve work -- dead workers' cases reduced, broken processes hunted;
- repro_checks.py: each saved repro.py run on its own, beside the workers (`ReproChecks`);
- summary.py: the summary JSON; books.py: `Stats` and `NewFinding`, the data they share.
The configuration (config.py) is one frozen object, the CLI's; workers receive it as it is.
The module is torch-free at import: the workers import torch (in the fork server), and the
campaign's own process only for what it records (collect_env, torch's version), on a thread
at its start and in a save.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfy_fuzz.campaign.books import Stats
from pyfy_fuzz.campaign.budget import Deadline
from pyfy_fuzz.campaign.config import CampaignConfig, WorkerConfig
from pyfy_fuzz.campaign.limits import worker_share
from pyfy_fuzz.campaign.novelty import Novelty
from pyfy_fuzz.campaign.pool import Event, Pool
from pyfy_fuzz.campaign.progress import make_progress
from pyfy_fuzz.campaign.reductions import Reductions, broke, death_finding, same_death
from pyfy_fuzz.campaign.repro_checks import ReproChecks
from pyfy_fuzz.campaign.saving import Saving
from pyfy_fuzz.campaign.steering import Steering
from pyfy_fuzz.campaign.streams import Streams
from pyfy_fuzz.campaign.summary import summary
from pyfy_fuzz.corpus.store import Corpus, environment, now_iso
from pyfy_fuzz.reports.coverage_data import combine_coverage
from pyfy_fuzz.schema.atomic import atomic_write
from pyfy_fuzz.schema.messages import (
    Died,
    Done,
    Exited,
    Explore,
    Found,
    Improved,
    Note,
    Serve,
    Shrunk,
)

__all__ = [
    "Campaign",
    "CampaignResult",
    "RESCAN_S",
    "run_campaign",
]


# Note [Ending on time]
# A campaign ends within its budget plus `grace_s` (15 s): its summary written, its workers
# and repro checks gone (`--coverage` combines the workers' data after that: coverage.py's
# time, not the campaign's). A 210 s GPU campaign once ended at 231 s: the repro checks still
# queued were given a tenth of the budget past its end, and Inductor compiles ran on. So what
# runs past the deadline is bounded by `end = deadline + grace_s` (`budget.Deadline`):
# - workers are told to stop at the deadline (a shrink in progress stages its best spec);
#   those still in a case at `end - FINISH_S` are killed and their cases abandoned (a compile,
#   a hang short of case_timeout). Nothing found is lost: the campaign holds the smallest spec
#   each worker reported and saves it; what a killed worker left half-staged is removed;
# - the repro checker (repro_checks.py) runs beside the workers, one check at a time (each
#   repro.py on its own: a compile, seconds). It starts none with less than REPRO_MIN_S left
#   before `end - FINISH_S`, and the check running then is killed with its process group. An
#   entry whose check did not run is marked so in case.json (verdict repro.NOT_RUN;
#   `pyfy-fuzz replay --repros` runs it) and the summary's "repro" is null;
# - FINISH_S (budget.py) is for the books: the last saves (whole entries, renamed into place),
#   the sightings, the not-run marks, the summary (atomic_write).
RESCAN_S = 5.0  # how often other campaigns' new entries are read (Note [Shards share a corpus])


@dataclass
class CampaignResult:
    exit_code: int  # 0: no new findings; 1: new findings (the CLI's exit status)
    # summary.summary(), plus "coverage" and "steering" under --coverage
    summary: dict[str, Any]


class Campaign:
    """One campaign: the pool's loop, and the parts that keep its books."""

    def __init__(self, config: CampaignConfig) -> None:
        self.config = config
        self.corpus = Corpus.open(config.corpus)
        self.stats = Stats(time.monotonic(), config.budget_s)
        self.started_at = now_iso()
        self.coverage_dir = self._coverage_dir() if config.coverage else None
        # --coverage: the arcs seen and the programs kept for them (Note [Steering])
        self.steering = Steering(config.steer) if config.coverage else None
        self.deadline = Deadline(self.stats.started + config.budget_s, config.grace_s)
        # collect_env takes seconds: computed now, beside the start, not at the first save
        # (which may come in the last seconds of the grace: Note [Ending on time]).
        threading.Thread(target=environment, daemon=True, name="pyfy-environment").start()
        from pyfy_fuzz.corpus.trace import TLPARSE_NOTICE, find_tlparse

        if find_tlparse() is None:  # said once, here; workers keep the raw traces all the same
            self.stats.notes.append(f"tlparse: {TLPARSE_NOTICE}")
        self.streams = Streams(self.corpus.state_dir, config.seed, config.shard)
        self.stream_of: dict[int, int] = {}  # slot -> the seed stream its worker explores
        self.logdir = self.corpus.state_dir / "logs" / f"{socket.gethostname()}-{os.getpid()}"
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.repros = ReproChecks(self.corpus, self.deadline)
        self._replayed_database = False
        self.share = worker_share(config.workers)
        self.pool = Pool(
            config.workers,
            self._worker_config,
            case_timeout=config.case_timeout,
            rss_hard_bytes=self.share.rss_hard_bytes,
        )
        self.saving = Saving(config, self.corpus, self.stats, self.repros)
        self.novelty = Novelty(self.corpus, self.stats, self.pool, self.saving)
        self.reductions = Reductions(
            self.pool, self.corpus, self.deadline, config.shrink_s, self.stats
        )

    def _coverage_dir(self) -> Path:
        """`--coverage`: where this run's workers save their data."""
        stamp = self.started_at.replace(":", "").replace("-", "")
        directory = self.corpus.state_dir / "coverage" / f"{stamp}-{os.getpid()}"
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _worker_config(self, slot: int) -> WorkerConfig:
        """The campaign's configuration as it is, and what is this start's own."""
        return WorkerConfig(
            campaign=self.config,
            slot=slot,
            workdir=str(self.logdir / f"work-{slot}"),
            log_path=str(self.logdir / f"worker-{slot}.log"),
            known=self.novelty.known_dicts(),
            avoid=tuple(self.novelty.avoid),
            owner_pid=os.getpid(),
            # Finish shrinks a killed run left in the example database: one worker, once.
            replay_database=not self._replayed_database,
            coverage_dir=str(self.coverage_dir) if self.coverage_dir else None,
            seen=tuple(self.steering.seen) if self.steering else (),
            seeds=tuple(self.steering.pool) if self.steering else (),
            rss_soft_bytes=self.share.rss_soft_bytes,
            threads=self.share.threads,
        )

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> CampaignResult:
        for p in self.corpus.problems:
            self.stats.notes.append(f"corpus: {p.path.name}: {p.message}")
        for i in range(self.config.workers):
            (self.logdir / f"work-{i}").mkdir(exist_ok=True)
            self._start(i)
        progress = make_progress(self.config.progress, self.stats)
        progress.start()
        try:
            while not self.deadline.passed() and not self._enough():
                for ev in self.pool.poll(0.25):
                    self._handle(ev, running=True)
                self._serve_to_explore()
                self._save_hunted()
                self._save_reduced()
                if time.monotonic() - self.novelty.rescanned >= RESCAN_S:
                    self.novelty.rescan()
                progress.update()
        finally:
            self._wind_down()
            progress.stop()
        result = self.summary()
        if self.coverage_dir is not None and self.steering is not None:
            result["coverage"] = combine_coverage(self.coverage_dir)
            result["steering"] = self.steering.summary()
        if self.config.json_path is not None:
            atomic_write(self.config.json_path, json.dumps(result, indent=1) + "\n")
        return CampaignResult(1 if self.stats.new else 0, result)

    def summary(self) -> dict[str, Any]:
        """The campaign's summary JSON (--json, and what `run` prints from): summary.py."""
        return summary(
            self.config,
            self.stats,
            started_at=self.started_at,
            verdicts=self.repros.verdicts,
            corpus=self.corpus,
        )

    def _wind_down(self) -> None:
        """Past the deadline: stop the workers, save what they found, end the repro checks;
        each step bounded so that the whole ends by `deadline + grace_s` (Note [Ending on
        time])."""
        for ev in self.pool.stop(self.deadline.left()):
            self._handle(ev, running=False)
        self.reductions.join(self.deadline.left)  # their candidates went with the pool
        self._save_hunted()
        self._save_reduced()
        self.novelty.finish_interrupted()
        self.saving.flush_counts()
        self.corpus.clean_stagings(owner=os.getpid())  # a killed worker's half-staged entry
        self.repros.finish(self.deadline.left())
        self.novelty.fold_candidates()

    def _enough(self) -> bool:
        m = self.config.max_cases
        return m is not None and self.stats.cases >= m

    def _start(self, slot: int) -> None:
        self.reductions.fresh(slot)  # a fresh process
        if self._serve_wanted():
            self.pool.start(slot, Serve())
            return
        gid, seed = self.streams.take()
        self.stream_of[slot] = seed
        self.pool.start(slot, Explore(seed, self.deadline.at, gid))
        self._replayed_database = True

    def _serve_wanted(self) -> bool:
        busy = self.reductions.busy()
        serving = any(s.mode == "serve" and self.pool.alive(s.index) for s in self.pool.slots)
        return busy and not serving

    def _serve_to_explore(self) -> None:
        """Reductions over: an idle serve worker is stopped and comes back exploring (checked
        every turn of the loop: an idle worker sends nothing that would trigger it)."""
        if self.reductions.busy():
            return
        for s in self.pool.slots:
            if s.mode == "serve" and s.job is None and not s.told_to_stop:
                if self.pool.alive(s.index):
                    self.pool.tell_stop(s.index)

    # -- events ------------------------------------------------------------------------------
    def _handle(self, ev: Event, *, running: bool) -> None:
        m = ev.message
        if isinstance(m, Done):
            self._on_done(ev.slot, m)
        elif isinstance(m, Found):
            self.novelty.found(ev.slot, m, self.stream_of.get(ev.slot))
        elif isinstance(m, Improved):
            self.novelty.improved(ev.slot, m)
        elif isinstance(m, Shrunk):
            self.novelty.shrunk(ev.slot, m)
        elif isinstance(m, Note):
            self.stats.notes.append(f"worker {ev.slot}: {m.text}")
        elif ev.gone:
            slot = self.pool.slots[ev.slot]
            if isinstance(m, Died):
                self._on_died(ev.slot, m, serve=slot.mode == "serve")
            elif isinstance(m, Exited) and m.reason.startswith("recycled"):
                self.stats.recycled += 1
            if running and not self.deadline.passed() and not self._enough():
                self._start(ev.slot)

    def _on_done(self, slot: int, done: Done) -> None:
        if self.steering is not None:
            self.steering.done(done)
        if done.job is not None:
            return  # a reduction's candidate, not exploration
        self.reductions.after_canary(slot, done, self.stream_of.get(slot))
        st, r = self.stats, done.outcome
        st.cases += 1
        self._check_stop(done)
        if done.shrinking:
            st.shrink_cases += 1
            new = st.pending.get(done.shrinking)
            if new is not None:
                new.shrink_cases += 1
            return
        st.status[r.status] += 1
        st.families[r.family] += 1
        if r.backend:
            st.backends[r.backend] += 1
        st.wrapper_hits.update(r.wrapper_paths)
        if r.unsupported:
            st.unsupported += 1
        if r.warm is not None:
            st.warm[r.warm] += 1
        for knob in r.config_skipped:
            note = f"config: this torch lacks knob {knob!r}; cases drawn with it ran without it"
            if note not in st.notes:
                st.notes.append(note)
        for f in r.findings:
            self.novelty.count(f)

    def _check_stop(self, done: Done) -> None:
        subject = self.config.stop_on_subject
        if subject is None or self.stats.stopped_on is not None:
            return
        hit = next((f for f in done.outcome.findings if f.get("subject") == subject), None)
        if hit is not None:
            self.stats.stopped_on = {
                "elapsed_s": round(self.stats.elapsed, 2),
                "cases": self.stats.cases,
                "finding": hit,
                "spec": done.spec,
            }
            self.deadline.at = time.monotonic()  # the loop ends; workers stop as at the budget

    def _on_died(self, slot: int, died: Died, *, serve: bool) -> None:
        """A worker died in a case: a finding of its own, saved at once and reduced on a
        serve worker (predicate: a candidate's worker dies alike)."""
        self.stats.deaths[died.kind] += 1
        if serve or died.spec is None:
            return  # a reduction's candidate (the reducer sees it) or nothing was running
        extra = {"reason": died.reason, "phase": died.phase, "log_tail": died.log_tail}
        seed = self.stream_of.get(slot)
        new = self.novelty.claim(death_finding(died), died.spec, seed, extra=extra, avoid=True)
        if new is not None:
            self.reductions.reduce(new, functools.partial(same_death, died))

    def _save_hunted(self) -> None:
        """Ended hunts: the case found is saved at once, unreduced, unless its bug is known,
        and reduced in a thread as a crash is; a hunt that found none is noted."""
        for h in self.reductions.take_hunted():
            found = h.found
            if found is None:
                self.stats.notes.append(
                    f"worker {h.slot}: {h.broken.describe()}; no case since its last passing "
                    "canary breaks a fresh process alone"
                )
                continue
            f = found.finding
            extra = {"phase": found.phase}  # case.json's, as a dead worker's
            new = self.novelty.claim(f, found.spec, found.seed, extra=extra, staging=found.staging)
            if new is not None:
                same = functools.partial(broke, coarse=f["coarse"])
                self.reductions.reduce(new, same, canary=True)

    def _save_reduced(self) -> None:
        for reduced in self.reductions.take_reduced():
            self.saving.save_reduced(reduced)


def run_campaign(config: CampaignConfig) -> CampaignResult:
    return Campaign(config).run()
