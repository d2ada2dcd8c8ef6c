"""Python scalar arguments (Note [Scalar arguments] in pyfy_fuzz/pythonify/capture/scalars.py):
the file guards what Dynamo guarded of them -- the value where it specialized one, the type
where it did not -- and passes an unspecialized float to the graph as Dynamo does."""

from __future__ import annotations

import math

import pytest
import torch

from pyfy_fuzz.pythonify import PythonifyGuardError, PythonifyUnsupported, load, pythonify

from .parity import r


def scale_shift(x, s, n):
    y = x * s + n
    return y.sin(), y.narrow(0, 0, n)


def _same(a, b) -> None:
    for u, v in zip(a, b, strict=True):
        torch.testing.assert_close(u, v, rtol=0, atol=0)


def test_specialized_scalars_are_guarded(tmp_path):
    """dynamic=False: Dynamo bakes 2.5 and 2 into the graph and guards them (CONSTANT_MATCH);
    the file used to return the result for 2.5 on a call with 3.5."""
    x = r(4)
    res = pythonify(scale_shift, (x, 2.5, 2), tmp_path / "p.py")
    m = load(res.path)
    _same(m.call(x, 2.5, 2), scale_shift(x, 2.5, 2))
    with pytest.raises(PythonifyGuardError, match=r"L\['s'\]: expected 2.5 \(CONSTANT_MATCH\)"):
        m.call(x, 3.5, 2)
    with pytest.raises(PythonifyGuardError, match=r"L\['n'\]: expected 2 \(CONSTANT_MATCH\)"):
        m.call(x, 2.5, 3)
    with pytest.raises(PythonifyGuardError, match=r"L\['n'\]: expected int .*got float"):
        m.call(x, 2.5, 2.0)
    text = res.path.read_text()
    assert "(\"L['s']\", float, 'CONSTANT_MATCH', 2.5)," in text
    assert "(\"L['n']\", int, 'CONSTANT_MATCH', 2)," in text


def unused_argument(x, s, unused):
    return x * s


def test_an_argument_the_function_never_reads_is_not_guarded(tmp_path):
    """Dynamo guards only what the frame read: any value of `unused` runs the same code."""
    x = r(3)
    res = pythonify(unused_argument, (x, 1.5, 7), tmp_path / "p.py")
    m = load(res.path)
    with pytest.raises(PythonifyGuardError, match=r"L\['s'\]: expected 1.5"):
        m.call(x, 2.5, 7)
    for other in (8, -1.0, None, "a"):
        _same([m.call(x, 1.5, other)], [unused_argument(x, 1.5, other)])
    assert [g.source for g in res.ir.guards.scalars] == ["L['s']"]


def nested(x, cfg, t, flag, mode):
    y = x * cfg["scale"] + t[1]
    if flag:
        y = y + 1
    if mode == "a":
        y = y * 2
    return y


def test_scalars_inside_arguments_and_of_every_type(tmp_path):
    """A dict's and a tuple's scalars, a bool, a str: each guarded on its own source."""
    x = r(3)
    args = (x, {"scale": 2.0}, (r(3, seed=1), 3), True, "a")
    res = pythonify(nested, args, tmp_path / "p.py")
    m = load(res.path)
    _same([m.call(*args)], [nested(*args)])
    for k, bad, src in (
        (1, {"scale": 2.5}, r"L\['cfg'\]\['scale'\]"),
        (2, (args[2][0], 4), r"L\['t'\]\[1\]"),
        (3, 1, r"L\['flag'\]: expected bool"),
        (4, "b", r"L\['mode'\]"),
    ):
        call = list(args)
        call[k] = bad
        with pytest.raises(PythonifyGuardError, match=src):
            m.call(*call)
    with pytest.raises(PythonifyGuardError, match=r"L\['cfg'\]\['scale'\]: cannot read it"):
        m.call(x, {}, *args[2:])
    got = {(g.source, g.type_name, g.value) for g in res.ir.guards.scalars}
    assert got == {
        ("L['cfg']['scale']", "float", 2.0),
        ("L['t'][1]", "int", 3),
        ("L['flag']", "bool", True),
        ("L['mode']", "str", "a"),
    }


def times(x, s):
    return x * s


