"""corpus/: atomic entries, dedupe by signature, recovery after a kill, bad entries skipped."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generators import CallPlan, InputSpec, OutSpec, ProgramSpec, RootSpec, Stmt
from pyfy_fuzz.corpus.store import CASE, FORMAT, Corpus, CorpusError, atomic_write, free_name


def _spec(n_stmts: int = 1) -> ProgramSpec:
    body = tuple(Stmt("sin", ("a0",), (f"v{i}",)) for i in range(n_stmts))
    return ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((2,)),),
        inputs=(InputSpec("root", 0),),
        body=body,
        outputs=(OutSpec("ref", f"v{n_stmts - 1}"),),
        plan=CallPlan(calls=1, backward=False),
    )


def _case(sig: str = "crash.exceptions.0123456789ab", n_stmts: int = 1, **kw: Any) -> dict:
    spec = _spec(n_stmts)
    case = {
        "format": FORMAT,
        "signature": sig,
        "coarse": sig.rsplit(".", 1)[-1],
        "identity": {"paths": []},
        "kind": "crash",
        "oracle": "exceptions",
        "subject": "torch.compile",
        "expected": "fail",
        "spec": json.loads(spec.to_json()),
        "size": list(spec.size()),
        "count": 1,
    }
    case.update(kw)
    return case


def _put(corpus: Corpus, case: dict, text: str = "x") -> tuple[Path, str]:
    return corpus.put(corpus.new_staging(), case, {"repro.py": text})


def test_a_new_entry_appears_whole(tmp_path: Path) -> None:
    corpus = Corpus.open(tmp_path / "c")
    path, how = _put(corpus, _case())
    assert how == "new" and path.name == "crash.exceptions.0123456789ab"
    assert sorted(p.name for p in path.iterdir()) == [CASE, "repro.py"]
    assert not [p for p in (tmp_path / "c").iterdir() if p.name.startswith(".tmp-")]
    again = Corpus.open(tmp_path / "c")
    assert set(again.entries) == {path.name} and not again.problems


def test_a_smaller_repro_replaces_and_counts_add_up(tmp_path: Path) -> None:
    corpus = Corpus.open(tmp_path / "c")
    _put(corpus, _case(n_stmts=3, count=2, triage="torch bug T1"), "big")
    path, how = _put(corpus, _case(n_stmts=1, count=1), "small")
    assert how == "replaced"
    case = json.loads((path / CASE).read_text())
    assert case["count"] == 3 and case["size"][1] == 1
    assert case["triage"] == "torch bug T1"  # a person's notes survive the replacement
    assert (path / "repro.py").read_text() == "small"
    assert not [
        p
        for p in (tmp_path / "c").iterdir()
        if p.name.startswith(".") and p.name not in (".campaign",)
    ]


def test_a_bigger_repro_is_not_kept_but_counted(tmp_path: Path) -> None:
    corpus = Corpus.open(tmp_path / "c")
    _put(corpus, _case(n_stmts=1), "small")
    path, how = _put(corpus, _case(n_stmts=4, count=5), "big")
    assert how == "kept"
    assert (path / "repro.py").read_text() == "small"
    assert json.loads((path / CASE).read_text())["count"] == 6
    corpus.bump(path.name, 2)
    assert json.loads((path / CASE).read_text())["count"] == 8


def test_recovery_after_a_kill_between_the_two_renames(tmp_path: Path) -> None:
    corpus = Corpus.open(tmp_path / "c")
    path, _ = _put(corpus, _case())
    aside = tmp_path / "c" / f".old-{path.name}-deadbeef"
    os.rename(path, aside)  # the state a kill between "move aside" and "move in" leaves
    healed = Corpus.open(tmp_path / "c")
    assert path.name in healed.entries and not aside.exists()


def test_dead_stagings_of_this_host_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    Corpus.open(tmp_path / "c")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    host = socket.gethostname()
    stale = tmp_path / "c" / f".tmp-{host}-{dead}-0000aaaa"
    live = tmp_path / "c" / f".tmp-{host}-{os.getpid()}-0000bbbb"
    other = tmp_path / "c" / f".tmp-another-host-{dead}-0000cccc"
    for d in (stale, live, other):
        d.mkdir()
        (d / "repro.py").write_text("half")
    Corpus.open(tmp_path / "c")
    assert not stale.exists() and live.exists() and other.exists()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: (d / "README.txt").write_text("hi"), "no case.json"),
        (lambda d: (d / CASE).write_text("{not json"), "unreadable"),
        (lambda d: (d / CASE).write_text("[1, 2]"), "not an object"),
        (lambda d: (d / CASE).write_text(json.dumps({"format": 1})), "lacks"),
        (lambda d: (d / CASE).write_text(json.dumps(_case(d.name, format=99))), "format 99"),
        (
            lambda d: (d / CASE).write_text(json.dumps(_case("crash.other.000000000000"))),
            "names signature",
        ),
        (
            lambda d: (d / CASE).write_text(json.dumps(_case(d.name, spec={"version": 1}))),
            "spec is invalid",
        ),
    ],
)
def test_corrupt_or_foreign_entries_are_reported_and_skipped(
    tmp_path: Path, make: Any, message: str
) -> None:
    corpus = Corpus.open(tmp_path / "c")
    _put(corpus, _case())
    bad = tmp_path / "c" / "crash.exceptions.bad000000000"
    bad.mkdir()
    make(bad)
    again = Corpus.open(tmp_path / "c")
    assert list(again.entries) == ["crash.exceptions.0123456789ab"]
    assert len(again.problems) == 1 and message in again.problems[0].message


def test_an_unusable_corpus_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(CorpusError, match="not a directory"):
        Corpus.open(tmp_path / "file")
    with pytest.raises(CorpusError, match="cannot create"):
        Corpus.open(tmp_path / "file" / "sub")
    # Whatever stops writing (permissions; here, as root, a file where .campaign/ goes):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / ".campaign").write_text("")
    with pytest.raises(CorpusError, match="not writable"):
        Corpus.open(blocked)


def test_a_corpus_another_shard_created_a_moment_ago_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two shards started on a new corpus: both saw it missing, the other created it first.
    root = tmp_path / "c"
    root.mkdir()
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda p: False if p == root else real_exists(p))
    corpus = Corpus.open(root)
    assert corpus.root == root and corpus.entries == {}


def test_an_entry_set_aside_twice_keeps_both(tmp_path: Path) -> None:
    """.superseded/ and .migrated/ keep every entry moved there: a second of the same name
    gets a numbered one, never the first's place."""
    aside = tmp_path / ".superseded"
    first = free_name(aside, "e")
    assert first == aside / "e" and aside.is_dir() and not first.exists()
    first.mkdir()
    second = free_name(aside, "e")
    second.mkdir()
    assert second == aside / "e.1" and free_name(aside, "e") == aside / "e.2"


