"""The user_code oracle (oracles/user_code.py): what torch hands to the hooks and custom
Function methods a program defines, how often each runs and in which order.

Planted differences are observation pairs whose compiled log differs from eager's in one way
(None for a gradient, requires_grad, an extra run, another order); each must be reported,
and equal logs must not. End to end, a real program with hooks and a custom Function runs
through every subject with no user_code finding, and its Function compiles into the same
graphs as it did before the methods logged (Note [What user code receives])."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from generators import materialize
from generators._spec import (
    CallPlan,
    FunctionSpec,
    InputSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
)
from generators.source import function_source
from oracles import Evidence, by_design, check_all
from oracles import user_code as oracle
from oracles.identity import severity_of, title_of
from pyfy_fuzz.case.runner import run_case
from pyfy_fuzz.corpus.repro import check_repro, render_repro
from pyfy_fuzz.pythonify import pythonify
from pyfy_fuzz.schema.difference import CallRef, Difference
from pyfy_fuzz.schema.observation import CallObs, SubjectObs, UserCall

F32 = "torch.float32"
GRAD = ((3,), F32, False, 0)
INPUT = ((3,), F32, True, 0)


def _obs(name: str, *logs: tuple[UserCall, ...]) -> SubjectObs:
    calls = [
        CallObs(i, None, user_calls=log, hooks=tuple(c.callee for c in log if "." not in c.callee))
        for i, log in enumerate(logs)
    ]
    return SubjectObs(name, calls=calls)


EAGER_LOG = (
    UserCall("Fn0.forward", (INPUT,)),
    UserCall("Fn0.setup_context", (INPUT, ((3,), F32, False, 0))),
    UserCall("Fn0.backward", (GRAD, None)),
    UserCall("a", (GRAD,)),
    UserCall("module pre", (GRAD,)),
    UserCall("module", (GRAD, GRAD)),
)


def _found(
    got: tuple[UserCall, ...], ref: tuple[UserCall, ...] = EAGER_LOG, *, file: bool = False
) -> list[Difference]:
    """The user_code differences of a compiled (or, `file`, pythonified) log against `ref`."""
    if file:
        ev = Evidence(
            eager=_obs("eager", ref), compiled=_obs("torch.compile", ref), pythonified=None
        )
        ev = replace(ev, pythonified=_obs("pythonify", got))
    else:
        ev = Evidence(
            eager=_obs("eager", ref), compiled=_obs("torch.compile", got), pythonified=None
        )
    return [d for f in oracle.check(ev) for d in f.differences]


def _swap(log: tuple[UserCall, ...], k: int, call: UserCall) -> tuple[UserCall, ...]:
    return (*log[:k], call, *log[k + 1 :])


def test_equal_logs_give_no_finding() -> None:
    assert _found(EAGER_LOG) == []
    assert _found(EAGER_LOG, file=True) == []


def test_a_hook_handed_none_where_eager_passes_a_gradient() -> None:
    (d,) = _found(_swap(EAGER_LOG, 3, UserCall("a", (None,))))
    assert (d.locus, d.prop, d.name, d.index) == ("user_code", "presence", "a", 0)
    assert (d.expected, d.actual) == ("a tensor", "None")
    finding: dict[str, Any] = {
        "kind": "compile-divergence",
        "subject": "torch.compile",
        "oracle": oracle.NAME,
        "differences": [d.to_dict()],
    }
    title = title_of(finding, "aot_eager")
    assert "a tensor hook receives None where eager passes a gradient" in title, title
    assert severity_of(finding) == 1


def test_a_backward_handed_a_gradient_that_requires_grad() -> None:
    grad_rg = ((3,), F32, True, 0)
    (d,) = _found(_swap(EAGER_LOG, 2, UserCall("Fn0.backward", (grad_rg, None))))
    assert (d.prop, d.name, d.expected, d.actual) == ("requires_grad", "Fn0.backward", False, True)
    assert d.aspect == "user code <Function>.backward argument requires_grad: False"


def test_a_backward_that_runs_twice() -> None:
    twice = (*EAGER_LOG, UserCall("Fn0.backward", (GRAD, None)))
    (d,) = _found(twice)
    assert (d.prop, d.name, d.expected, d.actual) == ("runs", "Fn0.backward", 1, 2)
    finding: dict[str, Any] = {
        "kind": "compile-divergence",
        "subject": "torch.compile",
        "oracle": oracle.NAME,
        "differences": [d.to_dict()],
    }
    assert "a custom Function's backward runs twice" in title_of(finding, "aot_eager")


def test_a_pre_hook_after_its_hook_is_another_order() -> None:
    swapped = (*EAGER_LOG[:4], EAGER_LOG[5], EAGER_LOG[4])
    (d,) = _found(swapped)
    assert (d.prop, d.name) == ("order", "module")
    assert d.expected == ["module pre", "module"] and d.actual == ["module", "module pre"]


def test_other_shapes_dtypes_and_argument_counts() -> None:
    wide = UserCall("a", (((4,), F32, False, 0),))
    assert [d.prop for d in _found(_swap(EAGER_LOG, 3, wide))] == ["shape"]
    double = UserCall("a", (((3,), "torch.float64", False, 0),))
    assert [d.prop for d in _found(_swap(EAGER_LOG, 3, double))] == ["dtype"]
    short = UserCall("Fn0.backward", (GRAD,))
    assert [d.prop for d in _found(_swap(EAGER_LOG, 2, short))] == ["arity"]


def test_runs_are_paired_as_a_multiset() -> None:
    """Two tensors' hooks trading places is no difference (Note [Pairing runs])."""
    wide = UserCall("a", (((4,), F32, False, 0),))
    ref = (*EAGER_LOG, wide)
    assert _found((*EAGER_LOG[:3], wide, *EAGER_LOG[3:]), ref) == []


