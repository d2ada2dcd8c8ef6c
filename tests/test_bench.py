"""`pyfy-fuzz bench`: bad flags are one line and exit 2; the program set is a function of the
seed; the memory metric sees growth through worker recycling; a quick run writes the issue's
JSON and leaves no process behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from generators import FAMILIES
from pyfy_fuzz.bench.measure import program_set
from pyfy_fuzz.bench.memory import rss_metrics
from pyfy_fuzz.campaign.procstat import ProcInfo, TreeSample, process_tree
from pyfy_fuzz.cli import main

MIB = 2**20


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--backends", "aot_eager,nope"], "--backends: unknown"),
        (["--backends", ","], "--backends: unknown, repeated or no"),
        (["--backends", "aot_eager,aot_eager"], "repeated"),
        (["--programs", "0"], "--programs must be at least 1"),
        (["--inductor-programs", "0"], "--inductor-programs must be at least 1"),
        (["--rss-minutes", "-1"], "--rss-minutes must not be negative"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--json", "/no/such/dir/bench.json"], "does not exist or is not writable"),
    ],
)
def test_bad_flags_are_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *argv]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == ""
    assert len(lines) == 1 and lines[0].startswith("pyfy-fuzz: error: ") and message in lines[0]


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["bench", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "Exit status" in out and "--rss-seconds" not in out  # the tests' option is hidden


def test_program_set_is_a_function_of_the_seed() -> None:
    a, b, c = program_set(3, 2), program_set(3, 2), program_set(4, 2)
    assert [s.to_json() for s in a] == [s.to_json() for s in b]
    assert [s.to_json() for s in a] != [s.to_json() for s in c]
    from generators import FAMILIES

    assert [s.family for s in a] == list(FAMILIES) * 2  # interleaved, N per family


# -- the memory metric on made-up samples -------------------------------------------------------
def _samples(lives: list[list[tuple[int, int, float]]]) -> list[TreeSample]:
    """lives: per slot, its workers as (birth second, death second, base MiB); a worker grows by
    100 MiB over its life. The campaign (depth 0) and its fork server (depth 1) are included and
    must not count."""
    end = max(d for slot in lives for _, d, _ in slot)
    out = []
    pid = 1000
    pids: dict[tuple[int, int], int] = {}
    for t in range(end + 1):
        procs = {1: ProcInfo(1, 0, 0, 0.0, 900 * MIB), 2: ProcInfo(2, 1, 1, 0.0, 900 * MIB)}
        for s, slot in enumerate(lives):
            for k, (birth, death, base) in enumerate(slot):
                if birth <= t <= death:
                    if (s, k) not in pids:
                        pid += 1
                        pids[s, k] = pid
                    rss = int((base + 100 * (t - birth) / max(1, death - birth)) * MIB)
                    procs[pids[s, k]] = ProcInfo(pids[s, k], 2, 2, 0.0, rss)
        out.append(TreeSample(float(t), procs))
    return out


def _recycled(base: float, step: float = 0.0, offset: int = 0) -> list[tuple[int, int, float]]:
    """A slot whose workers live 20 s each over 100 s; each new one starts `step` MiB higher."""
    births = [0] + list(range(offset or 20, 100, 20))
    ends = [b - 1 for b in births[1:]] + [100]
    return [(b, e, base + step * k) for k, (b, e) in enumerate(zip(births, ends, strict=True))]


def test_growth_without_recycling_is_the_plain_ratio() -> None:
    r = rss_metrics(_samples([[(0, 100, 300.0)], [(0, 100, 300.0)]]))
    assert r["rss_growth"] == r["plain_growth"]
    assert r["rss_growth"] == pytest.approx((395 / 325) - 1, abs=0.01)  # window means
    assert r["worker_rss_at_recycle_mib"] == [] and r["worker_life_growth"] is None
    apart = {"first_window": 900, "last_window": 900}  # not counted among the workers
    assert r["campaign_rss_mib"] == apart and r["fork_server_rss_mib"] == apart


def test_recycling_neither_fakes_nor_hides_growth() -> None:
    flat = rss_metrics(_samples([_recycled(300.0), _recycled(300.0, offset=10)]))
    assert abs(flat["rss_growth"]) < 0.03  # the saw-tooth is not growth
    assert len(flat["worker_rss_at_recycle_mib"]) >= 8
    assert flat["worker_life_growth"] > 0.2  # but each worker grows within its life
    leaking = rss_metrics(_samples([_recycled(300.0, 40), _recycled(300.0, 40, offset=10)]))
    assert leaking["rss_growth"] > 0.2  # growth that survives recycling shows


def test_a_workers_own_child_is_not_a_worker() -> None:
    """A worker runs tlparse for a few milliseconds after a shrink (depth 3): seen once early,
    it must not end the span (CI saw rss_growth None when it did)."""
    samples = _samples([[(0, 100, 300.0)], [(0, 100, 300.0)]])
    samples[10].procs[99] = ProcInfo(99, 1001, 3, 0.0, 5 * MIB)
    r = rss_metrics(samples)
    assert (
        r["rss_growth"]
        == rss_metrics(_samples([[(0, 100, 300.0)], [(0, 100, 300.0)]]))["rss_growth"]
    )
    assert r["span_s"] == 100


def test_no_worker_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no campaign worker"):
        rss_metrics([TreeSample(0.0, {1: ProcInfo(1, 0, 0, 0.0, MIB)})])


# -- real runs ----------------------------------------------------------------------------------
def _workers_now() -> set[int]:
    """Processes forked below this one's children (pool workers, the overhead pool's)."""
    return {p.pid for p in process_tree(os.getpid()).values() if p.depth >= 2}


def _bench(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    before = _workers_now()
    out_json = tmp_path / "bench.json"
    rc = main(["bench", "--quick", "--json", str(out_json), *flags])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "cases/min" in out and "overhead_ratio" in out and f"wrote {out_json}" in out
    assert _workers_now() <= before  # every worker it started is gone
    result: dict[str, Any] = json.loads(out_json.read_text())
    assert set(result) >= {"cases_per_min", "overhead_ratio", "rss_growth", "machine", "torch"}
    assert set(result["cases_per_min"]) == {"aot_eager", "inductor"}
    assert set(result["machine"]) >= {"cores", "memory_gib", "cpu_model", "gpu"}
    assert isinstance(result["machine"]["cores"], int) and result["machine"]["cores"] >= 1
    import torch

    assert result["torch"] == torch.__version__
    assert result["mix"]["programs"] == len(FAMILIES) and result["mix"]["mean_ops"] >= 0
    assert isinstance(result["overhead_ratio"], float) and result["overhead_ratio"] > 0
    assert (
        result["overhead"]["run_case_ms"] > 0 and "compile_s" in result["overhead"]["breakdown_ms"]
    )
    assert set(result["targets"]) == {"cases_per_min", "overhead_ratio", "rss_growth"}
    assert result["targets"]["cases_per_min"]["as_stated"] is False  # --quick
    return result


def test_quick_bench_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = _bench(tmp_path, capsys, "--backends", "aot_eager", "--rss-minutes", "0")
    rate = r["cases_per_min"]["aot_eager"]
    assert isinstance(rate, float) and rate > 0 and r["cases_per_min"]["inductor"] is None
    t = r["throughput"]["aot_eager"]
    assert t["cases"] == len(FAMILIES) and t["wall_s"] > 0
    assert len(t["per_family"]) == len(FAMILIES)
    validity = r["validity"]  # issue 17: per family, the programs eager runs whole
    assert set(validity) == set(t["per_family"])
    assert all(v["programs"] == 1 and v["unbuilt_calls"] == 0 for v in validity.values())
    assert r["rss_growth"] is None and r["rss"] is None


@pytest.mark.slow
def test_quick_bench_with_a_short_campaign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = _bench(tmp_path, capsys, "--backends", "aot_eager", "--rss-seconds", "30")
    rss = r["rss"]
    assert isinstance(r["rss_growth"], float) and r["rss_growth"] == rss["rss_growth"]
    assert rss["samples"] >= 10 and rss["worker_rss_peak_mib"] > 0
    assert rss["workers_rss_mib"]["first_window"] > 0 and rss["campaign"]["cases"] > 0


@pytest.mark.slow
@pytest.mark.inductor
def test_quick_bench_inductor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = _bench(tmp_path, capsys, "--backends", "inductor", "--rss-minutes", "0")
    assert r["cases_per_min"]["inductor"] > 0 and r["cases_per_min"]["aot_eager"] is None
    assert r["throughput"]["inductor"]["caches"].startswith("warm")
