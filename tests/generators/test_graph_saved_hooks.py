"""The configuration's GraphModule saved-tensor hooks (Note [Saved-tensor hooks as graphs] in
generators/_saved_hooks.py): drawn, installed around every subject, modelled by the file, and
written into a repro."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, find, settings

from generators import programs
from generators._saved_hooks import GRAPH_HOOK_FORMS
from generators._spec import CallPlan
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.corpus.repro import render_repro
from pyfy_fuzz.schema.config import CATALOGUE, check_config, graph_hooks_form
from tests.findings import values_finding

from ..oracles.helpers import spec

TRAIN = spec(
    [("sin", ("a0",), ("v0",)), ("mul", ("v0", "a0"), ("v1",)), ("relu", ("v1",), ("v2",))],
    ["v2"],
    shape=(4, 3),
    plan=CallPlan(calls=2, backward=True),
)
HOOKS = sorted(n for n, k in CATALOGUE.items() if k.kind == "hooks")
BESIDE = sorted(n for n, k in CATALOGUE.items() if k.beside == "hooks")


def test_each_hooks_knob_names_a_form_and_one_at_most_is_drawn() -> None:
    assert HOOKS and BESIDE
    assert {graph_hooks_form((n,)) for n in HOOKS} == set(GRAPH_HOOK_FORMS)
    assert all(CATALOGUE[n].kind == "compile" for n in BESIDE)
    with pytest.raises(ValueError, match="at most one saved-tensor hooks knob"):
        check_config(tuple(HOOKS[:2]))


def test_a_filtering_knob_comes_only_beside_a_hooks_knob() -> None:
    """What the inlined hooks pack changes nothing without them: never drawn alone."""
    found = find(
        programs(),
        lambda s: any(n in BESIDE for n in s.plan.config),
        settings=settings(
            max_examples=3000, database=None, suppress_health_check=list(HealthCheck)
        ),
    )
    assert CATALOGUE[found.plan.config[0]].kind == "hooks", found.plan.config


@pytest.mark.parametrize(
    ("config", "backend", "dynamic"),
    [
        (("graph_saved_hooks",), "aot_eager", False),
        (("graph_saved_hooks_flat", "saved_hooks_all"), "aot_eager", True),
        (("graph_saved_hooks_flat",), "inductor", False),
    ],
)
def test_graph_hooks_reach_the_inlined_path_without_findings(
    config: tuple[str, ...], backend: str, dynamic: bool
) -> None:
    """Every subject runs under the hooks (eager calls them, the compiles inline them, the file
    disables the ambient ones around its graphs); a probe's fresh call, made without hooks,
    is refused by the file's guard as Dynamo recompiles."""
    s = replace(TRAIN, plan=replace(TRAIN.plan, config=config, dynamic=dynamic))
    r = run_case(s, backend=backend)
    assert r.status == "ok" and not r.findings, (r.unsupported, [f.explanation for f in r.findings])
    assert "runtime/saved_hooks_inlined" in r.wrapper_paths, r.wrapper_paths
    plain = run_case(replace(s, plan=replace(s.plan, config=())), backend=backend)
    assert "runtime/saved_hooks_inlined" not in plain.wrapper_paths


def test_the_repro_installs_the_traced_pair() -> None:
    s = replace(TRAIN, plan=replace(TRAIN.plan, config=("graph_saved_hooks_flat",)))
    source = render_repro(s, values_finding(), backend="aot_eager")
    assert "def _pack_flat(t):" in source and "def _pack_clone" not in source
    assert "torch.fx.symbolic_trace(_pack_flat)" in source
    assert "with torch.autograd.graph.saved_tensors_hooks(*GRAPH_HOOKS):" in source
    compile(source, "repro.py", "exec")
