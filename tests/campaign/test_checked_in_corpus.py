"""The checked-in corpus is a set of regression cases: every entry loads, is complete, and
says what replay must see (CI replays them with `pyfy-fuzz replay corpus/`)."""

from __future__ import annotations

import ast
from pathlib import Path

from pyfy_fuzz.corpus.entry import entry_files
from pyfy_fuzz.corpus.repro import MAX_LINES
from pyfy_fuzz.corpus.store import FORMAT, Corpus

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
        assert len(source.splitlines()) <= MAX_LINES, f"{sig}: repro.py is not paste-sized"
        # Checked where pyfy-fuzz cannot be imported when it was saved (migrate / run):
        # every torch bug's repro shows it on its own.
        if case["bug_in"] == "torch":
            assert case["repro"]["verdict"] == "reproduces", (sig, case["repro"])
        # An entry kept as it was by `migrate` no longer reproduces: a fixed bug of ours,
        # whose regression is that replay finds it no more.
        if case.get("migrated_by") == "kept":
            assert case["expected"] == "pass" and case["bug_in"] != "torch", sig
        else:
            assert case.get("differences") or case["kind"] in ("interpreter-crash", "hang"), sig
    kinds = {e.case["bug_in"] for e in corpus.entries.values()}
    assert kinds == {"torch", "pythonify", "pyfy-fuzz"}


def test_checked_in_files_are_the_renderers_and_the_readme_shows_one_verbatim() -> None:
    """repro.py, program.py and README.md are made from case.json: after a change of the
    renderer, `pyfy-fuzz migrate --render corpus` writes them anew. The project README's
    example is one entry's repro.py, as it is."""
    corpus = Corpus.open(ROOT, create=False)
    stale = []
    for sig, e in sorted(corpus.entries.items()):
        if e.case.get("migrated_by") == "kept":
            continue  # no differences to render from: its files are an older build's
        files = entry_files(e.case, has_pythonified=(e.path / "pythonified.py").is_file())
        stale += [f"{sig}/{n}" for n, text in files.items() if (e.path / n).read_text() != text]
    assert not stale, f"run `pyfy-fuzz migrate --render corpus`: {stale}"
    readme = (ROOT.parent / "README.md").read_text()
    block = readme.split("<!-- fmt: off -->\n```python\n", 1)[1].split("```\n", 1)[0]
    assert any(block == (e.path / "repro.py").read_text() for e in corpus.entries.values())
