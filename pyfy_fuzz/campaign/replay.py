"""`pyfy-fuzz replay`: run saved corpus entries again and say which still fail.

Each entry's spec runs on a worker (isolated: an entry that once killed a worker may do so
again) with the backend it was found under. An entry *reproduces* when its bug is found again
(the same coarse identity: Note [Bug identity] in oracles/identity.py) -- or, for an entry that
killed or hung its worker, when the worker dies the same way. The same bug under other wrapper
paths counts as reproducing too, and is shown. An entry of a case that left its process broken
runs as a canary job (Note [A broken process] in worker.py), which finds it again as a finding.

Verdicts, against the entry's ``expected`` (case.json):
- expected "fail" (a torch bug): reproduces -> ``known-failure``; not -> ``fixed-upstream``
  (worth a look: mark it expected "pass" or retire it);
- expected "pass" (our bug, fixed): not -> ``pass``; reproduces -> ``FAIL``.
An entry that cannot be judged (the worker died some other way, pyfy-fuzz raised, the case was
discarded) is an ``error``. Exit status 1 when any entry FAILs or errs, 0 otherwise.

With ``repros=True`` each judged entry's repro.py also runs on its own (as the campaign runs
it when it saves the entry) and case.json's "repro" record is rewritten. A repro that does not
agree with the replay -- the spec shows the bug and the repro passes, or the other way round,
or the repro errs -- is a ``repro-mismatch``: the repro is not what a reader should paste.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generators import spec_from_dict
from oracles.identity import difference_of
from pyfy_fuzz.campaign.config import WorkerConfig, serve_only
from pyfy_fuzz.campaign.pool import Pool
from pyfy_fuzz.corpus.entry import readme_of
from pyfy_fuzz.corpus.releases import fixed_in, records_of, release_of
from pyfy_fuzz.corpus.store import CASE, Corpus, Entry, Problem
from pyfy_fuzz.schema.messages import Died, Done, Serve

__all__ = [
    "ReplayOutcome",
    "ReplayReport",
    "collect",
    "replay",
    "run_specs",
]


@dataclass
class ReplayOutcome:
    entry: Entry
    verdict: str  # known-failure | fixed-upstream | pass | FAIL | error | skipped
    detail: str
    seconds: float = 0.0
    repro: str | None = None  # with repros=True: the repro.py's verdict (repro_record)

    @property
    def repro_mismatch(self) -> bool:
        """The repro, run alone, does not say what the replay of the spec says."""
        if self.repro is None or self.verdict not in _REPRODUCED:
            return False
        return (self.repro == "reproduces") != _REPRODUCED[self.verdict]


# Judged verdicts -> whether the spec showed the bug again.
_REPRODUCED = {"known-failure": True, "FAIL": True, "fixed-upstream": False, "pass": False}


@dataclass
class ReplayReport:
    outcomes: list[ReplayOutcome] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        bad = any(o.verdict in ("FAIL", "error") or o.repro_mismatch for o in self.outcomes)
        return 1 if bad or any(p.damaged for p in self.problems) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": [
                {
                    "signature": o.entry.signature,
                    "path": str(o.entry.path),
                    "expected": o.entry.case["expected"],
                    "verdict": o.verdict,
                    "detail": o.detail,
                    "seconds": round(o.seconds, 2),
                    "repro": o.repro,
                    "repro_mismatch": o.repro_mismatch,
                }
                for o in self.outcomes
            ],
            "problems": [{"path": str(p.path), "message": p.message} for p in self.problems],
        }


def collect(paths: list[Path]) -> tuple[list[Entry], list[Problem]]:
    """Entries named directly (a directory holding case.json) or inside corpus directories.
    Raises FileNotFoundError for a path that does not exist."""
    entries: dict[Path, Entry] = {}
    problems: list[Problem] = []
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"no such corpus or entry: {path}")
        if (path / CASE).is_file():
            corpus = Corpus(path.parent)
            e = corpus._load(path)
            if isinstance(e, Problem):
                problems.append(e)
            else:
                entries[e.path.resolve()] = e
            continue
        corpus = Corpus.open(path, create=False)
        problems.extend(corpus.problems)
        for e in corpus.entries.values():
            entries[e.path.resolve()] = e
    return sorted(entries.values(), key=lambda e: e.signature), problems


def _matches(case: dict[str, Any], result: Done | Died) -> tuple[bool | None, str]:
    """(reproduced?, detail); None when the replay could not judge: the worker died for
    another reason, pyfy-fuzz raised, or the case was discarded -- never a pass."""
    if case["kind"] in ("interpreter-crash", "hang"):
        if isinstance(result, Died) and result.kind == case["kind"]:
            return True, f"the worker died again: {result.reason} during {result.phase}"
        if isinstance(result, Died):
            return None, f"the worker died otherwise: {result.kind} {result.reason}"
        return False, "the worker survived"
    if isinstance(result, Died):
        return None, f"the worker died ({result.kind}: {result.reason} during {result.phase})"
    r = result.outcome
    hits = [f for f in r.findings if f.get("coarse") == case["coarse"]]
    if hits:
        exact = [f for f in hits if f["signature"] == case["signature"]]
        f = (exact or hits)[0]
        first = difference_of(f)
        if not exact:
            first = f"with other wrapper paths ({', '.join(f.get('identity_paths', ()))}): {first}"
        return True, first[:160]
    if r.status != "ok":
        why = r.reason or r.traceback[-200:]
        return None, f"could not compare ({r.status}): {why}"
    others = ", ".join(sorted(f["signature"] for f in r.findings)) or "no findings"
    return False, f"not reproduced ({others})"


def _recorded(case: dict[str, Any]) -> str:
    """What the entry's release records say of this torch (Note [Which releases have a bug]):
    a fix they already saw, or that they saw the bug here (the replay disagrees with them)."""
    import torch

    here = release_of(torch.__version__)
    records = records_of(case)
    if here in fixed_in(records):
        return f"; recorded: fixed in {here}"
    if any(r.release == here and r.verdict == "reproduces" for r in records):
        return f"; but its repro.py was recorded reproducing on {here}"
    return ""


def _verdict(expected: str, reproduced: bool | None) -> str:
    if reproduced is None:
        return "error"
    if expected == "fail":
        return "known-failure" if reproduced else "fixed-upstream"
    return "FAIL" if reproduced else "pass"


def replay(
    paths: list[Path],
    *,
    workers: int = 1,
    device: str = "cpu",
    impl: str | None = None,  # None: each entry with the implementation it was found with
    case_timeout: float = 120.0,
    on_outcome: Any = None,
    repros: bool = False,
) -> ReplayReport:
    """Long: it sorts the entries into skipped and runnable, replays the runnable ones on
    workers, and (repros=True) runs each judged entry's repro.py after its replay."""
    entries, problems = collect(paths)
    report = ReplayReport(problems=problems)
    runnable: list[Entry] = []
    from pyfy_fuzz.case.subjects.impl import torch_has_pythonify

    for e in entries:
        want = e.case.get("device", "cpu")
        if want != device:
            # never "fixed": the bug may well be there, this device cannot show it
            found = f"found on {want} (torch {e.case.get('torch') or '?'})"
            why = "not reproducible on CPU" if device == "cpu" else f"not run on {device}"
            report.outcomes.append(ReplayOutcome(e, "skipped", f"{found}: {why}"))
        elif (impl or e.case.get("pythonify")) == "torch" and not torch_has_pythonify():
            report.outcomes.append(
                ReplayOutcome(e, "skipped", "found with --pythonify torch; this torch has none")
            )
        else:
            spec_from_dict(e.case["spec"])  # validated by collect; cheap
            runnable.append(e)

    def judge(e: Entry, result: Done | Died) -> None:
        reproduced, detail = _matches(e.case, result)
        verdict = _verdict(e.case["expected"], reproduced)
        if verdict == "fixed-upstream":
            detail += _recorded(e.case)
        took = result.outcome.total_s if isinstance(result, Done) else 0.0
        outcome = ReplayOutcome(e, verdict, detail, took)
        if repros and verdict in _REPRODUCED and (e.path / "repro.py").is_file():
            outcome.repro = _check_repro(e, case_timeout)
        report.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    run_specs(runnable, judge, workers=workers, device=device, impl=impl, case_timeout=case_timeout)
    report.outcomes.sort(key=lambda o: o.entry.signature)
    return report


