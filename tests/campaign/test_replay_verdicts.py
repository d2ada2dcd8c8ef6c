"""Replay's judgement: reproduced / not / cannot tell, against what the entry expects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyfy_fuzz.campaign.pool import Died
from pyfy_fuzz.campaign.replay import ReplayOutcome, ReplayReport, _matches, _verdict
from pyfy_fuzz.corpus.store import Entry
from pyfy_fuzz.schema.messages import CaseOutcome, Done

CASE = {
    "signature": "crash.exceptions.aaaaaaaaaaaa",
    "kind": "crash",
    "oracle": "exceptions",
    "subject": "pythonify",
    "exc_type": "RuntimeError",
    "coarse": "c0c0c0c0c0c0",
}


def _result(*findings: dict[str, Any], status: str = "ok") -> Done:
    outcome = CaseOutcome(status, "dedupe", findings=findings, reason="nondeterministic")
    return Done(outcome, "{}")


def _f(sig: str, **kw: Any) -> dict[str, Any]:
    return {**CASE, "signature": sig, "explanation": "x\n  - call 0: what", **kw}


@pytest.mark.parametrize(
    "result, reproduced",
    [
        (_result(_f(CASE["signature"])), True),
        (_result(_f("crash.exceptions.bbbbbbbbbbbb")), True),  # other wrapper paths
        (_result(_f("crash.outputs.cccccccccccc", oracle="outputs", coarse="c1")), False),
        # one kind, oracle and subject but another bug (another message or frame)
        (_result(_f("crash.exceptions.dddddddddddd", coarse="d1d1d1d1d1d1")), False),
        (_result(), False),
        (Died("interpreter-crash", "SIGSEGV", "pythonify", "{}"), None),
        (Died("hang", "timeout after 60 s", "compile", "{}"), None),
        (_result(status="discarded"), None),
        (_result(_f("harness-error.harness.eeeeeeeeeeee", coarse="e0"), status="error"), None),
    ],
)
def test_matches(result: Any, reproduced: bool | None) -> None:
    assert _matches(CASE, result)[0] is reproduced


def test_deaths_reproduce_only_as_the_same_death() -> None:
    case = {**CASE, "kind": "interpreter-crash"}
    assert _matches(case, Died("interpreter-crash", "SIGSEGV", "compile", "{}"))[0] is True
    assert _matches(case, Died("hang", "timeout", "compile", "{}"))[0] is None
    assert _matches(case, _result())[0] is False


def test_harness_errors_match_only_their_own_exception() -> None:
    case = {
        **CASE,
        "kind": "harness-error",
        "oracle": "harness",
        "subject": "pyfy-fuzz",
        "exc_type": "KeyError@runner.py:run_case",
    }
    other = _f(
        "harness-error.harness.dddddddddddd",
        kind="harness-error",
        oracle="harness",
        subject="pyfy-fuzz",
        exc_type="TypeError@observe.py:tensor_obs",
        coarse="e1e1e1e1e1e1",  # another exception: another identity
    )
    assert _matches(case, _result(other))[0] is False


@pytest.mark.parametrize(
    "expected, reproduced, verdict",
    [
        ("fail", True, "known-failure"),
        ("fail", False, "fixed-upstream"),
        ("pass", False, "pass"),
        ("pass", True, "FAIL"),
        ("pass", None, "error"),  # a crash of a fixed entry is never a pass
        ("fail", None, "error"),
    ],
)
def test_verdicts(expected: str, reproduced: bool | None, verdict: str) -> None:
    assert _verdict(expected, reproduced) == verdict


@pytest.mark.parametrize(
    "verdict, repro, mismatch",
    [
        ("known-failure", "reproduces", False),
        ("known-failure", "passes", True),  # the spec shows the bug, the repro does not
        ("known-failure", "error", True),
        ("fixed-upstream", "passes", False),
        ("fixed-upstream", "reproduces", True),  # the repro shows what the spec no longer does
        ("pass", "passes", False),
        ("FAIL", "reproduces", False),
        ("error", "passes", False),  # an entry replay could not judge: nothing to agree with
        ("known-failure", None, False),  # --repros not asked for
    ],
)
def test_a_repro_must_say_what_the_replay_says(
    verdict: str, repro: str | None, mismatch: bool
) -> None:
    entry = Entry(Path("corpus/x"), {**CASE, "expected": "fail"})
    outcome = ReplayOutcome(entry, verdict, "", repro=repro)
    assert outcome.repro_mismatch is mismatch
    assert ReplayReport([outcome]).exit_code == int(mismatch or verdict in ("FAIL", "error"))


def test_a_damaged_entry_fails_the_replay_and_is_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case.json that does not load (unreadable, or of a format this build cannot read) is a
    regression case CI can no longer run: replay says so as an error and exits 1, and never
    rewrites it. A directory without case.json is no entry: a warning."""
    from pyfy_fuzz.cli import main
    from pyfy_fuzz.corpus.store import Problem

    root = tmp_path / "corpus"
    (root / "damaged").mkdir(parents=True)
    (root / "damaged" / "case.json").write_text("{")
    (root / "old").mkdir()
    old = '{"format": 4, "signature": "old", "kind": "crash"}'
    (root / "old" / "case.json").write_text(old)
    (root / "notes").mkdir()
    assert main(["replay", str(root), "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert "error: " in err and "damaged" in err and "warning: " in err and "notes" in err
    assert (root / "damaged" / "case.json").read_text() == "{"
    assert (root / "old" / "case.json").read_text() == old
    report = ReplayReport(problems=[Problem(root / "damaged", "unreadable")])
    assert report.exit_code == 1
    assert ReplayReport(problems=[Problem(root / "notes", "no case.json")]).exit_code == 0
