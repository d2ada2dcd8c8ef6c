"""The abstract tensor model agrees with torch: views, storage elements, overlap, broadcast.

The strategies only emit programs that the model says eager accepts, so every rule it encodes
(`view_geometry` is torch's view stride computation, `Geometry.elements` the storage indices a
strided tensor reads, the root layouts the tensors `make_inputs` builds) is checked here
against real tensors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators import InputSpec, OutSpec, ProgramSpec, RootSpec, materialize
from generators._build import Builder
from generators._families import PROFILES
from generators._model import (
    Geometry,
    Val,
    broadcast,
    contiguous_strides,
    numel,
    overlap,
    view_geometry,
)

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


# ------------------------------------------------------------------ strided tensors


@dataclass(frozen=True)
class Strided:
    """A real strided tensor over a storage of `storage_numel` elements."""

    tensor: torch.Tensor
    storage_numel: int

    @property
    def geom(self) -> Geometry:
        t = self.tensor
        return Geometry(tuple(t.shape), tuple(t.stride()), t.storage_offset())

    def indices(self) -> list[int]:
        """The storage index of every element, read off a real tensor over arange."""
        g = self.geom
        base = torch.arange(self.storage_numel)
        return base.as_strided(g.shape, g.stride, g.offset).reshape(-1).tolist()


@st.composite
def strided_views(draw: st.DrawFn, base: torch.Tensor | None = None) -> Strided:
    """A view of a contiguous base: a slice with a step per dim, then maybe a transpose, an
    unsqueeze + expand (a stride-0 dim), a select, or an odd stride on a size-1 dim. Empty
    dims are drawn now and then."""
    if base is None:
        ndim = draw(st.integers(0, 3))
        sizes = st.integers(0, 6) if draw(st.integers(0, 9)) == 0 else st.integers(1, 6)
        shape = tuple(draw(sizes) for _ in range(ndim))
        base = torch.empty(shape)
    t = base
    for d in range(t.dim()):
        n = t.shape[d]
        kind = draw(st.integers(0, 3))
        if kind == 0:  # the whole dim: runs of dims stay contiguous
            continue
        start = draw(st.integers(0, n))
        # Kind 1, a size-1 slice: its stride (times the step) is arbitrary, which view ignores.
        stop = min(n, start + 1) if kind == 1 else draw(st.integers(start, n))
        step = draw(st.integers(1, 3))
        t = t[(slice(None),) * d + (slice(start, stop, step),)]
    if t.dim() >= 2 and draw(st.booleans()):
        d0, d1 = draw(st.integers(0, t.dim() - 1)), draw(st.integers(0, t.dim() - 1))
        t = t.transpose(d0, d1)
    if draw(st.integers(0, 3)) == 0:
        d = draw(st.integers(0, t.dim()))
        t = t.unsqueeze(d)
        shape = list(t.shape)
        shape[d] = draw(st.integers(1, 3))
        t = t.expand(shape)
    if t.dim() >= 1 and draw(st.integers(0, 4)) == 0:
        d = draw(st.integers(0, t.dim() - 1))
        if t.shape[d] > 0:
            t = t.select(d, draw(st.integers(0, t.shape[d] - 1)))
    ones = [d for d, n in enumerate(t.shape) if n == 1]
    if ones and draw(st.booleans()):  # a size-1 dim's stride addresses nothing: make it odd
        stride = list(t.stride())
        stride[draw(st.sampled_from(ones))] = draw(st.integers(0, 7))
        t = t.as_strided(t.shape, stride, t.storage_offset())
    return Strided(t, base.numel())


def candidate_shapes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """New shapes with the same numel: flat, split in two, leading/trailing 1s, merged dims."""
    n = numel(shape)
    out = [(n,), (1, n), shape + (1,), (1,) + shape, tuple(reversed(shape)), shape]
    out += [(a, n // a) for a in range(1, n + 1) if n % a == 0]
    if len(shape) >= 2:
        out.append(shape[:-2] + (shape[-2] * shape[-1],))
        out.append((shape[0] * shape[1],) + shape[2:])
    for d, size in enumerate(shape):  # split one dim in two
        for a in range(2, size):
            if size % a == 0:
                out.append(shape[:d] + (a, size // a) + shape[d + 1 :])
    return list(dict.fromkeys(out))


# ------------------------------------------------------------------ view_geometry


@settings(SETTINGS, max_examples=1000)
@given(st.data())
def test_view_geometry_agrees_with_torch_view(data: st.DataObject) -> None:
    x = data.draw(strided_views())
    t = x.tensor
    new_shape = data.draw(st.sampled_from(candidate_shapes(tuple(t.shape))))
    model = view_geometry(x.geom, new_shape)
    try:
        real = t.view(new_shape)
    except RuntimeError:
        assert model is None, (t.shape, t.stride(), new_shape, model)
        return
    assert model is not None, (t.shape, t.stride(), t.storage_offset(), new_shape)
    assert model.shape == tuple(real.shape)
    assert model.offset == real.storage_offset()
    if real.numel() > 0:  # strides of an empty tensor address nothing
        for n, s, w in zip(real.shape, real.stride(), model.stride, strict=True):
            assert n == 1 or s == w, (t.shape, t.stride(), new_shape, real.stride(), model)
        # Same storage indices, in the same order: the view reads what torch's view reads.
        assert Strided(real, x.storage_numel).indices() == _model_indices(model)


def _model_indices(g: Geometry) -> list[int]:
    t = torch.arange(g.extent()).as_strided(g.shape, g.stride, g.offset)
    return t.reshape(-1).tolist()


@pytest.mark.parametrize(
    ("shape", "stride", "new_shape", "ok"),
    [
        ((2, 3), (3, 1), (6,), True),
        ((2, 3), (1, 2), (6,), False),  # transposed: needs a copy
        ((2, 3), (1, 2), (3, 2), False),
        ((2, 3), (1, 2), (2, 3, 1), True),  # adding a size-1 dim is always a view
        ((2, 3), (6, 2), (6,), True),  # rows a whole row apart: one stepped run
        ((2, 3), (7, 2), (6,), False),  # stepped rows and columns
        ((2, 3), (6, 1), (2, 3, 1), True),
        ((4,), (2,), (2, 2), True),  # splitting a strided dim is fine
        ((3, 4), (0, 1), (12,), False),  # expanded
        ((3, 4), (0, 1), (3, 2, 2), True),
        ((2, 1, 3), (3, 99, 1), (6,), True),  # a size-1 dim's stride is irrelevant
    ],
)
def test_view_geometry_known_cases(
    shape: tuple[int, ...], stride: tuple[int, ...], new_shape: tuple[int, ...], ok: bool
) -> None:
    extent = Geometry(shape, stride, 0).extent()
    t = torch.arange(extent).as_strided(shape, stride, 0)
    got = view_geometry(Geometry(shape, stride, 0), new_shape)
    assert (got is not None) == ok
    if ok:
        assert got is not None
        real = t.view(new_shape)
        assert all(
            n == 1 or s == w for n, s, w in zip(new_shape, real.stride(), got.stride, strict=True)
        )
    else:
        with pytest.raises(RuntimeError):
            t.view(new_shape)


def test_view_geometry_refuses_a_different_numel() -> None:
    assert view_geometry(Geometry((2, 3), (3, 1), 0), (5,)) is None
    assert view_geometry(Geometry((2, 3), (3, 1), 0), (7,)) is None


# ------------------------------------------------------------------ elements and overlap


@SETTINGS
@given(strided_views())
def test_elements_are_the_storage_indices_of_a_real_tensor(x: Strided) -> None:
    g = x.geom
    indices = x.indices()
    elements = g.elements()
    assert elements == frozenset(indices)
    assert g.extent() == (max(indices) + 1 if indices else 0)
    assert g.extent() <= x.storage_numel
    assert g.self_overlaps() == (len(set(indices)) < len(indices))
    if x.tensor.numel() > 0:
        assert g.is_contiguous() == x.tensor.is_contiguous()


def test_self_overlaps_expanded_but_not_transposed() -> None:
    expanded = torch.empty(1, 3).expand(4, 3)
    g = Geometry(tuple(expanded.shape), tuple(expanded.stride()), 0)
    assert g.stride == (0, 1)
    assert g.self_overlaps()
    transposed = torch.empty(3, 4).t()
    g = Geometry(tuple(transposed.shape), tuple(transposed.stride()), 0)
    assert g.stride == (1, 4)
    assert not g.self_overlaps()
    assert not g.is_contiguous()
    assert Geometry((3, 4), (4, 1), 0).is_contiguous()


def _val(x: Strided, storage: int) -> Val:
    g = x.geom
    return Val(
        name="x",
        dtype="float32",
        geom=g,
        shape=g.shape,
        storage=storage,
        storage_numel=x.storage_numel,
        family=storage,
    )


@SETTINGS
@given(st.data())
def test_overlap_matches_shared_storage_indices(data: st.DataObject) -> None:
    ndim = data.draw(st.integers(1, 3))
    base = torch.empty(tuple(data.draw(st.integers(1, 5)) for _ in range(ndim)))
    a = data.draw(strided_views(base))
    b = data.draw(strided_views(base))
    shared = bool(set(a.indices()) & set(b.indices()))
    assert overlap(_val(a, 0), _val(b, 0)) == shared
    assert overlap(_val(b, 0), _val(a, 0)) == shared
    # Different storages never overlap, whatever the indices.
    assert not overlap(_val(a, 0), _val(b, 1))


def test_overlap_known_cases() -> None:
    base = torch.empty(4, 4)
    rows = [Strided(base[i], 16) for i in range(4)]
    assert not overlap(_val(rows[0], 0), _val(rows[1], 0))
    assert overlap(_val(rows[2], 0), _val(Strided(base[:, 1], 16), 0))
    evens, odds = Strided(base.view(-1)[::2], 16), Strided(base.view(-1)[1::2], 16)
    assert not overlap(_val(evens, 0), _val(odds, 0))
    assert overlap(_val(evens, 0), _val(Strided(base.diagonal(), 16), 0))


# ------------------------------------------------------------------ broadcast

shapes = st.lists(st.integers(0, 3), max_size=4).map(tuple)


@SETTINGS
@given(shapes, shapes)
def test_broadcast_matches_torch(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    try:
        want: tuple[int, ...] | None = tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        want = None
    assert broadcast(a, b) == want
    assert broadcast(b, a) == want


def test_broadcast_known_cases() -> None:
    assert broadcast((2, 1, 3), (4, 1)) == (2, 4, 3)
    assert broadcast((), (2, 3)) == (2, 3)
    assert broadcast((0,), (1,)) == (0,)
    assert broadcast((2,), (3,)) is None
    assert broadcast((0,), (2,)) is None


# ------------------------------------------------------------------ root layouts

LAYOUT_SHAPES = {
    "contiguous": [(), (3,), (2, 3), (2, 1, 4), (0, 3)],
    "transposed": [(2, 3), (3, 1), (2, 3, 4), (1, 2, 2)],
    "strided": [(3,), (2, 3), (2, 1, 4), (1,)],
    "expanded": [(3,), (1, 3), (4, 2), (3, 2, 2)],
    "offset": [(), (3,), (2, 3), (2, 1, 4)],
}
LAYOUT_CASES = [(layout, s) for layout, ss in LAYOUT_SHAPES.items() for s in ss]


def _model_root(root: RootSpec) -> Val:
    builder = Builder(draw=None, profile=PROFILES["input_mutation"])  # type: ignore[arg-type]
    builder.roots.append(root)
    return builder._root_val(root)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize(("layout", "shape"), LAYOUT_CASES)
def test_root_layout_matches_make_inputs(layout: str, shape: tuple[int, ...], dtype: str) -> None:
    root = RootSpec(shape, dtype=dtype, layout=layout)
    spec = ProgramSpec(
        family="input_mutation",
        roots=(root,),
        inputs=(InputSpec("root"),),
        body=(),
        outputs=(OutSpec("ref", ref="a0"),),
    )
    (t,) = materialize(spec).make_inputs(0)
    model = _model_root(root)
    assert model.geom is not None
    assert tuple(t.shape) == model.shape == model.geom.shape == shape
    # Strides of size-1 dims address nothing (an expanded (1, n) root keeps torch's n there).
    for n, real, modelled in zip(shape, t.stride(), model.geom.stride, strict=True):
        assert n == 1 or real == modelled, (t.stride(), model.geom.stride)
    assert t.storage_offset() == model.geom.offset
    storage = t.untyped_storage()
    assert storage.nbytes() // t.element_size() == model.storage_numel
    assert model.overlapping == (layout == "expanded" and shape[0] > 1)
    assert model.geom.extent() <= model.storage_numel
    assert t.is_contiguous() == (model.geom.is_contiguous() or t.numel() == 0)


def test_root_layouts_cover_every_layout() -> None:
    from generators._spec import LAYOUTS

    assert set(LAYOUT_SHAPES) == set(LAYOUTS)


def test_contiguous_strides_match_torch() -> None:
    for shape in [(), (3,), (2, 3), (2, 0, 3), (4, 1, 2)]:
        assert contiguous_strides(shape) == torch.empty(shape).stride()
    assert math.prod((2, 3, 4)) == numel((2, 3, 4))
