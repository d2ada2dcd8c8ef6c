"""Finding: one difference between subjects, with an identity stable across runs (see
Note [Bug identity] in oracles/identity.py). Torch-free data every stage reads: the oracles make
findings, the campaign keys novelty and the corpus by them, reports group by them.

Kinds and subjects are Literals: mypy checks every place a finding is made, and
`__post_init__` checks the values that come from JSON.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from pyfy_fuzz.schema.difference import Difference, describe, reference_of
from pyfy_fuzz.schema.paths import signature_paths

__all__ = [
    "CAMPAIGN_KINDS",
    "CAMPAIGN_SUBJECTS",
    "CampaignKind",
    "CampaignSubject",
    "OracleKind",
    "OracleSubject",
    "Finding",
    "FindingKind",
    "KINDS",
    "PHASE_SUBJECT",
    "SUBJECTS",
    "Subject",
    "as_kind",
    "as_subject",
    "identity_type",
]

OracleKind = Literal["compile-divergence", "pythonify-divergence", "crash", "guard-unsound"]
# What only a campaign can see: a case that killed its worker, outlived its time limit, made
# pyfy-fuzz itself raise, or left its process broken for every later case (the canary fails
# after it: Note [A broken process] in pyfy_fuzz/campaign/worker.py). Oracles never produce these.
CampaignKind = Literal["interpreter-crash", "hang", "harness-error", "process-broken"]
FindingKind = OracleKind | CampaignKind
KINDS: tuple[OracleKind, ...] = get_args(OracleKind)
CAMPAIGN_KINDS: tuple[CampaignKind, ...] = get_args(CampaignKind)

# torch.compile-warm: the stock compile served from AOTAutograd's cache (Note [The warm
# subject] in subjects/warm.py), judged against eager like torch.compile.
OracleSubject = Literal["torch.compile", "pythonify", "torch.compile-warm"]
# Who was running when a worker died: eager itself, or the harness (pyfy-fuzz's own bug).
CampaignSubject = Literal["eager", "pyfy-fuzz"]
Subject = OracleSubject | CampaignSubject
SUBJECTS: tuple[OracleSubject, ...] = get_args(OracleSubject)
CAMPAIGN_SUBJECTS: tuple[CampaignSubject, ...] = get_args(CampaignSubject)


# The subject a campaign's own finding is charged to, by the runner phase that was running
# (runner.run_case's `on_phase` names): a worker that died in it, or the phase after which
# the canary failed. "compile" runs pythonify's capture and the stock compile together, so
# torch.compile is a first guess there; None: no case phase had started.
PHASE_SUBJECT: dict[str | None, Subject] = {
    None: "pyfy-fuzz",
    "materialize": "eager",
    "eager": "eager",
    "eager-fp64": "eager",
    "compile": "torch.compile",
    "torch.compile": "torch.compile",
    "torch.compile-warm": "torch.compile-warm",
    "pythonify": "pythonify",
    "capture": "torch.compile",  # the capture's own callable, run as the file's reference
    "oracles": "pyfy-fuzz",
}


def identity_type(exc_type: str) -> str:
    """The exception type a crash is identified by: a compiler failure by what the compiler
    raised (`BackendCompilerFailed(AssertionError)` -> `AssertionError`), so one assertion met
    through Dynamo and through the AOT front-end is one bug."""
    m = re.fullmatch(r"BackendCompilerFailed\((\w+)\)", exc_type)
    return m.group(1) if m else exc_type


def as_kind(value: str) -> FindingKind:
    """A kind read from JSON or built as a string, checked."""
    for k in (*KINDS, *CAMPAIGN_KINDS):
        if value == k:
            return k
    raise ValueError(f"unknown finding kind {value!r}; expected one of {KINDS + CAMPAIGN_KINDS}")


def as_subject(value: str) -> Subject:
    """A subject read from JSON or built as a string, checked."""
    for s in (*SUBJECTS, *CAMPAIGN_SUBJECTS):
        if value == s:
            return s
    raise ValueError(f"unknown subject {value!r}; expected one of {SUBJECTS + CAMPAIGN_SUBJECTS}")


@dataclass(frozen=True)
class Finding:
    """`subject` differs from its reference (eager for torch.compile, torch.compile for
    pythonify) under `oracle`. `explanation` says which output/input and expected vs got;
    the signature uses none of it, so two runs of one bug share it."""

    kind: FindingKind  # what went wrong (KINDS; CAMPAIGN_KINDS only from a campaign)
    oracle: str  # the oracle that saw it (oracles.ORACLES, or interpreter/timeout/harness)
    subject: Subject  # whose bug it is, as far as the oracle can tell
    wrappers: tuple[str, ...]  # the wrapper paths the program reached (paths.ALL_PATHS)
    explanation: str  # for a person: which output/input, expected vs got; never identity
    exc_type: str | None = None  # the exception that identifies it, short type name
    # The first difference's aspect (identity.aspect_of); "" where an exception identifies it.
    aspect: str = ""
    # An exception's message, normalised (identity.normalise_message), and the innermost torch
    # frame it was raised from ("torch/_functorch/...py:function"); "" for divergences.
    message: str = ""
    frame: str = ""
    # Findings of other oracles this one explains, folded into it as (oracle, aspect) (Note
    # [Consequences] in consequences.py): not part of the identity, only of the severity.
    consequences: tuple[tuple[str, str], ...] = ()
    # What differs, as data (Note [Differences are data] in schema/difference.py): the first
    # is the one the identity names; a folded consequence's follow the cause's. Every stage
    # after the oracles reads these, never `explanation`. Empty only for what a campaign
    # finds (a dead worker, a hang, pyfy-fuzz's own error).
    differences: tuple[Difference, ...] = ()

    def __post_init__(self) -> None:
        as_kind(self.kind)  # values from JSON are not checked by mypy
        as_subject(self.subject)
        if not self.differences and self.kind not in CAMPAIGN_KINDS:
            raise ValueError(f"an oracle's finding records its differences: {self.kind}")

    @property
    def first(self) -> Difference | None:
        """The difference the identity names (None for a campaign's own findings)."""
        return self.differences[0] if self.differences else None

    @staticmethod
    def explain(subject: str, differences: tuple[Difference, ...], shown: int = 6) -> str:
        """The explanation a person reads: the differences in words, the first `shown`."""
        lines = [describe(d) for d in differences[:shown]]
        if len(differences) > shown:
            lines.append(f"... and {len(differences) - shown} more")
        return f"{subject} differs from {reference_of(subject)}:\n" + "\n".join(
            f"  - {ln}" for ln in lines
        )

    @property
    def identified_by_exception(self) -> bool:
        """Crashes, missing or different errors, dead workers: the exception (or the death)
        is the identity and wrapper paths are not part of it."""
        return self.exc_type is not None or self.kind in CAMPAIGN_KINDS

    @property
    def identity_frame(self) -> str:
        """The torch frame that belongs to the identity. Note [Which frame names a crash]:
        a RuntimeError mostly comes from C++ (an aten kernel, the autograd engine), and its
        innermost torch *Python* frame is then only the path that reached the kernel --
        another on a recompile, a cache hit, or another torch release (one "modified by an
        inplace operation" met in `runtime_wrappers.py:backward` on 2.11 and in the generated
        `_compiled_backward` on 2.13) -- while its message names the check. Python-raised
        errors (AssertionError, IndexError, StopIteration, ...) often carry a generic message
        ("list index out of range"), and their frame is where torch raised them."""
        if identity_type(self.exc_type or "") == "RuntimeError":
            return ""
        return self.frame

    @property
    def identity_paths(self) -> tuple[str, ...]:
        """The wrapper paths that belong to the identity: none for an exception, nor for a
        seq_nr mapping break (one entry per mapping kind: which wrappers the program went
        through does not change which rule the graphs break); for a divergence its program's
        paths (less refinements) -- of the shrunk program, once the program is shrunk."""
        if self.identified_by_exception or self.oracle == "seq_nr":
            return ()
        return tuple(signature_paths(self.wrappers))

    def _coarse_fields(self) -> list[str]:
        # An exception is one bug whichever oracle met it (a plan call or the variant call of
        # the guards oracle): the oracle is left out of its identity.
        return [
            self.kind,
            "" if self.identified_by_exception else self.oracle,
            self.subject,
            identity_type(self.exc_type or ""),
            self.message,
            self.identity_frame,
            "" if self.identified_by_exception else self.aspect,
        ]

    @property
    def coarse(self) -> str:
        """The identity without wrapper paths: decides novelty before shrinking."""
        key = "|".join(self._coarse_fields())
        return hashlib.sha1(key.encode()).hexdigest()[:12]

    @property
    def signature(self) -> str:
        """The full identity (coarse + identity paths): never values, shapes or addresses.
        Readable prefix, hash of the rest; safe as a directory name."""
        key = "|".join([*self._coarse_fields(), *self.identity_paths])
        digest = hashlib.sha1(key.encode()).hexdigest()[:12]
        # An exception is one bug whichever oracle met it: its name says the exception type,
        # so the same crash met by two oracles is one directory (format 5).
        middle = (
            identity_type(self.exc_type)
            if self.exc_type is not None and self.kind not in CAMPAIGN_KINDS
            else self.oracle
        )
        return f"{self.kind}.{middle}.{digest}"

    def identity(self) -> dict[str, Any]:
        """What the signature is made of, readable (case.json's "identity")."""
        return {
            "kind": self.kind,
            "oracle": self.oracle,
            "subject": self.subject,
            "exc_type": self.exc_type,
            "message": self.message,
            "frame": self.identity_frame,
            "aspect": "" if self.identified_by_exception else self.aspect,
            "paths": list(self.identity_paths),
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["wrappers"] = list(self.wrappers)
        d["consequences"] = [list(c) for c in self.consequences]
        d["differences"] = [x.to_dict() for x in self.differences]
        d["signature"] = self.signature
        d["coarse"] = self.coarse
        d["identity_paths"] = list(self.identity_paths)
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Finding:
        return Finding(
            kind=as_kind(d["kind"]),
            oracle=d["oracle"],
            subject=as_subject(d["subject"]),
            wrappers=tuple(d.get("wrappers", ())),
            explanation=d.get("explanation", ""),
            exc_type=d.get("exc_type"),
            aspect=d.get("aspect", ""),
            message=d.get("message", ""),
            frame=d.get("frame", ""),
            consequences=tuple((str(o), str(a)) for o, a in d.get("consequences", ())),
            differences=tuple(Difference.from_dict(x) for x in d.get("differences", ())),
        )
