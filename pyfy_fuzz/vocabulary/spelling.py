"""Which public spellings of an aten call torch really has (Note [Spellings] in
pyfy_fuzz/schema/vocabulary.py): a Tensor method or a `torch` function of the op's base name,
called with a recipe's arguments, checked against the aten call itself.

Note [A spelling is checked, not assumed]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A name is no promise: `torch.norm` is a Python function with its own rules, `x.add(2)` wraps
the 2 in a tensor and reaches `add.Tensor` (not `add.Scalar`), `x.real` is a property. A
spelling is recorded only where, for the recipe's arguments,
  - it dispatches the same aten ops as the aten call (a TorchDispatchMode logs both, on one
    self): the same overload, or, for a CompositeImplicitAutograd op, the same decomposition --
    which is all that functionalization, AOTAutograd and Inductor ever see of either;
  - its result is the aten call's on selves of the recipe's first, middle and last shapes, a
    strided self where the recipe runs on one, and a self of each of its dtypes: the same type,
    shape, dtype, strides, storage offset, values (NaN equal to NaN), the same sharing of
    self's storage (a view) and the same identity with self (an in-place op returns self),
    and self the same afterwards (what an in-place op wrote) -- where the aten call gives
    its own result again (one that reads memory it never wrote, segment_reduce with offsets
    past self's end, records no spelling: the derivation would differ from run to run);
  - with a float32 self that requires grad, its result has the same grad_fn type.
Every shape is not run: the kernel is the aten overload's either way (the dispatch log), so
what could differ is the Python binding of the arguments, which the shape does not reach.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pyfy_fuzz.schema.vocabulary import SPELLINGS

__all__ = ["Arguments", "public", "spell", "spellings"]

# self -> the recipe's arguments decoded with that self: (positional, keyword).
Arguments = Callable[[torch.Tensor], tuple[list[Any], dict[str, Any]]]


def public(base: str, spelling: str) -> Callable[..., Any] | None:
    """The public callable of a spelling, if torch has one by the op's base name ("narrow",
    "add_"); private names (`_foo`) are not spellings users write."""
    if base.startswith("_"):
        return None
    owner: Any = torch.Tensor if spelling == "method" else torch
    fn = getattr(owner, base, None)
    if fn is None or isinstance(fn, type) or not callable(fn):
        return None
    return fn  # type: ignore[no-any-return]


def spell(spelling: str, base: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call the op as the spelling writes it: `self.<base>(rest)`, `torch.<base>(args)`, or the
    aten overload `base` names in full ("aten.narrow.default") for "aten"."""
    if spelling == "method":
        return getattr(args[0], base)(*args[1:], **kwargs)
    if spelling == "function":
        return getattr(torch, base)(*args, **kwargs)
    fn: Any = torch.ops
    for part in base.split("."):
        fn = getattr(fn, part)
    return fn(*args, **kwargs)


class _Log(TorchDispatchMode):
    """The aten overloads a call dispatches, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def _pick(out: Any, item: int | None) -> Any:
    if item is None:
        return out
    if not isinstance(out, (list, tuple)) or len(out) <= item:
        return None
    return out[item]


def _geometry(t: torch.Tensor) -> tuple[Any, ...]:
    return (type(t), tuple(t.shape), t.dtype, tuple(t.stride()), t.storage_offset())


def _equal(a: Any, b: Any) -> bool:
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    if _geometry(a) != _geometry(b):
        return False
    try:
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    except AssertionError:
        return False
    return True


def _shares(out: torch.Tensor, self_: torch.Tensor) -> bool:
    if out.numel() == 0 or self_.numel() == 0:
        return False
    return bool(out.untyped_storage().data_ptr() == self_.untyped_storage().data_ptr())


def _same_call(
    spelling: str,
    base: str,
    aten: str,
    argv: Arguments,
    item: int | None,
    make_self: Callable[[], torch.Tensor],
) -> bool:
    """The spelling gives what the aten call gives on a self `make_self` makes (twice: an
    in-place op writes it)."""
    a_self, p_self = make_self(), make_self()
    try:
        want = _pick(spell("aten", aten, *argv(a_self)), item)
    except Exception:  # noqa: BLE001 - not a self the recipe runs on: nothing to compare
        return True
    try:
        got = _pick(spell(spelling, base, *argv(p_self)), item)
    except Exception:  # noqa: BLE001 - the spelling refuses what the aten call takes
        return False
    if not isinstance(want, torch.Tensor):
        return False
    again = _pick(spell("aten", aten, *argv(make_self())), item)
    if not _equal(again, want):  # segment_reduce reading past its offsets: nothing to compare
        return False
    return (
        _equal(got, want)
        and (got is p_self) == (want is a_self)
        and _shares(got, p_self) == _shares(want, a_self)
        and _equal(p_self, a_self)
    )


def _dispatched(spelling: str, base: str, argv: Arguments, self_: torch.Tensor) -> list[str]:
    with _Log() as log:
        spell(spelling, base, *argv(self_))
    return log.ops


def _grad_fn(spelling: str, base: str, argv: Arguments, item: int | None, shape: Any) -> str:
    leaf = torch.linspace(-0.9, 0.9, math.prod(shape)).reshape(shape).requires_grad_()
    try:
        out = _pick(spell(spelling, base, *argv(leaf.clone())), item)
    except Exception as exc:  # noqa: BLE001 - raising alike is alike
        return f"raises {type(exc).__name__}"
    return type(getattr(out, "grad_fn", None)).__name__


def spellings(
    aten: str,
    item: int | None,
    argv: Arguments,
    selves: Iterable[Callable[[], torch.Tensor]],
    first_shape: tuple[int, ...],
) -> tuple[str, ...]:
    """The public spellings of overload `aten` ("aten.narrow.default") that give the aten
    call's results for these arguments (Note [A spelling is checked, not assumed]). `selves`
    make the selves to run on, the first of them plain and of `first_shape`."""
    base = aten.split(".")[1]
    found = [s for s in SPELLINGS if public(base, s) is not None]
    if not found:
        return ()
    makers = list(selves)
    try:
        reference = _dispatched("aten", aten, argv, makers[0]())
    except Exception:  # noqa: BLE001 - a recipe the mode cannot replay: keep the aten one
        return ()
    grad = _grad_fn("aten", aten, argv, item, first_shape)
    out = []
    for s in found:
        try:
            if _dispatched(s, base, argv, makers[0]()) != reference:
                continue
        except Exception:  # noqa: BLE001 - the spelling refuses the arguments
            continue
        if not all(_same_call(s, base, aten, argv, item, make) for make in makers):
            continue
        if _grad_fn(s, base, argv, item, first_shape) == grad:
            out.append(s)
    return tuple(out)
