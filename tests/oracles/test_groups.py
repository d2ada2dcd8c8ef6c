"""Finding groups (oracles/groups.py, Note [Finding groups]): bugs, torch's own refusals,
metadata -- read off the differences and torch's own message, never our words."""

from __future__ import annotations

from typing import Any

import pytest

from oracles.groups import GROUPS, TORCH_REFUSALS, group_of, is_refusal
from oracles.identity import severity_of, title_of
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts

_P0 = CallRef("plan", 0)


def _crash(message: str, exc_type: str = "AssertionError") -> dict[str, Any]:
    d = Difference(
        "exceptions", "torch.compile", _P0, "exception", "raised", exc=ExcFacts(exc_type, message)
    )
    return {
        "kind": "crash",
        "oracle": "exceptions",
        "subject": "torch.compile",
        "exc_type": exc_type,
        "message": message,
        "differences": [d.to_dict()],
    }


@pytest.mark.parametrize(
    "message",
    [
        "aot_autograd() does not yet handle input mutations on views with different dtypes.",
        "aot_autograd() does not yet handle non-differentiable view input mutations. x",
        "Encountered aliased inputs that are mutated in the graph, but at least one input/output "
        "to the graph is a tensor subclass. This is not supported today.",
    ],
)
def test_torch_refusing_in_its_own_words_is_a_refusal(message: str) -> None:
    case = _crash(message)
    assert group_of(case) == "refusal"
    assert severity_of(case) == 5  # counted apart, not as a crash
    assert "refuses the program" in title_of(case, "aot_eager")


def test_a_crash_in_other_words_is_a_bug() -> None:
    case = _crash("list index out of range", "IndexError")
    assert group_of(case) == "bug" and severity_of(case) == 2
    assert not is_refusal("expand: the requested shape has too few dimensions!")


def test_seq_nr_breaks_are_metadata_and_values_bugs() -> None:
    seq = Difference("seq_nr", "torch.compile", _P0, "seq_nr", "unmapped", note="n")
    values = Difference("outputs", "torch.compile", _P0, "output", "values", 0)
    metadata = {"kind": "compile-divergence", "oracle": "seq_nr", "differences": [seq.to_dict()]}
    assert group_of(metadata) == "metadata"
    assert group_of({**metadata, "differences": [values.to_dict()]}) == "bug"
    assert group_of({"kind": "hang", "oracle": "timeout"}) == "bug"


def test_every_group_is_described() -> None:
    assert list(GROUPS) == ["bug", "refusal", "metadata"] and all(GROUPS.values())
    assert all(p and p == p.strip() for p in TORCH_REFUSALS)


def test_functionalizations_ban_on_internal_overlap_is_a_refusal() -> None:
    """The 10-minute campaign's eb40 entry: unfold(0, 2, 1) written in place, windows that
    really overlap; torch bans it in its own words (a documented refusal, not a crash)."""
    message = (
        "RuntimeError: While executing unfold, functionalization encountered a tensor being "
        "mutated that has internal overlap. When using torch.compile (or running "
        "functionalization directly), this is banned as the behavior is not well defined."
    )
    assert group_of(_crash(message, "BackendCompilerFailed(RuntimeError)")) == "refusal"


def test_a_programs_module_name_is_not_part_of_a_message() -> None:
    """One subclass, one message: the module a program is imported under is per program."""
    from oracles.identity import normalise_message

    a = "Expected return value from <class 'pyfy_program_242a37c694e6bf29.MirrorTensor'>"
    b = "Expected return value from <class 'pyfy_program_0123456789abcdef.MirrorTensor'>"
    assert normalise_message(a) == normalise_message(b)
    assert "pyfy_program" not in normalise_message(a)