def test_what_is_by_design_under_torch_compile_and_not_for_the_file() -> None:
    traced = tuple(c for c in EAGER_LOG if not c.callee.startswith("Fn0."))
    bumped = _swap(EAGER_LOG, 3, UserCall("a", (((3,), F32, False, 2),)))
    with by_design.recording() as excused:
        assert _found(traced) == []
        assert _found(bumped) == []
    assert {"custom-function-compiled", "user-code-version"} <= set(excused)
    assert [d.prop for d in _found(traced, file=True)] == ["runs"] * 3
    assert [d.prop for d in _found(bumped, file=True)] == ["version"]
    # a method that runs under torch.compile is compared: one run of two is a finding
    twice = (*EAGER_LOG, UserCall("Fn0.forward", (INPUT,)))
    assert [d.prop for d in _found(EAGER_LOG, twice)] == ["runs"]


def test_the_whole_order_is_the_files() -> None:
    """torch.compile may interleave hooks of different tensors otherwise; the file runs the
    graphs and hooks of the compile it models, in its order."""
    swapped = (*EAGER_LOG[:3], EAGER_LOG[4], EAGER_LOG[3], EAGER_LOG[5])
    assert _found(swapped) == []
    (d,) = _found(swapped, file=True)
    assert (d.prop, d.name) == ("order", oracle.EVERY_CALLEE)


# ------------------------------------------------------------------------------ end to end


def _program(fn: FunctionSpec, args: tuple[str, ...]) -> ProgramSpec:
    """A hook logging each argument's gradient and a custom Function applied to them."""
    return ProgramSpec(
        family="autograd_function",
        roots=(RootSpec((3,), grad="leaf"), RootSpec((3,), grad="leaf")),
        inputs=(InputSpec("root", root=0), InputSpec("root", root=1)),
        body=(
            Stmt("register_hook", ("a0", 1, 0)),
            Stmt("register_hook", ("a1", 2, 0)),
            Stmt("apply_fn", (0, *args), ("v0",)),
        ),
        outputs=(OutSpec("ref", ref="v0"),),
        functions=(fn,),
        plan=CallPlan(calls=2),
    )


PROGRAMS = [
    _program(FunctionSpec(body="sin"), ("a0",)),
    # Fn0.apply(a0, a0): Dynamo breaks the graph at the apply, and the backward runs eagerly
    _program(FunctionSpec(style="setup_context", body="scale", arity=2), ("a0", "a0")),
]


