"""Bug identity (oracles/identity.py): one bug, one signature; two bugs, two."""

from __future__ import annotations

import pytest
import torch

import oracles
from oracles import Finding
from oracles.identity import PENDING, KnownBug, KnownBugs, normalise_message
from oracles.seq_nr import unmapped_class
from pyfy_fuzz.case.recording import exc_obs
from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts

from .helpers import evidence, on_clones, spec

MUT = spec([("add_", ("a0", 1), ()), ("sin", ("a0",), ("v0",))], ["v0"], grad="none")


_RAISED = Difference(
    "exceptions", "torch.compile", CallRef("plan", 0), "exception", "raised", exc=ExcFacts("E", "m")
)
# A divergence's finding records its differences; the aspect under test is given.
_VALUES = (
    Difference("mutation", "torch.compile", CallRef("plan", 0), "input", "values", name="a0"),
)


def _crash(
    paths: tuple[str, ...],
    message: str,
    frame: str = "torch/_ops.py:__call__",
    exc_type: str = "AssertionError",
) -> Finding:
    return Finding(
        "crash",
        "exceptions",
        "torch.compile",
        paths,
        f"explanation {message}",
        exc_type,
        message=normalise_message(message),
        frame=frame,
        differences=(_RAISED,),
    )


def test_crash_identity_is_type_message_and_frame_not_paths():
    a = _crash(("runtime/x",), "shape '[2, 3]' is invalid for input of size 7")
    b = _crash(("dedupe/y", "runtime/z"), "shape '[4]' is invalid for input of size 9")
    assert a.signature == b.signature and a.coarse == b.coarse
    assert a.identity_paths == ()
    # Two different assertion messages of one type are two bugs.
    c = _crash(("runtime/x",), "expand: the requested shape has too few dimensions!")
    assert c.signature != a.signature
    # The same message raised from another torch function is another bug.
    d = _crash(("runtime/x",), "shape '[2, 3]' is invalid", "torch/_refs/__init__.py:view")
    assert len({a.signature, d.signature}) == 2
    assert a.signature.startswith("crash.AssertionError.") and "/" not in a.signature
    # A RuntimeError's frame is the path to the C++ kernel, not the bug (Note [Which frame
    # names a crash]).
    r1 = _crash((), "shape '[2, 3]' is invalid", "torch/a.py:f", "RuntimeError")
    r2 = _crash((), "shape '[2, 3]' is invalid", "torch/b.py:g", "RuntimeError")
    assert r1.signature == r2.signature
    # One exception met by another oracle (the guards oracle's variant call) is the same bug.
    g = Finding(**{**a.__dict__, "oracle": "guards"})
    assert g.coarse == a.coarse
    with pytest.raises(ValueError, match="unknown finding kind"):
        Finding("oops", "outputs", "torch.compile", (), "", differences=_VALUES)


def test_divergence_identity_is_aspect_plus_paths():
    base = dict(
        kind="compile-divergence", oracle="mutation", subject="torch.compile", differences=_VALUES
    )
    a = Finding(**base, wrappers=("runtime/x",), explanation="e1", aspect="input <arg>: values")
    b = Finding(**base, wrappers=("runtime/x",), explanation="e2", aspect="input <arg>: values")
    c = Finding(**base, wrappers=("runtime/y",), explanation="e1", aspect="input <arg>: values")
    d = Finding(**base, wrappers=("runtime/x",), explanation="e1", aspect="output N: values")
    assert a.signature == b.signature
    assert a.coarse == c.coarse and a.signature != c.signature
    assert a.coarse != d.coarse


def test_signature_leaves_out_path_refinements():
    """A refinement (a finer variant of a path that is also emitted) never splits a bug."""
    from pyfy_fuzz.schema.paths import REFINEMENTS

    base = ("runtime/input_mutation/data", "synthetic_base/1d", "synthetic_base/inference")
    plain = Finding(
        "compile-divergence", "guards", "torch.compile", base, "x", aspect="a", differences=_VALUES
    )
    for refinement in sorted(REFINEMENTS):
        refined = Finding(
            "compile-divergence",
            "guards",
            "torch.compile",
            (*base, refinement),
            "x",
            aspect="a",
            differences=_VALUES,
        )
        assert refined.signature == plain.signature


