"""`pyfy-fuzz run` / `replay`: every bad flag is one line on stderr and exit status 2, before
any worker starts."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from pyfy_fuzz.cli import main
from pyfy_fuzz.cli.run import print_summary

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--budget", "1m30h"], "not a duration"),
        (["run", "--budget", "0s"], "longer than 0"),
        (["run", "--shard", "3/2"], "1 <= K <= N"),
        (["run", "--workers", "0"], "--workers must be at least 1"),
        (["run", "--wrappers", "dedupe,nope"], "unknown or no families ['nope']"),
        (["run", "--max-cases", "0"], "--max-cases"),
        (["run", "--config", "debug_assert,nope"], "--config: unknown configuration knob 'nope'"),
        (["run", "--config", "no_grad,autocast"], "at most one call-site knob"),
        (["run", "--config", ","], "--config: no knob given"),
        (["run", "--case-timeout", "0"], "--case-timeout"),
        (["run", "--device", "cuda"], "no usable GPU"),
        (["run", "--pythonify", "torch"], "has no torch.compile(pythonify=...)"),
        (["replay", "/no/such/corpus"], "no such corpus or entry"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import torch

    if "cuda" in argv and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main([*argv, *(["--corpus", str(tmp_path / "c")] if argv[0] == "run" else [])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pyfy-fuzz: error: ") and message in err[0]
    assert not (tmp_path / "c").exists()  # nothing was started or created


def test_unusable_corpus_and_json_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    assert main(["run", "--budget", "5s", "--corpus", str(tmp_path / "file")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["run", "--json", str(tmp_path / "no" / "s.json")]) == 2
    assert "does not exist or is not writable" in capsys.readouterr().err


def test_replay_of_an_empty_corpus_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "junk").mkdir()
    assert main(["replay", str(tmp_path / "c")]) == 2
    captured = capsys.readouterr()
    assert "no case.json" in captured.err and "no corpus entries" in captured.err


@pytest.mark.parametrize("command", ["run", "replay"])
def test_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert "Exit status" in capsys.readouterr().out


def test_summary_lists_findings_with_their_paths() -> None:
    summary = {
        "cases": 120,
        "elapsed_s": 61.0,
        "cases_per_min": 118.0,
        "shrink_cases": 30,
        "torch": "2.13.0",
        "known_seen": {"a": 2},
        "config": {"backend": "aot_eager", "device": "cpu", "workers": 2, "shard": "1/1"},
        "findings": [
            {
                "signature": "crash.exceptions.x",
                "kind": "crash",
                "oracle": "exceptions",
                "subject": "pythonify",
                "wrappers": [],
                "path": "corpus/crash.exceptions.x",
            }
        ],
        "wrapper_hits": {"dedupe/duplicate_args": 7},
        "deaths": {},
        "notes": [],
    }
    out = io.StringIO()
    print_summary(json.loads(json.dumps(summary)), out)
    text = out.getvalue()
    assert "120 cases in 1m1s (118/min" in text
    assert "corpus/crash.exceptions.x" in text and "dedupe/duplicate_args 7" in text
    assert "warm-cache" not in text  # no case consulted the cache: no line
    assert "repros run on their own (torch 2.13.0): 1 not checked yet" in text

    summary["findings"] += [
        {**summary["findings"][0], "repro": v} for v in ("reproduces", "reproduces", "passes")
    ]
    out = io.StringIO()
    print_summary(summary, out)
    assert (
        "repros run on their own (torch 2.13.0): 2 reproduce, 1 not checked yet, "
        "1 pass (the repro misses the bug: ours)"
    ) in out.getvalue()
    # counted by group; one whose repro showed something else is not counted as a bug
    assert "new findings: 4 (3 bug, 1 unproven)" in out.getvalue()
    summary["findings"][0] = {**summary["findings"][0], "group": "refusal"}
    out = io.StringIO()
    print_summary(summary, out)
    text = out.getvalue()
    assert "new findings: 4 (2 bug, 1 refusal, 1 unproven)" in text
    assert text.index("crash.exceptions.x\n") > text.index("new findings")

    summary["warm_cache"] = {"hit": 6, "partial": 1, "unsaved": 3}
    out = io.StringIO()
    print_summary(summary, out)
    assert (
        "warm-cache subject: 7 of 10 cases served from AOTAutograd's cache (70%); "
        "partial 1, unsaved 3"
    ) in out.getvalue()


@pytest.mark.parametrize(
    "argv, backend, partner, share",
    [
        # the CPU mix: aot_eager, with Inductor (what users ship) in 1 case of 10
        ([], "aot_eager", "inductor", 10),
        (["--backend", "aot_eager"], "aot_eager", None, 0),  # --backend pins one
        (["--backend", "inductor"], "inductor", None, 0),
        # the CUDA mix: Inductor (and its CUDA graphs), with aot_eager in 1 case of 4
        (["--device", "cuda"], "inductor", "aot_eager", 4),
        (["--device", "cuda", "--backend", "aot_eager"], "aot_eager", None, 0),
    ],
)
def test_the_default_backend_is_a_mix_and_backend_pins_one(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    backend: str,
    partner: str | None,
    share: int,
) -> None:
    import pyfy_fuzz.cli.run as run_cli

    seen = []

    class _Done:
        exit_code = 0

    monkeypatch.setattr(run_cli, "run_and_summarise", lambda c: seen.append(c) or _Done())
    monkeypatch.setattr(run_cli, "check_device", lambda device: None)  # no GPU needed to parse
    assert main(["run", "--budget", "5s", "--corpus", str(tmp_path / "c"), *argv]) == 0
    mix = seen[0].mix  # one object, checked whole, as the workers receive it
    assert (mix.base, mix.partner, mix.share) == (backend, partner, share)
    assert seen[0].case_timeout == (180.0 if "cuda" in argv else 60.0)  # Triton compiles


def test_a_backend_mix_must_mix() -> None:
    from pyfy_fuzz.campaign.config import BackendMix

    for bad in (("inductor", "inductor", 4), ("aot_eager", "inductor", 1), ("aot_eager", None, 4)):
        with pytest.raises(ValueError):
            BackendMix(*bad)


def test_the_summary_names_the_mix() -> None:
    summary = {
        "cases": 20,
        "elapsed_s": 60.0,
        "cases_per_min": 20.0,
        "shrink_cases": 0,
        "torch": "2.13.0",
        "known_seen": {},
        "config": {
            "backend": "aot_eager",
            "partner": "inductor",
            "partner_share": 10,
            "device": "cpu",
            "workers": 2,
            "shard": "1/1",
        },
        "backends": {"aot_eager": 18, "inductor": 2},
        "findings": [],
        "wrapper_hits": {},
        "deaths": {},
        "notes": ["config: this torch lacks knob 'x'; cases drawn with it ran without it"],
    }
    out = io.StringIO()
    print_summary(summary, out)
    text = out.getvalue()
    assert "aot_eager + inductor (1 case in 10: aot_eager 18, inductor 2) on cpu" in text
    assert "warning: config: this torch lacks knob 'x'" in text


def test_config_pins_every_drawn_case() -> None:
    """--config: every case the worker's strategy draws runs under the pinned knobs."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from generators import programs
    from pyfy_fuzz.campaign.explore import _with_config

    seen: list[tuple[str, ...]] = []

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_with_config(programs(), ("debug_assert", "no_grad")))
    def drawn(spec) -> None:  # type: ignore[no-untyped-def]
        seen.append(spec.plan.config)

    drawn()
    assert seen and set(seen) == {("debug_assert", "no_grad")}
    plain = st.just(1)
    assert _with_config(plain, None) is plain  # type: ignore[arg-type]  # no --config: as drawn


@pytest.mark.slow
def test_replay_repros_runs_each_repro_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "c" / "compile-divergence.mutation.8a15dc1b883b"  # the README's example
    shutil.copytree(REPO / "corpus" / entry.name, entry)
    case = json.loads((entry / "case.json").read_text())
    del case["repro"]
    (entry / "case.json").write_text(json.dumps(case))
    assert main(["replay", "--repros", str(entry)]) == 0
    assert "[repro.py reproduces]" in capsys.readouterr().out
    assert json.loads((entry / "case.json").read_text())["repro"]["verdict"] == "reproduces"
    (entry / "repro.py").write_text("print('a repro that misses its bug')\n")
    assert main(["replay", "--repros", str(entry)]) == 1
    assert "repro-mismatch 1" in capsys.readouterr().out
