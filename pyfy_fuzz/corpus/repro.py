"""render_repro(spec, finding, backend=...) -> repro.py, the script a PyTorch engineer pastes
into a pt2 issue; check_repro(entry_dir) runs one where pyfy-fuzz cannot be imported.

The script needs torch and the standard library only, and holds only what the program uses:
`def f` (or a small nn.Module) whose body generators._render's statement code renders, the
tensor subclass, custom op and autograd.Functions it uses, `make_inputs()` with the campaign's
very values and the aliasing written out (_repro_inputs), the torch config the case ran under,
the compile as the campaign made it (torch.compile, or aot_function for the AOT front-end), and
ONE check: the aspect of the finding (Note [One check] in _repro_check). It runs the reference
(eager; torch.compile for a pythonify finding, whose file `pythonified.py` lies next to it) and
the subject, prints both, and exits 1 while they differ, 0 once fixed. The full oracles stay in
the package: `pyfy-fuzz replay`.

The script's parts, in the order it reads, each a module: the head (_repro_head: docstring,
imports, settings, definitions, the program), the inputs (_repro_inputs), the calls
(_repro_calls: observe(fn)), then the main block (_repro_main) over the two sides it runs
(_repro_sides); _repro_check decides the one check, _repro_helpers holds the functions copied
into the script. The script's state is one object, each part's class built on the one before.

torch-free, like the rest of what writes a corpus entry.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from generators.source import RELATE_FUNCTIONS, RELATE_TOKENS
from pyfy_fuzz.corpus import _repro_helpers as H
from pyfy_fuzz.corpus._repro_head import REFERENCE_RAISES, title
from pyfy_fuzz.corpus._repro_helpers import (
    canary,  # the workers run it too (Note [A broken process])
)
from pyfy_fuzz.corpus._repro_inputs import inputs_source
from pyfy_fuzz.corpus._repro_main import ScriptMain
from pyfy_fuzz.schema.spec import ProgramSpec, variant_tokens

__all__ = [
    "BACKENDS",
    "FINDING_KEYS",
    "MAX_LINES",
    "REFERENCE_RAISES",
    "NOT_RUN",
    "ReproStopped",
    "canary",
    "check_repro",
    "render_repro",
    "repro_not_run",
    "repro_record",
    "title",
]

BACKENDS = ("aot_eager", "inductor")
MAX_LINES = 90  # a repro longer than this is no longer something one pastes into an issue
FINDING_KEYS = ("kind", "oracle", "subject")
_DEVICE_RE = re.compile(r"[a-z][a-z0-9_]*(:[0-9]+)?")


def render_repro(
    spec: ProgramSpec, finding: dict[str, Any], *, backend: str, device: str = "cpu"
) -> str:
    """The source of repro.py for `finding` (a Finding's or a case.json's dict: kind, oracle,
    subject, explanation, and title / aspect where it has them) on `spec`, as the campaign ran
    it under `backend` on `device`. Raises ValueError for an unknown backend, a malformed
    device, or a finding without kind, oracle or subject."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not isinstance(device, str) or not _DEVICE_RE.fullmatch(device):
        raise ValueError(f"device must be a torch device string like 'cuda', got {device!r}")
    missing = [k for k in FINDING_KEYS if k not in finding]
    if missing:
        raise ValueError(f"finding lacks {missing}; expected at least the keys {FINDING_KEYS}")
    # A long program (a subclass, custom Functions, five statements) can push the script past
    # MAX_LINES: then the helpers lose their docstrings; and eager's backward order, which
    # needs ~25 lines of helper, gives way to the seq_nr invariants, saying so (`pyfy-fuzz
    # replay` checks the order).
    repro = _Repro(spec, finding, backend, device)
    source = repro.source()
    if len(source.splitlines()) > MAX_LINES:
        source = _Repro(spec, finding, backend, device, compact=True).source()
    if len(source.splitlines()) > MAX_LINES and repro.check.fact == "order":
        check = replace(repro.check, fact="invariants", label="order left out")
        source = _Repro(spec, finding, backend, device, check, compact=True).source()
    return source


