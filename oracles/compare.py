"""Comparing recorded tensors: metadata, then values, exactly or with Dynamo's tolerance scheme.

Exact: bitwise equal, NaN equal to NaN. Tolerant (a backend that changes numerics): allclose
with torch.testing's per-dtype tolerances; if that fails and a float64 eager reference exists,
the result passes when its error against the reference is at most `multiplier` times eager's own
error (plus a small floor) -- the rule of torch._dynamo.utils.same.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

from pyfy_fuzz.schema.observation import TensorObs

__all__ = [
    "TensorDiff",
    "bitwise_equal",
    "diff_tensor",
    "values_close",
]

_TOL = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values and signs of zero, NaN equal to NaN (same positions), same shape and dtype."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        same = (a == b) & (torch.signbit(a) == torch.signbit(b))
        return bool((same | (a.isnan() & b.isnan())).all())
    if a.is_complex():
        return bitwise_equal(torch.view_as_real(a), torch.view_as_real(b))
    return torch.equal(a, b)


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    d = (a.double() - b.double()).flatten()
    d = d[~d.isnan()]
    return float(d.pow(2).mean().sqrt()) if d.numel() else 0.0


def values_close(
    ref: torch.Tensor, got: torch.Tensor, exact: bool, ref64: torch.Tensor | None = None
) -> bool:
    if exact or not (ref.is_floating_point() and got.is_floating_point()):
        return bitwise_equal(ref, got)
    if ref.shape != got.shape:
        return False
    rtol, atol = _TOL.get(ref.dtype, (1.3e-6, 1e-5))
    if torch.allclose(ref.double(), got.double(), rtol=rtol, atol=atol, equal_nan=True):
        return True
    if ref64 is None or ref64.shape != ref.shape:
        return False
    if (got.isnan() != ref.isnan()).any():
        return False
    multiplier = 3.0 if ref.dtype in (torch.float16, torch.bfloat16) else 2.0
    return _rmse(ref64, got) <= multiplier * _rmse(ref64, ref) + 1e-5


def _stride_differs(ref: TensorObs, got: TensorObs) -> bool:
    if ref.stride is None or got.stride is None or 0 in ref.shape:
        return False
    return any(a != b for a, b, n in zip(ref.stride, got.stride, ref.shape, strict=True) if n > 1)


@dataclass(frozen=True)
class TensorDiff:
    """The first property in which two recorded tensors differ, both sides as JSON data
    (schema.difference.TENSOR_PROPS); the caller says whose tensor it is."""

    prop: str  # type | dtype | shape | stride | storage_offset | inner_names | values
    expected: Any
    actual: Any
    inner: str = ""  # the subclass inner tensor it is of ("a", "a.b"), or ""


def diff_tensor(
    ref: TensorObs,
    got: TensorObs,
    *,
    exact: bool,
    ref64: TensorObs | None = None,
    offset: bool = False,
    strict_meta: bool = False,
) -> TensorDiff | None:
    """What differs between two recorded tensors (None: nothing), metadata before values.

    `strict_meta` (pythonify vs torch.compile) also compares strides of size-0/1 dims;
    `offset` compares storage offsets (for tensors that alias an input)."""
    if ref.type_name != got.type_name:
        return TensorDiff("type", ref.type_name, got.type_name)
    if ref.dtype != got.dtype:
        return TensorDiff("dtype", ref.dtype, got.dtype)
    if ref.shape != got.shape:
        return TensorDiff("shape", list(ref.shape), list(got.shape))
    if (strict_meta and ref.stride != got.stride) or (
        not strict_meta and _stride_differs(ref, got)
    ):
        return TensorDiff("stride", _list(ref.stride), _list(got.stride))
    if (offset or strict_meta) and ref.offset != got.offset:
        return TensorDiff("storage_offset", ref.offset, got.offset)
    if ref.inner or got.inner:
        names = [a for a, _ in ref.inner]
        if names != [a for a, _ in got.inner]:
            return TensorDiff("inner_names", names, [a for a, _ in got.inner])
        ref64_inner = dict(ref64.inner) if ref64 is not None else {}
        for (a, x), (_, y) in zip(ref.inner, got.inner, strict=True):
            d = diff_tensor(x, y, exact=exact, ref64=ref64_inner.get(a), strict_meta=strict_meta)
            if d is not None:
                return replace(d, inner=f"{a}.{d.inner}" if d.inner else a)
        return None
    if ref.values is not None and got.values is not None:
        r64 = ref64.values if ref64 is not None else None
        if not values_close(ref.values, got.values, exact, r64):
            return TensorDiff("values", _brief(ref.values), _brief(got.values))
    return None


def _list(stride: tuple[int, ...] | None) -> list[int] | None:
    return None if stride is None else list(stride)


def _brief(t: torch.Tensor) -> str:
    flat = t.flatten()
    shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in flat[:6].tolist())
    more = ", ..." if flat.numel() > 6 else ""
    return f"[{shown}{more}]"