def test_atomic_write_leaves_the_old_file_when_writing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "case.json"
    target.write_text("old")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pyfy_fuzz.schema.atomic.os.fsync", full)
    with pytest.raises(OSError, match="No space"):
        atomic_write(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["case.json"]


def test_an_entry_that_does_not_load_is_never_replaced(tmp_path: Path) -> None:
    """A person's half-edited case.json (or a newer format) must survive a campaign finding
    the same signature: it is reported and `put` leaves it alone."""
    corpus = Corpus.open(tmp_path / "c")
    path, _ = _put(corpus, _case(count=41, triage="mine"), "mine")
    (path / CASE).write_text((path / CASE).read_text()[:-20])  # a typo mid-edit
    again = Corpus.open(tmp_path / "c")
    # Reported, never matched as a bug (its identity cannot be read) and never replaced.
    assert again.problems and not again.entries and not again.known().table
    _, how = _put(again, _case(n_stmts=1, count=1), "campaign's")
    assert how == "blocked"
    assert (path / "repro.py").read_text() == "mine"
    assert (path / CASE).read_text().startswith("{")


def test_counts_are_not_written_into_retired_or_broken_entries(tmp_path: Path) -> None:
    corpus = Corpus.open(tmp_path / "c")
    path, _ = _put(corpus, _case())
    (path / CASE).write_text("{being edited")
    corpus.bump(path.name, 3)
    assert (path / CASE).read_text() == "{being edited"  # the stale copy does not win
    import shutil

    shutil.rmtree(path)
    corpus.bump(path.name, 3)  # retired mid-run: nothing to do, no error
    assert not path.exists()


def test_fold_keeps_one_entry_per_identity_over_comparable_paths(tmp_path: Path) -> None:
    """Note [One entry per identity across wrapper paths]: an entry whose paths are a superset
    of another's of the same coarse key is a fold candidate, and folding it carries its counts,
    first sighting and triage note (the entry kept under .superseded/); incomparable path sets
    are no candidates."""
    corpus = Corpus.open(tmp_path / "c")

    def entry(sig: str, paths: list[str], **kw: Any) -> None:
        case = _case(sig, kind="compile-divergence", oracle="grads", **kw)
        case["coarse"], case["identity"] = "a27c146c287d", {"paths": paths}
        _put(corpus, case)

    entry("compile-divergence.grads.000000000001", ["r/data"], count=2, first_seen="2026-11-27")
    entry(
        "compile-divergence.grads.000000000002",
        ["r/data", "a/training"],
        count=3,
        first_seen="2026-11-20",
        triage="G1 on the GPU",
    )
    entry("compile-divergence.grads.000000000003", ["s/inference"])
    other = _case("crash.exceptions.0123456789ab")
    _put(corpus, other)

    assert corpus.fold_candidates(only={"crash.exceptions.0123456789ab"}) == []
    pairs = corpus.fold_candidates()
    assert pairs == [
        ("compile-divergence.grads.000000000002", "compile-divergence.grads.000000000001")
    ]
    assert corpus.fold_candidates(only={"compile-divergence.grads.000000000001"}) == pairs
    assert corpus.fold(pairs) == pairs
    kept = json.loads((tmp_path / "c/compile-divergence.grads.000000000001" / CASE).read_text())
    assert kept["count"] == 5 and kept["first_seen"] == "2026-11-20"
    assert kept["folded_from"] == ["compile-divergence.grads.000000000002"]
    assert kept["triage"] == "compile-divergence.grads.000000000002: G1 on the GPU"
    aside = tmp_path / "c/.superseded/compile-divergence.grads.000000000002"
    assert (aside / CASE).is_file() and "folded into" in (aside / "SUPERSEDED").read_text()
    again = Corpus.open(tmp_path / "c")
    assert set(again.entries) == {
        "compile-divergence.grads.000000000001",
        "compile-divergence.grads.000000000003",
        "crash.exceptions.0123456789ab",
    }
    assert again.fold_candidates() == [] and again.fold(pairs) == []  # idempotent
