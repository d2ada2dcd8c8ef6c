"""The checked-in corpus is a set of regression cases: every entry loads, is complete, and
says what replay must see (CI replays them with `pyfy-fuzz replay corpus/`)."""

from __future__ import annotations

import ast
from pathlib import Path

from pyfy_fuzz.corpus import FORMAT, Corpus

ROOT = Path(__file__).resolve().parents[2] / "corpus"


def test_every_checked_in_entry_is_valid_complete_and_triaged() -> None:
    corpus = Corpus.open(ROOT, create=False)
    assert not corpus.problems, corpus.problems
    assert len(corpus.entries) >= 20
    for sig, e in corpus.entries.items():
        case = e.case
        names = {p.name for p in e.path.iterdir()}
        assert {"case.json", "repro.py", "program.py", "README.md"} <= names, sig
        assert case.get("triage"), f"{sig}: no triage note"
        assert case["bug_in"] in ("torch", "pythonify", "pyfy-fuzz"), sig
        # torch bugs keep failing on stock torch; ours are fixed and must stay fixed
        assert case["expected"] == ("fail" if case["bug_in"] == "torch" else "pass"), sig
        if case["subject"] == "pythonify" and case["bug_in"] == "pythonify":
            assert case["expected"] == "pass"
        source = (e.path / "repro.py").read_text()
        ast.parse(source)  # well-formed Python
        assert case["format"] == FORMAT and case["identity"] and case["coarse"], sig
        assert len(source.splitlines()) <= 80, f"{sig}: repro.py is not paste-sized"
        # Checked where pyfy-fuzz cannot be imported when it was saved (migrate / run):
        # every torch bug's repro shows it on its own.
        if case["bug_in"] == "torch":
            assert case["repro"]["verdict"] == "reproduces", (sig, case["repro"])
    kinds = {e.case["bug_in"] for e in corpus.entries.values()}
    assert kinds == {"torch", "pythonify", "pyfy-fuzz"}
