"""corpus/: one directory per finding signature, written so that nothing is ever half there.

    corpus/<signature>/case.json        spec, finding, versions, count, expected outcome
                       repro.py         standalone: exits 1 while the bug is present
                       pythonified.py   the generated file (when pythonify produced one)
                       README.md        what differs, in a few lines
    corpus/.hypothesis/                 Hypothesis example database (a restart resumes shrinks)
    corpus/.campaign/                   stream counters per seed and shard, worker logs

An entry is built in a staging directory inside the corpus and renamed into place (rename is
atomic on one filesystem, shared ones included). Replacing an entry with a smaller repro moves
the old one aside first; `open` puts it back if a kill came between the two renames. Several
campaigns may share one corpus at once (Note [Shards share a corpus]): staging names carry host
and pid, only this host's dead stagings are cleaned up, a campaign decides what is new under
the corpus's lock after reading what the others wrote (`lock`, `rescan`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import os
import platform
import shutil
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracles.identity import KnownBug, KnownBugs
from pyfy_fuzz.schema.atomic import atomic_write
from pyfy_fuzz.schema.case import FORMAT, OLD_FORMATS, CaseError, CaseRecord, OldFormat

__all__ = [
    "CASE",
    "Corpus",
    "CorpusError",
    "Entry",
    "FORMAT",
    "OLD_FORMATS",
    "Problem",
    "environment",
    "free_name",
    "now_iso",
    "staging_name",
]

# 2: signatures are bug identities (oracles/identity.py): "coarse" and "identity" added, and
# severity / title / difference for the report. Format 1 entries are migrated by
# `pyfy-fuzz migrate`, never read as if they were current.
# 3: consequences fold into their causes (Note [Consequences] in oracles/consequences.py), a
# variant call is identified by whether it recompiled (Note [Variant-call identity] in
# oracles/guards.py), autograd aspects lead with is_leaf, seq_nr names custom Functions:
# identities of format 2 may have moved, so format 2 entries are migrated as format 1 ones.
# 4: a symbolic size is a size in a crash's message (Note [Symbolic sizes] in
# oracles/identity.py): a format 3 crash met under dynamic shapes may have moved.
CASE = "case.json"


class CorpusError(Exception):
    """The corpus directory cannot be used at all (missing parent, not writable, a file)."""


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def free_name(aside: Path, name: str) -> Path:
    """Where an entry moved into the `aside` folder (.superseded/, .migrated/) goes: `name`, or
    `name.1`, `name.2`, ... when an earlier one of that name is there (kept, never replaced)."""
    aside.mkdir(exist_ok=True)
    target, n = aside / name, 1
    while target.exists():
        target = aside / f"{name}.{n}"
        n += 1
    return target


_ENVIRONMENT_LOCK = threading.Lock()


def environment() -> dict[str, str]:
    """What a pt2 bug report's "Versions" section holds: Python, OS, and torch's own
    collect_env report (computed once per process: it runs subprocesses for a second or more,
    so a campaign computes it on a thread at its start, and a save waits for that thread
    rather than running collect_env a second time)."""
    with _ENVIRONMENT_LOCK:
        return _environment()


@functools.cache
def _environment() -> dict[str, str]:
    env = {"python": sys.version.split()[0], "os": platform.platform()}
    try:
        from torch.utils.collect_env import get_pretty_env_info

        env["collect_env"] = get_pretty_env_info()
    except Exception as exc:  # noqa: BLE001 - versions are best effort, never fatal
        env["collect_env"] = f"(torch.utils.collect_env failed: {type(exc).__name__}: {exc})"
    return env


def staging_name(pid: int | None = None) -> str:
    """`.tmp-<host>-<pid>-<random>`; pid is the campaign's, whose death makes it garbage."""
    return f".tmp-{socket.gethostname()}-{pid or os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass
class Entry:
    path: Path
    case: dict[str, Any]

    @property
    def signature(self) -> str:
        return str(self.case["signature"])

    @property
    def size(self) -> tuple[int, ...]:
        return tuple(self.case.get("size") or (1 << 30,))

    @property
    def bug(self) -> KnownBug:
        """The bug this entry makes known: its coarse key, its paths, its signature."""
        return KnownBug(str(self.case["coarse"]), _paths(self), self.signature)


