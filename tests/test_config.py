"""Drawn configurations (Note [Drawn configurations] in pyfy_fuzz/schema/config.py): the
catalogue names real torch settings, a case's compiles run under its knobs (and only there),
the call-site knobs wrap every subject's calls, the shrinker tries torch's defaults first, and
the repro sets what the case ran under."""

from __future__ import annotations

import importlib
from collections import Counter
from dataclasses import replace

import pytest
import torch
import torch._functorch.config as fconfig
from hypothesis import HealthCheck, find, settings

from generators import ProgramSpec, programs, spec_from_dict
from generators._spec import CallPlan, SpecError
from pyfy_fuzz.bench.measure import draw
from pyfy_fuzz.campaign.shrink import candidates
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.case.subjects import drawn_config
from pyfy_fuzz.case.subjects.stock import Knob
from pyfy_fuzz.corpus.repro import render_repro
from pyfy_fuzz.schema import config as schema_config
from pyfy_fuzz.schema.config import CATALOGUE, ConfigKnob, call_context, check_config
from tests.findings import crash_finding, values_finding

from .oracles.helpers import spec

TRAIN = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
    ["v1"],
    plan=CallPlan(calls=2, backward=True),
)


def _under(s: ProgramSpec, *names: str) -> ProgramSpec:
    return replace(s, plan=replace(s.plan, config=names))


def test_every_compile_knob_is_a_torch_setting_away_from_its_default() -> None:
    for knob in CATALOGUE.values():
        assert knob.reaches
        if knob.kind != "compile":
            continue
        for target, value in knob.settings:
            module, entry = target.rsplit(".", 1)
            assert Knob(module, entry).default() != value, target


def test_knobs_and_configurations_are_checked() -> None:
    with pytest.raises(ValueError, match="sets nothing"):
        ConfigKnob("x", "compile", (), "why")
    with pytest.raises(ValueError, match="call"):
        ConfigKnob("x", "call", (("torch._functorch.config.debug_assert", True),), "why")
    with pytest.raises(ValueError, match="capture"):
        ConfigKnob("x", "capture", (("torch._functorch.config.debug_assert", True),), "why")
    with pytest.raises(ValueError, match="capture"):
        ConfigKnob("x", "compile", (("capture.fakify_first_call", True),), "why")
    with pytest.raises(ValueError, match="unknown configuration knob 'nope'"):
        check_config(("nope",))
    with pytest.raises(ValueError, match="repeat"):
        check_config(("debug_assert", "debug_assert"))
    with pytest.raises(ValueError, match="one call-site"):
        check_config(("no_grad", "autocast"))
    data = _under(TRAIN, "debug_assert").to_json().replace("debug_assert", "nope")
    with pytest.raises(SpecError, match="plan.config"):
        ProgramSpec.from_json(data)
    assert call_context(("debug_assert", "autocast")) == "autocast"
    assert call_context(("debug_assert",)) is None


def test_compile_knobs_hold_only_inside_the_case_and_missing_ones_are_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = ConfigKnob(
        "from_the_future", "compile", (("torch._functorch.config.not_yet_there", True),), "x"
    )
    monkeypatch.setitem(schema_config.CATALOGUE, fake.name, fake)
    plan = CallPlan(config=("debug_assert", "from_the_future", "functionalize_rng"))
    with drawn_config(plan, "cpu") as skipped:
        assert fconfig.debug_assert is True
        assert fconfig.functionalize_rng_ops is False  # CUDA only: left out on CPU
        assert skipped == ("from_the_future",)
    assert fconfig.debug_assert is False


def test_the_configuration_reaches_its_wrapper_paths_without_findings() -> None:
    """debug_assert reaches DebugAssertWrapper; a call under autocast reaches the runtime
    wrapper's disabled autocast (the capture compiles under the call site too); grad modes
    give inference graphs. No finding under any: the file models each."""
    reached = {
        "debug_assert": "debug_assert/requires_grad",
        "autocast": "runtime/disable_amp",
        "ddp_fakify": "fakified_out/first_call",
    }
    names = ("debug_assert", "autocast", "no_grad", "inference_mode", "no_view_replay")
    for name in (*names, "ddp_fakify"):
        r = run_case(_under(TRAIN, name), backend="aot_eager")
        assert r.status == "ok" and r.pythonified_path is not None, (name, r.unsupported)
        assert not r.findings, (name, [f.explanation for f in r.findings])
        if name in reached:
            assert reached[name] in r.wrapper_paths, (name, r.wrapper_paths)
        if name in ("no_grad", "inference_mode"):
            assert "autograd/training" not in r.wrapper_paths, (name, r.wrapper_paths)


