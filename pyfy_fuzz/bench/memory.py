"""`pyfy-fuzz bench` (c): memory over a real campaign -- `pyfy-fuzz run` as a subprocess, its
process tree sampled from /proc every second (procstat.py): does a long campaign stay flat
after warm-up? (torch-free: it watches the campaign from outside.)

`campaign_rss` runs and samples the campaign; `rss_metrics` turns the samples into the growth
figures (its docstring defines each).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyfy_fuzz.campaign.procstat import TreeSample, sample_until_exit

__all__ = [
    "WARMUP_SHARE",
    "WINDOW_SHARE",
    "campaign_rss",
    "rss_metrics",
]

WARMUP_SHARE, WINDOW_SHARE = 0.2, 0.1  # of the RSS campaign's budget: 2 and 1 min of 10


def campaign_rss(seconds: int, workers: int, seed: int, directory: Path) -> dict[str, Any]:
    """Run `pyfy-fuzz run` for `seconds` on a fresh corpus, sample its tree every second."""
    summary_path = directory / "summary.json"
    cmd = [sys.executable, "-m", "pyfy_fuzz", "run", "--budget", f"{seconds}s"]
    cmd += ["--corpus", str(directory / "corpus"), "--json", str(summary_path)]
    cmd += ["--progress", "quiet", "--workers", str(workers), "--seed", str(seed)]
    with open(directory / "campaign.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            samples = sample_until_exit(proc)
        finally:
            if proc.poll() is None:  # interrupted: take the campaign down with us
                proc.terminate()
                proc.wait(30)
    if proc.returncode not in (0, 1) or not summary_path.is_file():
        tail = (directory / "campaign.log").read_text(errors="replace").strip().splitlines()
        raise RuntimeError(
            f"the campaign exited {proc.returncode}: {tail[-1] if tail else 'no output'}"
        )
    summary = json.loads(summary_path.read_text())
    out = rss_metrics(samples)
    out["budget_s"] = seconds
    out["campaign"] = {
        k: summary[k] for k in ("cases", "cases_per_min", "shrink_cases", "recycled", "deaths")
    }
    # Who the new findings are against: a pythonify one here is a generator bug (or a false
    # positive of an oracle) worth a look.
    subjects: dict[str, int] = {}
    for f in summary["findings"]:
        subjects[f["subject"]] = subjects.get(f["subject"], 0) + 1
    out["campaign"]["findings_by_subject"] = subjects
    return out


def _mean_in(series: list[tuple[float, int]], lo: float, hi: float) -> float | None:
    values = [v for t, v in series if lo <= t <= hi]
    return statistics.mean(values) if values else None


def rss_metrics(samples: list[TreeSample]) -> dict[str, Any]:
    """Memory of a campaign's workers (the processes its fork server forked, depth 2).

    The span is the time the workers ran: from the first sample with a worker to the last
    sample with as many workers as there ever were (the campaign's budget, less its start-up;
    at the deadline the workers leave). The warm-up is its first 20%, the windows 10% (2 and
    1 minutes of 10). S(t) is the total RSS of the live workers. Each worker is recycled after
    300 cases and restarts low, so S is a saw-tooth, a window's mean depends on where the
    teeth fall, and a leak in a worker is cut back at every recycle. The growth is therefore
    taken on the envelope E(t) = max of S over the trailing worker lifetime (the median life of
    the workers that ended before the span did; 0, i.e. E = S, when none did):
        rss_growth = mean E(last window) / mean E(first window after warm-up) - 1.
    Without recycling this is the plain ratio of S's means (`plain_growth`). Growth that
    survives recycling (in the campaign, the fork server, what each new worker is handed) shows
    in it; a per-case leak in a worker shows in `worker_life_growth`: each ended worker's last
    RSS (at recycle) against its mean RSS over the first 20% of its own life, median. The
    campaign process (depth 0) and the fork server (the workers' parent) are reported apart.

    Long: each number is defined by the paragraph above and computed in that order, over
    the same span and windows.
    """
    # Depth 2 exactly: a worker's own child (tlparse indexing an entry's trace, for a few
    # milliseconds) is no worker -- counted as one, it made "as many workers as there ever
    # were" a passing instant and left the windows empty.
    alive = [[p for p in s.procs.values() if p.depth == 2] for s in samples]
    seen = [(s.t, w) for s, w in zip(samples, alive, strict=True) if w]
    if not seen:
        raise RuntimeError(f"no campaign worker was seen in {len(samples)} samples")
    born, most = seen[0][0], max(len(w) for _, w in seen)
    span = max(t for t, w in seen if len(w) == most) - born
    series = [(t - born, sum(p.rss for p in w)) for t, w in seen if t - born <= span]
    lives: dict[int, list[tuple[float, int]]] = {}
    for t, w in seen:
        for p in w:
            if p.rss > 0:  # an exiting (zombie) worker reads 0: not a size it ever had
                lives.setdefault(p.pid, []).append((t - born, p.rss))
    ended = [v for v in lives.values() if v[-1][0] < span - 1]  # recycled (or died)
    life = statistics.median(v[-1][0] - v[0][0] for v in ended) if ended else 0.0
    envelope = [(t, max(x for u, x in series if t - life <= u <= t)) for t, _ in series]
    first = (WARMUP_SHARE * span, (WARMUP_SHARE + WINDOW_SHARE) * span)
    last = ((1 - WINDOW_SHARE) * span, span)
    e0, e1 = _mean_in(envelope, *first), _mean_in(envelope, *last)
    s0, s1 = _mean_in(series, *first), _mean_in(series, *last)
    in_life = [
        v[-1][1] / warm - 1
        for v in ended
        if (warm := _mean_in(v, v[0][0], v[0][0] + WARMUP_SHARE * (v[-1][0] - v[0][0])))
    ]
    mib = 2**20

    def apart(pick: Callable[[Any], bool]) -> dict[str, int | None]:
        mine = [(t - born, sum(p.rss for p in s.procs.values() if pick(p))) for t, s in tree]
        return {
            k: round(v / mib) if (v := _mean_in(mine, *w)) else None
            for k, w in (("first_window", first), ("last_window", last))
        }

    tree = [(s.t, s) for s in samples if 0 <= s.t - born <= span]
    parents = {p.ppid for _, w in seen for p in w}
    return {
        "rss_growth": round(e1 / e0 - 1, 4) if e0 and e1 else None,
        "plain_growth": round(s1 / s0 - 1, 4) if s0 and s1 else None,
        "span_s": round(span, 1),
        "samples": len(series),
        "windows_s": {
            "first": [round(x, 1) for x in first],
            "last": [round(x, 1) for x in last],
            "envelope": round(life, 1),
        },
        "workers_rss_mib": {
            "first_window": round(s0 / mib) if s0 else None,
            "last_window": round(s1 / mib) if s1 else None,
        },
        "worker_rss_peak_mib": round(max(x for v in lives.values() for _, x in v) / mib),
        "worker_rss_at_recycle_mib": [round(v[-1][1] / mib) for v in ended],
        "worker_life_growth": round(statistics.median(in_life), 4) if in_life else None,
        "worker_lives": len(lives),
        "campaign_rss_mib": apart(lambda p: p.depth == 0),
        "fork_server_rss_mib": apart(lambda p: p.pid in parents),
    }