@dataclass
class Problem:
    path: Path
    message: str
    old: bool = False  # an entry of an older format: `pyfy-fuzz migrate` re-keys it

    @property
    def damaged(self) -> bool:
        """A directory with a case.json that does not load as an entry of this format: a
        regression case that a replay cannot run (never one to skip quietly)."""
        return (self.path / CASE).is_file()


def _paths(e: Entry) -> frozenset[str]:
    return frozenset(e.case["identity"].get("paths", ()))


def _apart(a: Entry, b: Entry) -> bool:
    """A person read the pair and said they are two causes (`apart_from`, migrate --apart)."""
    return b.signature in a.case.get("apart_from", ()) or a.signature in b.case.get(
        "apart_from", ()
    )


# Note [One entry per identity across wrapper paths]
# An identity is the coarse key (oracle and aspect, or exception) refined by the wrapper paths
# the shrunk program needs: one aspect reached through disjoint wrapper paths may be two causes
# (an output that "is input" from a custom Function's dirty input, or from a synthetic base),
# so incomparable path sets stay two entries. Comparable ones are one bug: the entry with
# more paths is the same program with more context. A campaign matches a finding to a known
# entry whose paths are a subset of its own (KnownBugs.match), but an entry found later with
# FEWER paths, or two corpora merged (a GPU campaign's into the checked-in one), leaves the
# bigger one standing. Is that one bug? Often (the GPU corpus against the checked-in one: a
# no_grad view's is_leaf, T3, under three path sets), but not always: an aspect with no paths
# covers every program with it, and "output N: values differ" or "grad of <arg> (retained)"
# are the aspects of several causes: of the 7 pairs the GPU corpus met in the checked-in one,
# 3 were two causes (R2 and T9; G1, a hook on a mutated non-leaf argument, and H1, its stale
# grad_fn; R and N15, two lost metadata mutations), reports/triage-2026-11-27-gpu-corpus.md.
# A wrong fold hides a bug, a missing one
# leaves a duplicate, so the fold is a person's call: `Corpus.fold_candidates` lists the
# pairs (migrate prints them, a campaign's summary names its own), `migrate --fold` folds
# them (sightings added, the triage note carried, the bigger entry kept under .superseded/)
# and `migrate --apart` records a pair as two causes (`apart_from`), never listed again.


# Note [Shards share a corpus]
# Campaigns may run on one corpus at once: the N shards of `--shard K/N` (a Slurm array), on
# one host or many over a shared filesystem. Per campaign are the stream counters (one file a
# seed and shard), the logs (a folder a host and pid) and the stagings (named by host and the
# campaign's pid); the Hypothesis database writes one file per example under content-hashed
# names, so it is shared as it is. What the campaigns share is the entries, and three rules
# keep each whole, saved once, and known to all:
# - an entry appears by one rename of a finished staging directory and changes (a sighting, a
#   repro record, a smaller repro replacing it) only under its own lock, `.lock-<signature>`:
#   no one reads half an entry, and two writers of one entry take turns;
# - whether a finding is new is decided under the corpus's lock (`.lock`, `lock()`), after
#   `rescan()` read the entries written since this campaign last looked, and the entry is
#   written before the lock is let go: deciding and writing are one step. Two shards that
#   shrank the same bug at the same moment save it once -- the second finds the first's
#   entry covering its finding (same coarse key, paths a subset: KnownBugs.match) and counts
#   a sighting of it, so neither another directory of that signature nor one of the same bug
#   under more wrapper paths appears;
# - a campaign also rescans every few seconds and tells its workers, so a bug another shard
#   saved is known seconds after it is written: not shrunk again, its sightings counted and
#   added to that entry at the end (the summary's `known_seen`; `learned` names the entries).
# Locks are O_EXCL files (atomic on local filesystems and NFS v3 and later); one whose holder
# died on this host is broken at once, any other after `stale` seconds. An entry another
# shard retired mid-run (.superseded/) keeps the sightings counted for it here: bump finds it
# gone and leaves it alone.


