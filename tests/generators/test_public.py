"""The public API: argument checks, exports, docstrings, family coverage, and a user's test.

The last tests follow the README's pattern (`@given(<family>_programs())`, materialize, build
the inputs) and check the structure a family promises in real tensors: synthetic-base
arguments share a storage, a dedupe argument is passed twice as the same object.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, NoSuchExample

import generators
from generators import (
    FAMILIES,
    FAMILY_TARGETS,
    ProgramSpec,
    dedupe_programs,
    input_mutation_programs,
    materialize,
    programs,
    reached,
    synthetic_base_programs,
)
from generators._families import DECLARATIONS, PROFILES
from pyfy_fuzz.schema.paths import ALL_PATHS, spec_paths
from pyfy_fuzz.schema.spec import SUBCLASSES

SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

EXPECTED_FAMILIES = (
    "dedupe",
    "synthetic_base",
    "input_mutation",
    "output_aliasing",
    "subclass",
    "effects",
    "rng",
    "autograd_function",
    "module",
    "cudagraph",
    "later_aliasing",
)


def family_factory(name: str) -> Any:
    return getattr(generators, f"{name}_programs")


# ------------------------------------------------------------------ argument checks
# The checks run when the strategy is made, not on first draw: a bad argument fails at
# decoration time, with a message, before any example is generated.


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"wrappers": ["nope"]}, "nope"),
        ({"wrappers": ["dedupe", "nope"]}, "nope"),
        ({"wrappers": []}, "no wrapper families"),
        ({"wrappers": "dedupe"}, "string"),
        ({"max_ops": -1}, "max_ops"),
        ({"max_ops": 65}, "max_ops"),
        ({"max_ops": 2.0}, "max_ops"),
        ({"max_inputs": 0}, "max_inputs"),
        ({"max_inputs": 9}, "max_inputs"),
    ],
)
def test_programs_rejects_bad_arguments_eagerly(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        programs(**kwargs)


@pytest.mark.parametrize("name", EXPECTED_FAMILIES)
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"max_inputs": 0}, "max_inputs"), ({"max_ops": -1}, "max_ops")],
)
def test_family_strategies_reject_bad_arguments_eagerly(
    name: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        family_factory(name)(**kwargs)


def test_dedupe_programs_rejects_zero_inputs() -> None:
    with pytest.raises(InvalidArgument, match="max_inputs"):
        dedupe_programs(max_inputs=0)


def test_good_arguments_are_accepted_and_validate() -> None:
    programs().validate()
    programs(wrappers=["dedupe"], max_ops=0, max_inputs=1).validate()
    programs(wrappers=("rng", "module"), max_ops=64, max_inputs=8).validate()
    for name in FAMILIES:
        family_factory(name)(max_ops=0, max_inputs=1).validate()


# ------------------------------------------------------------------ exports and docs


def test_every_exported_name_exists() -> None:
    assert len(set(generators.__all__)) == len(generators.__all__)
    for name in generators.__all__:
        assert hasattr(generators, name), name
    for name in FAMILIES:
        assert f"{name}_programs" in generators.__all__


def test_a_family_is_one_declaration() -> None:
    """Its name, profile, builder, target paths and factory docstring are all read off the
    declaration beside its builder (generators/_families.py)."""
    assert tuple(DECLARATIONS) == FAMILIES == tuple(PROFILES) == tuple(FAMILY_TARGETS)
    for name, declared in DECLARATIONS.items():
        assert declared.name == name and PROFILES[name] is declared.profile
        assert FAMILY_TARGETS[name] == declared.targets
        assert (family_factory(name).__doc__ or "").startswith(declared.doc)
        for prefix in declared.targets:  # each target names paths of the vocabulary
            assert any(p.startswith(prefix) for p in ALL_PATHS), (name, prefix)


def test_reached_means_a_path_under_the_family_targets() -> None:
    assert reached(["runtime/input_mutation/data"], "input_mutation")
    assert not reached(["runtime/output/is_input", "dedupe/duplicate_args"], "input_mutation")
    assert reached(["plan/aliased_later/share"], "later_aliasing")
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        reached([], "nope")


def test_families_are_the_documented_ones() -> None:
    assert FAMILIES == EXPECTED_FAMILIES
    for name in FAMILIES:  # programs()'s docstring lists them all
        assert name in (programs.__doc__ or "")


@pytest.mark.parametrize("name", EXPECTED_FAMILIES)
def test_family_strategy_docstring_says_how_it_shrinks(name: str) -> None:
    factory = family_factory(name)
    assert factory.__name__ == f"{name}_programs"
    doc = factory.__doc__ or ""
    assert doc.strip(), name
    assert "shrink" in doc.lower(), doc
    # Something family-specific before the shared shrinking sentence.
    assert len(doc.split("\n\n")[0]) > 20, doc


def test_programs_docstring_says_how_it_shrinks() -> None:
    assert "shrink" in (programs.__doc__ or "").lower()


# ------------------------------------------------------------------ family coverage


@pytest.mark.parametrize("name", EXPECTED_FAMILIES)
def test_programs_can_produce_each_family(name: str) -> None:
    # Generation only: the mix is uneven (the first branch of one_of is drawn more often), so
    # counting over a fixed number of examples can miss a family; searching for one cannot.
    found = find(
        programs(),
        lambda spec: spec.family == name,
        settings=settings(
            max_examples=1000,
            database=None,
            derandomize=True,
            phases=[Phase.generate],
            suppress_health_check=SUPPRESS,
        ),
    )
    assert found.family == name


def test_shrinking_keeps_the_structure_a_family_forces() -> None:
    """The smallest dedupe program still passes one tensor twice and mutates it."""
    smallest = find(
        dedupe_programs(),
        lambda spec: True,
        settings=settings(database=None, derandomize=True, suppress_health_check=SUPPRESS),
    )
    kinds = [inp.kind for inp in smallest.inputs]
    assert kinds == ["root", "dup"], smallest
    assert smallest.inputs[1].of == 0
    assert smallest.plan.frontend == "aot"
    mutated = {s.args[0] for s in smallest.body if s.op.endswith("_")}
    assert mutated & {"a0", "a1"}, smallest
    assert smallest.roots[0].dtype == "float32"
    assert smallest.roots[0].layout == "contiguous"


def _root_of(spec: ProgramSpec, i: int) -> int:
    inp = spec.inputs[i]
    return _root_of(spec, inp.of) if inp.kind == "dup" else inp.root


def _aliased_inputs(spec: ProgramSpec) -> bool:
    tensor_inputs = [i for i, inp in enumerate(spec.inputs) if not inp.scalar]
    return len({_root_of(spec, i) for i in tensor_inputs}) < len(tensor_inputs)


def _output_aliases(spec: ProgramSpec) -> bool:
    views = {o for s in spec.body if s.op == "view" for o in s.outs}
    inputs = {f"a{i}" for i in range(len(spec.inputs))}
    return any(o.kind == "ref" and o.ref in views | inputs for o in spec.outputs)


def _ops(spec: ProgramSpec) -> set[str]:
    return {s.op for s in spec.body}


# The structure each family forces: what makes its wrapper fire. (input_mutation's forced
# mutation is checked separately below.)
FORCED: dict[str, Callable[[ProgramSpec], bool]] = {
    "dedupe": lambda s: any(i.kind == "dup" for i in s.inputs),
    "synthetic_base": _aliased_inputs,
    "input_mutation": lambda s: len(s.inputs) >= 1,
    "output_aliasing": _output_aliases,
    "subclass": lambda s: any(r.subclass in SUBCLASSES for r in s.roots),
    "later_aliasing": lambda s: "plan/aliased_later/mutate_read" in spec_paths(s),
    "effects": lambda s: bool(
        _ops(s) & {"aten_print", "print_hop", "effect_op", "graph_break", "print"}
    ),
    "rng": lambda s: bool(_ops(s) & {"rand_like", "randn_like", "dropout", "bernoulli"}),
    "autograd_function": lambda s: bool(s.functions) and "apply_fn" in _ops(s),
    "module": lambda s: s.module is not None and bool(s.module.params),
    "cudagraph": lambda s: s.plan.mode == "reduce-overhead" and s.plan.calls >= 2,
}


@pytest.mark.parametrize("name", EXPECTED_FAMILIES)
def test_each_family_strategy_produces_its_family_and_structure(name: str) -> None:
    @settings(
        max_examples=25,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=SUPPRESS,
    )
    @given(st.data())
    def sample(data: st.DataObject) -> None:
        for spec in (data.draw(family_factory(name)()), data.draw(programs(wrappers=[name]))):
            assert spec.family == name
            assert FORCED[name](spec), spec

    sample()


def _mutates_an_input(spec: ProgramSpec) -> bool:
    inputs = {f"a{i}" for i in range(len(spec.inputs))}
    return any(s.op.endswith("_") and s.args and s.args[0] in inputs for s in spec.body)


def test_every_input_mutation_program_mutates_an_input() -> None:
    try:
        counterexample = find(
            input_mutation_programs(),
            lambda spec: not _mutates_an_input(spec),
            settings=settings(
                max_examples=1000,
                database=None,
                derandomize=True,
                phases=[Phase.generate],
                suppress_health_check=SUPPRESS,
            ),
        )
    except NoSuchExample:
        return
    raise AssertionError(f"an input_mutation program mutates no input: {counterexample}")


# ------------------------------------------------------------------ a user's test (README)


@settings(max_examples=10, database=None, deadline=None, suppress_health_check=SUPPRESS)
@given(synthetic_base_programs())
def test_synthetic_base_programs_pass_aliased_arguments(spec: ProgramSpec) -> None:
    assert spec.family == "synthetic_base"
    program = materialize(spec)
    args = program.make_inputs(0)
    assert len(args) == len(spec.inputs)
    ptrs = {
        i: a.untyped_storage().data_ptr()
        for i, a in enumerate(args)
        if hasattr(a, "untyped_storage") and a.untyped_storage().nbytes() > 0
    }
    shared = [p for p, n in collections.Counter(ptrs.values()).items() if n >= 2]
    assert shared, f"no two arguments share a storage:\n{program.source}"
    # Sharing is what the spec says: two arguments share a storage iff they come from one root.
    for i in ptrs:
        for j in ptrs:
            same_root = _root_of(spec, i) == _root_of(spec, j)
            assert (ptrs[i] == ptrs[j]) == same_root, (i, j, spec.inputs)


@settings(max_examples=10, database=None, deadline=None, suppress_health_check=SUPPRESS)
@given(dedupe_programs())
def test_dedupe_programs_pass_one_tensor_twice(spec: ProgramSpec) -> None:
    args = materialize(spec).make_inputs(0)
    dups = [(i, inp.of) for i, inp in enumerate(spec.inputs) if inp.kind == "dup"]
    assert dups, spec.inputs
    for i, of in dups:
        assert args[i] is args[of]
