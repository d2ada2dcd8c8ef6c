"""Which torch releases have each bug: an entry's repro.py, run under other interpreters.

    pyfy-fuzz versions corpus/ --python .venv/bin/python --python .venv-2.15/bin/python

Note [Which releases have a bug]
--------------------------------
An entry's repro.py needs torch and nothing of pyfy-fuzz (Note [A repro's exit codes] in
_repro_head.py), so any interpreter with a torch can run it, and its exit code says whether
that torch has the bug. Each run is a `ReleaseRecord` in case.json's "releases" list: the torch
version, the device the repro ran on, the verdict (`repro_record`'s words) and when. There is
one record per (torch, device); a later run replaces it.

The entry's own repro check (case.json "repro", run by the campaign that saved it, on the
torch and device that found it) is a record too (`records_of`), so a fresh entry already
says "reproduces on 2.15.0" and a campaign summary can say so.

A repro of an entry found on a GPU is not run under a torch without CUDA: the record says
`NEEDS_CUDA`, shown as "not reproducible on CPU", never as fixed.

What the records say, in one line (`releases_line`), by release (the version without its
local part, "2.15.0" for "2.15.0+cu132"):
- "reproduces on 2.13.0, 2.15.0";
- "reproduces on 2.13.0; fixed in 2.15.0": it passes on a release newer than every one
  where it reproduces (a torch bug fixed upstream; replay under that release says
  fixed-upstream, and the entry stays a regression test for the older ones);
- "passes on 2.13.0, 2.15.0": nothing reproduces (a fixed bug of ours, or a stale repro);
- other outcomes by name: "errs on 2.16.0", "reference raises on ...", "timeout on ...".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pyfy_fuzz.corpus.repro import check_repro, repro_record

__all__ = [
    "DEVICES",
    "Interpreter",
    "InterpreterError",
    "NEEDS_CUDA",
    "ReleaseRecord",
    "VERDICTS",
    "check_entry",
    "fixed_in",
    "merge",
    "probe",
    "records_of",
    "release_of",
    "releases_line",
    "run_versions",
]

NEEDS_CUDA = "needs cuda"  # found on a GPU, and this torch has none: not run
# repro_record's verdicts, and NEEDS_CUDA
VERDICTS = (
    "reproduces",
    "passes",
    "error",
    "reference raises",
    "timeout",
    "interpreter died",
    NEEDS_CUDA,
)
DEVICES = ("cpu", "cuda")
# How each verdict other than reproduces / passes reads in a line ("errs on 2.16.0").
_OTHER = {
    "error": "errs on",
    "reference raises": "reference raises on",
    "timeout": "times out on",
    "interpreter died": "interpreter dies on",
}


@dataclass(frozen=True)
class ReleaseRecord:
    """One run of an entry's repro.py under one torch (Note [Which releases have a bug])."""

    torch: str  # torch.__version__ of the interpreter, e.g. "2.15.0+cu132"
    device: str  # where the repro ran (the entry's device): cpu | cuda
    verdict: str  # one of VERDICTS
    checked: str  # ISO time of the run
    exit_code: int | None = None  # repro.py's exit status; None: timeout or not run
    python: str = ""  # the interpreter, as given; "" for the campaign's own check

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if not self.torch:
            raise ValueError("a release record names its torch")

    @property
    def release(self) -> str:
        return release_of(self.torch)

    @property
    def key(self) -> tuple[str, str]:
        return (self.torch, self.device)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReleaseRecord:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})


def release_of(version: str) -> str:
    """ "2.15.0" for "2.15.0+cu132": what a reader calls the release."""
    return version.split("+", 1)[0]


def _release_key(version: str) -> tuple[int, ...]:
    parts = []
    for p in release_of(version).split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def records_of(case: dict[str, Any]) -> list[ReleaseRecord]:
    """Every record of an entry, oldest release first: case.json "releases", and its own repro
    check as a record of the torch and device that found it unless a run replaced it. Records
    that do not read are skipped (a hand-edited case.json must not stop a report)."""
    out: dict[tuple[str, str], ReleaseRecord] = {}
    own = case.get("repro")
    if isinstance(own, dict) and own.get("verdict") in VERDICTS and case.get("torch"):
        try:
            r = ReleaseRecord(
                torch=str(case["torch"]),
                device=str(case.get("device") or "cpu"),
                verdict=str(own["verdict"]),
                checked=str(own.get("checked", "")),
                exit_code=own.get("exit_code"),
            )
            out[r.key] = r
        except ValueError:
            pass
    for d in case.get("releases") or ():
        try:
            r = ReleaseRecord.from_dict(d)
        except (TypeError, ValueError):
            continue
        if r.key not in out or r.checked >= out[r.key].checked:
            out[r.key] = r
    return sorted(out.values(), key=lambda r: (_release_key(r.torch), r.torch, r.device))


