"""Derive the op vocabulary from the installed torch: schemas, tags and OpInfo's samples.

Every aten overload is classed by its schema (Note [Op classes] in schema/vocabulary.py). For
each OpInfo whose CPU samples bind to an overload, each sample becomes a recipe: the sample's
input is `self`, the value a generated statement acts on, and the recipe is run with `self`
replaced by a tensor of each shape the generator draws (`SHAPES`), contiguous and strided, in
each of the generator's dtypes, and backward once. What ran is recorded -- the result's shape,
strides, offset and internal overlap, its dtype per input dtype -- and what did not run is never
drawn. So the generator's model of a drawn op is what torch did, not what a list says.

Note [Checked on torch, not assumed]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A schema says `Tensor(a)` for ops that may copy (`reshape`, `contiguous`); a view recipe is kept
for a shape only where its result really shares self's storage, an in-place one only where the
result *is* self with self's shape, a functional one only where the result is fresh memory.
The generator's eager model (`generators/_model.py`) then stays exact for every drawn call.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch

from pyfy_fuzz.schema.spec import DTYPES
from pyfy_fuzz.schema.vocabulary import CLASSES, Recipe, Table, VocabOp, shape_key
from pyfy_fuzz.vocabulary import spelling

__all__ = ["SHAPES", "check_spellings", "classify", "derive"]

# The shapes a generated value may have that a recipe is checked on (generators draw roots of
# up to three dimensions, sizes 1 to 4).
SHAPES: tuple[tuple[int, ...], ...] = tuple(
    s for n in range(4) for s in itertools.product(range(1, 5), repeat=n)
)
_DT = {name: getattr(torch, name) for name in DTYPES}
_NAME = {v: k for k, v in _DT.items()}
_SAMPLES_PER_OP = 6
_RECIPES_PER_OVERLOAD = 3
# Tags that put an op outside what a differential test can compare or compile in one graph.
_SKIP_TAGS = {
    "nondeterministic_seeded": "draws random numbers (the rng statements cover these)",
    "dynamic_output_shape": "a data-dependent output shape (a graph break)",
    "data_dependent_output": "a data-dependent output (a graph break)",
}


class _NotRepeatable(Exception):
    """A recipe whose result is not a function of its arguments (Note [A recipe is
    repeatable])."""


class _Unencodable(Exception):
    """A sample argument of a kind a generated program does not write."""


def classify(schema: torch._C.FunctionSchema, tags: list[Any]) -> str:
    """An overload's class (Note [Op classes]) from its schema and tags."""
    names = {str(t).split(".")[-1] for t in tags}
    writes = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if "inplace_view" in names:
        return "inplace_view"
    if writes and all(a.kwarg_only for a in writes):
        return "out"
    if writes:
        return "inplace"
    if any(r.alias_info is not None for r in schema.returns):
        return "view"
    if "view_copy" in names:
        return "view_inverse"
    return "functional"


def _overloads() -> Iterator[tuple[str, str, Any, torch._C.FunctionSchema]]:
    """(base name, overload name, OpOverload, schema) of every aten overload."""
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        base = schema.name[len("aten::") :]
        overload = schema.overload_name or "default"
        try:
            op = getattr(getattr(torch.ops.aten, base), overload)
        except (AttributeError, RuntimeError):
            continue
        yield base, overload, op, schema


def _encode(x: Any, sample_input: torch.Tensor) -> Any:
    """One sample argument as recipe data (schema/vocabulary.Recipe)."""
    if x is sample_input:
        return "self"
    if isinstance(x, torch.Tensor):
        if x.dtype not in _NAME or x.layout != torch.strided or x.is_complex():
            raise _Unencodable(f"a {x.dtype} tensor")
        if x.is_floating_point():
            if x.shape == sample_input.shape and x.dtype == sample_input.dtype:
                return ("like",)
            return ("t", _NAME[x.dtype], tuple(x.shape))
        if x.numel() > 64:
            raise _Unencodable("a large integer tensor")
        return ("d", _NAME[x.dtype], x.tolist())
    if isinstance(x, torch.dtype):
        if x not in _NAME:
            raise _Unencodable(f"dtype {x}")
        return ("dtype", _NAME[x])
    if isinstance(x, (list, tuple)):
        items = [_encode(v, sample_input) for v in x]
        if all(isinstance(v, tuple) and v[:1] == ("l",) for v in items):
            return ("l", [v[1] for v in items])
        return ("seq", items)
    if isinstance(x, float) and not math.isfinite(x):
        raise _Unencodable("a non-finite float")
    if x is None or isinstance(x, (bool, int, float, str)):
        return ("l", x)
    raise _Unencodable(type(x).__name__)