@pytest.mark.parametrize(
    ("fields", "aspect"),
    [
        ({"locus": "output", "prop": "values", "index": 1}, "output N: values"),
        ({"locus": "input", "prop": "values", "name": "a3"}, "input <arg> after the call: values"),
        (
            {"locus": "output", "prop": "requires_grad", "index": 0, "expected": True},
            "output N.requires_grad True",
        ),
        (
            {"locus": "output", "prop": "base", "index": 2, "expected": "input:a1"},
            "output N._base: input",
        ),
        ({"locus": "grad", "prop": "shape", "name": "self.p0"}, "grad of self.<param>"),
        ({"locus": "grad2", "prop": "values", "name": "a2"}, "grad of <arg>"),
        (
            {"locus": "input", "prop": "stride", "name": "a1._base"},
            "input <arg>._base after the call: stride",
        ),
    ],
)
def test_aspect_takes_out_indices_values_and_names(fields, aspect):
    d = Difference("outputs", "torch.compile", CallRef("plan", 3), actual="whatever", **fields)
    assert d.aspect == aspect


def test_message_normalisation():
    n = normalise_message
    # Note [Where the recursion limit is met]: one message wherever the limit was hit
    for where in ("", " while calling a Python object", " in comparison"):
        assert n(f"maximum recursion depth exceeded{where}") == "maximum recursion depth exceeded"
    assert n("shape '[2, 3]' is invalid for input of size 7") == n(
        "shape '[8]' is invalid for input of size 12"
    )
    assert n("at 0x7f00 in /tmp/a/b.py primals_1 arg0_3") == "at 0x? in <path> primals_N argN_N"
    assert "float64" in n("expected float64 but got float32")
    wrapped = (
        "Dynamo failed to run FX node with fake tensors: call_function <built-in method add>"
        "(*(FakeTensor(..., size=(2,)),), **{}): got RuntimeError('The size of tensor a (2) "
        "must match the size of tensor b (3) at non-singleton dimension 0')"
    )
    assert n(wrapped).startswith("The size of tensor a [...] must match")
    # The headline, not this program's tensors and nodes; a compiler failure's type prefix off.
    inplace = (
        "RuntimeError: one of the variables needed for gradient computation has been modified "
        "by an inplace operation: [torch.FloatTensor [2]], which is output 0 of CopyBackwards"
    )
    assert n(inplace) == n(inplace.replace("CopyBackwards", "AsStridedBackward0")[14:])
    assert n("s88**2 is not tracked") == n("s50**2 is not tracked") == n("s1**2*s0 is not tracked")
    # Note [Symbolic sizes]: a bound check met with static and with dynamic shapes is one bug.
    static = (
        "as_strided_scatter: sizes [3], strides [1], storage offset 4  and itemsize 4 requiring "
        "a storage size of 28 are out of bounds for storage of size 16"
    )
    dynamic = (
        "as_strided_scatter: sizes [s50, s50], strides [s50*s88, s88], storage offset 0  and "
        "itemsize 2 requiring a storage size of 2*s50*(s88 - 1) + 2*(s50 - 1) + 2 are out of "
        "bounds for storage of size 2*s50**2"
    )
    assert (
        n(static)
        == n(dynamic)
        == (
            "as_strided_scatter: sizes [...], strides [...], storage offset N and itemsize N "
            "requiring a storage size of N are out of bounds for storage of size N"
        )
    )
    assert n("expected float64 but got s0") == "expected float64 but got N"  # words stay
    assert n("setStorage: sizes [2]") == "setStorage: sizes [...]"  # a short head stays whole


def test_compiler_failure_is_identified_by_what_the_compiler_raised():
    a = _crash((), "outs_to_grad length [2] != tangents length [1]")
    b = Finding(**{**a.__dict__, "exc_type": "BackendCompilerFailed(AssertionError)"})
    c = Finding(**{**a.__dict__, "exc_type": "AssertionError"})
    assert b.coarse == c.coarse


