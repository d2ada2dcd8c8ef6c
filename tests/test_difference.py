"""Differences as data (Note [Differences are data], pyfy_fuzz/schema/difference.py): every
stage after the oracles reads fields, never the English; these pin what the fields promise."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyfy_fuzz.schema.difference import (
    LOCI,
    PROPS,
    CallRef,
    Difference,
    ExcFacts,
    describe,
    role,
)
from pyfy_fuzz.schema.finding import Finding

_NAMES = st.sampled_from(["a0", "a1", "a12._base", "self.p0", "self.b3"])
_JSON = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
)


@st.composite
def calls(draw: st.DrawFn) -> CallRef:
    kind = draw(st.sampled_from(["plan", "variant", "sequence", "probe", "setup"]))
    if kind == "probe":
        return CallRef("probe", probe=draw(st.sampled_from(["in-place", "version", "saved"])))
    if kind in ("variant", "sequence"):
        return CallRef(
            kind,
            draw(st.integers(0, 3)) if kind == "sequence" else 0,
            relation=draw(st.sampled_from(["shape", "aliasing", "overlap+nonleaf"])),
            recompiled=draw(st.booleans()),
            accepted=draw(st.booleans()),
        )
    return CallRef(kind, draw(st.integers(0, 3)) if kind == "plan" else 0)


@st.composite
def differences(draw: st.DrawFn) -> Difference:
    locus = draw(st.sampled_from(LOCI))
    prop = draw(st.sampled_from(PROPS[locus]))
    exc = None
    if locus == "exception":
        exc = ExcFacts(draw(st.sampled_from(["RuntimeError", "AssertionError"])), "m", "call")
    return Difference(
        oracle=draw(st.sampled_from(["outputs", "mutation", "grads", "guards"])),
        subject=draw(st.sampled_from(["torch.compile", "pythonify"])),
        call=draw(calls()),
        locus=locus,
        prop=prop,
        index=draw(st.integers(0, 4)),
        name=draw(_NAMES),
        expected=draw(_JSON),
        actual=draw(_JSON),
        exc=exc,
        note="seen" if locus in ("seq_nr", "cudagraph_skip", "guard") else "",
    )


@given(differences())
def test_json_round_trip(d: Difference) -> None:
    """case.json stores differences: what is written is read back equal."""
    text = json.dumps(d.to_dict())
    assert Difference.from_dict(json.loads(text)) == d


@given(differences(), st.integers(0, 9))
def test_aspect_names_no_value_index_or_call(d: Difference, index: int) -> None:
    """The identity's aspect is the same whichever call, output index, argument number or
    actual value the program happened to show it with."""
    other = replace(
        d,
        call=CallRef("plan", index),
        index=index,
        name=re.sub(r"\d+", str(index), d.name),
        actual="something else",
        note="other words",
    )
    assert other.aspect == d.aspect


def test_aspects_of_one_gradient_are_one() -> None:
    """A stale grad_fn shows as wrong values, a None gradient, or wrong values after the
    second backward -- one cause, one aspect (issue 27: four entries for one bug)."""
    call = CallRef("plan", 1)
    seen = {
        Difference("grads", "torch.compile", call, "grad", "values", name="a1").aspect,
        Difference("grads", "torch.compile", call, "grad", "presence", name="a0").aspect,
        Difference("grads", "torch.compile", call, "grad2", "values", name="a2").aspect,
    }
    assert seen == {"grad of <arg>"}
    # a retained gradient (an argument that is no leaf: retain_grad) is another cause
    retained = Difference(
        "grads", "torch.compile", call, "grad", "values", name="a1", kind_detail="retained"
    )
    assert retained.aspect == "grad of <arg> (retained)"


def test_metadata_aspect_keeps_the_reference_side() -> None:
    """Which way metadata went wrong names the bug: a leaf that became a graph node is not
    a graph node that became a leaf."""
    call = CallRef("plan", 0)
    a = Difference("autograd", "torch.compile", call, "output", "is_leaf", 0, expected=True)
    b = Difference("autograd", "torch.compile", call, "output", "is_leaf", 0, expected=False)
    assert a.aspect != b.aspect


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"locus": "nowhere", "prop": "values"}, "unknown locus"),
        ({"locus": "output", "prop": "grad_mode", "index": 0}, "no property"),
        ({"locus": "output", "prop": "values"}, "names its index"),
        ({"locus": "grad", "prop": "values"}, "names its tensor"),
        ({"locus": "exception", "prop": "raised"}, "records the exception"),
    ],
)
def test_invariants(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Difference("outputs", "torch.compile", CallRef("plan", 0), **fields)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"kind": "probe"}, "names its probe"),
        ({"kind": "plan", "probe": "saved"}, "names its probe"),
        ({"kind": "variant", "index": 2}, "only plan and sequence"),
        ({"kind": "plan", "relation": "shape"}, "only variant and sequence"),
        ({"kind": "later"}, "unknown call kind"),
    ],
)
def test_call_invariants(call: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CallRef(**call)


def test_role() -> None:
    assert role("a3") == "<arg>"
    assert role("a3._base") == "<arg>._base"
    assert role("self.p0") == "self.<param>"
    assert role("float64") == "float64"


@given(differences())
def test_described_in_one_line_with_the_call(d: Difference) -> None:
    text = describe(d)
    assert "\n" not in text
    if d.call.kind not in ("setup", "probe") and d.locus != "later":
        assert text.startswith(d.call.label())


def test_finding_keeps_every_difference_past_the_shown_ones() -> None:
    """An explanation shows six; the finding keeps all (a fold reads all of them)."""
    diffs = tuple(
        Difference("outputs", "torch.compile", CallRef("plan", 0), "output", "values", j)
        for j in range(9)
    )
    f = Finding("compile-divergence", "outputs", "torch.compile", (), "", differences=diffs)
    g = Finding.from_dict(json.loads(json.dumps(f.to_dict())))
    assert g.differences == diffs
    assert "... and 3 more" in Finding.explain("torch.compile", diffs)


def test_an_oracle_finding_records_differences() -> None:
    with pytest.raises(ValueError, match="records its differences"):
        Finding("compile-divergence", "outputs", "torch.compile", (), "words only")
    Finding("hang", "timeout", "torch.compile", (), "")  # a campaign's own: none to record


def test_crash_name_does_not_depend_on_the_oracle() -> None:
    """One exception met by the exceptions oracle and by the guards oracle is one directory."""
    exc = CallRef("plan", 0)
    d = Difference(
        "exceptions", "torch.compile", exc, "exception", "raised", exc=ExcFacts("E", "m")
    )
    made = [
        Finding(
            "crash", oracle, "torch.compile", (), "", "RuntimeError", message="m", differences=(d,)
        )
        for oracle in ("exceptions", "guards")
    ]
    assert made[0].signature == made[1].signature
    assert made[0].signature.startswith("crash.RuntimeError.")


def test_runtime_error_frame_is_not_identity() -> None:
    """Note [Which frame names a crash]: a C++ RuntimeError's innermost Python frame is the
    path that reached the kernel; a Python-raised error's frame is where torch raised it."""
    d = Difference(
        "exceptions",
        "torch.compile",
        CallRef("plan", 0),
        "exception",
        "raised",
        exc=ExcFacts("E", "m"),
    )

    def crash(exc_type: str, frame: str) -> Finding:
        return Finding(
            "crash", "exceptions", "torch.compile", (), "", exc_type, message="m", frame=frame,
            differences=(d,),
        )  # fmt: skip

    assert (
        crash("RuntimeError", "torch/a.py:f").coarse == crash("RuntimeError", "torch/b.py:g").coarse
    )
    assert (
        crash("BackendCompilerFailed(RuntimeError)", "torch/a.py:f").coarse
        == crash("BackendCompilerFailed(RuntimeError)", "torch/b.py:g").coarse
    )
    assert crash("IndexError", "torch/a.py:f").coarse != crash("IndexError", "torch/b.py:g").coarse


def test_a_seq_nr_break_is_one_entry_per_mapping_kind() -> None:
    """Metadata: which wrappers a program went through does not change which rule its graphs
    break, so the paths are not part of a seq_nr finding's identity (the 10-minute campaign
    saved one view-replay break twice, by paths alone)."""
    d = Difference(
        "seq_nr", "torch.compile", CallRef("plan", 0), "seq_nr", "unmapped",
        kind_detail="view replay", note="n",
    )  # fmt: skip
    made = [
        Finding("compile-divergence", "seq_nr", "torch.compile", paths, "", differences=(d,))
        for paths in (("runtime/output/is_input",), ("runtime/output/alias_of_input",))
    ]
    assert made[0].signature == made[1].signature and made[0].identity_paths == ()