def merge(case: dict[str, Any], new: Iterable[ReleaseRecord]) -> list[dict[str, Any]]:
    """case.json's "releases" with `new` in place of the records of the same torch and device."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for d in case.get("releases") or ():
        if isinstance(d, dict):
            kept[(str(d.get("torch")), str(d.get("device")))] = d
    for r in new:
        kept[r.key] = r.to_dict()
    return sorted(kept.values(), key=lambda d: (_release_key(str(d["torch"])), str(d["torch"])))


def releases_line(records: list[ReleaseRecord], found_on: str = "cpu") -> str:
    """The records in one line (Note [Which releases have a bug]); "" when there are none."""
    if not records:
        return ""
    by: dict[str, list[str]] = {}
    for r in records:
        names = by.setdefault(r.verdict, [])
        if r.release not in names:
            names.append(r.release)
    parts = []
    hit = by.get("reproduces", [])
    if hit:
        parts.append("reproduces on " + ", ".join(hit))
    passes = by.get("passes", [])
    fixed = fixed_in(records)
    if fixed:
        parts.append("fixed in " + ", ".join(fixed))
    other = [v for v in passes if v not in fixed]
    if other:
        parts.append("passes on " + ", ".join(other))
    for verdict, words in _OTHER.items():
        if by.get(verdict):
            parts.append(f"{words} " + ", ".join(by[verdict]))
    if by.get(NEEDS_CUDA):
        parts.append(f"not reproducible on CPU ({', '.join(by[NEEDS_CUDA])}; found on {found_on})")
    return "; ".join(parts)


def fixed_in(records: list[ReleaseRecord]) -> list[str]:
    """Releases where the repro passes that are newer than every release where it reproduces
    (none when it reproduces nowhere: that is not a fix we saw)."""
    hit = [_release_key(r.torch) for r in records if r.verdict == "reproduces"]
    if not hit:
        return []
    out: list[str] = []
    for r in records:
        if r.verdict == "passes" and _release_key(r.torch) > max(hit) and r.release not in out:
            out.append(r.release)
    return out


# -- running ----------------------------------------------------------------------------------
class InterpreterError(ValueError):
    """An interpreter that cannot run repros: the message says which and why, in one line."""


@dataclass(frozen=True)
class Interpreter:
    """A Python with a torch, as `probe` found it."""

    python: str  # the path as given
    torch: str  # its torch.__version__
    cuda: bool  # torch.cuda.is_available() there


_PROBE = (
    "import json, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "import torch\n"
    "print(json.dumps({'torch': torch.__version__, 'cuda': torch.cuda.is_available()}))\n"
)


def probe(python: str, timeout: float = 300.0) -> Interpreter:
    """The interpreter's torch, or InterpreterError saying in a line why it has none.

    The interpreter is named by its absolute path (not resolved: a venv's python is a link
    whose target lacks the venv): repros run in their entry's directory, where a relative
    `.venv/bin/python` is not there (a traceback, before). A bare name is looked up on PATH."""
    found = shutil.which(python) if os.sep not in python else python
    if found is None or not Path(found).exists():
        raise InterpreterError(f"{python}: no such interpreter")
    python = str(Path(found).absolute())
    try:
        done = subprocess.run(
            [python, "-c", _PROBE], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InterpreterError(f"{python}: could not run it ({type(e).__name__}: {e})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InterpreterError(f"{python}: cannot import torch ({last})")
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
        return Interpreter(python=python, torch=str(info["torch"]), cuda=bool(info["cuda"]))
    except (IndexError, KeyError, ValueError):
        raise InterpreterError(f"{python}: its torch did not say its version") from None


def check_entry(
    path: Path, case: dict[str, Any], interp: Interpreter, timeout: float
) -> ReleaseRecord:
    """Run one entry's repro.py under `interp` (not at all where it needs CUDA and `interp`
    has none) and say what it showed."""
    device = str(case.get("device") or "cpu")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if device == "cuda" and not interp.cuda:
        return ReleaseRecord(interp.torch, device, NEEDS_CUDA, now, None, interp.python)
    code, tail = check_repro(path, timeout=timeout, python=interp.python)
    rec = repro_record(path, code, tail, case.get("kind"))
    return ReleaseRecord(
        interp.torch, device, str(rec["verdict"]), str(rec["checked"]), code, interp.python
    )


def run_versions(
    entries: list[tuple[Path, dict[str, Any]]],
    interpreters: list[Interpreter],
    *,
    timeout: float = 300.0,
    jobs: int = 1,
    on_record: Callable[[Path, ReleaseRecord], None] | None = None,
) -> dict[Path, list[ReleaseRecord]]:
    """Every entry's repro under every interpreter, `jobs` at a time; each record is handed to
    `on_record` as it comes (the caller writes it into the entry). A hang entry is not run: its
    repro would only time out (the campaign does not run it either)."""
    work = [(p, c, i) for p, c in entries for i in interpreters if c.get("kind") != "hang"]
    out: dict[Path, list[ReleaseRecord]] = {p: [] for p, _ in entries}

    def one(item: tuple[Path, dict[str, Any], Interpreter]) -> tuple[Path, ReleaseRecord]:
        path, case, interp = item
        return path, check_entry(path, case, interp, timeout)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for path, rec in pool.map(one, work):
            out[path].append(rec)
            if on_record is not None:
                on_record(path, rec)
    return out
