"""Each saved entry's repro.py, run on its own beside the workers: does it reproduce?

A repro nobody ran is not a repro. The campaign queues every entry it saves anew (or
replaces) with `ReproChecks.put`; one thread runs them one at a time, where pyfy-fuzz cannot
be imported (`corpus.repro.check_repro`), records the verdict in the entry's case.json and
writes its README.md anew (the repro check is the first release record: Note [Which releases
have a bug] in releases.py). The verdicts go to the summary (`verdicts`).

Contract: never past the campaign's end (Note [Ending on time] in campaign.py). No check
starts with less than REPRO_MIN_S left before `Deadline.until()`; `finish` ends the thread,
killing the check still running with its process group; an entry whose check did not run is
marked so in case.json (verdict repro.NOT_RUN; `pyfy-fuzz replay --repros` runs it). Only this
thread writes `verdicts`; the campaign reads them after `finish`.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

from pyfy_fuzz.campaign.budget import FINISH_S, Deadline
from pyfy_fuzz.corpus.entry import readme_of
from pyfy_fuzz.corpus.store import Corpus

__all__ = [
    "REPRO_MIN_S",
    "REPRO_TIMEOUT_S",
    "ReproChecks",
]

REPRO_TIMEOUT_S = 120.0  # a repro still running after this is a "timeout" verdict
REPRO_MIN_S = 5.0  # no repro check starts with less time than this left


class ReproChecks:
    """The repro checker: a queue of saved entries and the thread that checks them."""

    def __init__(self, corpus: Corpus, deadline: Deadline) -> None:
        self.corpus, self.deadline = corpus, deadline
        # (signature, kind, entry path); None: no more checks (the thread ends)
        self.queue: queue.Queue[tuple[str, str, Path] | None] = queue.Queue()
        self.stop = threading.Event()  # set: the running check is killed, the rest not run
        self.verdicts: dict[str, str] = {}  # signature -> verdict (repro_record)
        self.thread = threading.Thread(target=self.run, daemon=True, name="pyfy-repro-checks")
        self.thread.start()

    def put(self, signature: str, kind: str, path: Path) -> None:
        """Check the entry at `path` when its turn comes."""
        self.queue.put((signature, kind, path))

    def close(self) -> None:
        """No more checks: the thread ends once those queued are done."""
        self.queue.put(None)

    def finish(self, left: float) -> None:
        """At the campaign's end: the checks queued run while `left` seconds allow; then the
        one running is killed and the rest are marked not run."""
        self.close()
        self.thread.join(timeout=left)
        self.stop.set()
        self.thread.join(timeout=FINISH_S)

    def run(self) -> None:
        """The thread: run each queued entry's repro.py where pyfy-fuzz cannot be imported and
        record in case.json whether it reproduces on its own (exit 1 while the bug is
        present)."""
        from pyfy_fuzz.corpus.repro import ReproStopped, check_repro, repro_not_run, repro_record

        while (item := self.queue.get()) is not None:
            sig, kind, path = item
            if kind == "hang":
                continue  # it would run until the timeout: the worker's death is its check
            if not path.is_dir():
                continue  # superseded or merged into another entry since it was queued
            left = self.deadline.until() - time.monotonic()
            if self.stop.is_set() or left < REPRO_MIN_S:
                self.corpus.annotate(sig, {"repro": repro_not_run("the campaign ended first")})
                continue
            timeout = min(REPRO_TIMEOUT_S, left)
            try:
                code, tail = check_repro(path, timeout=timeout, stop=self.stop)
            except ReproStopped:
                code, tail = None, ""
            if code is None and (self.stop.is_set() or timeout < REPRO_TIMEOUT_S):
                why = "the campaign ended while it ran"  # not a timeout of the repro's own
                self.corpus.annotate(sig, {"repro": repro_not_run(why)})
                continue
            record = repro_record(path, code, tail, kind)
            self.verdicts[sig] = record["verdict"]
            self.corpus.annotate(sig, {"repro": record})
            self._refresh_readme(sig)

    def _refresh_readme(self, sig: str) -> None:
        """README.md says which releases reproduce the entry: its repro check is the first
        (Note [Which releases have a bug] in releases.py)."""
        entry = self.corpus.entries.get(sig)
        if entry is not None and entry.path.is_dir():
            self.corpus.refresh(sig, {"README.md": readme_of(entry.path, entry.case)})
