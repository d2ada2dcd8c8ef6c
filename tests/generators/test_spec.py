"""ProgramSpec as data: JSON round-trips exactly, and malformed JSON is refused by field.

A spec is what a corpus stores and a later version replays, so `to_json`/`from_json` must be
lossless for everything the strategies generate, and a broken file must fail with a
`SpecError` whose message points at the offending field (not with a TypeError from deep
inside the constructor).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from generators import (
    SPEC_VERSION,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    SpecError,
    Stmt,
    programs,
    spec_from_dict,
)

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

SMALL = ProgramSpec(
    family="input_mutation",
    roots=(RootSpec((2, 3)),),
    inputs=(InputSpec("root"),),
    body=(Stmt("sin", ("a0",), ("v0",)),),
    outputs=(OutSpec("ref", ref="v0"),),
)


def small_dict() -> dict[str, Any]:
    """A fresh, mutable JSON dict of the small valid spec."""
    return json.loads(SMALL.to_json())


# ------------------------------------------------------------------ round trips


@SETTINGS
@given(programs())
def test_generated_specs_round_trip_through_json(spec: ProgramSpec) -> None:
    text = spec.to_json()
    assert ProgramSpec.from_json(text) == spec
    assert spec_from_dict(json.loads(text)) == spec
    # Equal specs must also hash equal: specs are used as dict keys and set members.
    assert hash(ProgramSpec.from_json(text)) == hash(spec)
    # Serialisation is canonical: a re-serialised spec gives the same text.
    assert ProgramSpec.from_json(text).to_json() == text


@SETTINGS
@given(programs())
def test_size_is_four_non_negative_ints(spec: ProgramSpec) -> None:
    size = spec.size()
    assert isinstance(size, tuple)
    assert len(size) == 4
    assert all(type(n) is int and n >= 0 for n in size), size
    assert size[0] == len(spec.inputs)
    assert size[1] == len(spec.body)
    assert size[3] == len(spec.outputs)


def test_small_spec_round_trips_and_has_expected_size() -> None:
    assert small_dict()["version"] == SPEC_VERSION
    assert ProgramSpec.from_json(SMALL.to_json()) == SMALL
    assert spec_from_dict(small_dict()) == SMALL
    assert SMALL.size() == (1, 1, 6, 1)


def test_round_trip_keeps_nested_tuples() -> None:
    """JSON turns tuples into lists; from_json must turn them back, nested ones included."""
    spec = ProgramSpec(
        family="output_aliasing",
        roots=(RootSpec((4,), layout="strided"),),
        inputs=(InputSpec("root"),),
        body=(Stmt("view", ("a0", "as_strided", (2,), (1,), 1), ("v0",)),),
        outputs=(OutSpec("tuple", items=(OutSpec("ref", ref="v0"), OutSpec("int", value=2))),),
    )
    back = ProgramSpec.from_json(spec.to_json())
    assert back == spec
    assert back.body[0].args[2] == (2,)
    assert isinstance(back.outputs[0].items, tuple)
    assert isinstance(back.outputs[0].items[0], OutSpec)


# ------------------------------------------------------------------ malformed input


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda d: d.pop(key)


def _append_input(inp: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["inputs"].append(inp)


# (edit of the small spec's dict, a substring the message must contain)
MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], None], tuple[str, ...]]] = {
    "wrong version": (_set(("version",), 99), ("version", "99")),
    "no version": (_drop("version"), ("version",)),
    "unknown root field": (_set(("roots", 0, "bogus"), 1), ("roots[0]", "bogus")),
    "missing inputs": (_drop("inputs"), ("inputs",)),
    "bad dtype": (_set(("roots", 0, "dtype"), "float8"), ("roots[0].dtype", "float8")),
    "bad layout": (_set(("roots", 0, "layout"), "diagonal"), ("roots[0].layout",)),
    "negative dim": (_set(("roots", 0, "shape"), [2, -1]), ("roots[0].shape",)),
    "dup of a later input": (
        _append_input({"kind": "dup", "of": 1}),
        ("inputs[1].of",),
    ),
    "root out of range": (_set(("inputs", 0, "root"), 1), ("inputs[0].root",)),
    "bad input kind": (_set(("inputs", 0, "kind"), "alias"), ("inputs[0].kind", "alias")),
    "bad stmt ctx": (_set(("body", 0, "ctx"), "no_autograd"), ("body[0].ctx", "no_autograd")),
    "unknown view field": (
        _set(("inputs", 0, "views"), [{"op": "transpose", "args": [0, 1], "dim": 0}]),
        ("inputs[0].views[0]", "dim"),
    ),
    "unknown nested output field": (
        _set(("outputs", 0), {"kind": "tuple", "items": [{"kind": "none", "x": 1}]}),
        ("outputs[0].items[0]", "x"),
    ),
    "plan not an object": (_set(("plan",), [1, 2]), ("plan",)),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_dict_raises_spec_error_naming_the_field(case: str) -> None:
    edit, needles = MALFORMED[case]
    data = small_dict()
    edit(data)
    with pytest.raises(SpecError) as info:
        spec_from_dict(copy.deepcopy(data))
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))
    # The JSON entry point reports the same error.
    with pytest.raises(SpecError) as via_json:
        ProgramSpec.from_json(json.dumps(data))
    assert str(via_json.value) == str(info.value)


@pytest.mark.parametrize("text", ["", "{", "not json", "{'single': 'quotes'}"])
def test_text_that_is_not_json_raises_spec_error(text: str) -> None:
    with pytest.raises(SpecError, match="not JSON"):
        ProgramSpec.from_json(text)


@pytest.mark.parametrize("top", [[], [1, 2], "spec", 3, None])
def test_top_level_that_is_not_an_object_raises_spec_error(top: Any) -> None:
    with pytest.raises(SpecError, match="expected an object") as info:
        ProgramSpec.from_json(json.dumps(top))
    assert type(top).__name__ in str(info.value)
    with pytest.raises(SpecError, match="expected an object"):
        spec_from_dict(top)


# Wrongly typed containers and indices (they used to escape as TypeError).
TYPE_ERROR_ESCAPES = {
    "roots not a list": _set(("roots",), 5),
    "shape not a list": _set(("roots", 0, "shape"), 5),
    "root index a string": _set(("inputs", 0, "root"), "0"),
    "views not a list": _set(("inputs", 0, "views"), 3),
    "output items not a list": _set(("outputs", 0, "items"), 3),
}


@pytest.mark.parametrize("case", sorted(TYPE_ERROR_ESCAPES))
def test_wrongly_typed_containers_raise_spec_error(case: str) -> None:
    data = small_dict()
    TYPE_ERROR_ESCAPES[case](data)
    with pytest.raises(SpecError):
        spec_from_dict(data)