@pytest.mark.parametrize("spec", PROGRAMS, ids=["compiled-function", "graph-break-at-apply"])
def test_a_clean_program_has_no_user_code_finding(spec: ProgramSpec) -> None:
    result = run_case(spec, keep_evidence=True)
    assert result.status == "ok", result.findings
    assert not [f for f in result.findings if f.oracle == oracle.NAME]
    ev = result.evidence
    assert ev is not None and ev.pythonified is not None
    eager = [c.callee for c in ev.eager.calls[0].user_calls]
    assert "Fn0.forward" in eager and "Fn0.backward" in eager and "a" in eager
    received = {c.callee: c.received for c in ev.eager.calls[0].user_calls}
    (grad,) = received["a"]  # a gradient, handed to the hook
    assert grad is not None and grad[:3] == ((3,), F32, False)


def test_a_planted_difference_in_a_real_run_is_found() -> None:
    """A compiled subject whose backward hands the hook None: the oracle reports it."""
    result = run_case(PROGRAMS[0], keep_evidence=True)
    ev = result.evidence
    assert ev is not None
    calls = [
        replace(
            c,
            user_calls=tuple(
                UserCall(u.callee, (None,)) if u.callee == "a" else u for u in c.user_calls
            ),
        )
        for c in ev.compiled.calls
    ]
    planted = replace(ev, compiled=replace(ev.compiled, calls=calls))
    found = [f for f in check_all(planted) if f.oracle == oracle.NAME]
    assert [(f.subject, f.differences[0].prop) for f in found] == [("torch.compile", "presence")]


def _graphs(spec: ProgramSpec) -> tuple[int, int, str]:
    """Dynamo's graphs of a program's first call: how many, how many breaks, their code."""
    from torch._dynamo.utils import counters

    program = materialize(spec)
    torch._dynamo.reset()
    counters.clear()
    codes: list[str] = []

    def backend(gm: torch.fx.GraphModule, example: object) -> object:
        codes.extend(m.code for m in gm.modules() if isinstance(m, torch.fx.GraphModule))
        return gm.forward

    program.module.drive(
        torch.compile(program.make_fn(), backend=backend), program.make_inputs(0), 0
    )
    code = hashlib.sha1("".join(codes).encode()).hexdigest()
    return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values()), code


@pytest.mark.parametrize("spec", PROGRAMS, ids=["compiled-function", "graph-break-at-apply"])
def test_logging_leaves_the_compiled_graphs_as_they_were(
    spec: ProgramSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Note [What user code receives]: the Function's methods log, and Dynamo compiles the
    same graphs (subgraphs included) as from the methods without their log line."""
    logged = _graphs(spec)
    import generators._render as render

    def silent(k: int, fn: FunctionSpec) -> str:
        return "\n".join(x for x in function_source(k, fn).splitlines() if "_log_call(" not in x)

    monkeypatch.setattr(render, "function_source", silent)
    assert "_log_call(" not in render.render(spec).split("class Fn0")[1].split("def f")[0]
    assert _graphs(spec) == logged


def test_the_repro_shows_the_difference_and_exits_1_while_it_is_present(tmp_path: Path) -> None:
    """A pythonified file planted to hand its replayed hook None instead of the gradient: the
    repro of that user_code finding exits 1 on it and 0 on the clean file."""
    spec = PROGRAMS[0]
    d = Difference(
        oracle.NAME,
        "pythonify",
        CallRef("plan", 0),
        "user_code",
        "presence",
        index=0,
        name="a",
        expected="a tensor",
        actual="None",
    )
    found = {
        "kind": "pythonify-divergence",
        "oracle": oracle.NAME,
        "subject": "pythonify",
        "differences": [d.to_dict()],
    }
    source = render_repro(spec, found, backend="aot_eager")
    assert "def _log_call(" in source and "def received(" in source
    assert "received(take_hook_log(), 'a', 'presence')" in source
    program = materialize(spec)
    clean, planted = tmp_path / "clean", tmp_path / "bad"
    for d_ in (clean, planted):
        d_.mkdir()
        (d_ / "repro.py").write_text(source)
    pythonify(program.make_fn(), program.make_inputs(0), clean / "pythonified.py")
    text = (clean / "pythonified.py").read_text()
    hook = "register_hook(G['_log_grad_a'])"
    assert hook in text
    bad = "register_hook(lambda g: G['_log_grad_a'](None))"
    (planted / "pythonified.py").write_text(text.replace(hook, bad))
    assert check_repro(clean)[0] == 0, check_repro(clean)[1]
    code, tail = check_repro(planted)
    assert code == 1 and "BUG" in tail, tail
