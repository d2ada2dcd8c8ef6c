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
machines may share one corpus: staging names carry host and pid, and only this host's dead
stagings are cleaned up.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import socket
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generators import SpecError, spec_from_dict

FORMAT = 1
CASE = "case.json"
_REQUIRED = ("format", "signature", "kind", "oracle", "subject", "spec", "expected")


class CorpusError(Exception):
    """The corpus directory cannot be used at all (missing parent, not writable, a file)."""


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def atomic_write(path: Path, data: str | bytes) -> None:
    """Temp file in the same directory, flushed and fsynced, then renamed over `path`."""
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def staging_name() -> str:
    return f".tmp-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


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


@dataclass
class Problem:
    path: Path
    message: str


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
                root.mkdir(parents=True)
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
        host = socket.gethostname()
        for p in self.root.iterdir():
            if p.name.startswith(".old-") and p.is_dir():
                sig = p.name[len(".old-") :].rsplit("-", 1)[0]
                target = self.root / sig
                if not target.exists():
                    os.rename(p, target)
                else:
                    shutil.rmtree(p, ignore_errors=True)
            elif p.name.startswith(".tmp-") and p.is_dir():
                parts = p.name.split("-")
                if len(parts) >= 4 and "-".join(parts[1:-2]) == host and not _pid_alive(parts[-2]):
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
        if not isinstance(case, dict):
            return Problem(p, f"{CASE} is not an object, skipped")
        missing = [k for k in _REQUIRED if k not in case]
        if missing:
            return Problem(p, f"{CASE} lacks {', '.join(missing)}, skipped")
        if case["format"] != FORMAT:
            return Problem(p, f"{CASE} has format {case['format']!r}, this build reads {FORMAT}")
        if case["signature"] != p.name:
            return Problem(p, f"{CASE} names signature {case['signature']!r}, not its directory")
        try:
            spec_from_dict(case["spec"])
        except SpecError as e:
            return Problem(p, f"{CASE} spec is invalid ({e}), skipped")
        return Entry(p, case)

    def known(self) -> set[str]:
        return set(self.entries)

    # -- writing ---------------------------------------------------------------------------
    def new_staging(self) -> Path:
        d = self.root / staging_name()
        d.mkdir()
        return d

    def put(self, staging: Path, case: dict[str, Any], files: dict[str, str]) -> tuple[Path, str]:
        """Finish `staging` (write `files` and case.json into it) and move it into place.

        Returns (entry path, "new" | "replaced" | "kept"): an existing entry with a repro at
        least as small is kept and only its count and last_seen are updated."""
        sig = case["signature"]
        target = self.root / sig
        existing = self.entries.get(sig) or (self._load(target) if target.exists() else None)
        if isinstance(existing, Entry) and existing.size <= tuple(case["size"]):
            self.bump(sig, case.get("count", 1), existing=existing)
            shutil.rmtree(staging, ignore_errors=True)
            return target, "kept"
        if isinstance(existing, Entry):
            case["count"] = int(existing.case.get("count", 1)) + int(case.get("count", 1))
            case["first_seen"] = existing.case.get("first_seen", case.get("first_seen"))
            for k in ("expected", "bug_in", "triage"):  # a person's judgement survives
                if k in existing.case:
                    case[k] = existing.case[k]
        for name, text in files.items():
            atomic_write(staging / name, text)
        atomic_write(staging / CASE, json.dumps(case, indent=1, sort_keys=True) + "\n")
        _fsync_dir(staging)
        if not target.exists():
            try:
                os.rename(staging, target)
                _fsync_dir(self.root)
                self.entries[sig] = Entry(target, case)
                return target, "new"
            except OSError:
                if not target.exists():
                    raise
                # another process put it there first: fall through and replace
        aside = self.root / f".old-{sig}-{uuid.uuid4().hex[:8]}"
        os.rename(target, aside)
        os.rename(staging, target)
        _fsync_dir(self.root)
        shutil.rmtree(aside, ignore_errors=True)
        self.entries[sig] = Entry(target, case)
        return target, "replaced"

    def bump(self, sig: str, count: int, *, existing: Entry | None = None) -> None:
        """Add `count` sightings to an entry (case.json rewritten atomically)."""
        entry = existing or self.entries.get(sig)
        if entry is None or count <= 0:
            return
        fresh = self._load(entry.path)  # another shard may have bumped it meanwhile
        case = fresh.case if isinstance(fresh, Entry) else entry.case
        case["count"] = int(case.get("count", 1)) + count
        case["last_seen"] = now_iso()
        atomic_write(entry.path / CASE, json.dumps(case, indent=1, sort_keys=True) + "\n")
        self.entries[sig] = Entry(entry.path, case)


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
