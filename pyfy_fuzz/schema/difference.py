"""Difference: one thing a subject did otherwise than its reference, as data.

Note [Differences are data]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
An oracle compares two observations and returns `Difference`s: which call (`CallRef`), which
pair (the subject; its reference follows from it), where (`locus`: an output, an input after
the call, a gradient, a probe, the seq_nr mapping, an exception, ...), which property (values,
shape, requires_grad, `_base`, ...), and the two sides as JSON data. Everything after the
oracles reads these fields: the bug identity (`aspect`), the folding of one bug's echoes into
its cause (oracles/consequences.py), the severity, the title, and the one check a repro.py
makes (pyfy_fuzz/corpus/_repro_check.py). The English a person reads (`describe`) is rendered from
them and never read back, so rewording a line renames nothing and a long explanation cut to
"... and N more" still folds (the fields are all kept).

Names: `name` is the program's own (a0, a1._base, self.p0); `role` maps it to what the
identity keeps (<arg>, <arg>._base, self.<param>), so one bug in two programs is one aspect.
`index` is an output leaf's position for the outputs and autograd oracles and the tensor
output's position for aliasing facts and the probes (they count tensors only), exactly as the
observations number them.

Torch-free and JSON-serialisable: case.json stores a finding's differences (format 5).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "CALL_KINDS",
    "LOCI",
    "OUTPUT_FACTS",
    "PROBES",
    "PROPS",
    "TENSOR_PROPS",
    "UNMAPPED_CLASSES",
    "USER_CODE_PROPS",
    "CallKind",
    "CallRef",
    "Difference",
    "ExcFacts",
    "Locus",
    "ProbeKind",
    "describe",
    "differences_of",
    "reference_of",
    "callee_role",
    "role",
]

CallKind = Literal["plan", "variant", "sequence", "probe", "setup"]
CALL_KINDS: tuple[CallKind, ...] = get_args(CallKind)
# The probes' fresh calls (pyfy_fuzz.case.probes): write into each output, bump the arguments'
# versions before backward, save the arguments before the call and backward after it.
ProbeKind = Literal["in-place", "version", "saved"]
PROBES: tuple[ProbeKind, ...] = get_args(ProbeKind)


@dataclass(frozen=True)
class CallRef:
    """Which call of the drive a difference is in."""

    kind: CallKind  # the plan's calls, its variant call, a call of its sequence, a probe, setup
    index: int = 0  # plan: call i; sequence: call j; otherwise 0
    # variant / sequence: the call's relationships to call 0 ('+'-joined tokens, spec.py)
    relation: str = ""
    recompiled: bool = False  # variant / sequence: torch.compile compiled a new graph for it
    # variant / sequence, pythonify: the file's guards accepted the inputs (no guard error)
    accepted: bool = False
    probe: str = ""  # probe: which (PROBES)

    def __post_init__(self) -> None:
        if self.kind not in CALL_KINDS:
            raise ValueError(f"unknown call kind {self.kind!r}; expected one of {CALL_KINDS}")
        if (self.kind == "probe") != bool(self.probe) or self.probe and self.probe not in PROBES:
            raise ValueError(f"a probe call names its probe ({PROBES}), and only it: {self}")
        if self.index < 0 or self.index and self.kind not in ("plan", "sequence"):
            raise ValueError(f"only plan and sequence calls have an index: {self}")
        if (self.relation or self.recompiled) and self.kind not in ("variant", "sequence"):
            raise ValueError(f"only variant and sequence calls have relationships: {self}")

    @property
    def later(self) -> bool:
        """A call that breaks what the compile assumed (the guards oracle's)."""
        return self.kind in ("variant", "sequence")

    def label(self) -> str:
        """How a person reads the call: "call 1", "variant call (shape, recompiled)"."""
        if self.kind == "plan":
            return f"call {self.index}"
        if self.kind == "probe":
            return f"{self.probe} probe call"
        if self.kind == "setup":
            return "setup"
        what = "variant call" if self.kind == "variant" else f"sequence call {self.index}"
        return f"{what} ({self.relation}{', recompiled' if self.recompiled else ''})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> CallRef:
        return CallRef(**d)


@dataclass(frozen=True)
class ExcFacts:
    """An exception as a difference records it: what identifies a crash."""

    type: str  # the short type name (BackendCompilerFailed(RuntimeError) keeps what raised)
    message: str  # the first line of its message, as raised
    phase: str = ""  # compile | call | backward | probe | probe-call | inputs | load
    # the innermost torch function it came from, "torch/<file>:<function>" (never a
    # comprehension's frame: Python 3.12 inlines them into their function)
    frame: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ExcFacts:
        return ExcFacts(**d)


Locus = Literal[
    "output",  # output `index`
    "structure",  # the outputs' pytree structure
    "input",  # input `name` after the call (an argument, a view argument's _base, self.<p>)
    "inputs",  # which inputs there are after the call (a _base appeared or vanished)
    "grad",  # the gradient of `name` after the first backward
    "grad2",  # the gradient of `name` after the second backward (retain_graph)
    "backward",  # whether backward ran at all (an output requires grad)
    "second_backward",  # what the second backward raised
    "leaves",  # which arguments are leaves requiring grad
    "hooks",  # which hooks ran during the call and its backward
    "saved_hooks",  # the saved-tensor hooks' promises
    "grad_mode",  # the grad mode right after the call
    "version",  # whether the call moved input `name`'s version counter
    "write",  # writing into output `index` in place (the in-place probe)
    "version_probe",  # backward after bumping the arguments' version counters
    "saved_probe",  # backward through tensors saved before the call
    "later",  # output `index` re-read after the later calls (CUDA-graph replays)
    "seq_nr",  # the forward-to-backward node mapping; `prop` is the mapping kind
    "cudagraph_skip",  # where the graphs ran without CUDA graphs
    "exception",  # the call raised where the reference did not, or the reverse, or otherwise
    "guard",  # the file's guards accepted inputs torch.compile's rejected (guard parity)
    # what user code torch called (a hook, a custom Function's method: `name`) received, how
    # often it ran, in which order (`index`: the argument, where the property is one's)
    "user_code",
]
LOCI: tuple[Locus, ...] = get_args(Locus)

# A tensor's properties, in the order compare.diff_tensor checks them (metadata first).
TENSOR_PROPS = (
    "type",
    "dtype",
    "shape",
    "stride",
    "storage_offset",
    "inner_names",
    "values",
    "presence",  # None on one side, a tensor on the other
    "tensor",  # a tensor on one side, another object on the other
    "value",  # a non-tensor output's value
)
# Facts of an output tensor as autograd and aliasing see it.
OUTPUT_FACTS = (
    "requires_grad",
    "is_leaf",
    "is_inference",
    "grad_fn",
    "is_input",  # which arguments the output is
    "base",  # its _base: none | input:<name> | base_of:<name> | output:<k> | other
    "shares_inputs",
    "shares_outputs",
)
# What the user_code oracle compares of the user code torch calls: how often a callee ran, in
# which order a promised sequence ran, how many arguments it got, and of each argument:
# None or a tensor, and the tensor's shape, dtype, requires_grad and version counter.
USER_CODE_PROPS = (
    "runs",
    "order",
    "arity",
    "presence",
    "shape",
    "dtype",
    "requires_grad",
    "version",
)
# The properties a locus may have.
PROPS: dict[str, tuple[str, ...]] = {
    "output": TENSOR_PROPS + OUTPUT_FACTS,
    "input": TENSOR_PROPS,
    "grad": TENSOR_PROPS,
    "grad2": TENSOR_PROPS,
    "later": ("unreadable", *TENSOR_PROPS),
    "structure": ("structure",),
    "inputs": ("names",),
    "backward": ("ran",),
    "second_backward": ("raised", "type"),
    "leaves": ("names",),
    "hooks": ("ran",),
    "saved_hooks": ("packed", "never_unpacked", "foreign_unpacks"),
    "grad_mode": ("enabled",),
    "version": ("moved",),
    "write": ("allowed", "changed_inputs", "changed_outputs"),
    "version_probe": ("outcome",),
    "saved_probe": ("outcome",),
    "seq_nr": (
        "graphs",
        "file_seq_nr",
        "file_grad_acc",
        "forward_grad_acc",
        "no_seq_nr",
        "unmapped",
        "order",
    ),
    "cudagraph_skip": ("torch_skipped", "file_skipped"),
    "exception": ("raised", "returned", "other", "not_guard"),
    "guard": ("parity",),
    "user_code": USER_CODE_PROPS,
}
# What the "unmapped" seq_nr kind's backward nodes are (Note [Bug identity] in identity.py).
UNMAPPED_CLASSES = ("custom autograd.Function backward", "effect tokens", "view replay", "compute")

_PROGRAM_NAME = re.compile(r"\b([apbv])\d+\b")
_ROLES = {"a": "<arg>", "p": "<param>", "b": "<buffer>", "v": "<value>"}


def role(name: str) -> str:
    """A program's value name as an identity keeps it: a0 -> <arg>, a1._base -> <arg>._base,
    self.p0 -> self.<param>: what kind of value, not which."""
    return _PROGRAM_NAME.sub(lambda m: _ROLES[m.group(1)], name)


# The hooks of generators/_hooks.py by their HOOK_LOG name, as a person (and an identity)
# names them; a custom Function's method is "<Function>.<method>".
_HOOK_ROLES = {
    "a": "tensor hook",
    "b": "tensor hook",
    "accumulated": "post-accumulate-grad hook",
    "node pre": "grad_fn pre-hook",
    "node": "grad_fn hook",
    "module pre": "module backward pre-hook",
    "module": "module backward hook",
}


def callee_role(callee: str) -> str:
    """A HOOK_LOG callee as an identity keeps it: Fn3.backward -> <Function>.backward, a
    hook by its kind (the two logging tensor hooks are one kind)."""
    if "." in callee:
        return "<Function>." + role(callee.split(".", 1)[1])
    return _HOOK_ROLES.get(callee, role(callee))


@dataclass(frozen=True)
class Difference:
    """One difference; see Note [Differences are data]."""

    oracle: str  # the oracle that compared it (oracles.ORACLES)
    subject: str  # the subject that differs; its reference: eager, or torch.compile
    call: CallRef  # which call
    locus: Locus  # where
    prop: str  # which property (PROPS[locus])
    index: int | None = None  # output / tensor-output position, where the locus has one
    name: str = ""  # the input, gradient or parameter, as the program names it
    inner: str = ""  # a subclass's inner tensor attribute the property is of ("a", "a.b")
    expected: Any = None  # the reference's side, JSON data
    actual: Any = None  # the subject's side, JSON data
    # the exception that identifies it: the subject's, or the reference's it failed to raise
    exc: ExcFacts | None = None
    # a refinement the aspect keeps: the seq_nr "unmapped" kind's class (UNMAPPED_CLASSES),
    # "retained" for the gradient of an argument that is no leaf (retain_grad), or ""
    kind_detail: str = ""
    # for a person only (a seq_nr rule's nodes, guard-failure reasons); never identity
    note: str = ""
    # the reference's exception where both raised (exception "other")
    ref_exc: ExcFacts | None = field(default=None)

    def __post_init__(self) -> None:
        if self.locus not in LOCI:
            raise ValueError(f"unknown locus {self.locus!r}; expected one of {LOCI}")
        if self.prop not in PROPS[self.locus]:
            raise ValueError(
                f"{self.locus} has no property {self.prop!r}; expected one of {PROPS[self.locus]}"
            )
        if self.locus in ("output", "write", "later") and self.index is None:
            raise ValueError(f"a difference at an {self.locus} names its index: {self}")
        if self.locus in ("input", "grad", "grad2", "version") and not self.name:
            raise ValueError(f"a difference at {self.locus} names its tensor: {self}")
        if self.locus == "user_code" and not self.name:
            raise ValueError(f"a difference at user_code names its callee: {self}")
        if self.locus == "exception" and self.exc is None:
            raise ValueError(f"an exception difference records the exception: {self}")

    # -- identity ------------------------------------------------------------------------
    @property
    def aspect(self) -> str:
        """What differs, as the identity keeps it: the locus and property, with the
        program's names as roles, never values, indices or the call (Note [Bug identity] in
        oracles/identity.py). The reference's side of a yes/no fact stays (it says which way
        metadata went wrong); the aspects of one gradient (its values, None, after the
        second backward) are one: one cause changes all of them."""
        loc, p = self.locus, self.prop
        if loc == "output":
            if p in ("requires_grad", "is_leaf", "is_inference"):
                return f"output N.{p} {self.expected}"
            if p == "grad_fn":
                return f"output N.grad_fn {'None' if self.expected is None else 'set'}"
            if p == "base":
                return f"output N._base: {_base_kind(self.expected)}"
            return f"output N: {_tensor_aspect(self)}"
        if loc == "input":
            return f"input {role(self.name)} after the call: {_tensor_aspect(self)}"
        if loc in ("grad", "grad2"):
            return f"grad of {role(self.name)}" + (" (retained)" if self.kind_detail else "")
        if loc == "later":
            return "output N changed after later calls"
        if loc == "version":
            return f"input {role(self.name)}: version counter moved {self.expected}"
        if loc == "write":
            if p == "allowed":  # what the reference did: the write allowed, or refused (type)
                return f"writing into output N in place: {self.expected}"
            return f"writing into output N: what it changes ({p[8:]})"
        if loc == "seq_nr":
            return f"seq_nr: {p}" + (f" ({self.kind_detail})" if self.kind_detail else "")
        if loc == "saved_hooks":
            return f"saved-tensor hooks: {p}"
        if loc in ("version_probe", "saved_probe"):
            return f"{loc}: expected {self.expected}"
        if loc == "second_backward":
            return f"second backward: {p}"
        if loc == "user_code":
            return _user_code_aspect(self)
        return f"{loc}: {p}"

    # -- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "oracle": self.oracle,
            "subject": self.subject,
            "call": self.call.to_dict(),
            "locus": self.locus,
            "prop": self.prop,
        }
        for k in ("index", "expected", "actual"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        for k in ("name", "inner", "kind_detail", "note"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        if self.exc is not None:
            d["exc"] = self.exc.to_dict()
        if self.ref_exc is not None:
            d["ref_exc"] = self.ref_exc.to_dict()
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Difference:
        exc, ref_exc = d.get("exc"), d.get("ref_exc")
        return Difference(
            oracle=str(d["oracle"]),
            subject=str(d["subject"]),
            call=CallRef.from_dict(d["call"]),
            locus=d["locus"],
            prop=str(d["prop"]),
            index=d.get("index"),
            name=str(d.get("name", "")),
            inner=str(d.get("inner", "")),
            expected=d.get("expected"),
            actual=d.get("actual"),
            exc=ExcFacts.from_dict(exc) if exc else None,
            kind_detail=str(d.get("kind_detail", "")),
            note=str(d.get("note", "")),
            ref_exc=ExcFacts.from_dict(ref_exc) if ref_exc else None,
        )


def _user_code_aspect(d: Difference) -> str:
    """What differs of user code, as the identity keeps it: "<Function>.backward runs another
    number of times", "tensor hook argument presence: a tensor" (the reference's side of a
    yes/no fact), never the counts, shapes or which argument -- nor the subject's side (one
    cause may drop a run here and add one there)."""
    who, p = callee_role(d.name), d.prop
    if p == "runs":
        how = "where the reference does not" if d.expected == 0 else "another number of times"
        return f"user code {who} runs {how}"
    if p == "order":
        return f"user code {who}: order"
    if p in ("presence", "requires_grad"):
        return f"user code {who} argument {p}: {d.expected}"
    return f"user code {who} argument {p}"


def differences_of(finding: Mapping[str, Any]) -> list[Difference]:
    """A finding's (or case.json's) differences, as data."""
    return [Difference.from_dict(d) for d in finding.get("differences") or ()]


def _base_kind(base: Any) -> str:
    """input:a0 -> input, output:1 -> output: which kind of tensor the _base is."""
    return str(base).split(":", 1)[0]


def _tensor_aspect(d: Difference) -> str:
    inner = f"inner tensor {role(d.inner)}: " if d.inner else ""
    if d.prop in ("values", "presence", "tensor", "value", "inner_names"):
        return inner + d.prop
    return f"{inner}{d.prop.replace('_', ' ')}"


# -- the English (for people; never read back) ---------------------------------------------
_REF = {"torch.compile": "eager", "torch.compile-warm": "eager", "pythonify": "torch.compile"}


def reference_of(subject: str) -> str:
    """Who a subject is judged against: eager for torch.compile, torch.compile for the file."""
    return _REF.get(subject, "eager")


def _exc_text(e: ExcFacts) -> str:
    return f"{e.type} in {e.phase}: {e.message}" if e.phase else f"{e.type}: {e.message}"


def _vs(d: Difference) -> str:
    return f"{_show(d.expected)} vs {_show(d.actual)}"


def _show(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(repr(x) if isinstance(x, str) else _show(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_show(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v)


def _tensor_text(d: Difference) -> str:
    inner = f"inner tensor {d.inner}: " if d.inner else ""
    p = d.prop
    if p == "values":
        return f"{inner}values differ: expected {d.expected}, got {d.actual}"
    if p == "inner_names":
        return f"{inner}inner tensors {_vs(d)}"
    if p in ("presence", "tensor", "value"):
        return f"{inner}{_vs(d)}"
    return f"{inner}{p.replace('_', ' ')} {_vs(d)}"


def describe(d: Difference) -> str:
    """The difference in words, for a person: one line, the call first."""
    call = d.call.label()
    body = " ".join(_body(d).splitlines())
    if d.locus == "exception" and d.call.kind == "setup" or d.locus == "later":
        return body  # "... failed to compile", "output j of call i changed ..."
    if d.call.kind == "probe" and d.locus != "exception":
        return body  # the probe's own words say which it is
    if d.call.later:
        accepted = " accepted by the file's guards" if d.call.accepted else ""
        return f"{call}{accepted}: {body}"
    return f"{call}: {body}"


def _output_body(d: Difference) -> str:
    p = d.prop
    if p in ("requires_grad", "is_leaf", "is_inference", "grad_fn"):
        return f"output {d.index}.{p} {_vs(d)}"
    if p == "is_input":
        return f"output {d.index} is input {_vs(d)}"
    if p == "base":
        return f"output {d.index}._base: {_vs(d)}"
    if p in ("shares_inputs", "shares_outputs"):
        return f"output {d.index} shares storage with {p[7:]} {_vs(d)}"
    return f"output {d.index}: {_tensor_text(d)}"


def _body(d: Difference) -> str:  # noqa: C901 -- one arm per locus, each a line or two
    loc, p, ref = d.locus, d.prop, reference_of(d.subject)
    if loc == "output":
        return _output_body(d)
    if loc == "input":
        return f"input {d.name} after the call: {_tensor_text(d)}"
    if loc == "grad":
        return f"grad of {d.name}: {_tensor_text(d)}"
    if loc == "grad2":
        return f"grad after the second backward of {d.name}: {_tensor_text(d)}"
    if loc == "later":
        what = d.actual if p == "unreadable" else _tensor_text(d)
        return (
            f"output {d.index} of call {d.call.index} changed after later calls ({what}); "
            f"in {ref} it kept its values"
        )
    if loc == "structure":
        return f"output structure {_vs(d)}"
    if loc == "inputs":
        return f"inputs after the call: {_vs(d)} (a _base appeared or vanished)"
    if loc == "backward":
        return f"grad: ran {_vs(d)}"
    if loc == "second_backward":
        return f"second backward: {_vs(d)}"
    if loc == "leaves":
        return f"leaves {_vs(d)}"
    if loc == "hooks":
        return f"hooks ran {_vs(d)}"
    if loc == "saved_hooks":
        if p == "packed":
            return f"saved-tensor hooks: {d.expected} tensors packed vs {d.actual}"
        if p == "never_unpacked":
            return f"saved-tensor hooks: {d.actual} of {d.note} packed tensors never unpacked"
        return f"saved-tensor hooks: {d.actual} unpacks of objects no pack returned"
    if loc == "grad_mode":
        return f"grad mode after the call {_vs(d)}"
    if loc == "version":
        how = "bumped by the call (not mutated)" if d.actual else "not bumped by the call (mutated)"
        return f"input {d.name}: version counter {how}"
    if loc == "write":
        if p == "allowed":
            return f"writing into output {d.index} in place: {_vs(d)}"
        return f"writing into output {d.index} changed {p[8:]} {_vs(d)}"
    if loc == "version_probe":
        return (
            "backward after bumping the arguments' version counters: "
            f"expected {d.expected}, got {d.actual}"
        )
    if loc == "saved_probe":
        return (
            f"backward through tensors saved before the call: expected {d.expected}, got {d.actual}"
        )
    if loc in ("seq_nr", "cudagraph_skip", "guard"):
        return d.note
    if loc == "user_code":
        return _user_code_text(d, ref)
    return _exception_text(d, ref)


def _user_code_text(d: Difference, ref: str) -> str:
    p = d.prop
    if p == "runs":
        return f"{d.name} ran {d.actual} times; in {ref} {d.expected}"
    if p == "order":
        return f"{d.name}: user code ran in the order {_vs(d)}"
    if p == "arity":
        return f"{d.name} received {d.actual} arguments; in {ref} {d.expected}"
    where = f"{d.name} argument {d.index}" + (f" ({d.note})" if d.note else "")
    if p == "presence":
        return f"{where} received {d.actual}; in {ref} {d.expected}"
    return f"{where}: {p.replace('_', ' ')} {_vs(d)}"


def _exception_text(d: Difference, ref: str) -> str:
    e = d.exc
    assert e is not None  # __post_init__
    if d.call.kind == "setup":
        return f"{d.subject} failed to compile: {_exc_text(e)}"
    if d.prop == "raised":
        return f"raised {_exc_text(e)}; {ref} did not"
    if d.prop == "returned":
        return f"returned; {ref} raised {_exc_text(e)}"
    if d.prop == "not_guard":
        return f"raised {e.type}: {e.message}; expected {d.expected}"
    other = d.ref_exc
    return f"raised {_exc_text(e)}; {ref} raised " + (_exc_text(other) if other else "?")
