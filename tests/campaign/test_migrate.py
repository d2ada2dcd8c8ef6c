"""`pyfy-fuzz migrate`: format-1 entries re-run and re-keyed as bug identities, nothing lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyfy_fuzz.campaign.migrate import _kept_case, _merge, old_entries
from pyfy_fuzz.cli import main
from pyfy_fuzz.corpus.store import CASE, FORMAT, Corpus
from pyfy_fuzz.schema.case import CaseError

ROOT = Path(__file__).resolve().parents[2]
# A format-1 entry as the first round saved it (a torch crash, still present in torch 2.13).
OLD = {
    "format": 1,
    "signature": "crash.exceptions.103b1252b52d",
    "kind": "crash",
    "oracle": "exceptions",
    "subject": "torch.compile",
    "wrappers": [],
    "exc_type": "RuntimeError",
    "explanation": "torch.compile differs from eager:\n  - call 0: raised RuntimeError in call: "
    "expand: the requested shape has too few dimensions!; eager did not",
    "bug_in": "torch",
    "expected": "fail",
    "triage": "T4/R: unsqueeze_ then an in-place write under inference_mode",
    "backend": "aot_eager",
    "device": "cpu",
    "count": 3,
    "size": [1, 2, 1, 1],
    "spec": {
        "body": [
            {"args": ["a0", 0], "ctx": None, "op": "unsqueeze_", "outs": []},
            {"args": ["a0"], "ctx": "inference_mode", "op": "zero_", "outs": []},
        ],
        "family": "input_mutation",
        "functions": [],
        "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}],
        "module": None,
        "outputs": [{"items": [], "kind": "ref", "ref": "a0", "value": 0}],
        "plan": {
            "backward": False,
            "calls": 1,
            "dynamic": False,
            "frontend": "aot",
            "mode": None,
            "saved_tensor_hooks": False,
            "second_backward": None,
            "tangents": "ones",
            "variant": None,
        },
        "roots": [
            {
                "dtype": "float32",
                "grad": "none",
                "layout": "contiguous",
                "shape": [],
                "subclass": None,
            }
        ],
        "version": 1,
    },
}


def _old_entry(root: Path, case: dict) -> Path:
    d = root / case["signature"]
    d.mkdir(parents=True)
    (d / CASE).write_text(json.dumps(case))
    (d / "repro.py").write_text("# old\n")
    return d


def test_old_entries_are_reported_not_matched(tmp_path: Path) -> None:
    _old_entry(tmp_path / "c", OLD)
    corpus = Corpus.open(tmp_path / "c")
    assert not corpus.entries and [p.old for p in corpus.problems] == [True]
    assert "pyfy-fuzz migrate" in corpus.problems[0].message
    assert [e.path.name for e in old_entries(tmp_path / "c")] == [OLD["signature"]]


def test_an_entry_that_no_longer_reproduces_keeps_its_identity() -> None:
    """No difference is known to re-key it from: the stored identity stays (never a key
    parsed from its words); a format-1 entry has none to keep and is left as it was."""
    with pytest.raises(CaseError, match="no identity to keep"):
        _kept_case(OLD)
    old = {**OLD, "format": 4, "coarse": "c0ffee", "identity": {"kind": "crash"}}
    kept = _kept_case(old)
    assert kept["format"] == FORMAT and kept["migrated_by"] == "kept"
    assert kept["coarse"] == "c0ffee" and kept["triage"] == OLD["triage"]


def test_old_entries_of_one_bug_merge_keeping_every_triage_note() -> None:
    a = {**OLD, "migrated_from": ["x"], "count": 2, "size": [1, 2, 1, 1], "triage": "first"}
    b = {**OLD, "migrated_from": ["y"], "count": 5, "size": [1, 1, 1, 1], "triage": "second"}
    merged = _merge([a, b])
    assert merged["count"] == 7 and merged["migrated_from"] == ["y", "x"]
    assert merged["triage"] == "y: second | x: first"


@pytest.mark.slow
def test_migrate_reruns_rekeys_and_moves_the_old_entry_aside(tmp_path: Path, capsys) -> None:
    root = tmp_path / "c"
    old = _old_entry(root, OLD)
    assert main(["migrate", str(root), "--workers", "1"]) == 0
    corpus = Corpus.open(root)
    assert not corpus.problems and len(corpus.entries) == 1
    (entry,) = corpus.entries.values()
    case = entry.case
    assert case["format"] == FORMAT and case["migrated_from"] == [OLD["signature"]]
    assert case["migrated_by"] == "re-run"  # the torch bug still reproduces
    assert case["identity"]["message"] == "expand: the requested shape has too few dimensions!"
    assert case["identity"]["frame"] == ""  # Note [Which frame names a crash]
    assert case["triage"] == OLD["triage"] and case["count"] == OLD["count"]
    assert case["severity"] == 2 and case["title"]
    assert not old.exists() and (root / ".migrated" / OLD["signature"] / CASE).is_file()
    assert (entry.path / "trace").is_dir()  # the re-run's structured trace is kept
    # Nothing left to do the second time.
    assert main(["migrate", str(root)]) == 0
    assert "no old-format entries" in capsys.readouterr().out
    # An entry of the previous format whose identity did not move keeps its name: the old
    # directory is set aside first (kept), the new one takes its place.
    (entry.path / CASE).write_text(json.dumps({**case, "format": FORMAT - 1}))
    assert main(["migrate", str(root)]) == 0
    again = Corpus.open(root)
    assert not again.problems and list(again.entries) == [entry.path.name]
    assert again.entries[entry.path.name].case["format"] == FORMAT
    assert (
        json.loads((root / ".migrated" / entry.path.name / CASE).read_text())["format"]
        == FORMAT - 1
    )


def test_migrate_errors_are_one_line(tmp_path: Path, capsys) -> None:
    assert main(["migrate", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a directory" in err
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.slow
def test_render_rewrites_stale_generated_files_keeping_the_old_ones(tmp_path: Path, capsys) -> None:
    """After the repro renderer changes, `migrate --render` writes each entry's files anew from
    case.json, re-checks the new repro.py, and keeps what it replaced (a person's edit)."""
    name = "compile-divergence.mutation.8a15dc1b883b"  # README's example: a torch bug
    root = tmp_path / "c"
    root.mkdir()
    shutil.copytree(ROOT / "corpus" / name, root / name)
    (root / name / "repro.py").write_text("# a person's edit\n")
    case = json.loads((root / name / CASE).read_text())
    case.pop("repro", None)
    (root / name / CASE).write_text(json.dumps(case))
    assert main(["migrate", str(root), "--render"]) == 0
    out = capsys.readouterr().out
    assert f"{name}" in out and "repro.py" in out and "(repro reproduces)" in out
    assert (root / ".migrated" / f"{name}.render" / "repro.py").read_text() == "# a person's edit\n"
    entry = Corpus.open(root).entries[name]
    assert entry.case["repro"]["verdict"] == "reproduces" and entry.case["repro"]["exit_code"] == 1
    assert (root / name / "repro.py").read_text().startswith('"""torch.compile (aot_eager)')
    # Nothing left to write the second time.
    assert main(["migrate", str(root), "--render"]) == 0
    assert "0 of 1 entries rewritten" in capsys.readouterr().out


def test_migrate_lists_fold_candidates_and_folds_only_those_named(tmp_path: Path, capsys) -> None:
    """Merging a corpus: two checked-in entries of one identity copied in with a third whose
    paths are a superset (Note [One entry per identity across wrapper paths])."""
    root = tmp_path / "c"
    root.mkdir()
    name = "compile-divergence.mutation.8a15dc1b883b"
    shutil.copytree(ROOT / "corpus" / name, root / name)
    case = json.loads((root / name / CASE).read_text())
    bigger = dict(case, signature="compile-divergence.mutation.0000000000aa", count=2)
    bigger["identity"] = dict(case["identity"], paths=[*case["identity"]["paths"], "x/extra"])
    shutil.copytree(root / name, root / bigger["signature"])
    (root / bigger["signature"] / CASE).write_text(json.dumps(bigger))
    assert main(["migrate", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"{bigger['signature']:<48} -> {name}  (fold candidate)" in out
    assert (root / bigger["signature"]).is_dir()
    assert main(["migrate", str(root), "--fold", name]) == 2  # the general one is no candidate
    assert "not a fold candidate" in capsys.readouterr().err
    apart = ["migrate", str(root), "--apart", bigger["signature"]]
    assert main([*apart, "--fold", bigger["signature"]]) == 2  # both: refused
    capsys.readouterr()
    assert main(apart) == 0 and "(kept apart)" in capsys.readouterr().out
    assert Corpus.open(root).fold_candidates() == []  # a person's call, remembered
    case_file = root / bigger["signature"] / CASE
    recorded = json.loads(case_file.read_text())
    assert recorded["apart_from"] == [name]
    recorded.pop("apart_from")  # ... and taken back, by hand
    case_file.write_text(json.dumps(recorded))
    assert main(["migrate", str(root), "--fold", bigger["signature"]]) == 0
    assert "(folded)" in capsys.readouterr().out
    assert not (root / bigger["signature"]).exists()
    kept = json.loads((root / name / CASE).read_text())
    assert kept["count"] == case.get("count", 1) + 2
    assert kept["folded_from"] == [bigger["signature"]]
    assert (root / ".superseded" / bigger["signature"] / CASE).is_file()