def test_nan_matches_nan(tmp_path):
    """Dynamo's float-is-nan guard: a NaN compiled for passes another NaN."""
    x = r(3)
    res = pythonify(times, (x, math.nan), tmp_path / "p.py")
    assert "float('nan')" in res.path.read_text()
    m = load(res.path)
    assert m.call(x, float("nan")).isnan().all()
    with pytest.raises(PythonifyGuardError, match=r"L\['s'\]: expected nan"):
        m.call(x, 1.0)


def scale_grad(x, s, n):
    return (x * s).sin() * n


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_unspecialized_float_is_passed_as_a_tensor(tmp_path, backend):
    """dynamic=True: Dynamo passes the float to the graph as torch._as_tensor_fullprec(L['s'])
    (`pass_arg_as_tensor`); the file used to gather the float and fail its own tensor guard.
    It matches eager, and its gradients eager's, on two values, and guards the types."""
    res = pythonify(
        scale_grad, (r(4, rg=True), 2.5, 3), tmp_path / "p.py", dynamic=True, backend=backend
    )
    m = load(res.path)
    for s, n in ((2.5, 3), (-1.25, 5)):
        x, xe = r(4, rg=True), r(4, rg=True)
        out, ref = m.call(x, s, n), scale_grad(xe, s, n)
        torch.testing.assert_close(out, ref)
        out.sum().backward()
        ref.sum().backward()
        torch.testing.assert_close(x.grad, xe.grad)
    got = [(g.source, g.guard_type) for g in res.ir.guards.scalars]
    assert got == [("L['n']", "TYPE_MATCH"), ("L['s']", "TYPE_MATCH"), ("L['s']", "NOT_NAN")]
    assert "_as_tensor_fullprec(L['s'])," in res.path.read_text()
    with pytest.raises(PythonifyGuardError, match=r"L\['n'\]: expected int \(TYPE_MATCH\)"):
        m.call(r(4, rg=True), 2.5, 3.0)
    with pytest.raises(PythonifyGuardError, match=r"L\['s'\]: expected float \(TYPE_MATCH\)"):
        m.call(r(4, rg=True), 2, 3)
    with pytest.raises(PythonifyGuardError, match=r"L\['s'\]: expected a float that is not NaN"):
        m.call(r(4, rg=True), math.nan, 3)


def positive_branch(x, s):
    if s > 0:
        return x * s
    return x - s


def test_a_guard_on_an_unspecialized_floats_value_is_refused(tmp_path):
    """The ShapeEnv guards `s > 0` for the branch; the file does not model it (a call with
    -1.0 would run the branch compiled for a positive s), so it refuses by name."""
    with pytest.raises(PythonifyUnsupported, match=r"value of an unspecialized float: L\['s'\]"):
        pythonify(positive_branch, (r(3), 2.5), tmp_path / "p.py", dynamic=True)


def returns_its_argument(x, s):
    return x * s, s


def test_a_returned_unspecialized_scalar_is_refused(tmp_path):
    """The file baked the capture's 2.5 into its return value, where torch.compile returns the
    call's float; the capture cannot tell the argument from an equal constant."""
    with pytest.raises(PythonifyUnsupported, match=r"an unspecialized scalar argument.*L\['s'\]"):
        pythonify(returns_its_argument, (r(3), 2.5), tmp_path / "p.py", dynamic=True)


def scale_after_break(x, s):
    y = x.sin()
    torch._dynamo.graph_break()
    return y * s


def test_a_scalar_read_after_a_graph_break(tmp_path):
    """Each region is its own capture: the one after the break guards `s` as Dynamo guards
    the resume function's argument."""
    x = r(4)
    res = pythonify(scale_after_break, (x, 2.5), tmp_path / "p.py")
    m = load(res.path, bind=scale_after_break)
    torch.testing.assert_close(m.call(x, 2.5), scale_after_break(x, 2.5), rtol=0, atol=0)
    with pytest.raises(PythonifyGuardError, match=r"L\['s'\]: expected 2.5"):
        m.call(x, 3.5)
    assert len(res.regions) == 2
    assert [g.source for g in res.regions[0].guards.scalars] == []
    assert [(g.source, g.value) for g in res.regions[1].guards.scalars] == [("L['s']", 2.5)]
    torch._dynamo.reset()
    res = pythonify(scale_after_break, (x, 2.5), tmp_path / "d.py", dynamic=True)
    m = load(res.path, bind=scale_after_break)
    for s in (2.5, 3.5):
        torch.testing.assert_close(m.call(x, s), scale_after_break(x, s))
