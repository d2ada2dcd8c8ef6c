"""Bug identity: what makes two findings one bug, decided cheaply before anything is shrunk.

Note [Bug identity]
~~~~~~~~~~~~~~~~~~~
A finding's identity names its *cause*, not the context the program happened to run in:

- A finding with an exception (a crash, a missing or different error) is identified by the
  exception type, its message with values, shapes, sizes and names normalised, and the
  innermost torch frame it was raised from (file:function) -- the way Hypothesis's
  ``InterestingOrigin`` tells failures apart. Two assertion messages of one type are two bugs;
  one message seen under different wrapper paths is one.
- A divergence is identified by the oracle and the *aspect* that differs ("output N: values
  differ", "output N.requires_grad True", "grad of <arg>: values differ", ...: the first
  difference with values, indices and names normalised), plus the wrapper paths the *shrunk*
  program still needs.

The identity without paths is the *coarse* key; it is computed from any case, shrunk or not.
Novelty is decided on it before shrinking (`KnownBugs.match`): a finding is known when a known
bug has the same coarse key and its (shrunk) paths are a subset of the finding's paths -- the
known minimal program's context is contained in this one's, so this one is the same bug in a
bigger program. After the shrink the refined identity (coarse + the shrunk program's paths)
names the entry; if a known bug already covers it, it is merged into that entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyfy_fuzz.schema.difference import Difference, describe, differences_of, reference_of
from pyfy_fuzz.schema.finding import identity_type

from .groups import group_of

__all__ = [
    "PENDING",
    "REUSED_ALIASING",
    "SEVERITIES",
    "KnownBug",
    "KnownBugs",
    "difference_of",
    "difference_severity",
    "differences_of",
    "identity_type",
    "normalise_message",
    "severity_of",
    "strip_type_prefix",
    "title_of",
    "user_code_phrase",
    "worst_difference",
]

# A coarse key being shrunk right now: every finding with it counts as known meanwhile.
PENDING = "pending"
# The aspect of every symptom of a graph reused for other aliasing (Note [Variant-call
# identity] in guards.py): a guard on aliasing is missing, and the next such input gets wrong
# values silently, whatever this one showed.
REUSED_ALIASING = "variant call (aliasing): ran on the graph compiled for other aliasing"

_HEX = re.compile(r"0x[0-9a-fA-F]+")
# The module a generated program is imported under (generators.materialize: one per program,
# named by its hash): its classes (MirrorTensor) are the same class in every program.
_PROGRAM_MODULE = re.compile(r"\bpyfy_program_[0-9a-f]+\.")
_PATH = re.compile(r"(/[\w.\-]+){2,}")
# Value names of generated programs (a0 argument, p0 parameter, b0 buffer, v3 intermediate)
# and of FX graphs (primals_1, arg0_1, getitem_3, view_2, tangents_1).
_PROGRAM_NAMES = {"a": "<arg>", "p": "<param>", "b": "<buffer>", "v": "<value>"}
_PROGRAM_NAME = re.compile(r"\b([apbv])\d+\b")
_FX_NAME = re.compile(r"\b(?:[a-z]+(?:_[a-z]+)*_\d+(?:_\d+)?|arg\d+_\d+)\b")
# sympy symbols of dynamic shapes (s0, u3, ...): a size like any other (Note [Symbolic sizes]).
_SYMBOL = re.compile(r"\b[suqzc]\d+\b")
# "<Type>: " in front of a compiler failure's message (BackendCompilerFailed says what raised).
_TYPE_PREFIX = re.compile(r"^\w+(Error|Exception|Failure): ")
# A message's headline ends at its first ": " after this many characters; what follows names
# this program's tensors and nodes ("...modified by an inplace operation: [torch.FloatTensor
# [2]], which is output 0 of CopyBackwards, is at version 3").
_HEADLINE_MIN = 20
# Arithmetic over sizes once symbols and numbers are N (N**N*N + N, N*(N + N)).
_SIZE_EXPR = re.compile(r"\(?\bN\b\)?(?:\s*(?:\*\*|//|[*+/-])\s*\(?\bN\b\)?)+")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?(?![\w])")
_NUM_LIST = re.compile(r"[\[(]\s*(?:N\s*,\s*)*N?\s*,?\s*[\])]")
_SPACES = re.compile(r"\s+")
# Note [Where the recursion limit is met]
# Python says where the limit was hit -- "maximum recursion depth exceeded" alone, "... while
# calling a Python object", "... in comparison", "... while getting the repr of an object" --
# and where depends on the stack the process had when the bug recursed, not on the bug: the
# 2.15 smoke campaign saved a RecursionError whose repro.py, run alone, met the limit at
# another place and said "another error". One recursion bug is one message.
_RECURSION = re.compile(r"^(maximum recursion depth exceeded)\b.*")
# Dynamo re-raises an error of running a node on fake tensors as TorchRuntimeError(... got
# RuntimeError('the real message')): the real message is the identity.
_WRAPPED = re.compile(r"\bgot (\w+)\((['\"])(.*)")


def strip_type_prefix(message: str) -> str:
    """A compiler failure's message without its "<Type>: " head ("RuntimeError: x" -> "x"):
    what str() of the exception the compiler raised gives."""
    return _TYPE_PREFIX.sub("", message)


def normalise_message(message: str) -> str:
    """An exception message with what varies between programs of one bug taken out: numbers
    (values, sizes, shapes, indices), addresses, paths, value names. dtypes, op names and the
    words stay: they tell bugs apart."""
    text = message.strip().splitlines()[0] if message.strip() else ""
    m = _WRAPPED.search(text)
    if m is not None:
        text = m.group(3).rstrip(")").rstrip(m.group(2))
    text = strip_type_prefix(text)
    text = _RECURSION.sub(r"\1", text)  # Note [Where the recursion limit is met]
    cut = text.find(": ", _HEADLINE_MIN)
    if cut > 0:
        text = text[:cut]
    text = _PROGRAM_MODULE.sub("", text)
    text = _HEX.sub("0x?", text)
    text = _SYMBOL.sub("N", text)
    text = _PATH.sub("<path>", text)
    text = _PROGRAM_NAME.sub(lambda k: _PROGRAM_NAMES[k.group(1)], text)
    text = _FX_NAME.sub(_fx_name, text)
    text = _NUMBER.sub("N", text)
    text = _SIZE_EXPR.sub("N", text)
    text = _NUM_LIST.sub("[...]", text)
    return _SPACES.sub(" ", text).strip()[:200]


# Note [Symbolic sizes]
# ~~~~~~~~~~~~~~~~~~~~~
# One bug met with static and with dynamic shapes raises one message with numbers in one and
# sympy expressions in the other ("sizes [3], strides [1], ... storage size of 28" against
# "sizes [s50, s50], strides [s50*s88, s88], ... storage size of 2*s50*(s88 - 1) + 2"). A
# symbol is a size, and arithmetic over sizes is a size, so both normalise to "sizes [...],
# strides [...], ... storage size of N": one entry. (Before format 4 symbols were kept as
# names, and the campaign of 2026-11-24 saved the as_strided_scatter bound check twice.)


def _fx_name(m: re.Match[str]) -> str:
    """primals_1 -> primals_N, arg0_1 -> argN_N (dtypes such as float64 do not match)."""
    return re.sub(r"\d+", "N", m.group(0))


@dataclass(frozen=True)
class KnownBug:
    """One known bug: its coarse key, the wrapper paths its shrunk program needs, and the
    corpus signature it is saved under (`PENDING` while a worker shrinks it)."""

    coarse: str  # identity without paths (Finding.coarse)
    paths: frozenset[str]  # the shrunk program's signature paths; empty for exceptions
    signature: str  # the entry's directory name, or PENDING

    def to_dict(self) -> dict[str, Any]:
        return {"coarse": self.coarse, "paths": sorted(self.paths), "signature": self.signature}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> KnownBug:
        return KnownBug(str(d["coarse"]), frozenset(d.get("paths", ())), str(d["signature"]))


@dataclass
class KnownBugs:
    """The bugs a campaign must not report as new, by coarse key (see Note [Bug identity])."""

    table: dict[str, list[KnownBug]] = field(default_factory=dict)

    def add(self, bug: KnownBug) -> None:
        bugs = self.table.setdefault(bug.coarse, [])
        if bug not in bugs:
            bugs.append(bug)

    def update(self, bugs: Iterable[KnownBug]) -> None:
        for b in bugs:
            self.add(b)

    def settle(self, coarse: str, bugs: Iterable[KnownBug]) -> None:
        """Replace what is known of `coarse` (a shrink ended: its PENDING mark goes)."""
        self.table[coarse] = [b for b in bugs if b.coarse == coarse]

    def of(self, coarse: str) -> list[KnownBug]:
        return list(self.table.get(coarse, ()))

    def match(self, finding: Mapping[str, Any]) -> KnownBug | None:
        """The known bug that covers `finding` (a Finding's dict), or None: same coarse key and
        the known paths a subset of the finding's. A real entry wins over a PENDING mark, and
        the most specific entry (most paths) over a more general one."""
        bugs = self.table.get(str(finding.get("coarse")), ())
        paths = frozenset(finding.get("identity_paths", ()))
        covering = [b for b in bugs if b.paths <= paths]
        if not covering:
            return None
        return max(covering, key=lambda b: (b.signature != PENDING, len(b.paths)))

    def __len__(self) -> int:
        return sum(len(v) for v in self.table.values())

    def __contains__(self, signature: object) -> bool:
        return any(b.signature == signature for v in self.table.values() for b in v)


# Severity: how bad a bug is for a user, worst first (the report's order).
SEVERITIES = {
    1: "silent wrong values or gradients",
    2: "crash where eager runs (also interpreter crash, hang, a process left broken, "
    "pyfy-fuzz's own error)",
    3: "autograd metadata, aliasing or error-handling differences "
    "(requires_grad, _base, version, a missing error)",
    4: "seq_nr mapping",
    5: "other (torch's own refusals: 'does not yet handle', 'not supported')",
}
_CRASH_KINDS = ("crash", "interpreter-crash", "hang", "harness-error", "process-broken")
# Where a difference is a value a user computes with (a tensor's values, shape, dtype, type,
# a gradient or hook that is there or not)...
_VALUE_LOCI = ("output", "input", "grad", "grad2", "later")
_VALUE_PROPS = (
    "values",
    "shape",
    "dtype",
    "type",
    "inner_names",
    "presence",
    "tensor",
    "value",
    "unreadable",
)
# ... and the loci whose every difference is one: whether backward ran, which hooks ran.
_VALUE_WHOLE = ("backward", "hooks")
# What user code torch calls is handed, where it is what the code computes with: whether it
# ran, how many arguments, None or a tensor, its shape and dtype (requires_grad, the version
# counter and the order are metadata).
_USER_CODE_VALUES = ("runs", "arity", "presence", "shape", "dtype")


def difference_severity(d: Difference) -> int:
    """1..5 (SEVERITIES) of one difference, from its fields: wrong values beat metadata
    (strides, storage offsets, autograd facts, aliasing, version counters, error handling),
    which beat the seq_nr mapping."""
    if d.locus == "seq_nr":
        return 4
    if d.locus in _VALUE_WHOLE or (d.locus in _VALUE_LOCI and d.prop in _VALUE_PROPS):
        return 1
    if d.locus == "user_code" and d.prop in _USER_CODE_VALUES:
        return 1
    return 3


def severity_of(finding: Mapping[str, Any]) -> int:
    """1..5 (SEVERITIES) from a finding's (or case.json's) kind and differences: the worst of
    its own and of those folded into it (Note [Consequences]), since one bug is as bad as
    its worst consequence."""
    kind = finding.get("kind")
    if group_of(finding) == "refusal":
        return 5  # torch says it does not handle the program: counted apart, not a crash
    if kind in _CRASH_KINDS:
        return 2
    if kind == "guard-unsound" or finding.get("aspect") == REUSED_ALIASING:
        return 1
    diffs = differences_of(finding)
    return min((difference_severity(d) for d in diffs), default=5)


def worst_difference(finding: Mapping[str, Any]) -> Difference | None:
    """The difference a title names: the most severe, the first of equals."""
    diffs = differences_of(finding)
    return min(diffs, key=difference_severity) if diffs else None


# "<what differs from the reference>", per locus of the worst difference.
_LOCUS_PHRASE = {
    "output": "an output's {what} from {ref}",
    "structure": "the output structure differs from {ref}",
    "input": "an input's {what} after the call (input mutation), unlike {ref}",
    "inputs": "which inputs have a _base after the call differs from {ref}",
    "grad": "gradients differ from {ref}",
    "grad2": "gradients after a second backward differ from {ref}",
    "backward": "whether backward runs differs from {ref}",
    "second_backward": "the second backward raises differently from {ref}",
    "leaves": "which arguments are leaves differs from {ref}",
    "hooks": "the hooks that run differ from {ref}",
    "saved_hooks": "saved-tensor hooks' promises are broken, unlike {ref}",
    "grad_mode": "the grad mode after the call differs from {ref}",
    "version": "version counters move differently from {ref}",
    "write": "writing into an output in place behaves differently from {ref}",
    "version_probe": "backward after a version bump behaves differently from {ref}",
    "saved_probe": "backward through tensors saved before the call behaves differently from {ref}",
    "later": "outputs change after later calls (CUDA graphs), unlike {ref}",
    "seq_nr": "the backward's seq_nr mapping differs from {ref}",
    "cudagraph_skip": "runs CUDA graphs where {ref} does not, or the reverse",
    "exception": "raises differently from {ref}",
    "guard": "lacks a guard {ref} has",
    "user_code": "user code torch calls is handed or run otherwise than in {ref}",
}
_OUTPUT_FACT_WORDS = {
    "requires_grad": "requires_grad",
    "is_leaf": "is_leaf",
    "is_inference": "is_inference",
    "grad_fn": "grad_fn",
    "is_input": "aliasing (which input it is)",
    "base": "aliasing (_base)",
    "shares_inputs": "aliasing (storage shared with inputs)",
    "shares_outputs": "aliasing (storage shared with outputs)",
}


def _what(d: Difference) -> str:
    """What differs, with its verb: "values differ", "is_leaf differs"."""
    if d.locus == "output" and d.prop in _OUTPUT_FACT_WORDS:
        return _OUTPUT_FACT_WORDS[d.prop] + " differs"
    if d.prop == "values":
        return "values differ"
    return d.prop.replace("_", " ") + " differs"


def title_of(
    finding: Mapping[str, Any], backend: str | None, mode: str | None = None, device: str = "cpu"
) -> str:
    """A one-line bug title: who, under what, and the worst difference in words, e.g.
    "torch.compile (aot_eager): gradients differ from eager (grad of <arg>)". A mode the
    backend ignores is left out (aot_eager on CPU runs no CUDA graphs)."""
    subject, kind = str(finding.get("subject", "?")), finding.get("kind")
    oracle, exc = str(finding.get("oracle", "")), finding.get("exc_type")
    if backend == "aot_eager" and device != "cuda":
        mode = None  # torch.compile ignores mode= under aot_eager; only cudagraphs honours it
    compiled = subject in ("torch.compile", "pythonify", "torch.compile-warm") and backend
    who = f"{subject} ({backend}{', ' + mode if mode else ''})" if compiled else subject
    ref = reference_of(subject)
    message = str(finding.get("message") or "")
    if kind == "interpreter-crash":
        return f"{who}: the interpreter dies" + (f" ({exc})" if exc else "")
    if kind == "hang":
        return f"{who}: hangs (outlived the case timeout)"
    if kind == "harness-error":
        return "pyfy-fuzz itself raises" + (f" {exc}" if exc else " an error")
    if kind == "process-broken":  # Note [A broken process] in pyfy_fuzz/campaign/worker.py
        found = f"{exc}: {message}" if message else str(exc or "")
        return f"{who}: leaves the process broken for what runs next ({found})"[:200]
    worst = worst_difference(finding)
    later = worst is not None and worst.call.later
    where = " on a call that breaks its guards" if later or oracle == "guards" else ""
    if kind == "crash" and group_of(finding) == "refusal":
        return f"{who}: refuses the program{where} (torch's own words): {message}"[:200]
    if kind == "crash":
        what = f"raises {exc}" if exc else "crashes"
        return f"{who}: {what}{where} where {ref} runs" + (f": {message}" if message else "")[:200]
    if kind == "guard-unsound":
        return f"{who}: guards accept inputs it was not compiled for" + (
            f" ({worst.aspect})" if worst is not None else ""
        )
    if worst is None:
        return f"{who}: differs from {ref} under the {oracle} oracle"
    phrase = (
        user_code_phrase(worst, ref)
        if worst.locus == "user_code"
        else _LOCUS_PHRASE[worst.locus].format(what=_what(worst), ref=ref)
    )
    detail = f"{exc}: {message}" if exc and message else worst.aspect
    return f"{who}: {phrase}{where}" + (f" ({detail})" if detail else "")[:200]


# A HOOK_LOG callee as a title names it (Fn<k>.<method> by its method).
_CALLEE_WORDS = {
    "a": "a tensor hook",
    "b": "a tensor hook",
    "accumulated": "a post-accumulate-grad hook",
    "node pre": "a grad_fn pre-hook",
    "node": "a grad_fn hook",
    "module pre": "a module backward pre-hook",
    "module": "a module backward hook",
}


def _callee_words(callee: str) -> str:
    if callee.endswith(".*"):
        return "a custom Function's methods"
    if "." in callee:
        return f"a custom Function's {callee.split('.', 1)[1]}"
    return _CALLEE_WORDS.get(callee, "user code")


def user_code_phrase(d: Difference, ref: str) -> str:
    """What a user_code difference breaks, in words: "a tensor hook receives None where
    eager passes a tensor", "a custom Function's backward runs more often than in eager"."""
    who, p = _callee_words(d.name), d.prop
    handed = "a gradient" if d.name.endswith(".backward") or "." not in d.name else "a tensor"
    if p == "runs":
        if not d.actual:
            return f"{who} never runs where {ref} runs it"
        if not d.expected:
            return f"{who} runs where {ref} does not run it"
        times = {2: "twice"}.get(d.actual, f"{d.actual} times")
        return f"{who} runs {times} where {ref} runs it {d.expected} time(s)"
    if p == "order":
        return f"{who} run in another order than in {ref}"
    if p == "arity":
        return f"{who} receives another number of arguments than in {ref}"
    if p == "presence":
        if d.actual == "None":
            return f"{who} receives None where {ref} passes {handed}"
        return f"{who} receives {handed} where {ref} passes None"
    if p == "requires_grad":
        return (
            f"{who} receives a tensor with requires_grad={d.actual} where {ref}'s is {d.expected}"
        )
    return f"{who} receives a tensor whose {p.replace('_', ' ')} differs from {ref}'s"


def difference_of(finding: Mapping[str, Any]) -> str:
    """The first difference in words (case.json's "difference"), from the data; a campaign's
    own finding (a dead worker, a hang), which has no differences, shown by its sentence."""
    diffs = differences_of(finding)
    if diffs:
        return describe(diffs[0])[:300]
    said = str(finding.get("difference") or finding.get("explanation") or "").strip()
    return said.splitlines()[0][:300] if said else ""
