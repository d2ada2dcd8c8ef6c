"""Known upstream issues (oracles/upstream.py, Note [Known upstream]): a finding of a row's
shape says which pytorch issue it is; one of another shape says nothing."""

from __future__ import annotations

from typing import Any

import pytest

from oracles.upstream import KNOWN_UPSTREAM, Upstream, known_upstream
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts

_P1 = CallRef("plan", 1)


def _finding(kind: str, d: Difference) -> dict[str, Any]:
    return {"kind": kind, "differences": [d.to_dict()]}


def test_zero_gradients_for_unused_outputs_is_131794() -> None:
    zeros = Difference(
        "grads", "torch.compile", _P1, "grad", "presence", name="a1", expected="None",
        actual="a tensor",
    )  # fmt: skip
    assert known_upstream(_finding("compile-divergence", zeros)) == [131794]
    # a retained (non-leaf) argument's gradient is the stale grad_fn, another bug
    stale = Difference(
        "grads", "torch.compile", _P1, "grad", "presence", name="a1", expected="None",
        actual="a tensor", kind_detail="retained",
    )  # fmt: skip
    assert known_upstream(_finding("compile-divergence", stale)) == []
    assert stale.aspect != zeros.aspect


def test_a_mutated_input_saved_for_backward_is_185497() -> None:
    message = "one of the variables needed for gradient computation has been modified by an "
    message += "inplace operation: [torch.FloatTensor [3]] is at version 2"
    exc = ExcFacts("RuntimeError", message, "backward")
    d = Difference("exceptions", "torch.compile", _P1, "exception", "raised", exc=exc)
    assert known_upstream(_finding("crash", d)) == [185497]
    other = ExcFacts("RuntimeError", "expand: the requested shape has too few dimensions!")
    d = Difference("exceptions", "torch.compile", _P1, "exception", "raised", exc=other)
    assert known_upstream(_finding("crash", d)) == []


def test_rows_name_an_issue() -> None:
    assert len({u.issue for u in KNOWN_UPSTREAM}) == len(KNOWN_UPSTREAM)
    with pytest.raises(ValueError, match="names its issue"):
        Upstream(0, "", "crash", "exception")
    assert known_upstream({"kind": "hang"}) == []