@dataclass
class Corpus:
    root: Path
    entries: dict[str, Entry] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def hypothesis_dir(self) -> Path:
        return self.root / ".hypothesis"

    @property
    def state_dir(self) -> Path:
        return self.root / ".campaign"

    @staticmethod
    def open(root: Path, *, create: bool = True) -> Corpus:
        """Load every valid entry; corrupt or foreign ones go to `problems`, never raise."""
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise CorpusError(f"corpus {root} is not a directory")
        if not root.exists():
            if not create:
                raise CorpusError(f"corpus {root} does not exist")
            try:
                # exist_ok: two shards started on a new corpus race to create it (CI saw
                # "File exists" from the second); the one that lost still opens it.
                root.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise CorpusError(f"cannot create corpus {root}: {e.strerror or e}") from None
        corpus = Corpus(root)
        if create:
            corpus._check_writable()
            corpus._recover()
        corpus.reload()
        return corpus

    def _check_writable(self) -> None:
        try:
            self.state_dir.mkdir(exist_ok=True)
            probe = self.state_dir / f".probe-{uuid.uuid4().hex[:8]}"
            probe.write_text("")
            probe.unlink()
        except OSError as e:
            raise CorpusError(f"corpus {self.root} is not writable: {e.strerror or e}") from None

    def _recover(self) -> None:
        """Undo what a kill left: an entry moved aside but not replaced, dead stagings."""
        for p in self.root.iterdir():
            if p.name.startswith(".old-") and p.is_dir():
                sig = p.name[len(".old-") :].rsplit("-", 1)[0]
                target = self.root / sig
                with _Lock(self.root / f".lock-{sig}"):  # not while another run replaces it
                    if not p.exists():
                        continue
                    if not target.exists():
                        os.rename(p, target)
                    else:
                        shutil.rmtree(p, ignore_errors=True)
        self.clean_stagings()

    def clean_stagings(self, owner: int | None = None) -> None:
        """Remove this host's staging directories whose campaign is dead, and those of the
        campaign `owner` (its pid), whose workers are all gone: what a worker killed at the
        end left half-built. Other hosts' and live campaigns' stagings are theirs."""
        host = socket.gethostname()
        for p in self.root.iterdir():
            parts = p.name.split("-")
            if not p.name.startswith(".tmp-") or len(parts) < 4 or not p.is_dir():
                continue
            if "-".join(parts[1:-2]) == host and (
                parts[-2] == str(owner) or not _pid_alive(parts[-2])
            ):
                shutil.rmtree(p, ignore_errors=True)

    def reload(self) -> None:
        self.entries.clear()
        self.problems.clear()
        for p in sorted(self.root.iterdir()):
            if p.name.startswith(".") or not p.is_dir():
                continue
            entry = self._load(p)
            if isinstance(entry, Problem):
                self.problems.append(entry)
            else:
                self.entries[entry.signature] = entry

    def _load(self, p: Path) -> Entry | Problem:
        case_path = p / CASE
        if not case_path.is_file():
            return Problem(p, f"no {CASE}: not a pyfy-fuzz entry, skipped")
        try:
            case = json.loads(case_path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            return Problem(p, f"{CASE} is unreadable ({e}), skipped")
        try:
            CaseRecord.from_json(case)
        except OldFormat as e:
            return Problem(
                p,
                f"{CASE} {e}: run `pyfy-fuzz migrate {p.parent}` to re-key it (nothing is lost)",
                old=True,
            )
        except CaseError as e:
            return Problem(p, f"{CASE} {e}, skipped")
        if case["signature"] != p.name:
            return Problem(p, f"{CASE} names signature {case['signature']!r}, not its directory")
        return Entry(p, case)

    def known(self) -> KnownBugs:
        """The bugs a campaign must not report as new: the entries' identities. A directory
        that does not load is never replaced (`put` refuses its name), but its bug cannot be
        matched: old-format entries are listed as problems until migrated."""
        known = KnownBugs()
        known.update(e.bug for e in self.entries.values())
        return known

    def rescan(self) -> list[Entry]:
        """The entries other campaigns wrote since this corpus was read (Note [Shards share a
        corpus]): loaded into `entries` and returned. A directory that does not load is left
        out (a person's edit in progress, or a newer format: `open` reports it), and one that
        did not load at `open` is not read again."""
        fresh: list[Entry] = []
        seen = {*self.entries, *(p.path.name for p in self.problems)}
        for p in sorted(self.root.iterdir()):
            if p.name.startswith(".") or p.name in seen or not p.is_dir():
                continue
            entry = self._load(p)
            if isinstance(entry, Entry):
                self.entries[entry.signature] = entry
                fresh.append(entry)
        return fresh

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """The corpus's lock, held while a campaign decides whether a finding is new and saves
        it (Note [Shards share a corpus])."""
        return _Lock(self.root / ".lock")

    # -- writing ---------------------------------------------------------------------------
    def new_staging(self) -> Path:
        d = self.root / staging_name()
        d.mkdir()
        return d

    def put(self, staging: Path, case: dict[str, Any], files: dict[str, str]) -> tuple[Path, str]:
        """Finish `staging` (write `files` and case.json into it) and move it into place.

        Returns (entry path, "new" | "replaced" | "kept" | "blocked"): an existing entry with a
        repro at least as small is kept and only its count and last_seen are updated; a
        directory of that name that does not load as an entry (hand-edited, newer format) is
        never touched ("blocked"). Holds a per-signature lock: shards share corpora."""
        sig = case["signature"]
        target = self.root / sig
        with _Lock(self.root / f".lock-{sig}"):
            existing = self._load(target) if target.exists() else None
            if isinstance(existing, Problem):
                shutil.rmtree(staging, ignore_errors=True)
                return target, "blocked"
            if existing is not None and existing.size <= tuple(case["size"]):
                self._bump_locked(existing, int(case.get("count", 1)))
                shutil.rmtree(staging, ignore_errors=True)
                return target, "kept"
            if existing is not None:
                case["count"] = int(existing.case.get("count", 1)) + int(case.get("count", 1))
                case["first_seen"] = existing.case.get("first_seen", case.get("first_seen"))
                for k in ("expected", "bug_in", "triage", "root_cause"):  # a person's judgement
                    if k in existing.case:
                        case[k] = existing.case[k]
            for name, text in files.items():
                atomic_write(staging / name, text)
            atomic_write(staging / CASE, json.dumps(case, indent=1, sort_keys=True) + "\n")
            _fsync_dir(staging)
            if existing is None:
                os.rename(staging, target)
                how = "new"
            else:
                aside = self.root / f".old-{sig}-{uuid.uuid4().hex[:8]}"
                os.rename(target, aside)
                os.rename(staging, target)
                shutil.rmtree(aside, ignore_errors=True)
                how = "replaced"
            _fsync_dir(self.root)
            self.entries[sig] = Entry(target, case)
            return target, how

    def retire(self, path: Path, why: str) -> Path:
        """Move an entry out of the corpus into .superseded/ (kept, with why in a note)."""
        target = free_name(self.root / ".superseded", path.name)
        with _Lock(self.root / f".lock-{path.name}"):
            if path.is_dir():
                atomic_write(path / "SUPERSEDED", why + "\n")
                os.rename(path, target)
        self.entries.pop(path.name, None)
        return target

    def refresh(self, sig: str, files: dict[str, str]) -> list[str]:
        """Write an entry's generated files (repro.py, program.py, README.md) anew where their
        text changed, each atomically under the entry's lock; a replaced file is kept under
        .migrated/<sig>.render/ (a person may have edited it). Returns the names rewritten;
        an entry that is gone or no longer loads is left alone."""
        entry, changed = self.entries.get(sig), list[str]()
        if entry is None:
            return changed
        with _Lock(self.root / f".lock-{sig}"):
            if not isinstance(self._load(entry.path) if entry.path.is_dir() else None, Entry):
                return changed
            for name, text in sorted(files.items()):
                old = entry.path / name
                if old.is_file() and old.read_text(errors="replace") == text:
                    continue
                if old.is_file():
                    kept = self.root / ".migrated" / f"{sig}.render"
                    kept.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(old, kept / name)
                atomic_write(old, text)
                changed.append(name)
        return changed

    def bump(self, sig: str, count: int) -> None:
        """Add `count` sightings to an entry (case.json rewritten atomically). An entry that
        was retired (deleted) or no longer loads (being edited) is left alone."""
        entry = self.entries.get(sig)
        if entry is None or count <= 0:
            return
        with _Lock(self.root / f".lock-{sig}"):
            fresh = self._load(entry.path) if entry.path.is_dir() else None
            if isinstance(fresh, Entry):
                self._bump_locked(fresh, count)

    def fold_candidates(self, only: set[str] | None = None) -> list[tuple[str, str]]:
        """Pairs (bigger, general) of one coarse key whose wrapper paths are comparable: the
        bigger entry's paths a superset of the general one's (the most general one chosen);
        `only`: pairs with one of these signatures. Candidates, not verdicts: see Note [One
        entry per identity across wrapper paths]."""
        groups: dict[str, list[Entry]] = {}
        for e in self.entries.values():
            groups.setdefault(str(e.case["coarse"]), []).append(e)
        pairs: list[tuple[str, str]] = []
        for _, members in sorted(groups.items()):
            members.sort(key=lambda e: (len(_paths(e)), tuple(e.case.get("size", ())), e.signature))
            kept: list[Entry] = []
            for e in members:
                into = next((k for k in kept if _paths(k) <= _paths(e) and not _apart(k, e)), None)
                if into is None or (
                    only is not None and e.signature not in only and into.signature not in only
                ):
                    kept.append(e)
                    continue
                pairs.append((e.signature, into.signature))
        return pairs

    def fold(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Fold each `bigger` entry into `general` (pairs from `fold_candidates`, as a person
        triaged them): sightings, first sighting and triage note carried, the bigger entry
        kept under .superseded/. Returns the pairs folded (both entries present)."""
        done: list[tuple[str, str]] = []
        for bigger, general in pairs:
            e = self.entries.get(bigger)
            if e is None or general not in self.entries or bigger == general:
                continue
            self._fold_into(general, e)
            done.append((bigger, general))
        return done

    def keep_apart(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Record that each pair (a fold candidate a person read) is two causes: the bigger
        entry's `apart_from` names the other, and the pair is no candidate again."""
        done: list[tuple[str, str]] = []
        for bigger, general in pairs:
            e = self.entries.get(bigger)
            if e is None or general not in self.entries:
                continue
            self.annotate(bigger, {"apart_from": [*e.case.get("apart_from", ()), general]})
            done.append((bigger, general))
        return done

    def _fold_into(self, sig: str, e: Entry) -> None:
        """`e`'s sightings, first sighting and triage note go to entry `sig`; `e` is retired
        (kept under .superseded/)."""
        into = self.entries[sig].case
        fields: dict[str, Any] = {
            "count": int(into.get("count", 1)) + int(e.case.get("count", 1)),
            "folded_from": [*into.get("folded_from", ()), e.signature],
        }
        seen = [str(c["first_seen"]) for c in (into, e.case) if c.get("first_seen")]
        if seen:
            fields["first_seen"] = min(seen)
        if e.case.get("triage"):
            carried = f"{e.signature}: {e.case['triage']}"
            fields["triage"] = f"{into['triage']} | {carried}" if into.get("triage") else carried
        self.annotate(sig, fields)
        self.retire(e.path, f"folded into {sig}: one identity, its wrapper paths a superset")

    def annotate(self, sig: str, fields: dict[str, Any]) -> None:
        """Set `fields` in an entry's case.json (atomically, under its lock); an entry that is
        gone or no longer loads is left alone."""
        entry = self.entries.get(sig)
        if entry is None:
            return
        with _Lock(self.root / f".lock-{sig}"):
            fresh = self._load(entry.path) if entry.path.is_dir() else None
            if isinstance(fresh, Entry):
                fresh.case.update(fields)
                text = json.dumps(fresh.case, indent=1, sort_keys=True) + "\n"
                atomic_write(fresh.path / CASE, text)
                self.entries[sig] = Entry(fresh.path, fresh.case)

    def _bump_locked(self, entry: Entry, count: int) -> None:
        case = entry.case
        case["count"] = int(case.get("count", 1)) + count
        case["last_seen"] = now_iso()
        atomic_write(entry.path / CASE, json.dumps(case, indent=1, sort_keys=True) + "\n")
        self.entries[entry.signature] = Entry(entry.path, case)


class _Lock:
    """An O_EXCL lock file (works on shared filesystems) naming its holder's host and pid; a
    lock whose holder died on this host, or older than `stale` seconds, is a dead holder's and
    is broken (a campaign killed mid-save must not hold the next one up for minutes)."""

    def __init__(self, path: Path, stale: float = 120.0, wait: float = 60.0) -> None:
        self.path, self.stale, self.wait = path, stale, wait

    def __enter__(self) -> None:
        end = time.monotonic() + self.wait
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
                os.close(fd)
                return
            except FileExistsError:
                try:
                    age = time.time() - self.path.stat().st_mtime
                except FileNotFoundError:
                    continue
                if age > self.stale or time.monotonic() > end or self._holder_died():
                    with contextlib.suppress(FileNotFoundError):
                        self.path.unlink()
                    continue
                time.sleep(0.05)

    def _holder_died(self) -> bool:
        try:
            host, pid = self.path.read_text().split()
        except (OSError, ValueError):  # gone, or its holder has not written it yet
            return False
        return host == socket.gethostname() and not _pid_alive(pid)

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _pid_alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
