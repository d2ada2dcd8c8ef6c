"""An abstract model of eager tensors, so strategies only emit programs eager accepts.

Each named value carries what eager's checks look at: shape, strides and storage (to know
whether a view is legal, whether two tensors overlap, whether an in-place write hits
overlapping memory), dtype, autograd state (leaf, requires grad, created as a view under
no_grad, a custom Function's view output, an inference tensor) and the version-counter
family (views share their base's counter, so a saved tensor's family must not be mutated
before backward). The model never imports torch: it is plain arithmetic on sizes and strides.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from pyfy_fuzz.schema.spec import RootSpec, numel

FLOATS = ("float32", "float64", "float16", "bfloat16")
MAX_ELEMENTS_EXACT = 4096  # above this, overlap is assumed rather than computed
# How a program writes a grad hook it registers on an input: a global function by name, a
# lambda calling it, or a lambda closing over an argument (Note [Hooks on inputs] in pythonify).
HOOK_STYLES = ("named", "lambda", "closure")


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Geometry:
    """Where a tensor's elements live in its storage."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int

    def elements(self) -> frozenset[int] | None:
        """Storage indices touched, or None when too many to enumerate."""
        if numel(self.shape) > MAX_ELEMENTS_EXACT:
            return None
        return frozenset(
            self.offset + sum(i * s for i, s in zip(idx, self.stride, strict=True))
            for idx in itertools.product(*(range(n) for n in self.shape))
        )

    def extent(self) -> int:
        """One past the largest storage index touched (0 for an empty tensor)."""
        if numel(self.shape) == 0:
            return 0
        return (
            self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.stride, strict=True)) + 1
        )

    def self_overlaps(self) -> bool:
        els = self.elements()
        return els is None or len(els) < numel(self.shape)

    def is_contiguous(self) -> bool:
        want = contiguous_strides(self.shape)
        return all(n <= 1 or s == w for n, s, w in zip(self.shape, self.stride, want, strict=True))


def root_geometry(r: RootSpec) -> tuple[Geometry, int]:
    """A root's geometry and its storage's size in elements, as the program's `_root` lays it
    out (layout: contiguous, transposed, every other element, expanded, offset by 3)."""
    shape, n = r.shape, numel(r.shape)
    if r.layout == "transposed":
        base = shape[:-2] + (shape[-1], shape[-2])
        bs = contiguous_strides(base)
        return Geometry(shape, bs[:-2] + (bs[-1], bs[-2]), 0), n
    if r.layout == "strided":
        base = shape[:-1] + (2 * shape[-1],)
        bs = contiguous_strides(base)
        return Geometry(shape, bs[:-1] + (2,), 0), numel(base)
    if r.layout == "expanded":
        base = (1,) + shape[1:]
        bs = contiguous_strides(base)
        return Geometry(shape, (0,) + bs[1:], 0), numel(base)
    if r.layout == "offset":
        return Geometry(shape, contiguous_strides(shape), 3), n + 3
    return Geometry(shape, contiguous_strides(shape), 0), n


def view_geometry(g: Geometry, shape: tuple[int, ...]) -> Geometry | None:
    """The geometry of g.view(shape), or None where torch's view refuses (it would need a copy).

    Same rule as torch's stride computation: the old dims are grouped into chunks that are
    contiguous among themselves, and the new dims must tile each chunk exactly.
    """
    if numel(shape) != numel(g.shape):
        return None
    if numel(shape) == 0 or not g.shape:
        return Geometry(shape, contiguous_strides(shape), g.offset)
    new_stride = [0] * len(shape)
    view_d = len(shape) - 1
    base = g.stride[-1]
    tensor_numel = view_numel = 1
    for d in range(len(g.shape) - 1, -1, -1):
        tensor_numel *= g.shape[d]
        chunk_ends = d == 0 or (g.shape[d - 1] != 1 and g.stride[d - 1] != tensor_numel * base)
        if not chunk_ends:
            continue
        while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
            new_stride[view_d] = view_numel * base
            view_numel *= shape[view_d]
            view_d -= 1
        if view_numel != tensor_numel:
            return None
        if d > 0:
            base, tensor_numel, view_numel = g.stride[d - 1], 1, 1
    if view_d != -1:
        return None
    return Geometry(shape, tuple(new_stride), g.offset)


@dataclass(frozen=True)
class Val:
    """One named value of the program as eager will see it."""

    name: str
    dtype: str
    geom: Geometry | None  # None: strides unknown (a fresh result of a layout-following op)
    shape: tuple[int, ...]
    storage: int  # storage id: equal ids share memory
    storage_numel: int
    family: int  # version-counter id: views and detach() share their source's
    requires_grad: bool = False
    is_leaf: bool = True
    is_view: bool = False
    view_of_leaf_rg: bool = False  # a view of a leaf that requires grad
    no_grad_view: bool = False  # a view made under no_grad of a tensor that requires grad
    custom_view: bool = False  # a view returned by a custom autograd.Function
    inference: bool = False
    subclass: str | None = None
    input_index: int | None = None
    param: bool = False
    overlapping: bool = False  # some element is reachable through two indices

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOATS

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def elements(self) -> frozenset[int] | None:
        return None if self.geom is None else self.geom.elements()


def overlap(a: Val, b: Val) -> bool:
    """Whether a and b may touch a common storage element (conservative when unknown)."""
    if a.storage != b.storage:
        return False
    ea, eb = a.elements(), b.elements()
    if ea is None or eb is None:
        return True
    return bool(ea & eb)


def same_elements(a: Val, b: Val) -> bool:
    return a.storage == b.storage and a.geom is not None and a.geom == b.geom


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for x, y in itertools.zip_longest(reversed(a), reversed(b), fillvalue=1):
        if x != y and 1 not in (x, y):
            return None
        out.append(x if y == 1 else y)
    return tuple(reversed(out))
