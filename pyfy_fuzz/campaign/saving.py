"""Writing this run's findings into the corpus: whole entries, and the sightings counted.

Contract: `Saving.save` turns a `NewFinding` into an entry -- its case.json (`case_record`, one
`CaseRecord` field a line), the files rendered from it (corpus/entry.py) and the run that made
its pythonified.py and trace, when there is one (`staging`) -- and puts it through
`Corpus.put`, atomically (Note [Shards share a corpus] in corpus.py). An entry saved anew or
replaced is queued for its repro check. A caller deciding whether a finding is new holds the
corpus's lock around the save (`Novelty.deciding`). `flush_counts` adds the sightings counted
since to the entries, at the end of the run. Runs on the campaign's thread only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from oracles import Finding
from oracles.finding import as_subject
from pyfy_fuzz import __version__
from pyfy_fuzz.campaign.books import NewFinding, Reduced, Stats, size_of
from pyfy_fuzz.campaign.config import CampaignConfig
from pyfy_fuzz.campaign.repro_checks import ReproChecks
from pyfy_fuzz.corpus.entry import derived_fields, entry_files
from pyfy_fuzz.corpus.store import Corpus, environment, now_iso
from pyfy_fuzz.schema.case import BUG_IN, OPTIONAL_FIELDS, BugIn, CaseRecord
from pyfy_fuzz.schema.case import FORMAT as CASE_FORMAT
from pyfy_fuzz.schema.spec import spec_from_dict

__all__ = [
    "Saving",
    "case_record",
    "discard",
]


def discard(staging: Path | None) -> None:
    """Remove a staging directory whose run the entry will not hold."""
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)


def case_record(new: NewFinding, c: CampaignConfig, shrink: dict[str, Any]) -> CaseRecord:
    """`new`'s case.json, as a campaign of configuration `c` saves it.

    Long: the record is one CaseRecord field a line, in case.json's order."""
    import torch

    from pyfy_fuzz.case.runner import case_backend

    f = new.finding
    bug_in: BugIn = BUG_IN[as_subject(f["subject"])]
    if bug_in == "pythonify" and c.impl == "torch":
        bug_in = "torch"  # the pythonify under test is torch's own
    spec = spec_from_dict(json.loads(new.spec))
    mode = spec.plan.mode
    # What the worker compiled with: a mixed campaign's case names its own, less Inductor for
    # an AOT-front-end program that changes grad mode (run_case's own rule): 5a54cc07b932's
    # repro and title said Inductor for a case the campaign ran under aot_eager.
    backend = case_backend(spec, c.mix.base)
    return CaseRecord(
        format=CASE_FORMAT,
        signature=f["signature"],
        coarse=f["coarse"],
        identity=Finding.from_dict(f).identity(),
        kind=f["kind"],
        oracle=f["oracle"],
        subject=f["subject"],
        wrappers=list(f.get("wrappers", ())),
        exc_type=f.get("exc_type"),
        aspect=f.get("aspect", ""),
        message=f.get("message", ""),
        frame=f.get("frame", ""),
        consequences=list(f.get("consequences", ())),
        explanation=f.get("explanation", ""),
        differences=list(f.get("differences", ())),
        **derived_fields(f, backend, mode, c.device),
        bug_in=bug_in,
        # torch bugs are expected to keep failing on stock torch; ours must be fixed.
        expected="fail" if bug_in == "torch" else "pass",
        spec=json.loads(new.spec),
        size=list(new.size),
        seed=new.stream_seed,
        campaign_seed=c.seed,
        torch=torch.__version__,
        pyfy_fuzz=__version__,
        backend=backend,
        device=c.device,
        pythonify=c.impl,
        count=new.count,
        first_seen=now_iso(),
        last_seen=now_iso(),
        shrink=shrink,
        present=OPTIONAL_FIELDS,  # a new entry has every field
        extra={**environment(), **new.extra},
    )


class Saving:
    """Saves entries into the corpus and adds their sightings."""

    def __init__(
        self, config: CampaignConfig, corpus: Corpus, stats: Stats, repros: ReproChecks
    ) -> None:
        self.config, self.corpus, self.stats, self.repros = config, corpus, stats, repros

    def save(self, new: NewFinding, staging: Path | None, shrink: dict[str, Any]) -> None:
        """Write `new` into the corpus, from the run in `staging` (None: a fresh directory);
        `shrink` is case.json's account of how its spec was shrunk."""
        staging = staging or self.corpus.new_staging()
        case = case_record(new, self.config, shrink).to_json()
        has_file = (staging / "pythonified.py").is_file()
        files = entry_files(case, has_pythonified=has_file)
        path, how = self.corpus.put(staging, case, files)
        if how == "blocked":
            self.stats.notes.append(
                f"corpus: {path.name} does not load as an entry; left as it is, not replaced"
            )
        elif how in ("new", "replaced"):
            self.repros.put(case["signature"], case["kind"], path)
        new.state, new.path, new.count = "saved", path, 0

    def save_reduced(self, reduced: Reduced) -> None:
        """A reduction's end: the entry takes its spec where it is no bigger than the one
        saved (with the run that made its files, or a fresh one)."""
        new, size = self.stats.new[reduced.signature], size_of(reduced.spec)
        staging = reduced.staging
        if size <= new.size:
            new.spec, new.size = reduced.spec, size
        else:  # not what the entry will hold
            discard(staging)
            staging = None
        # staging None: a fresh one. Where the spec did not change, the corpus keeps the
        # entry as it is (Corpus.put: "kept"), with the files its first run made.
        self.save(new, staging, reduced.info)

    def flush_counts(self) -> None:
        """The sightings counted during the run, added to their entries."""
        for sig, n in self.stats.known_seen.items():
            self.corpus.bump(sig, n)
        for new in self.stats.new.values():
            if new.count and new.path is not None:
                self.corpus.bump(new.finding["signature"], new.count)
                new.count = 0