def _constant(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A constant operand, as a program writes it (generators/_render_body.aten_line)."""
    return torch.linspace(-1, 1, math.prod(shape)).reshape(shape).to(dtype)


def _decode(enc: Any, self_: torch.Tensor) -> Any:
    """A recipe argument as a value, with `self_` as self (its dtype for like-self tensors)."""
    if enc == "self":
        return self_
    tag = enc[0]
    if tag == "like":
        return _constant(tuple(self_.shape), self_.dtype)
    if tag == "t":
        return _constant(tuple(enc[2]), _DT[enc[1]])
    if tag == "d":
        return torch.tensor(enc[2], dtype=_DT[enc[1]])
    if tag == "dtype":
        return _DT[enc[1]]
    if tag == "seq":
        return [_decode(v, self_) for v in enc[1]]
    return enc[1]


@dataclass
class _Probe:
    """One overload and one encoded sample, run on replacement selves."""

    op: Any
    cls: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def call(self, self_: torch.Tensor) -> Any:
        args = [_decode(a, self_) for a in self.args]
        kwargs = {k: _decode(v, self_) for k, v in self.kwargs}
        return self.op(*args, **kwargs)

    def result(self, self_: torch.Tensor) -> tuple[torch.Tensor, int | None] | None:
        """The tensor a statement binds (element 0 of a list), if the call keeps its class's
        promise on this self (Note [Checked on torch, not assumed])."""
        base = self_ if self_._base is None else self_._base
        storage = self_.untyped_storage()
        before = (tuple(self_.shape), storage.data_ptr(), storage.nbytes())
        try:
            out = self.call(self_)
        except Exception:  # noqa: BLE001 - torch refusing a shape is the answer
            return None
        item = None
        if isinstance(out, (list, tuple)):
            if not out or not all(isinstance(t, torch.Tensor) for t in out):
                return None
            out, item = out[0], 0
        if not isinstance(out, torch.Tensor) or out.dtype not in _NAME:
            return None
        if out.layout != torch.strided or type(out) is not torch.Tensor:
            return None
        same = out.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
        if self.cls == "view" and not (same and out is not self_):
            return None
        if self.cls == "inplace" and not (out is self_ and tuple(self_.shape) == before[0]):
            return None
        if self.cls == "inplace_view":
            after = self_.untyped_storage()
            if out is not self_ or (after.data_ptr(), after.nbytes()) != before[1:]:
                return None  # set_ or resize_ onto other memory: stmt_metadata models those
        if self.cls in ("functional", "view_inverse") and (same or out.numel() == 0):
            return None
        return out, item


def _meta(out: torch.Tensor, self_: torch.Tensor, cls: str) -> tuple[Any, ...]:
    """What the model needs of a result (Recipe.outs): a view's or a metadata change's
    geometry in self's storage; a fresh result's shape, or nothing where it is self's shape
    and contiguous (qr's Q has self's shape in column-major strides: the model must not take
    it for contiguous)."""
    if cls in ("view", "inplace_view"):
        overlapping = out.numel() > 1 and torch._debug_has_internal_overlap(out) != 0
        return (tuple(out.shape), tuple(out.stride()), out.storage_offset(), overlapping)
    return () if out.shape == self_.shape and out.is_contiguous() else (tuple(out.shape),)


def _strided(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A non-contiguous tensor of `shape`: every other element of a storage twice as long."""
    full = torch.linspace(-1, 1, 2 * max(math.prod(shape), 1), dtype=torch.float64)
    return full.to(dtype)[::2][: math.prod(shape)].reshape(shape) if shape else full.to(dtype)[0]


def _self(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    n = math.prod(shape)
    return torch.linspace(-0.9, 0.9, n, dtype=torch.float64).to(dtype).reshape(shape)


def _recipe(probe: _Probe, dtype: torch.dtype) -> Recipe | None:
    """The recipe of one probe: the shapes it runs on and what it returns there."""
    outs: dict[str, tuple[Any, ...]] = {}
    strided = True
    item = None
    for shape in SHAPES:
        self_ = _self(shape, dtype)
        got = probe.result(self_)
        if got is None:
            continue
        if not _repeatable(probe, got[0], shape, dtype):
            raise _NotRepeatable
        outs[shape_key(shape)] = _meta(got[0], torch.empty(shape), probe.cls)
        item = got[1]
        if shape and math.prod(shape) > 1 and probe.result(_strided(shape, dtype)) is None:
            strided = False
    if not outs:
        return None
    first = next(s for s in SHAPES if shape_key(s) in outs)
    last = next(s for s in reversed(SHAPES) if shape_key(s) in outs)
    dtypes = {}
    for name, dt in _DT.items():
        # on the first shape and the last: a 0-d self may never reach the kernel (cumprod_ of
        # a bool scalar runs, of a bool vector "not implemented for 'Bool'")
        runs = [probe.result(_self(s, dt)) for s in dict.fromkeys((first, last))]
        kinds = {r[0].dtype for r in runs if r is not None}
        if all(r is not None for r in runs) and len(kinds) == 1:
            dtypes[name] = _NAME[kinds.pop()]
    return Recipe(
        args=probe.args,
        kwargs=probe.kwargs,
        outs=outs,
        dtypes=dtypes,
        strided=strided,
        differentiable=_differentiable(probe, first),
        item=item,
    )


# Note [A recipe is repeatable]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A fresh result must be a function of the call: the oracles compare values, and a value that
# is whatever memory held before would differ between eager and a compile by chance, a false
# alarm. empty_like, new_empty and new_empty_strided return uninitialized memory, and a
# recipe replayed on another self may make an op read past what it wrote (segment_reduce's
# OpInfo offsets point past a self of size 1 to 4). So each shape's call is made again after
# memory of the result's size was filled with a pattern and freed -- the allocator hands that
# block to the second call -- and a recipe whose two results differ (NaN equal to NaN) is not
# kept; an op without a repeatable recipe is left out ("its values are not a function of its
# arguments").


def _repeatable(probe: _Probe, first: torch.Tensor, shape: tuple[int, ...], dtype: Any) -> bool:
    """Note [A recipe is repeatable]."""
    if probe.cls not in ("functional", "view_inverse") or first.numel() == 0:
        return True
    junk = torch.empty(first.untyped_storage().nbytes(), dtype=torch.uint8)
    junk.fill_(0x7F)  # NaN in every float width, large in every integer one
    del junk
    again = probe.result(_self(shape, dtype))
    if again is None or type(again[0]) is not type(first) or again[0].shape != first.shape:
        return False
    try:
        torch.testing.assert_close(again[0], first, rtol=0, atol=0, equal_nan=True)
    except AssertionError:
        return False
    return True


# Note [A recipe is traceable]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Some overloads take a tensor and read its values on the host (tensor_split's
# tensor_indices_or_sections calls .tolist()), yet carry no data-dependent tag. A compiler
# traces such a call with fake tensors that hold no values: Dynamo breaks the graph there,
# and the AOT front-end, which cannot break, refuses it by design (DataDependentOutputException;
# the issue-36 campaigns' 59089f434e3e, twice). So each kept recipe is also run on fake
# tensors (every tensor argument fakified, none a known constant); one whose output shape or
# values need the data (a data-dependent exception, or a C++ kernel finding no data to read)
# is left out like the tagged ops are ("a data-dependent output").


def _traceable(probe: _Probe, shape: tuple[int, ...], dtype: Any) -> bool:
    """Note [A recipe is traceable]."""
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        FakeTensorMode,
    )

    self_ = _self(shape, dtype)
    args = [_decode(a, self_) for a in probe.args]
    kwargs = {k: _decode(v, self_) for k, v in probe.kwargs}
    mode = FakeTensorMode()
    fake = lambda x: mode.from_tensor(x) if isinstance(x, torch.Tensor) else x  # noqa: E731
    args = [[fake(x) for x in a] if isinstance(a, list) else fake(a) for a in args]
    kwargs = {k: fake(v) for k, v in kwargs.items()}
    try:
        with mode:
            probe.op(*args, **kwargs)
    except (DataDependentOutputException, DynamicOutputShapeException):
        return False
    except RuntimeError as exc:  # a C++ kernel reading a fake tensor's (absent) data
        return "data is not allocated" not in str(exc)
    except Exception:  # noqa: BLE001 - a fake kernel's own gap is not data dependence
        return True
    return True


def _differentiable(probe: _Probe, shape: tuple[int, ...]) -> bool:
    """A float32 self requiring grad gets a gradient through the result."""
    leaf = _self(shape, torch.float32).requires_grad_()
    self_ = leaf.clone() if probe.cls in ("inplace", "inplace_view") else leaf
    try:
        got = probe.result(self_)
        if got is None or not got[0].requires_grad or not got[0].is_floating_point():
            return False
        got[0].sum().backward()
    except Exception:  # noqa: BLE001 - no derivative, or one that raises
        return False
    return leaf.grad is not None


def check_spellings(name: str, r: Recipe) -> tuple[str, ...]:
    """The public spellings of overload `name` that give the aten call's results with recipe
    r's arguments on the installed torch (Note [A spelling is checked, not assumed] in
    spelling.py): on self's first, middle and last recorded shape, strided where r runs on a
    strided self, and each of r's dtypes."""

    def argv(self_: torch.Tensor) -> tuple[list[Any], dict[str, Any]]:
        return [_decode(a, self_) for a in r.args], {k: _decode(v, self_) for k, v in r.kwargs}

    shapes = [s for s in SHAPES if shape_key(s) in r.outs]
    if not shapes or not r.dtypes:
        return ()
    first, dtypes = shapes[0], [_DT[d] for d in r.dtypes]
    selves: list[Callable[[], torch.Tensor]] = [
        functools.partial(_self, first, dt) for dt in dtypes
    ]
    for shape in (shapes[len(shapes) // 2], shapes[-1]):
        selves.append(functools.partial(_self, shape, dtypes[0]))
    if r.strided and math.prod(shapes[-1]) > 1:
        selves.append(functools.partial(_strided, shapes[-1], dtypes[0]))
    return spelling.spellings(name, r.item, argv, selves, first)


def _sample_dtype(opinfo: Any) -> torch.dtype | None:
    supported = opinfo.supported_dtypes("cpu")
    return next((dt for dt in _DT.values() if dt in supported), None)


def _probes(
    opinfo: Any, overloads: dict[str, list[tuple[str, Any, str]]]
) -> Iterator[tuple[str, str, _Probe, torch.Tensor]]:
    """(base, overload, probe, the sample's input) for each overload and encodable sample."""
    dtype = _sample_dtype(opinfo)
    if dtype is None:
        return
    names = {opinfo.aten_name, opinfo.name.split(".")[-1]}
    names |= {n + "_" for n in names}
    try:
        samples = list(itertools.islice(opinfo.sample_inputs("cpu", dtype), _SAMPLES_PER_OP))
    except Exception:  # noqa: BLE001 - a sample function that fails here gives no recipe
        return
    for base in sorted(n for n in names if n in overloads):
        for overload, op, cls in overloads[base]:
            if cls == "out":
                continue
            for sample in samples:
                x = sample.input
                if not isinstance(x, torch.Tensor) or x.layout != torch.strided:
                    continue
                if x.dtype not in _NAME or type(x) is not torch.Tensor:
                    continue
                try:
                    args = ("self", *(_encode(a, sample.input) for a in sample.args))
                    kwargs = tuple(
                        (k, _encode(v, sample.input)) for k, v in sorted(sample.kwargs.items())
                    )
                except _Unencodable:
                    continue
                if not _tensors_where_schema_says(op._schema, args, kwargs):
                    continue
                yield base, overload, _Probe(op, cls, args, kwargs), sample.input


def _holds_tensor(enc: Any) -> bool:
    if enc == "self" or (isinstance(enc, tuple) and enc[:1] in (("like",), ("t",), ("d",))):
        return True
    return isinstance(enc, tuple) and enc[:1] == ("seq",) and any(map(_holds_tensor, enc[1]))


def _tensors_where_schema_says(
    schema: torch._C.FunctionSchema, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]
) -> bool:
    """Every tensor of a sample goes to an argument the schema types as a tensor. Python's
    binding also takes a tensor for `SymInt[]` (through __index__): tensor_split.indices with
    a tensor of indices is then a data-dependent int list, which the AOT front-end refuses --
    not the op the schema describes (found by the issue-36 triage, entry 59089f434e3e)."""
    positional = [a for a in schema.arguments if not a.kwarg_only]
    by_name = {a.name: a for a in schema.arguments}
    bound = list(zip(positional, args, strict=False))
    bound += [(by_name[k], v) for k, v in kwargs if k in by_name]
    return all("Tensor" in str(a.type) for a, enc in bound if _holds_tensor(enc))


def _rounding(op: Any, cls: str) -> bool:
    if cls in ("view", "inplace_view"):
        return False
    return bool(
        torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")
    )


def _census() -> tuple[dict[str, list[tuple[str, Any, str]]], dict[str, dict[str, str]]]:
    overloads: dict[str, list[tuple[str, Any, str]]] = {}
    census: dict[str, dict[str, str]] = {c: {} for c in CLASSES}
    for base, overload, op, schema in _overloads():
        cls = classify(schema, list(op.tags))
        overloads.setdefault(base, []).append((overload, op, cls))
        skip = next(
            (why for t, why in _SKIP_TAGS.items() if getattr(torch.Tag, t, None) in op.tags), None
        )
        census[cls].setdefault(base, "no CPU OpInfo sample binds to it")
        if skip:
            census[cls][base] = skip
    if "out" in census:
        for base in census["out"]:
            census["out"][base] = "out= variants are not drawn yet"
    return overloads, census


def derive() -> Table:
    """The installed torch's vocabulary table (about two minutes on two cores)."""
    from torch.testing._internal.common_methods_invocations import op_db

    torch.manual_seed(0)
    overloads, census = _census()
    skipped = {b for c in census.values() for b, why in c.items() if why in _SKIP_TAGS.values()}
    found: dict[tuple[str, str], tuple[str, list[Recipe], Any]] = {}
    sampled: dict[str, set[str]] = {c: set() for c in CLASSES}
    unrepeatable: set[tuple[str, str]] = set()
    for opinfo in op_db:
        for base, overload, probe, sample in _probes(opinfo, overloads):
            if base in skipped or probe.result(sample.detach().clone()) is None:
                continue
            sampled[probe.cls].add(base)  # a CPU sample binds: the class's denominator
            try:
                recipe = _recipe(probe, sample.dtype)
            except _NotRepeatable:
                unrepeatable.add((probe.cls, base))
                continue
            if recipe is None:
                census[probe.cls][base] = "its samples run on none of the generator's shapes"
                continue
            first = next(s for s in SHAPES if shape_key(s) in recipe.outs)
            if not _traceable(probe, first, sample.dtype):
                census[probe.cls][base] = _SKIP_TAGS["data_dependent_output"]
                continue
            key = (base, overload)
            entry = found.setdefault(key, (probe.cls, [], probe.op))
            if recipe not in entry[1]:
                entry[1].append(recipe)
    ops = []
    for (base, overload), (cls, recipes, op) in sorted(found.items()):
        recipes.sort(key=lambda r: -len(r.outs))
        name = f"aten.{base}.{overload}"
        kept = tuple(
            replace(r, spellings=check_spellings(name, r)) for r in recipes[:_RECIPES_PER_OVERLOAD]
        )
        ops.append(VocabOp(name=name, cls=cls, rounding=_rounding(op, cls), recipes=kept))
        census[cls][base] = ""
    for cls, base in unrepeatable:
        if census[cls][base]:  # no recipe of it was kept
            census[cls][base] = "its values are not a function of its arguments (uninitialized)"
    version = torch.__version__.split("+")[0]
    return Table(
        torch=version,
        ops=tuple(ops),
        census=census,
        sampled={c: tuple(sorted(v)) for c, v in sampled.items()},
    )
