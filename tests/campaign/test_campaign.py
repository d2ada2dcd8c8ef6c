"""Real campaigns (worker processes, Hypothesis, torch.compile) with planted failures.

Each plants one failure in the worker through a test implementation (tests/campaign/impls.py)
and checks what a user would: the exit code, the corpus entry (complete, shrunk, classified),
the summary, the budget, and that replay tells fixed from still failing.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from generators import spec_from_dict
from pyfy_fuzz.campaign.campaign import run_campaign
from pyfy_fuzz.campaign.config import CampaignConfig
from pyfy_fuzz.campaign.replay import replay
from pyfy_fuzz.corpus.store import Corpus

pytestmark = pytest.mark.slow

GRACE = 15.0


def _campaign(tmp_path: Path, budget: float, **kw: object) -> tuple[object, float]:
    kw.setdefault("workers", 2)
    config = CampaignConfig(
        budget_s=budget,
        corpus=tmp_path / "corpus",
        json_path=tmp_path / "summary.json",
        progress="quiet",
        **kw,  # type: ignore[arg-type]
    )
    t0 = time.monotonic()
    result = run_campaign(config)
    return result, time.monotonic() - t0


def _entries(corpus: Path, **match: str) -> list[dict]:
    c = Corpus.open(corpus, create=False)
    assert not c.problems, c.problems
    return [e.case for e in c.entries.values() if all(e.case.get(k) == v for k, v in match.items())]


def _counts(corpus: Path) -> dict[str, int]:
    return {e.signature: e.case["count"] for e in Corpus.open(corpus).entries.values()}


def test_a_planted_generator_bug_is_found_shrunk_saved_and_replayed(tmp_path: Path) -> None:
    impl = "tests.campaign.impls:float64_raises"
    result, took = _campaign(
        tmp_path,
        45,
        impl=impl,
        seed=1,
        shrink_seconds=20.0,
        wrappers=("input_mutation", "output_aliasing"),
    )
    assert took <= 45 + GRACE + 5
    assert result.exit_code == 1  # type: ignore[attr-defined]
    ours = _entries(tmp_path / "corpus", subject="pythonify")
    assert ours, "the planted generator bug was not saved"
    for case in ours:  # one per signature: the wrapper paths the programs reach differ
        assert case["bug_in"] == "pythonify" and case["expected"] == "pass"
        # it raises in calls (crash) or in the dtype-variant call (guard-unsound)
        assert case["kind"] in ("crash", "guard-unsound")
        spec = spec_from_dict(case["spec"])
        # the trigger survives shrinking
        assert any(r.dtype == "float64" for r in spec.roots) or spec.plan.variant == "dtype"
    # and little else does, unless the budget ended the shrink (programs start with up to 3
    # arguments and 5 statements; a signature's wrapper paths can need a second argument, or
    # a second statement: e.g. `v = a0.detach()` returned makes runtime/output/alias_of_input)
    shrunk = [c for c in ours if c["shrink"].get("complete")]  # the reducer reached a fixpoint
    assert shrunk
    for case in shrunk:
        spec = spec_from_dict(case["spec"])
        assert len(spec.inputs) <= 2 and len(spec.body) <= 2, spec
    case = min(ours, key=lambda c: c["size"])
    entry = tmp_path / "corpus" / case["signature"]
    for name in ("case.json", "repro.py", "program.py", "README.md", "pythonified.py"):
        assert (entry / name).is_file(), name
    assert "planted" in (entry / "pythonified.py").read_text()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {"cases", "elapsed_s", "findings", "wrapper_hits", "started_at", "finished_at"} <= set(
        summary
    )
    assert summary["cases"] > 20 and summary["wrapper_hits"]
    saved = {f["signature"]: f for f in summary["findings"]}
    assert saved[case["signature"]]["path"] == str(entry)
    assert set(saved[case["signature"]]) >= {"signature", "kind", "oracle", "wrappers", "path"}

    # The repro shows it standalone: exits 1 while the (planted) bug is in the file.
    run = subprocess.run(
        ["python", "repro.py"], cwd=entry, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]

    # Replay with the buggy implementation: still failing (exit 1); with the bundled
    # generator (the "fix"): passes.
    still = replay([entry], impl=impl)
    assert [o.verdict for o in still.outcomes] == ["FAIL"] and still.exit_code == 1
    fixed = replay([entry], impl="bundled")  # by default, replay uses the entry's own
    assert [o.verdict for o in fixed.outcomes] == ["pass"] and fixed.exit_code == 0


def test_a_restart_knows_what_the_corpus_holds(tmp_path: Path) -> None:
    impl = "tests.campaign.impls:float64_raises"
    # Little shrinking, so the short runs mostly explore and meet known signatures again.
    kw = {"impl": impl, "wrappers": ("input_mutation",), "shrink_seconds": 2.0}
    first, _ = _campaign(tmp_path, 30, **kw)
    before = _counts(tmp_path / "corpus")
    assert before
    second, _ = _campaign(tmp_path, 30, **kw)
    summary = second.summary  # type: ignore[attr-defined]
    assert not set(f["signature"] for f in summary["findings"]) & set(before)
    after = _counts(tmp_path / "corpus")
    seen_again = summary["known_seen"]
    assert seen_again, "the second run saw none of the first run's findings"
    for sig, n in seen_again.items():
        assert after[sig] == before[sig] + n
    streams = list((tmp_path / "corpus" / ".campaign").glob("streams-*.json"))
    assert json.loads(streams[0].read_text())["next"] >= 4  # 2 workers x 2 runs: new streams


def test_a_case_that_kills_its_worker_is_a_reduced_finding_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    # One worker: while the crash is reduced it serves candidates, then must go back to
    # exploring (it once stayed an idle server for the rest of the budget).
    result, took = _campaign(
        tmp_path,
        40,
        impl="tests.campaign.impls:module_segfaults",
        wrappers=("module", "input_mutation"),
        workers=1,
    )
    assert took <= 40 + GRACE + 5
    summary = result.summary  # type: ignore[attr-defined]
    crashes = _entries(tmp_path / "corpus", kind="interpreter-crash")
    assert len(crashes) == 1, crashes
    case = crashes[0]
    assert case["reason"] == "SIGSEGV" and case["phase"] == "compile"
    assert case["subject"] == "torch.compile" and case["expected"] == "fail"
    assert case["shrink"]["by"] == "reducer"
    assert spec_from_dict(case["spec"]).module is not None
    assert summary["deaths"]["interpreter-crash"] >= 1
    assert summary["status"].get("ok", 0) > 10  # exploring went on around the crashes
    assert case["shrink"]["by"] == "reducer" and case["shrink"].get("cases", 0) >= 1
    assert (tmp_path / "corpus" / case["signature"] / "repro.py").is_file()


def test_a_hanging_case_is_killed_and_saved(tmp_path: Path) -> None:
    result, took = _campaign(
        tmp_path,
        30,
        impl="tests.campaign.impls:float64_hangs",
        case_timeout=4.0,
        shrink_seconds=10.0,
        wrappers=("input_mutation",),
    )
    assert took <= 30 + GRACE + 5
    hangs = _entries(tmp_path / "corpus", kind="hang")
    assert len(hangs) == 1
    assert hangs[0]["reason"].startswith("timeout") and hangs[0]["phase"] == "compile"
    assert any(r.dtype == "float64" for r in spec_from_dict(hangs[0]["spec"]).roots)


def test_coverage_is_gathered_across_workers(tmp_path: Path) -> None:
    result, _ = _campaign(tmp_path, 60, coverage=True, wrappers=("input_mutation",), max_cases=6)
    summary = result.summary  # type: ignore[attr-defined]
    cov = summary["coverage"]
    names = {Path(f).name: v for f, v in cov["files"].items()}
    assert names["runtime_wrappers.py"]["lines"] > 10  # torch's wrappers ran in the workers
    assert names["recorder.py"]["lines"] > 10  # and so did the bundled generator (capture/)
    assert names["runtime.py"]["lines"] > 10  # its wrapper models too (wrappers/)
    assert Path(cov["html"]).is_file()
    # every named torch file has its branches reached by cases, even one no case reached
    from pyfy_fuzz.reports.coverage_data import torch_files

    for name in torch_files():
        row = cov["files"][name]
        assert row["torch"] and 0 <= row["branches_reached"] <= row["branches_total"], name
    reached = {Path(n).name for n, v in cov["files"].items() if v.get("branches_reached")}
    assert {"runtime_wrappers.py", "collect_metadata_analysis.py", "builder.py"} <= reached
    t = cov["torch"]
    assert t["files"] == len(torch_files()) and 0 < t["branches_reached"] < t["branches_total"]
    assert set(t["never_reached"]) <= set(torch_files())
    steering = summary["steering"]
    assert steering["on"] and steering["arcs"] > 100  # the cases' arcs reached the campaign
    assert steering["fresh_kept"] >= 1  # the first case reached arcs first: kept
