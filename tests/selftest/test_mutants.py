"""The planted bugs: each one changes the generated file where its wrapper is exercised, the
planting never leaks into the unmutated generator, and a campaign catches them (slow)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
import torch._dynamo
from hypothesis import HealthCheck, Phase, given, settings

from generators import materialize, programs
from pyfy_fuzz.cli import main
from pyfy_fuzz.pythonify import api
from pyfy_fuzz.selftest import BY_NAME, MUTANTS, MutantPythonify
from tests.findings import SIN


def test_mutant_names_are_unique_and_described() -> None:
    assert len(MUTANTS) >= 12 and len(BY_NAME) == len(MUTANTS)
    for m in MUTANTS:
        assert (m.ir is None) != (not m.source), f"{m.name}: exactly one kind of edit"
        assert m.families and m.bug and m.wrapper
        for e in m.source:
            re.compile(e.pattern)


@pytest.mark.parametrize("name", [m.name for m in MUTANTS])
def test_each_mutant_changes_some_file_of_its_families(name: str, tmp_path: Path) -> None:
    """On derandomized programs of the mutant's families, the mutant must change the file of
    at least one; otherwise its edit no longer matches what the generator emits."""
    mutant = BY_NAME[name]
    impl = MutantPythonify(mutant)
    tried = [0]

    @settings(
        max_examples=400,  # stops at the first file changed; 200 missed once a draw moved
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(programs(list(mutant.families)))
    def one(spec) -> None:  # type: ignore[no-untyped-def]
        if impl.applied:
            return
        program = materialize(spec)
        torch._dynamo.reset()
        tried[0] += 1
        try:
            impl.produce(
                program.make_fn(),
                program.make_inputs(0),
                tmp_path / "f.py",
                backend="aot_eager",
                frontend=spec.plan.frontend,
                dynamic=spec.plan.dynamic,
                mode=spec.plan.mode,
            )
        except Exception:  # unsupported, or the mutant broke codegen: only `applied` matters
            pass
        finally:
            torch.set_grad_enabled(True)

    one()
    assert impl.applied, f"{name} changed none of {tried[0]} files"
    assert api.build_ir.__module__.endswith("pipeline")  # patches undone after each produce
    assert api.generate.__module__.endswith("gen_python")


def test_cli_lists_and_rejects_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(m.name in out for m in MUTANTS)
    assert main(["selftest", "--mutant", "no_such_mutant"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown mutant" in err[0]
    assert main(["selftest", "--budget", "soon"]) == 2


@pytest.mark.slow
def test_campaigns_kill_and_confirm_planted_bugs(tmp_path: Path) -> None:
    """End to end through the CLI: an IR mutant, a runtime-template mutant and one only the
    version-counter oracle sees, each caught by a real campaign, the kill confirmed by
    re-running the detecting program. (The guard mutants take up to 71 s each at seed 0; CI's
    selftest stage runs every mutant, them included.)"""
    out = tmp_path / "selftest.json"
    argv = ["selftest", "--budget", "90s", "--json", str(out)]
    for name in (
        "effect_tokens_off_by_one",
        "copy_back_dropped",
        "copy_back_skips_version_counter",
    ):
        argv += ["--mutant", name]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["kill_rate"] == 1.0 and doc["mutants"] == 3
    for r in doc["results"]:
        assert r["killed"] and r["confirmed"], r
        assert r["seconds"] is not None and r["seconds"] < 90
        assert r["detected_by"] and r["spec"]


def test_confirm_reruns_a_mutated_program_and_needs_the_clean_one_to_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Note [A mutant's effect may depend on memory]: the mutated program gets up to
    CONFIRM_TRIES runs; a clean failure is a real bug whatever the mutant did."""
    from types import SimpleNamespace

    from pyfy_fuzz.case import runner as runner
    from pyfy_fuzz.selftest import run as st

    spec = SIN
    found = SimpleNamespace(kind="pythonify-divergence", oracle="mutation", subject="pythonify")
    mutant = BY_NAME["guard_aliasing_missing"]

    def scripted(mutated_results: list[bool], clean_fails: bool) -> list[str]:
        calls: list[str] = []

        def fake_run_case(spec, *, backend, impl):  # noqa: ARG001 - run_case's signature
            if isinstance(impl, MutantPythonify):
                calls.append("mutant")
                hit = mutated_results.pop(0)
            else:
                calls.append("clean")
                hit = clean_fails
            return SimpleNamespace(findings=[found] if hit else [])

        monkeypatch.setattr(runner, "run_case", fake_run_case)
        return calls

    calls = scripted([False, True], clean_fails=False)
    ok, note = st.confirm(mutant, spec.to_json(), "aot_eager")
    assert ok and note == f"failed again on run 2 of {st.CONFIRM_TRIES}"
    assert calls == ["mutant", "mutant", "clean"]

    calls = scripted([False] * st.CONFIRM_TRIES, clean_fails=False)
    ok, note = st.confirm(mutant, spec.to_json(), "aot_eager")
    assert not ok and "flaky" in note and calls.count("mutant") == st.CONFIRM_TRIES

    calls = scripted([True], clean_fails=True)
    ok, note = st.confirm(mutant, spec.to_json(), "aot_eager")
    assert not ok and "real bug" in note and calls == ["mutant", "clean"]
