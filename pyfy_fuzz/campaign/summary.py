"""The campaign's summary: the JSON of `run --json`, and what `pyfy-fuzz run` prints from.

Contract: `summary` reads the books (`Stats`), the configuration, the repro checks' verdicts
and the corpus, and writes nothing; every value is plain JSON data (lists, not tuples), so
the summary a caller gets equals the file `--json` wrote. Its keys are a format other tools
read (reports/, the nightly history, the bench): add keys, never rename one.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from oracles.groups import group_of
from oracles.identity import severity_of
from oracles.upstream import known_upstream
from pyfy_fuzz.campaign.books import NewFinding, Stats
from pyfy_fuzz.campaign.config import CampaignConfig
from pyfy_fuzz.corpus.releases import records_of, releases_line
from pyfy_fuzz.corpus.store import Corpus, now_iso

__all__ = ["summary"]


def summary(
    config: CampaignConfig,
    stats: Stats,
    *,
    started_at: str,
    verdicts: dict[str, str],
    corpus: Corpus,
) -> dict[str, Any]:
    """The summary of a campaign of `config` whose books are `stats`, started at
    `started_at` (ISO), its saved repros' `verdicts` by signature.

    Long: one literal, a key a line, in the order the file shows them."""
    import torch

    st = stats
    return {
        "cases": st.cases,
        "elapsed_s": round(st.elapsed, 1),
        "started_at": started_at,
        "finished_at": now_iso(),
        "host": socket.gethostname(),
        "cases_per_min": round(st.per_min, 1),
        "shrink_cases": st.shrink_cases,
        "exploring_fraction": round(st.exploring_fraction, 3),
        "shrinks": sum(st.shrinks.values()),
        "merged_after_shrink": st.merged,
        "superseded": st.superseded,
        "fold_candidates": [list(p) for p in st.fold_candidates],
        # entries other campaigns (shards) wrote meanwhile, known from when they were read
        "learned": sorted(st.learned),
        "findings": [
            _finding(sig, n, verdicts.get(sig), corpus) for sig, n in sorted(st.new.items())
        ],
        "known_seen": dict(st.known_seen),
        "wrapper_hits": dict(st.wrapper_hits.most_common()),
        "status": dict(st.status),
        "families": dict(st.families),
        "unsupported": st.unsupported,
        "warm_cache": dict(st.warm),
        "backends": dict(st.backends),
        "deaths": dict(st.deaths),
        "recycled": st.recycled,
        # cases after which a worker's canary failed, each hunted for the case that broke
        # its process (Note [A broken process] in worker.py)
        "hunts": st.hunts,
        "notes": st.notes[-50:],
        "stopped_on": st.stopped_on,
        "torch": torch.__version__,
        "config": _config(config),
    }


def _finding(sig: str, n: NewFinding, verdict: str | None, corpus: Corpus) -> dict[str, Any]:
    """One of this run's new findings, as the summary lists it."""
    return {
        "signature": sig,
        "kind": n.finding["kind"],
        "oracle": n.finding["oracle"],
        "subject": n.finding["subject"],
        "group": group_of(n.finding),  # bug | refusal | metadata
        "severity": severity_of(n.finding),
        "upstream": known_upstream(n.finding),
        "wrappers": list(n.finding.get("wrappers", ())),
        "path": str(n.path) if n.path else None,
        # the saved repro.py run on its own: reproduces | passes | error | timeout |
        # interpreter died; None: not checked within the budget
        "repro": verdict,
        # the same, as a release ("reproduces on 2.15.0"; releases.py)
        "releases": _releases(corpus, sig, n.path),
    }


def _releases(corpus: Corpus, sig: str, path: Path | None) -> str:
    entry = corpus.entries.get(sig)
    if entry is None or entry.path != path:
        return ""
    return releases_line(records_of(entry.case), str(entry.case.get("device") or "cpu"))


def _config(c: CampaignConfig) -> dict[str, Any]:
    """The configuration as the summary names it (the mix as three keys: report readers and
    `run`'s summary line read them)."""
    return {
        "budget_s": c.budget_s,
        "backend": c.mix.base,
        "partner": c.mix.partner,
        "partner_share": c.mix.share,
        "knobs": list(c.config) if c.config is not None else None,
        "device": c.device,
        "workers": c.workers,
        "seed": c.seed,
        "shard": "/".join(map(str, c.shard)),
        "wrappers": list(c.wrappers) if c.wrappers is not None else None,
        "pythonify": c.impl,
        "corpus": str(c.corpus),
    }
