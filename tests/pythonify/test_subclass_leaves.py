"""Note [Subclass leaves across releases] and Note [Optional symbolic leaves]: torch 2.15's
flat layout of dynamic subclasses (inner plain tensors followed by their own symbolic sizes,
outer sizes read from an inner tensor), modelled for every torch. The end-to-end parity runs
on 2.15 (tests/pythonify/test_parity_wrappers.py::test_subclass_dynamic); these pin the
layout logic on whichever torch runs them."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest
import torch

from pyfy_fuzz.pythonify import _compat as C
from pyfy_fuzz.pythonify.errors import PythonifyUnsupported
from pyfy_fuzz.pythonify.meta import PlainMeta, SubclassMeta
from pyfy_fuzz.pythonify.wrappers.source import Emitter
from pyfy_fuzz.pythonify.wrappers.subclass import _slots, _wrapped_leaves, emit_wrap_list

TT = "torch.testing._internal.two_tensor:TwoTensor"


def _two(inner: tuple[bool, ...], *, from_attr: bool) -> SubclassMeta:
    """A 2-d TwoTensor with a symbolic dim 0, its inner tensors' size flags `inner`."""
    plain = PlainMeta(0, size_symbols=inner, stride_symbols=(False, False))
    return SubclassMeta(
        type_path=TT,
        ctx_repr="None",
        attrs=(("a", plain), ("b", plain)),
        outer_size=(None, 3),
        outer_stride=(3, 1),
        arg_count=2 + 2 * sum(inner) + 1,
        included_subclass_symints=True,
        size_from_attr="a" if from_attr else None,
    )


def test_a_torch_without_the_fields_has_no_extra_leaves() -> None:
    old = SimpleNamespace(unwrapped_idx=0)  # torch <= 2.14's PlainTensorMeta
    assert C.plain_symbol_placeholders(old) == ((), ())
    assert C.outer_from_attr(SimpleNamespace()) == (None, None)
    assert PlainMeta(3).arg_count == 1


def test_a_field_of_another_shape_fails_naming_the_wrapper_and_field() -> None:
    odd = SimpleNamespace(size_symbol_placeholders=3, stride_symbol_placeholders=())
    with pytest.raises(PythonifyUnsupported, match=r"PlainTensorMeta\.size_symbol_placeholders"):
        C.plain_symbol_placeholders(odd)
    with pytest.raises(PythonifyUnsupported, match="AOTDispatchSubclassWrapper"):
        C.outer_from_attr(SimpleNamespace(outer_size_from_attr=0))


def test_the_layout_marks_inner_sizes_and_attr_read_outer_sizes_optional() -> None:
    # a, its symbolic dim 0, b, its dim 0, then the outer dim 0 read from `a`: optional
    assert _slots([_two((True, False), from_attr=True)], "outs") == "roroo"
    # without from_attr the outer size is required
    assert _slots([_two((True, False), from_attr=False)], "outs") == "roror"


@pytest.mark.parametrize(
    ("outs", "want"),
    [
        ([torch.ones(1), 3, torch.ones(1), 3, 3], [0, 1, 2, 3, 4]),  # every optional present
        ([torch.ones(1), torch.ones(1)], [0, None, 1, None, None]),  # none present
        ([torch.ones(1), 3, torch.ones(1)], [0, 1, 2, None, None]),  # the first only
    ],
)
def test_optional_leaves_are_decided_left_to_right_as_torch_does(
    outs: list[object], want: list[int | None]
) -> None:
    assert _wrapped_leaves(outs, len(outs), "roroo") == want


def test_a_layout_that_cannot_fit_raises_as_torch_does() -> None:
    with pytest.raises(AssertionError, match="expected between 2 and 5"):
        _wrapped_leaves([torch.ones(1)], 1, "roroo")
    # a tensor where an optional SymInt would be, with too many leaves to skip it
    with pytest.raises(AssertionError, match="could not match"):
        _wrapped_leaves([torch.ones(1)] * 5, 5, "roroo")


def test_the_emitted_wrap_runs_on_either_layout() -> None:
    from torch.testing._internal.two_tensor import TwoTensor

    e = Emitter()
    exprs, rest = emit_wrap_list(e, [_two((True, False), from_attr=True)], "outs", saved=1)
    assert rest == "len(outs) - 1" and "_at = _wrapped_leaves(outs, len(outs) - 1," in e.lines[0]
    a, b, act = torch.randn(2, 3), torch.randn(2, 3), torch.randn(4)
    scope = {
        "_wrapped_leaves": _wrapped_leaves,
        "_T_torch_testing__internal_two_tensor_TwoTensor": TwoTensor,
    }
    code = textwrap.dedent("\n".join(e.lines)) + f"\nresult = {exprs[0]}"
    for outs in ([a, 2, b, 2, 2, act], [a, b, act]):
        ns: dict[str, object] = dict(scope, outs=outs)
        exec(code, ns)  # noqa: S102 - the emitted code, as the file runs it
        result = ns["result"]
        assert isinstance(result, TwoTensor) and result.shape == (2, 3), outs
        assert result.a is a and result.b is b
