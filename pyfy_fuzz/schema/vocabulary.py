"""The op vocabulary derived from torch: aten ops the generator may draw, as plain data.

Torch-free. `pyfy_fuzz/vocabulary/derive.py` reads each aten op's schema and tags and OpInfo's
sample inputs in the installed torch and writes one table per torch release
(`generators/vocabulary/torch-<major>.<minor>.json`); the generators read it with
`load_table`, and `docs/VOCABULARY.md` is rendered from it. The table is data, so a generator
never imports torch, and a spec drawn from it renders without the table (a statement carries
its whole call, Note [An aten statement] in generators/_stmts_aten.py).

Note [Op classes]
~~~~~~~~~~~~~~~~~
Functionalization, AOTAutograd's alias analysis and Inductor's reinplacing treat an op by what
its schema says it does to its arguments, so the classes are read off the schema:
  view          a return aliases an argument without writing it (`Tensor(a)`): `narrow`,
                `unbind`, `diagonal`; AOTAutograd replays or regenerates such outputs;
  inplace       an argument that is not `out=` is written (`Tensor(a!)`): `add_`, `index_put_`;
                functionalization turns it into the functional op plus a copy back;
  inplace_view  the `inplace_view` tag: an argument's *metadata* changes in place (`t_`,
                `squeeze_`, `as_strided_`); a metadata mutation of an input;
  view_inverse  what functionalization emits to write through a view: the `view_copy` tag
                (`slice_scatter`, `select_scatter`, `diagonal_scatter`, `as_strided_scatter`
                and the `*_copy` of each view) -- the ops whose lowering Inductor's reinplacing
                pass turns back into in-place writes;
  out           an `out=` variant (writes, and may resize, its `out` argument);
  functional    everything else that returns a tensor.

Note [Spellings]
~~~~~~~~~~~~~~~~
A program calls a drawn op as `torch.ops.aten.<op>.<overload>(...)`, or as users write it where
torch has a public spelling that reaches the same overload with the same arguments: a Tensor
method of the op's base name (`x.narrow(0, 1, 2)`, `x.add_(y)`: "method") or a function of the
`torch` namespace (`torch.narrow(x, 0, 1, 2)`: "function"). Dynamo handles the three through
different code (`torch.ops` calls, its tensor-method handling, its torch-function handling), so
the spelling is an axis of its own. A recipe lists the spellings the derivation ran and found
equal to the aten call (`pyfy_fuzz/vocabulary/spelling.py`): a name alone promises nothing --
`torch.norm` is not `aten.norm`, and `x.add(2)` reaches `add.Tensor`, not `add.Scalar`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CLASSES",
    "GOAL_CLASSES",
    "SPELLINGS",
    "Recipe",
    "TABLE_VERSION",
    "Table",
    "VocabOp",
    "load_table",
    "shape_key",
]

# Note [Op classes], in the order VOCABULARY.md lists them.
CLASSES = ("view", "inplace", "inplace_view", "view_inverse", "out", "functional")
# The classes issue 36 sets a goal for (at least 80% of each that has a CPU sample drawn).
GOAL_CLASSES = ("view", "inplace", "inplace_view", "view_inverse")

# The public spellings of an aten call a recipe may also be written in (Note [Spellings]).
SPELLINGS = ("method", "function")

TABLE_VERSION = 1


def shape_key(shape: tuple[int, ...]) -> str:
    """A shape as a JSON object key: "2x3", "4", and "-" for a 0-d tensor."""
    return "x".join(str(n) for n in shape) if shape else "-"


@dataclass(frozen=True)
class Recipe:
    """One way to call an op, from one OpInfo sample, with `self` (the value the statement
    acts on) replaceable by a tensor of any shape in `outs`.

    An argument is encoded as JSON data (`args`, `kwargs`): "self"; ["like"] a tensor of
    self's shape and dtype (a program value or a constant); ["t", dtype, shape] a constant
    floating tensor; ["d", dtype, data] an integer or bool tensor with exactly these values
    (indices must stay valid); ["dtype", name]; ["seq", [...]] a list of encodings; ["l",
    value] a Python literal (int, float, bool, None, str, a list of ints)."""

    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    # shape_key(self's shape) -> the result for a contiguous self of that shape: for a view
    # or a metadata change [shape, stride, storage_offset, internally_overlapping] in self's
    # storage; for a fresh result [shape] (strides torch's choice), or [] where it is self's
    # shape and contiguous. The shapes listed are the only ones the recipe was seen to work on.
    outs: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    # Self's dtype -> the result's dtype, for the generator's dtypes the recipe runs with.
    dtypes: dict[str, str] = field(default_factory=dict)
    # It also runs on a non-contiguous self of each listed shape (a view stays a view).
    strided: bool = False
    # The result takes a gradient back to self where self requires grad (float32).
    differentiable: bool = False
    # The op returns a list of tensors: the statement takes this element.
    item: int | None = None
    # The public spellings (of SPELLINGS, in that order) that torch ran with these arguments
    # and found equal to the aten call (Note [Spellings]); () where only the aten one is.
    spellings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.args[:1] != ("self",):
            raise ValueError(f"expected 'self' as the first argument, got {self.args[:1]!r}")
        if self.spellings != tuple(s for s in SPELLINGS if s in self.spellings):
            raise ValueError(f"expected spellings of {SPELLINGS} in order, got {self.spellings!r}")


@dataclass(frozen=True)
class VocabOp:
    """One aten overload the generator draws, with how to call it."""

    name: str  # "aten.narrow.default": rendered as torch.ops.<name>(...)
    cls: str  # one of CLASSES (Note [Op classes])
    # Its values may round differently once decomposed (a CompositeImplicitAutograd op with a
    # floating result): compared at the dtype's tolerance even under aot_eager.
    rounding: bool
    recipes: tuple[Recipe, ...]

    def __post_init__(self) -> None:
        if self.cls not in CLASSES:
            raise ValueError(f"expected a class of {CLASSES}, got {self.cls!r}")
        if not self.recipes:
            raise ValueError(f"{self.name}: expected at least one recipe")


@dataclass(frozen=True)
class Table:
    """A torch release's derived vocabulary, and its census of torch's ops."""

    torch: str  # the release it was derived from, "2.13.0"
    ops: tuple[VocabOp, ...]
    # class -> op name -> why the generator does not draw it ("" for drawn ones); every op
    # of the class that torch has, by base name ("narrow"), with or without a sample.
    census: dict[str, dict[str, str]]
    # class -> base names with a CPU OpInfo sample that binds to one of their overloads.
    sampled: dict[str, tuple[str, ...]]
    version: int = TABLE_VERSION

    def to_json(self) -> str:
        """One op a line, so a diff between two derivations reads op by op."""
        head = {k: v for k, v in asdict(self).items() if k != "ops"}
        lines = [json.dumps(asdict(op), sort_keys=True) for op in self.ops]
        return (
            '{"head": '
            + json.dumps(head, sort_keys=True)
            + ',\n"ops": [\n'
            + ",\n".join(lines)
            + "\n]}\n"
        )


def _tuple(x: Any) -> Any:
    if isinstance(x, list):
        return tuple(_tuple(v) for v in x)
    return x


def _recipe(data: dict[str, Any]) -> Recipe:
    return Recipe(
        args=_tuple(data["args"]),
        kwargs=tuple((k, _tuple(v)) for k, v in data["kwargs"]),
        outs={k: _tuple(v) for k, v in data["outs"].items()},
        dtypes=dict(data["dtypes"]),
        strided=bool(data["strided"]),
        differentiable=bool(data["differentiable"]),
        item=data["item"],
        spellings=tuple(data.get("spellings", ())),  # a table derived before they were
    )


def load_table(path: Path) -> Table:
    """Read a table `Table.to_json` wrote; ValueError names what is wrong."""
    try:
        data = json.loads(path.read_text())
        head = data["head"]
        if head.get("version") != TABLE_VERSION:
            raise ValueError(f"table version {head.get('version')!r}, expected {TABLE_VERSION}")
        ops = tuple(
            VocabOp(
                name=d["name"],
                cls=d["cls"],
                rounding=bool(d["rounding"]),
                recipes=tuple(_recipe(r) for r in d["recipes"]),
            )
            for d in data["ops"]
        )
        return Table(
            torch=head["torch"],
            ops=ops,
            census={c: dict(v) for c, v in head["census"].items()},
            sampled={c: tuple(v) for c, v in head["sampled"].items()},
        )
    except (OSError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a vocabulary table ({exc!r})") from None