def test_known_bugs_match_by_subset_of_paths():
    known = KnownBugs()
    f = Finding(
        "compile-divergence",
        "mutation",
        "torch.compile",
        ("runtime/a", "runtime/b"),
        "",
        aspect="x",
        differences=_VALUES,
    ).to_dict()
    assert known.match(f) is None
    known.add(KnownBug(f["coarse"], frozenset({"runtime/a"}), "sig-a"))
    hit = known.match(f)
    assert hit is not None and hit.signature == "sig-a"
    other = Finding(
        "compile-divergence",
        "mutation",
        "torch.compile",
        ("runtime/b",),
        "",
        aspect="x",
        differences=_VALUES,
    ).to_dict()
    assert known.match(other) is None  # the known minimal program needs runtime/a
    known.add(KnownBug(f["coarse"], frozenset(), PENDING))
    assert known.match(other).signature == PENDING
    hit = known.match(f)
    assert hit is not None and hit.signature == "sig-a"  # a real entry beats PENDING
    known.settle(f["coarse"], [KnownBug(f["coarse"], frozenset({"runtime/b"}), "sig-b")])
    assert known.match(other).signature == "sig-b" and "sig-a" not in known


def test_exception_frame_is_the_innermost_torch_frame():
    try:
        torch.zeros(2, 3).view(7)
    except RuntimeError as e:
        obs = exc_obs(e, "call")
    else:
        raise AssertionError("view should raise")
    # Raised from C++: no torch frame, or torch's own Python wrapper.
    assert obs.frame == "" or obs.frame.startswith("torch/")
    try:
        torch.nn.functional.linear(torch.zeros(2, 3), torch.zeros(4))
    except RuntimeError as e:
        assert exc_obs(e, "call").frame in ("", "torch/nn/functional.py:linear") or exc_obs(
            e, "call"
        ).frame.startswith("torch/")
    try:
        torch.nn.functional.pad(torch.zeros(2), (1,))
    except Exception as e:
        assert exc_obs(e, "call").frame.startswith("torch/")


def test_exception_frame_skips_torch_check():
    """The innermost torch frame that says where: not torch._check's helpers, which every
    check passes through -- unless there is nothing else."""
    import torch._refs

    def frame(fn) -> str:  # type: ignore[no-untyped-def]
        try:
            fn()
        except Exception as e:
            return exc_obs(e, "call").frame
        raise AssertionError("should raise")

    # torch._check inside torch._refs.narrow: the caller names the bug.
    assert frame(lambda: torch._refs.narrow(torch.zeros(2), 0, 5, 1)) == (
        "torch/_refs/__init__.py:narrow"
    )
    # The dispatcher's frame is kept (its callers are dispatch modes, not bugs).
    assert frame(lambda: torch.ops.aten.view.default(torch.zeros(2, 3), [7])) == (
        "torch/_ops.py:__call__"
    )
    # Called from outside torch: the generic frame is all there is.
    assert frame(lambda: torch._check(False, lambda: "no")).startswith("torch/__init__.py:_check")


def test_torch_alone_when_the_file_agrees_with_eager():
    """torch.compile drops a mutation; the file does it right: one finding, torch's."""
    ev = evidence(MUT, compiled_wrap=on_clones, pythonified_wrap=lambda fn: fn)
    found = oracles.check_all(ev)
    assert [f.subject for f in found if f.oracle == "mutation"] == ["torch.compile"]
    # The file wrong in the same way as torch.compile: torch's finding, no pythonify one.
    ev = evidence(MUT, compiled_wrap=on_clones, pythonified_wrap=on_clones)
    assert [f.subject for f in oracles.check_all(ev) if f.oracle == "mutation"] == ["torch.compile"]
    # The file wrong where torch.compile is right: the generator's.
    ev = evidence(MUT, compiled_wrap=lambda fn: fn, pythonified_wrap=on_clones)
    assert [f.subject for f in oracles.check_all(ev) if f.oracle == "mutation"] == ["pythonify"]


@pytest.mark.parametrize(
    ("targets", "in_function", "kind"),
    [
        (["aten.mul.Tensor"], False, "compute"),
        (["with_effects"], False, "effect tokens"),
        (["aten.slice.Tensor", "aten.mul.Tensor"], False, "view replay"),
        (["with_effects"], True, "custom autograd.Function backward"),
    ],
)
def test_unmapped_seq_nr_nodes_are_classed_by_what_they_are(targets, in_function, kind):
    assert unmapped_class(targets, in_function) == kind