class _Repro(ScriptMain):
    """One script being put together: its parts (_repro_head, _repro_calls, _repro_sides,
    _repro_main), in the order the script reads them."""

    def source(self) -> str:
        main = self._main()  # first: it decides the helpers and imports the file needs
        seq_nr_call = self.check.compare == "seq_nr" and not self.check.backward
        observe = [] if seq_nr_call else self._observe()  # one call, in main
        helpers = [H.source(h, not self.compact) for h in self.helpers]
        self._need_names([line for h in helpers for line in h])  # what the helpers call
        parts = [
            self._docstring(),
            self._imports(),
            self._config(),
            self._definitions(),
            self._program(),
            inputs_source(self.spec, self.device, "make_inputs", None),
        ]
        runs = [*self._history(), *self._runs()]
        made = {"make_inputs"}
        for _, make, variant in runs:  # the later calls' own inputs
            if make.startswith("make_") and make not in made:
                made.add(make)
                parts.append(inputs_source(self.spec, self.device, make, variant))
        used = {t for _, _, v in runs for t in variant_tokens(v)}
        for t in RELATE_TOKENS:  # the relationships' functions make_*_inputs call
            if t in used:
                parts.append(H.source(RELATE_FUNCTIONS[t], not self.compact))
        parts += [observe, *helpers, main]
        return "\n\n".join("\n".join(p) for p in parts if p) + "\n"


# ------------------------------------------------------------------------------ checking

_BLOCKED = ("pyfy_fuzz", "generators", "oracles")
# Runs repro.py as __main__ with pyfy-fuzz's own packages unimportable (an editable install
# would find them even under -I). An exception the script does not catch is no verdict: 2.
_BOOTSTRAP = (
    "import runpy, sys\n"
    f"for name in {_BLOCKED!r}:\n"
    "    sys.modules[name] = None\n"
    "sys.argv = ['repro.py']\n"
    "try:\n"
    "    runpy.run_path('repro.py', run_name='__main__')\n"
    "except Exception:\n"
    "    sys.excepthook(*sys.exc_info())  # the script's own: 2, or 3 while the reference runs\n"
    "    sys.exit(2)\n"
)


def check_repro(
    entry_dir: Path,
    timeout: float = 120,
    stop: threading.Event | None = None,
    python: str | None = None,
) -> tuple[int | None, str]:
    """Run `entry_dir/repro.py` on its own -- pyfy_fuzz, generators and oracles unimportable,
    PYTHONPATH unset -- and return its exit code (Note [A repro's exit codes] in
    _repro_head.py: 1: the bug is present, 0: fixed, 2: the script raised what it does not
    check, 3: the reference raises, negative: a signal; None: still running after `timeout`
    seconds, then killed) and the last 2000 characters of its output. Once `stop`
    is set the script is killed and ReproStopped raised: no verdict, and no process left.

    The script runs in a session of its own and is killed with its whole process group: an
    Inductor compile's workers, or a compiler it started, die with it rather than outlive a
    campaign that promised to end (Note [Ending on time] in campaign.py). `python`: the
    interpreter to run it with (another torch: Note [Which releases have a bug] in
    releases.py); this one's by default."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [python or sys.executable, "-c", _BOOTSTRAP],
        cwd=entry_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    end = time.monotonic() + timeout
    try:
        while True:
            try:
                out, _ = proc.communicate(timeout=0.25)
                return proc.returncode, out[-2000:]
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    raise ReproStopped(entry_dir) from None
                if time.monotonic() >= end:
                    return None, _kill_group(proc)[-2000:]
    finally:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[str]) -> str:
    """Kill the script's process group (what is left of it: its own descendants once it
    exited) and return what it printed since last read; bounded even where a descendant
    that left the group keeps the pipe open."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.stdout is None or proc.stdout.closed:  # read to its end already
        proc.wait()
        return ""
    try:
        out, _ = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a descendant in a session of its own holds the pipe
        proc.stdout.close()
        proc.wait()
        out = ""
    return out or ""


class ReproStopped(Exception):
    """check_repro was told to stop before the repro finished (the campaign ended)."""


# case.json's "repro" verdict for a check that did not run to its end: the campaign ended
# first (Note [Ending on time] in campaign.py). `pyfy-fuzz replay --repros` runs it.
NOT_RUN = "not run"


def repro_not_run(why: str) -> dict[str, Any]:
    """What case.json keeps of a repro check that did not run: marked, so a reader (and the
    report) knows it was never tried rather than lost."""
    return {"exit_code": None, "verdict": NOT_RUN, "checked": None, "tail": why}


def repro_record(
    entry_dir: Path, code: int | None, tail: str, kind: str | None = None
) -> dict[str, Any]:
    """What case.json keeps of a check_repro run: whether the repro shows the bug on its own.
    For an interpreter crash the process dying by a signal is the bug (`kind`)."""
    verdicts = {
        None: "timeout",
        0: "passes",
        1: "reproduces",
        2: "error",
        REFERENCE_RAISES: "reference raises",
    }
    died = code is not None and code < 0
    verdict = verdicts.get(code, "interpreter died" if died else "error")
    if died and kind == "interpreter-crash":
        verdict = "reproduces"  # the interpreter dies: that is the finding
    return {
        "exit_code": code,
        "verdict": verdict,
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tail": tail[-2000:],
    }