def _check_repro(e: Entry, timeout: float) -> str:
    """Run the entry's repro.py on its own, record the run in its case.json, give the verdict."""
    from pyfy_fuzz.corpus.repro import check_repro, repro_record

    code, tail = check_repro(e.path, timeout=timeout)
    record = repro_record(e.path, code, tail, e.case["kind"])
    corpus = Corpus(e.path.parent)
    corpus.entries[e.signature] = e
    corpus.annotate(e.signature, {"repro": record})
    fresh = corpus.entries[e.signature]
    corpus.refresh(e.signature, {"README.md": readme_of(fresh.path, fresh.case)})
    return str(record["verdict"])


def run_specs(
    entries: list[Entry],
    on_result: Callable[[Entry, Done | Died], None],
    *,
    workers: int = 1,
    device: str = "cpu",
    impl: str | None = None,
    case_timeout: float = 120.0,
    trace_dirs: dict[Path, Path] | None = None,
) -> None:
    """Run each entry's spec once on serve workers (its backend, its implementation unless
    `impl` names one) and hand `on_result` the worker's `Done`, or a `Died`.
    `trace_dirs`: per entry path, where to keep the run's structured trace."""
    if not entries:
        return
    runnable = entries
    work = Path(tempfile.mkdtemp(prefix="pyfy-replay-"))
    n = max(1, min(workers, len(runnable)))
    campaign = serve_only(device, impl or "bundled")

    def config_for(slot: int) -> WorkerConfig:
        (work / str(slot)).mkdir(exist_ok=True)
        return WorkerConfig(
            campaign,
            slot=slot,
            workdir=str(work / str(slot)),
            log_path=str(work / f"worker-{slot}.log"),
        )

    pool = Pool(n, config_for, case_timeout=case_timeout)
    for i in range(n):
        pool.start(i, Serve())
    futures = []
    for e in runnable:
        fut = pool.submit(
            json.dumps(e.case["spec"]),
            backend=e.case.get("backend", "aot_eager"),
            # the implementation the entry was found with, unless one is asked for
            impl=impl or e.case.get("pythonify", "bundled"),
            trace_dir=str((trace_dirs or {}).get(e.path, "")) or None,
            # a process left broken shows only to the canary (Note [A broken process])
            canary=e.case["kind"] == "process-broken",
        )
        futures.append((e, fut))
    try:
        pending = list(futures)
        while pending:
            for ev in pool.poll(0.25):
                if ev.gone:
                    pool.start(ev.slot, Serve())
            still = []
            for e, fut in pending:
                if not fut.done():
                    still.append((e, fut))
                    continue
                on_result(e, fut.result())
            pending = still
    finally:
        pool.stop(5.0)
        shutil.rmtree(work, ignore_errors=True)
