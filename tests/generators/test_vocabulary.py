"""The op vocabulary derived from torch (issue 36, item 2): the table, the statements drawn from
it, and the model they keep.

The model test is the one that matters: every value an aten statement binds is compared, after
an eager run, with what the generator's model said it would be (shape, dtype, strides where the
model knows them, which values share a storage). A recipe recorded wrongly, or a class whose
promise the model misreads, fails it.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from generators import VOCABULARY_DIR, installed_release, materialize, rounds
from generators._build import Builder, Profile
from generators._family import weights
from generators._render_body import aten_line
from generators._spec import CallPlan, OutSpec, ProgramSpec, RootSpec, Stmt
from generators._stmts_aten import stmt_aten
from generators._vocabulary import by_class, by_name, table, table_path
from pyfy_fuzz.schema.vocabulary import CLASSES, GOAL_CLASSES, SPELLINGS, Recipe, load_table
from pyfy_fuzz.vocabulary.doc import class_counts, render_doc

ROOT = Path(__file__).resolve().parents[2]


def _overload(name: str) -> object:
    obj: object = torch.ops
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def test_the_installed_release_has_its_own_table() -> None:
    major, minor = installed_release()
    assert table_path().name == f"torch-{major}.{minor}.json"
    assert table().torch.startswith(f"{major}.{minor}.")


def test_every_op_in_the_table_exists_in_the_installed_torch() -> None:
    missing = []
    for op in table().ops:
        try:
            _overload(op.name)
        except (AttributeError, RuntimeError):
            missing.append(op.name)
    assert not missing


def test_each_goal_class_draws_at_least_80_percent_of_its_sampled_ops() -> None:
    counts = class_counts(table())
    for cls in GOAL_CLASSES:
        total, sampled, drawn = counts[cls]
        assert sampled > 0 and drawn >= 0.8 * sampled, (cls, counts[cls])
    assert set(by_class()) <= set(CLASSES)


def test_vocabulary_md_is_rendered_from_the_checked_in_tables() -> None:
    tables = [load_table(p) for p in sorted(VOCABULARY_DIR.glob("torch-*.json"))]
    assert (ROOT / "docs" / "VOCABULARY.md").read_text() == render_doc(tables)


def test_an_older_release_reads_the_newest_older_table() -> None:
    releases = sorted(
        tuple(int(x) for x in p.stem.removeprefix("torch-").split("."))
        for p in VOCABULARY_DIR.glob("torch-*.json")
    )
    oldest = releases[0]
    # 2.11 (the GPU machines) has no table of its own: it takes the oldest there is
    assert table_path((oldest[0], oldest[1] - 2)).stem == f"torch-{oldest[0]}.{oldest[1]}"
    assert table_path((99, 0)).stem == "torch-{}.{}".format(*releases[-1])


def _spec(body: tuple[Stmt, ...]) -> ProgramSpec:
    from generators._spec import InputSpec

    return ProgramSpec(
        family="dedupe",
        roots=(RootSpec((2, 3)),),
        inputs=(InputSpec("root"),),
        body=body,
        outputs=(OutSpec("ref", ref="a0"),),
        plan=CallPlan(calls=1, backward=False),
    )


def test_rounds_reads_the_table_and_is_cautious_about_unknown_ops() -> None:
    view = next(op for op in table().ops if op.cls == "view")
    rounding = next(op for op in table().ops if op.rounding)
    assert not rounds(_spec(()))
    assert not rounds(_spec((Stmt("aten", (view.name, "a0", ("l", 0)), ("v0",)),)))
    assert rounds(_spec((Stmt("aten", (rounding.name, "a0"), ("v0",)),)))
    assert rounds(_spec((Stmt("aten", ("aten.no_such_op.default", "a0"), ("v0",)),)))


def test_an_aten_statement_renders_each_kind_of_argument() -> None:
    stmt = Stmt(
        "aten",
        (
            "aten.index_put_.default",
            "a0",
            ("seq", [("d", "int64", [1])]),
            ("t", "float32", (1, 3)),
            ("kw", "accumulate", ("l", True)),
        ),
    )
    assert aten_line(stmt) == (
        "torch.ops.aten.index_put_.default(a0, [torch.tensor([1], dtype=torch.int64, "
        "device=a0.device)], torch.linspace(-1, 1, 3, device=a0.device).reshape((1, 3))"
        ".to(torch.float32), accumulate=True)"
    )
    split = Stmt("aten", ("aten.split.Tensor", "a0", ("l", 1), ("item", 0)), ("v1",))
    assert aten_line(split) == "v1 = torch.ops.aten.split.Tensor(a0, 1)[0]"


def test_an_aten_statement_renders_in_its_spelling() -> None:
    """Note [Spellings]: the same call as a Tensor method or a torch function; the tag is data
    (a list once a spec went through JSON)."""
    narrow = ("aten.narrow.default", "a0", ("l", 0), ("l", 1), ("l", 2))
    assert aten_line(Stmt("aten", (*narrow, ("spelling", "method")), ("v1",))) == (
        "v1 = a0.narrow(0, 1, 2)"
    )
    assert aten_line(Stmt("aten", (*narrow, ["spelling", "function"]), ("v1",))) == (
        "v1 = torch.narrow(a0, 0, 1, 2)"
    )
    split = ("aten.split.Tensor", "a0", ("l", 1), ("kw", "dim", ("l", 0)), ("item", 0))
    assert aten_line(Stmt("aten", (*split, ("spelling", "method")), ("v1",))) == (
        "v1 = a0.split(1, dim=0)[0]"
    )
    add_ = ("aten.add_.Tensor", "a0", "a1", ("spelling", "method"))
    assert aten_line(Stmt("aten", add_, ())) == "a0.add_(a1)"
    with pytest.raises(ValueError, match="spelling"):
        aten_line(Stmt("aten", (*narrow, ("spelling", "operator")), ("v1",)))


# ------------------------------------------------------------- the spellings (Note [Spellings])


def test_a_recipe_holds_only_known_spellings_in_order() -> None:
    with pytest.raises(ValueError, match="spellings"):
        Recipe(args=("self",), spellings=("function", "method"))
    with pytest.raises(ValueError, match="spellings"):
        Recipe(args=("self",), spellings=("operator",))
    assert Recipe(args=("self",), spellings=SPELLINGS).spellings == SPELLINGS


def test_a_spelling_is_recorded_only_where_torch_gives_the_aten_result() -> None:
    """Names alone would be wrong: torch.norm is a Python function over linalg ops, torch has
    no add_ function, and a Python scalar reaches add.Tensor (Note [A spelling is checked,
    not assumed])."""
    from pyfy_fuzz.vocabulary.derive import check_spellings

    def check(name: str, *args: object) -> tuple[str, ...]:
        return check_spellings(
            name, Recipe(args=("self", *args), outs={"2x3": ()}, dtypes={"float32": "float32"})
        )

    assert check("aten.narrow.default", ("l", 1), ("l", 0), ("l", 2)) == ("method", "function")
    assert check("aten.add_.Tensor", ("like",)) == ("method",)
    assert check("aten.norm.Scalar", ("l", 2)) == ()
    assert check("aten.add.Scalar", ("l", 2)) == ()
    assert check("aten._unsafe_view.default", ("l", [6])) == ()


@pytest.mark.parametrize("cls", [c for c in CLASSES if c != "out"])
def test_the_recorded_spellings_are_what_the_installed_torch_checks(cls: str) -> None:
    """A sample of each class's recipes (every fifth, up to 20) re-checked on the installed
    torch: the table records a spelling exactly where it runs as the aten call does."""
    from pyfy_fuzz.vocabulary.derive import check_spellings

    recipes = [(op.name, r) for op in by_class().get(cls, ()) for r in op.recipes][::5][:20]
    assert recipes or cls not in GOAL_CLASSES
    for name, r in recipes:
        assert check_spellings(name, r) == r.spellings, name


# ------------------------------------------------------------------ the model against eager


def _check_against_eager(b: Builder) -> None:
    names = [n for n in b.vals if n[0] in "av"]
    b.outputs = [OutSpec("tuple", items=tuple(OutSpec("ref", ref=n) for n in names))]
    spec = b.spec(CallPlan(calls=1, backward=False))
    program = materialize(spec)
    got = program.make_fn()(*program.make_inputs(0))
    assert len(got) == len(names)
    by_storage: dict[int, int] = {}
    for name, t in zip(names, got, strict=True):
        v = b.vals[name]
        where = f"{name} in\n{program.source}"
        assert tuple(t.shape) == v.shape, where
        assert str(t.dtype).removeprefix("torch.") == v.dtype, where
        if v.geom is not None and t.numel() > 1:
            strides = [s for s, n in zip(t.stride(), t.shape, strict=True) if n > 1]
            model = [s for s, n in zip(v.geom.stride, v.shape, strict=True) if n > 1]
            assert strides == model, where
            assert t.storage_offset() == v.geom.offset, where
        if t.numel() == 0:
            continue  # no memory to share (data_ptr 0)
        ptr = t.untyped_storage().data_ptr()
        assert by_storage.setdefault(v.storage, ptr) == ptr, where  # the model's sharing holds
    assert len(set(by_storage.values())) == len(by_storage)  # and no other sharing


def _spelling(s: Stmt) -> str:
    return next(
        (str(a[1]) for a in s.args[1:] if isinstance(a, tuple) and a[0] == "spelling"), "aten"
    )


def test_the_model_of_each_drawn_op_is_what_eager_does() -> None:
    """In every spelling: a method or a torch function binds what the aten call does."""
    drawn: Counter[str] = Counter()

    @settings(
        max_examples=60,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        b = Builder(draw=data.draw, profile=Profile("dedupe", weights(), allow_grad_inputs=False))
        for _ in range(2):
            b.input_root(b.add_root())
        for _ in range(4):
            stmt_aten(b)
        drawn.update(_spelling(s) for s in b.body if s.op == "aten")
        _check_against_eager(b)

    check()
    assert all(drawn[s] >= 5 for s in ("aten", *SPELLINGS)), drawn


@st.composite
def _drawn(draw: st.DrawFn) -> set[tuple[str, str]]:
    """(class, spelling) of each aten statement of a drawn body (generation only)."""
    b = Builder(draw=draw, profile=Profile("dedupe", weights(), allow_grad_inputs=False))
    for _ in range(2):
        b.input_root(b.add_root())
    for _ in range(6):
        stmt_aten(b)
    ops = by_name()
    return {(ops[str(s.args[0])].cls, _spelling(s)) for s in b.body if s.op == "aten"}


@pytest.mark.parametrize(
    "pair",
    sorted({(op.cls, s) for op in table().ops for r in op.recipes for s in r.spellings}),
    ids=str,
)
def test_every_spelling_the_table_records_is_drawn_in_each_class(pair: tuple[str, str]) -> None:
    """The draw reaches each (class, spelling) pair some recipe records: the rarest, an
    inplace_view op as a torch function (as_strided_, resize_as_), within a few thousand."""
    found = find(
        _drawn(),
        lambda pairs: pair in pairs,
        settings=settings(
            max_examples=20000,
            database=None,
            phases=[Phase.generate],
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert pair in found


@pytest.mark.slow
def test_the_checked_in_table_is_what_the_installed_torch_derives() -> None:
    """`pyfy-fuzz vocabulary` (exit 1 on a stale table): about 30 s."""
    pytest.importorskip("expecttest")
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "pyfy_fuzz", "vocabulary"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
