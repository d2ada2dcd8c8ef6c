"""kill -9 of a running campaign: no partial entry, no orphan worker, and a restart goes on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pyfy_fuzz.corpus.store import Corpus

pytestmark = pytest.mark.slow


def _tagged(tag: str) -> list[int]:
    """Live processes whose environment carries `tag` (the campaign's workers and fork server)."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            env = (p / "environ").read_bytes()
            state = (p / "stat").read_text().split()[2]
        except OSError:
            continue
        if tag.encode() in env and state != "Z":
            pids.append(int(p.name))
    return pids


def _run(corpus: Path, budget: str, tag: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "pyfy_fuzz", "run", "--budget", budget, "--corpus", str(corpus)]
    cmd += ["--workers", "2", "--progress", "plain", "--wrappers", "input_mutation,dedupe"]
    cmd += ["--shrink-seconds", "4"]
    env = {**os.environ, "PYFY_TEST_TAG": tag}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_kill_9_mid_run_loses_nothing_and_a_restart_continues(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    tag = f"pyfy-kill-test-{uuid.uuid4().hex}"
    proc = _run(corpus, "3m", tag)
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:  # kill once entries are being written
        if (
            corpus.is_dir()
            and len([p for p in corpus.iterdir() if not p.name.startswith(".")]) >= 2
        ):
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("no entry was saved within 150 s")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for _ in range(100):  # workers die with their fork server (PR_SET_PDEATHSIG)
        if not _tagged(tag):
            break
        time.sleep(0.1)
    assert not _tagged(tag), "workers outlived the killed campaign"

    # before Corpus.open, which would clean up: a kill leaves no half-moved entry
    assert not [p for p in corpus.iterdir() if p.name.startswith(".old-")]
    c = Corpus.open(corpus)
    assert not c.problems, c.problems
    for e in c.entries.values():
        names = {p.name for p in e.path.iterdir()}
        assert {"case.json", "repro.py", "program.py", "README.md"} <= names, names
    saved = {sig: e.case["count"] for sig, e in c.entries.items()}
    assert not [p for p in corpus.iterdir() if p.name.startswith((".old-", ".tmp-"))]  # cleaned
    streams = json.loads(next((corpus / ".campaign").glob("streams-*.json")).read_text())

    again = _run(corpus, "25s", tag)
    assert again.wait(timeout=120) in (0, 1)
    after = Corpus.open(corpus)
    assert set(saved) <= set(after.entries)  # nothing saved was lost
    for sig, n in saved.items():
        assert after.entries[sig].case["count"] >= n
    later = json.loads(next((corpus / ".campaign").glob("streams-*.json")).read_text())
    assert later["next"] > streams["next"]  # new streams, not a replay of the first run's
