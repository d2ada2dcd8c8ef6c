"""Issue 17's remaining argument shapes: in-place metadata changes of an argument by set_
(onto a fresh result: AOT replays it on the caller's tensor with set_) and resize_ (to fewer
elements of the same storage), and a TwoTensor whose inner tensors are TwoTensors. Each is
generated, runs in eager, reaches its wrapper path, and agrees across every subject."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample

from generators import materialize, programs
from generators._spec import ProgramSpec
from pyfy_fuzz.case.runner import run_case

SETTINGS = settings(
    database=None,
    max_examples=10000,  # resize_ on AOT alone is rare: 3000 missed it in some processes
    derandomize=True,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def _set_alone(spec: ProgramSpec) -> bool:
    """A set_ of an argument not mutated again after it: AOTAutograd refuses set_ beside a
    mutation it cannot keep in the graph (by design: compile-refuses-set-with-other-mutations)."""
    for k, x in enumerate(spec.body):
        if x.op == "set_":
            later = spec.body[k + 1 :]
            return not any(y.op.endswith("_") and y.args[:1] == x.args[:1] for y in later)
    return False


# Metadata mutations beside resize_ that meet a torch crash of their own ("expand: the
# requested shape has too few dimensions!", unsqueeze_ then a write under inference_mode).
_OTHER_METADATA = ("t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_", "set_")

# feature -> (families that draw it, whether a spec has it, the path a compile of it reaches)
FEATURES = {
    "set_": (["input_mutation"], lambda s: _set_alone(s) and s.plan.frontend == "aot", "storage"),
    "resize_": (
        ["input_mutation"],
        lambda s: (
            any(x.op == "resize_" for x in s.body)
            and s.plan.frontend == "aot"
            and not any(x.op in _OTHER_METADATA for x in s.body)
            # torch refuses input mutations on views of two dtypes before the metadata path
            and not any(v.op == "view_dtype" for i in s.inputs for v in i.views)
        ),  # one torch crash each
        "metadata",
    ),
    # on Dynamo, which breaks the graph at them (Note [Regions] in pythonify)
    "set_ break": (
        ["input_mutation"],
        lambda s: any(x.op == "set_" for x in s.body) and s.plan.frontend == "dynamo",
        "graph/break",
    ),
    "nested": (
        ["subclass"],
        lambda s: any(r.subclass == "nested_two_tensor" for r in s.roots),
        "subclass/nested",
    ),
}


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_each_is_generated_runs_in_eager_and_reaches_its_path(feature: str) -> None:
    families, has, path = FEATURES[feature]

    refused: list[str] = []

    def runs(spec: ProgramSpec) -> bool:
        if not has(spec):
            return False
        program = materialize(spec)
        try:
            program.module.drive(program.make_fn(), program.make_inputs(0))
        except RuntimeError as exc:
            refused.append(str(exc).splitlines()[0][:160])
            return False  # eager refuses it: the campaign discards such programs
        return True

    try:
        spec = find(programs(families), runs, settings=SETTINGS)
    except NoSuchExample:
        pytest.fail(f"none drawn ran in eager; what eager raised: {refused[-3:]}")
    result = run_case(spec)
    assert result.status == "ok", result
    assert any(p.endswith(path) for p in result.wrapper_paths), result.wrapper_paths
    assert not [f for f in result.findings if f.subject in ("pythonify", "pyfy-fuzz")], (
        result.findings
    )