def test_the_call_site_is_every_subjects_eager_included() -> None:
    program = importlib.import_module("generators").materialize(_under(TRAIN, "no_grad"))
    out = program.module.drive(program.make_fn(), program.make_inputs(0), 0)
    assert not out["out"].requires_grad and out["grads"] is None
    plain = importlib.import_module("generators").materialize(TRAIN)
    assert plain.module.drive(plain.make_fn(), plain.make_inputs(0), 0)["out"].requires_grad


def test_the_shrinker_tries_torchs_defaults_first() -> None:
    s = _under(TRAIN, "debug_assert", "no_view_replay")
    first = next(candidates(s))
    assert first.plan.config == ()
    assert {c.plan.config for c in candidates(s)} >= {("debug_assert",), ("no_view_replay",)}


def test_the_repro_sets_the_configuration() -> None:
    finding = values_finding()
    source = render_repro(_under(TRAIN, "autocast", "debug_assert"), finding, backend="aot_eager")
    assert "torch._functorch.config.debug_assert = True" in source
    assert 'with torch.autocast("cpu", dtype=torch.bfloat16):' in source
    source = render_repro(_under(TRAIN, "functionalize_rng"), finding, backend="aot_eager")
    assert "functionalize_rng_ops" not in source  # CUDA only
    on_gpu = render_repro(
        _under(TRAIN, "functionalize_rng"), finding, backend="aot_eager", device="cuda"
    )
    assert "torch._functorch.config.functionalize_rng_ops = True" in on_gpu


def test_generators_draw_every_knob_and_mostly_the_defaults() -> None:
    specs = draw(programs(), 600, seed=0)
    seen = Counter(n for s in specs for n in s.plan.config)
    # Hypothesis's draw is not uniform: a knob the fixed sample missed must still be drawable
    # (an AOT-only one for the AOT front-end's family).
    for name in set(CATALOGUE) - set(seen):
        family = ["dedupe"] if CATALOGUE[name].frontends == ("aot",) else None
        find(
            programs(family),
            lambda s, name=name: name in s.plan.config,
            settings=settings(
                max_examples=8000, database=None, suppress_health_check=list(HealthCheck)
            ),
        )
    # find() above proves each knob drawable; this only guards against the draw collapsing
    # onto a few knobs (with 20 knobs a 1000-program sample missed 0 to 5 of them, by process).
    assert len(seen) >= len(CATALOGUE) // 2, sorted(set(CATALOGUE) - set(seen))
    defaults = sum(1 for s in specs if not s.plan.config)
    assert 0.5 < defaults / len(specs) < 0.95, defaults
    for s in specs:  # every drawn configuration is a valid one, and survives JSON
        assert spec_from_dict(__import__("json").loads(s.to_json())) == s
    assert torch.is_grad_enabled()


def test_a_mixed_campaign_draws_inductor_for_one_case_in_n() -> None:
    """The worker's mix: the spec names Inductor (CallPlan.backend), so shrinking, saving and
    replay keep it; run_case compiles a spec that names a backend with that one."""
    from pyfy_fuzz.campaign.explore import _with_partner

    specs = draw(_with_partner(programs(), "inductor", 10), 400, seed=0)
    share = sum(s.plan.backend == "inductor" for s in specs) / len(specs)
    # Hypothesis's generation does not draw the ten choices evenly (measured 1.5-10% over
    # runs; 5.3% of a 10-minute campaign's cases): some, never most.
    assert 0 < share < 0.25, share
    assert {s.plan.backend for s in specs} == {None, "inductor"}
    inductor = next(s for s in specs if s.plan.backend == "inductor")
    assert next(c for c in candidates(inductor) if c.plan.backend is None)  # the shrinker tries
    assert ProgramSpec.from_json(inductor.to_json()) == inductor


