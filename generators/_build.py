"""The program builder: draws roots, inputs and statements while tracking eager's rules.

A `Builder` holds the abstract state (`_model.Val` per name) and a Hypothesis `draw`. Every
choice is a draw whose smallest value is the simplest option (float32, contiguous, one
element, no grad, fewer statements), so Hypothesis shrinks specs toward small, plain programs.
Statements live in `_stmts.py`; this module makes roots, inputs and views.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from ._model import (
    FLOATS,
    Geometry,
    Val,
    numel,
    root_geometry,
    view_geometry,
)
from ._spec import (
    CallPlan,
    FunctionSpec,
    InputSpec,
    ModuleSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
    ViewStep,
)

Draw = Callable[[st.SearchStrategy[Any]], Any]
# A drawn view's arguments, its geometry (None where unknown) and its shape.
_ViewArgs = tuple[tuple[Any, ...], Geometry | None, tuple[int, ...]]

# view(dtype) partners: the same element size, so a view keeps its geometry (pytorch#194747:
# aliased arguments of two dtypes over one storage, one mutated).
DTYPE_PARTNER = {
    "float64": "int64",
    "int64": "float64",
    "float16": "bfloat16",
    "bfloat16": "float16",
}

# Index 0 is what shrinking reaches; the table's repeats set the odds.
_DTYPE_TABLE = (
    ("float32",) * 12 + ("float64",) * 3 + ("float16", "bfloat16") + ("int64",) * 2 + ("bool",)
)


@dataclass
class Profile:
    """How a family biases the builder: statement-group weights and forced structure."""

    family: str
    weights: dict[str, int]
    max_inputs: int = 3
    max_ops: int = 5
    float_only: bool = False
    allow_grad_inputs: bool = True
    frontend: str = "dynamo"
    mode: str | None = None
    min_calls: int = 1


@dataclass
class Builder:
    draw: Draw
    profile: Profile
    roots: list[RootSpec] = field(default_factory=list)
    inputs: list[InputSpec] = field(default_factory=list)
    body: list[Stmt] = field(default_factory=list)
    outputs: list[OutSpec] = field(default_factory=list)
    functions: list[FunctionSpec] = field(default_factory=list)
    module: ModuleSpec | None = None
    vals: dict[str, Val] = field(default_factory=dict)
    # The Python number arguments, by name (Note [Scalar arguments] in _stmts_scalar.py).
    scalars: dict[str, int | float] = field(default_factory=dict)
    root_vals: list[Val] = field(default_factory=list)
    grad_on: bool = True
    # Inside an inference_mode block the context axis drew (Note [The context axis]).
    inference_on: bool = False
    grad_toggled: bool = False
    # The variant call a family asks for itself, in place of a drawn one (_later_aliasing).
    later: str | None = None
    backward: bool = True
    saved_families: set[int] = field(default_factory=set)
    dup_names: set[str] = field(default_factory=set)
    _ids: Any = field(default_factory=itertools.count)
    _nv: int = 0

    # ------------------------------------------------------------------ small draws

    def integer(self, lo: int, hi: int) -> int:
        return int(self.draw(st.integers(lo, hi)))

    def chance(self, one_in: int) -> bool:
        """True with probability 1/one_in; shrinks to False."""
        return self.integer(0, one_in - 1) == one_in - 1

    def pick(self, options: list[Any] | tuple[Any, ...]) -> Any:
        return options[self.integer(0, len(options) - 1)]

    def new_id(self) -> int:
        return int(next(self._ids))

    def fresh_name(self) -> str:
        name = f"v{self._nv}"
        self._nv += 1
        return name

    def dim(self) -> int:
        if self.chance(20):
            return 0
        return self.integer(1, 4)

    def dtype(self) -> str:
        if self.profile.float_only:
            return "float32" if not self.chance(6) else "float64"
        return str(self.pick(_DTYPE_TABLE))

    # ------------------------------------------------------------------ roots

    def add_root(
        self,
        *,
        ndim_min: int = 0,
        dtype: str | None = None,
        grad: str | None = None,
        layout: str | None = None,
        subclass: str | None = None,
        nonempty: bool = False,
        shape: tuple[int, ...] | None = None,
    ) -> Val:
        if shape is None:
            ndim = self.integer(ndim_min, max(ndim_min, 3))
            # Wrapper subclasses need inner tensors with equal strides; empty ones may differ.
            nonempty = nonempty or subclass is not None
            shape = tuple(self.integer(1, 4) if nonempty else self.dim() for _ in range(ndim))
        ndim = len(shape)
        dtype = dtype or ("float32" if subclass else self.dtype())
        if layout is None:
            layouts = ["contiguous"]
            if ndim >= 1 and not subclass:
                layouts += ["strided", "offset", "expanded"]
            if ndim >= 2 and not subclass:
                layouts.append("transposed")
            layout = "contiguous" if not self.chance(3) else self.pick(layouts)
        if grad is None:
            grad = "none"
            if dtype in FLOATS and self.profile.allow_grad_inputs:
                grad = self.pick(("none", "leaf", "nonleaf"))
        if dtype not in FLOATS:
            grad = "none"
        if subclass and grad == "nonleaf":
            grad = "leaf"
        spec = RootSpec(shape=shape, dtype=dtype, layout=layout, grad=grad, subclass=subclass)
        self.roots.append(spec)
        val = self._root_val(spec)
        self.root_vals.append(val)
        event(f"input layout: {layout}")
        event(f"input dtype: {dtype}")
        return val

    def add_twin(self, index: int) -> Val:
        """Another root exactly like root `index` (shape, dtype, layout, grad): the aliasing
        variant call passes one tensor for both, which only Dynamo's duplicate-input guard
        (and the file's aliasing guard) tells apart -- every other guard still passes."""
        spec = self.roots[index]
        self.roots.append(spec)
        val = self._root_val(spec)
        self.root_vals.append(val)
        event("input: twin of another root (for the aliasing variant)")
        return val

    def _root_val(self, r: RootSpec) -> Val:
        shape = r.shape
        geom, storage_numel = root_geometry(r)
        rg = r.grad != "none"
        return Val(
            name=f"root{len(self.roots) - 1}",
            dtype=r.dtype,
            geom=geom,
            shape=shape,
            storage=self.new_id(),
            storage_numel=storage_numel,
            family=self.new_id(),
            requires_grad=rg,
            is_leaf=r.grad != "nonleaf",
            is_view=r.grad == "nonleaf" and r.layout != "contiguous",
            subclass=r.subclass,
            overlapping=geom.self_overlaps(),
        )

    # ------------------------------------------------------------------ inputs

    def _bind_input(self, spec: InputSpec, val: Val) -> Val:
        name = f"a{len(self.inputs)}"
        self.inputs.append(spec)
        val = replace(val, name=name, input_index=len(self.inputs) - 1)
        self.vals[name] = val
        return val

    def input_root(self, root: Val) -> Val:
        return self._bind_input(InputSpec("root", root=self.root_vals.index(root)), root)

    def input_view(self, root: Val, max_steps: int = 2, as_dtype: bool = False) -> Val:
        """Views of root (one or two); `as_dtype`: then read as the partner dtype, where the
        dtype has one and nothing requires grad (the same draws either way, so shrinking can
        drop the dtype view)."""
        steps: list[ViewStep] = []
        val = root
        for _ in range(self.integer(1, max_steps)):
            step = self.view_step(val, allow_as_strided=True)
            if step is None:
                break
            steps.append(step[0])
            val = step[1]
        if as_dtype and val.dtype in DTYPE_PARTNER and not val.requires_grad and not val.subclass:
            step_ = ViewStep("view_dtype", (DTYPE_PARTNER[val.dtype],))
            steps.append(step_)
            val = self.view_val(val, step_.op, step_.args, val.geom, val.shape)
            event("aim: inputs/dtype_aliases")
        if not steps:  # no legal view: pass the root itself
            return self.input_root(root)
        spec = InputSpec("view", root=self.root_vals.index(root), views=tuple(steps))
        return self._bind_input(spec, val)

    def input_dup(self, of: Val) -> Val:
        assert of.input_index is not None
        self.dup_names.update({of.name, f"a{len(self.inputs)}"})
        event("input: duplicated argument")
        return self._bind_input(InputSpec("dup", of=of.input_index), of)

    def input_set_shared(self, root: Val) -> Val | None:
        """A tensor set_ onto root's storage: shares memory, no _base, own version counter."""
        if root.subclass or root.storage_numel == 0:
            return None
        size, stride, offset = self._strided_window(root.storage_numel)
        geom = Geometry(size, stride, offset)
        val = replace(
            root,
            geom=geom,
            shape=size,
            family=self.new_id(),
            requires_grad=False,
            is_leaf=True,
            is_view=False,
            view_of_leaf_rg=False,
            overlapping=geom.self_overlaps(),
        )
        step = ViewStep("as_strided", (size, stride, offset))
        event("input: storage shared through set_")
        spec = InputSpec("set_shared", root=self.root_vals.index(root), views=(step,))
        return self._bind_input(spec, val)

    def input_window(
        self, root: Val, size: tuple[int, ...], stride: tuple[int, ...], offset: int
    ) -> Val:
        """An argument that is root.as_strided(size, stride, offset): a window of its storage."""
        step = ViewStep("as_strided", (size, stride, offset))
        val = self.view_val(root, step.op, step.args, Geometry(size, stride, offset), size)
        spec = InputSpec("view", root=self.root_vals.index(root), views=(step,))
        return self._bind_input(spec, val)

    def input_scalar(self, kind: str = "int") -> str:
        """A Python number argument (Note [Scalar arguments] in _stmts_scalar.py): an int
        0..3, or a float of a few exact binary fractions (a value's rounding is not what
        the axis tests); its name."""
        name = f"a{len(self.inputs)}"
        value: int | float
        if kind == "float":
            value = self.pick((1.5, 0.5, -2.25, 3.0))
        else:
            value = self.integer(0, 3)
        self.inputs.append(InputSpec(kind, value=value))
        self.scalars[name] = value
        event(f"input: a Python {kind}")
        return name

    def _strided_window(self, storage_numel: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """A size/stride/offset that fits in a storage of `storage_numel` elements."""
        if storage_numel == 0:
            return (0,), (1,), 0
        offset = self.integer(0, storage_numel - 1)
        room = storage_numel - offset
        if self.chance(2) or room < 4:
            n = self.integer(1, room)
            return (n,), (1,), offset
        cols = self.integer(1, 2)
        rows = max(1, room // (cols + self.integer(0, 1)))
        rows = min(rows, self.integer(1, rows))
        stride0 = max(1, (room - cols) // max(rows - 1, 1)) if rows > 1 else 1
        stride0 = min(stride0, self.integer(1, max(1, stride0)))
        return (rows, cols), (stride0, 1), offset

    # ------------------------------------------------------------------ views

    def view_step(self, v: Val, allow_as_strided: bool = False) -> tuple[ViewStep, Val] | None:
        """One legal view of v, with the view's value (name unset)."""
        options = []
        if v.ndim >= 1:
            options += ["slice", "select"]
        if v.ndim >= 2:
            options += ["transpose"]
        options += ["unsqueeze", "reshape"]
        if 1 in v.shape:
            options += ["squeeze", "expand"]
        if v.ndim == 2:
            options.append("diagonal")
        if allow_as_strided and v.geom is not None and not v.subclass:
            options.append("as_strided")
        if any(v.shape):
            options.append("unfold")  # windows that overlap where the step is below the size
        if v.dtype in DTYPE_PARTNER and not v.requires_grad and not v.subclass:
            options.append("view_dtype")  # the same bytes as another dtype
        op = self.pick(options)
        step = self._view_args(v, op)
        if step is None:
            return None
        args, geom, shape = step
        if op in ("as_strided", "unfold", "view_dtype", "diagonal", "expand"):
            event(f"view: {op}")
        return ViewStep(op, args), self.view_val(v, op, args, geom, shape)

    def offset_slice(self, v: Val, d: int) -> tuple[ViewStep, Val]:
        """v[1:] along dim d (of size >= 2): a view whose storage offset is past v's."""
        n = v.shape[d]
        shape = v.shape[:d] + (n - 1,) + v.shape[d + 1 :]
        g = v.geom
        geom = None if g is None else Geometry(shape, g.stride, g.offset + g.stride[d])
        args = (d, 1, n, 1)
        return ViewStep("slice", args), self.view_val(v, "slice", args, geom, shape)

    def view_val(
        self,
        v: Val,
        op: str,
        args: tuple[Any, ...],
        geom: Geometry | None,
        shape: tuple[int, ...],
    ) -> Val:
        """The value of view `op(args)` of v, as eager makes it in the current grad mode."""
        rg = v.requires_grad and self.grad_on
        val = replace(
            v,
            dtype=str(args[0]) if op == "view_dtype" else v.dtype,
            geom=geom,
            shape=shape,
            is_view=True,
            requires_grad=v.requires_grad if self.grad_on else False,
            is_leaf=not rg,
            view_of_leaf_rg=v.view_of_leaf_rg or (v.is_leaf and v.requires_grad),
            no_grad_view=v.no_grad_view or (v.requires_grad and not self.grad_on),
            overlapping=v.overlapping
            or (geom is None and op == "expand")
            or (geom is not None and geom.self_overlaps()),
            input_index=None,
            param=False,
        )
        return val

    def _view_args(self, v: Val, op: str) -> _ViewArgs | None:
        """Draw view `op`'s arguments on v: the arguments, the view's geometry (None where v's
        is unknown) and its shape; None where the drawn view is not legal on v."""
        draw = {
            "slice": self._slice_args,
            "select": self._select_args,
            "transpose": self._transpose_args,
            "unsqueeze": self._unsqueeze_args,
            "squeeze": self._squeeze_args,
            "expand": self._expand_args,
            "diagonal": self._diagonal_args,
            "reshape": self._reshape_args,
            "as_strided": self._as_strided_args,
            "unfold": self._unfold_args,
            "view_dtype": self._view_dtype_args,
        }.get(op)
        if draw is None:
            raise AssertionError(op)
        return draw(v)

    def _slice_args(self, v: Val) -> _ViewArgs:
        g, shape = v.geom, v.shape
        d = self.integer(0, v.ndim - 1)
        n = shape[d]
        start = self.integer(0, n - 1) if n else 0
        # Mostly non-empty: an empty slice aliases nothing.
        stop = (start if self.chance(10) else self.integer(start + 1, n)) if n else 0
        step = self.integer(1, 2)
        size = len(range(start, stop, step))
        new_shape = shape[:d] + (size,) + shape[d + 1 :]
        if g is None:
            return (d, start, stop, step), None, new_shape
        stride = g.stride[:d] + (g.stride[d] * step,) + g.stride[d + 1 :]
        geom = Geometry(new_shape, stride, g.offset + start * g.stride[d])
        return (d, start, stop, step), geom, new_shape

    def _select_args(self, v: Val) -> _ViewArgs | None:
        g, shape = v.geom, v.shape
        d = self.integer(0, v.ndim - 1)
        if shape[d] == 0:
            return None
        i = self.integer(0, shape[d] - 1)
        new_shape = shape[:d] + shape[d + 1 :]
        if g is None:
            return (d, i), None, new_shape
        stride = g.stride[:d] + g.stride[d + 1 :]
        return (d, i), Geometry(new_shape, stride, g.offset + i * g.stride[d]), new_shape

    def _transpose_args(self, v: Val) -> _ViewArgs:
        g, shape = v.geom, v.shape
        d0, d1 = self.integer(0, v.ndim - 1), self.integer(0, v.ndim - 1)
        perm = list(range(v.ndim))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        new_shape = tuple(shape[p] for p in perm)
        if g is None:
            return (d0, d1), None, new_shape
        return (d0, d1), Geometry(new_shape, tuple(g.stride[p] for p in perm), g.offset), new_shape

    def _unsqueeze_args(self, v: Val) -> _ViewArgs:
        g, shape = v.geom, v.shape
        d = self.integer(0, v.ndim)
        new_shape = shape[:d] + (1,) + shape[d:]
        if g is None:
            return (d,), None, new_shape
        inner = g.stride[d] * shape[d] if d < v.ndim else 1
        stride = g.stride[:d] + (inner,) + g.stride[d:]
        return (d,), Geometry(new_shape, stride, g.offset), new_shape

    def _squeeze_args(self, v: Val) -> _ViewArgs:
        g, shape = v.geom, v.shape
        d = self.pick([i for i, n in enumerate(shape) if n == 1])
        new_shape = shape[:d] + shape[d + 1 :]
        if g is None:
            return (d,), None, new_shape
        return (d,), Geometry(new_shape, g.stride[:d] + g.stride[d + 1 :], g.offset), new_shape

    def _expand_args(self, v: Val) -> _ViewArgs:
        g, shape = v.geom, v.shape
        d = self.pick([i for i, n in enumerate(shape) if n == 1])
        new_shape = shape[:d] + (self.integer(2, 3),) + shape[d + 1 :]
        if g is None:
            return new_shape, None, new_shape
        stride = g.stride[:d] + (0,) + g.stride[d + 1 :]
        return new_shape, Geometry(new_shape, stride, g.offset), new_shape

    def _diagonal_args(self, v: Val) -> _ViewArgs:
        g, shape = v.geom, v.shape
        new_shape = (min(shape),)
        if g is None:
            return (), None, new_shape
        return (), Geometry(new_shape, (g.stride[0] + g.stride[1],), g.offset), new_shape

    def _reshape_args(self, v: Val) -> _ViewArgs | None:
        g, shape = v.geom, v.shape
        total = numel(shape)
        candidates = [(total,), shape + (1,), (1,) + shape]
        if v.ndim >= 2:
            candidates.append(shape[:-2] + (shape[-2] * shape[-1],))
        new_shape = self.pick(candidates)
        if g is None:
            return None  # view legality unknown
        new_geom = view_geometry(g, new_shape)
        if new_geom is None:
            return None
        return new_shape, new_geom, new_shape

    def _as_strided_args(self, v: Val) -> _ViewArgs:
        assert v.geom is not None
        w_size, w_stride, w_off = self._strided_window(v.storage_numel)
        return (w_size, w_stride, w_off), Geometry(w_size, w_stride, w_off), w_size

    def _unfold_args(self, v: Val) -> _ViewArgs:
        """Dim d cut into windows of `size` elements, `step` apart."""
        g, shape = v.geom, v.shape
        d = self.pick([i for i, n in enumerate(shape) if n])
        size, step = self.integer(1, shape[d]), self.integer(1, 2)
        new_shape = shape[:d] + ((shape[d] - size) // step + 1,) + shape[d + 1 :] + (size,)
        if g is None:
            return (d, size, step), None, new_shape
        stride = g.stride[:d] + (g.stride[d] * step,) + g.stride[d + 1 :] + (g.stride[d],)
        return (d, size, step), Geometry(new_shape, stride, g.offset), new_shape

    def _view_dtype_args(self, v: Val) -> _ViewArgs:
        """The same element size: the geometry stays."""
        return (DTYPE_PARTNER[v.dtype],), v.geom, v.shape

    # ------------------------------------------------------------------ the result

    def spec(self, plan: CallPlan) -> ProgramSpec:
        return ProgramSpec(
            family=self.profile.family,
            roots=tuple(self.roots),
            inputs=tuple(self.inputs),
            body=tuple(self.body),
            outputs=tuple(self.outputs),
            functions=tuple(self.functions),
            module=self.module,
            plan=plan,
        )