def test_the_relation_variant_breaks_a_shared_size_and_the_file_refuses_it() -> None:
    """Shape variants also break relations (issue 16, dynamic shapes): "relation" grows the
    first root only, so sizes two arguments shared -- one symbol under dynamic=True -- differ.
    torch.compile recompiles; the file's guards refuse (Note [Size symbols]); no finding."""
    from generators import InputSpec, OutSpec, RootSpec, Stmt, materialize
    from generators.source import variant_changes

    s = ProgramSpec(
        family="input_mutation",
        roots=(RootSpec((4,)), RootSpec((4,))),
        inputs=(InputSpec("root", 0), InputSpec("root", 1)),
        body=(Stmt("sum", ("a0",), ("v0",)), Stmt("sum", ("a1",), ("v1",))),
        outputs=(OutSpec("ref", "v0"), OutSpec("ref", "v1")),
        plan=CallPlan(calls=1, backward=False, dynamic=True, variant="relation"),
    )
    assert variant_changes(s)
    program = materialize(s)
    a0, a1 = program.make_inputs(0, "relation")
    assert (a0.shape, a1.shape) == ((5,), (4,))
    r = run_case(s, backend="aot_eager", keep_evidence=True)
    assert r.status == "ok" and not r.findings, [f.explanation for f in r.findings]
    ev = r.evidence
    assert ev is not None and ev.compiled.variant is not None and ev.compiled.variant.recompiled
    refused = ev.pythonified.variant.raised if ev.pythonified and ev.pythonified.variant else None
    assert refused is not None and refused.type_name.endswith("PythonifyGuardError"), refused
    single = replace(s, roots=(RootSpec((4,)), RootSpec((3,))))
    assert not variant_changes(single)  # no size to share: nothing to break


def test_dropped_inference_mutations_are_applied_by_the_runtime_wrapper() -> None:
    """The 'aot' knob drop_inference_mutations: aot_function without
    keep_inference_input_mutations, for the capture, the stock AOT reference and repro.py
    alike; the inference graph returns the mutation and RuntimeWrapper copies it back."""
    s = spec(
        [("mul_", ("a0", 2), ()), ("sin", ("a0",), ("v0",))],
        ["v0"],
        grad="none",
        plan=CallPlan(
            calls=2, backward=False, frontend="aot", config=("drop_inference_mutations",)
        ),
    )
    r = run_case(s, backend="aot_eager")
    assert r.status == "ok" and not r.findings, (r.unsupported, [f.explanation for f in r.findings])
    assert "runtime/input_mutation/out_of_graph" in r.wrapper_paths, r.wrapper_paths
    kept = run_case(replace(s, plan=replace(s.plan, config=())), backend="aot_eager")
    assert "runtime/input_mutation/out_of_graph" not in kept.wrapper_paths, kept.wrapper_paths
    found = crash_finding()
    source = render_repro(s, found, backend="aot_eager")
    assert "keep_inference_input_mutations=False" in source


def test_mark_dynamic_marks_every_subjects_arguments_and_the_capture_keeps_it() -> None:
    """The 'inputs' knob mark_dynamic: dim 0 of the arguments is marked dynamic before every
    call (maybe_mark_dynamic) and the capture's copies keep the mark, so the file guards a
    dynamic dim as the stock compile does; no finding, and the repro marks its arguments."""
    s = spec(
        [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",))],
        ["v1"],
        shape=(4, 3),
        plan=CallPlan(calls=2, backward=True, config=("mark_dynamic",)),
    )
    r = run_case(s, backend="aot_eager")
    assert r.status == "ok" and not r.findings, (r.unsupported, [f.explanation for f in r.findings])
    assert "graph/dynamic" in r.wrapper_paths, r.wrapper_paths
    plain = run_case(replace(s, plan=replace(s.plan, config=())), backend="aot_eager")
    assert "graph/dynamic" not in plain.wrapper_paths, plain.wrapper_paths
    found = crash_finding()
    assert "torch._dynamo.maybe_mark_dynamic(a, 0)" in render_repro(s, found, backend="aot_eager")


def test_inductor_goes_to_programs_with_something_for_it_to_change() -> None:
    """Note [Inductor by content]: 6 slots in 20 for a program with a reason, 1 for any
    other; aot_eager as the partner (CUDA) takes its share whatever the program; slot 0, where
    shrinking goes, is the base backend's."""
    from generators import inductor_reasons
    from pyfy_fuzz.campaign.explore import _takes_partner

    specs = draw(programs(), 200, seed=0)
    worthy = next(s for s in specs if inductor_reasons(s))
    plain = next(s for s in specs if not inductor_reasons(s))
    assert sum(_takes_partner(worthy, "inductor", 10, k) for k in range(20)) == 6
    assert sum(_takes_partner(plain, "inductor", 10, k) for k in range(20)) == 1
    assert sum(_takes_partner(worthy, "aot_eager", 4, k) for k in range(8)) == 2
    assert not _takes_partner(worthy, "inductor", 10, 0)
