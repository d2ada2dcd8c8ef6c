"""CaseRecord: one corpus entry's case.json, typed, round-tripping the file it was read from.

case.json is written by the campaign (one saved finding), rewritten by `migrate`, annotated by
the repro check and by people (triage notes), and read by replay, reports and the renderers of
repro.py and README.md. `CaseRecord.from_json` is the one place that says what a readable entry
is (the format, the fields every entry has, valid kinds, subjects and spec); `to_json` gives
back the same dict, so an entry read and written again loses nothing.

Note [Fields a case may lack]
-----------------------------
Entries written by older builds and migrated (`pyfy-fuzz migrate`) keep what they had, so only
the identity fields are required. Every other known field is typed and may be absent:
`present` remembers which were in the file, so `to_json` neither drops one that was there nor
adds one that was not. Fields this build does not know (a person's triage note, a worker
death's log tail, the repro check's verdict) stay in `extra`, untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from pyfy_fuzz.schema.finding import FindingKind, Subject, as_kind, as_subject
from pyfy_fuzz.schema.spec import SpecError, spec_from_dict

__all__ = [
    "BUG_IN",
    "BugIn",
    "CaseError",
    "CaseRecord",
    "Expected",
    "FORMAT",
    "OLD_FORMATS",
    "OPTIONAL_FIELDS",
    "OldFormat",
]

FORMAT = 5  # what this build writes and reads
OLD_FORMATS = (1, 2, 3, 4)  # read only by `pyfy-fuzz migrate`

BugIn = Literal["torch", "pythonify", "pyfy-fuzz"]
# Whose bug a finding is, by the subject that showed it (the campaign may refine "pythonify":
# with --pythonify torch the implementation under test is torch's own).
BUG_IN: dict[Subject, BugIn] = {
    "torch.compile": "torch",
    "torch.compile-warm": "torch",
    "eager": "torch",
    "pythonify": "pythonify",
    "pyfy-fuzz": "pyfy-fuzz",
}
# torch bugs are expected to keep failing on stock torch; ours must be fixed ("pass").
Expected = Literal["fail", "pass"]

# Every entry has these (the identity); everything else is optional (Note [Fields a case may
# lack]).
_REQUIRED = ("format", "signature", "kind", "oracle", "subject", "spec", "expected")
_REQUIRED_IDENTITY = ("coarse", "identity")


class CaseError(ValueError):
    """case.json is not a readable entry of this format; the message says why, in a phrase."""


class OldFormat(CaseError):
    """case.json is of an older format: `pyfy-fuzz migrate` re-keys it."""


@dataclass(frozen=True)
class CaseRecord:
    """One entry's case.json. Required fields first, then the optional ones in the order the
    campaign writes them."""

    format: int  # FORMAT
    signature: str  # the entry's directory name (Finding.signature)
    coarse: str  # the identity without wrapper paths (Finding.coarse)
    identity: dict[str, Any]  # what the signature is made of (Finding.identity())
    kind: FindingKind
    oracle: str
    subject: Subject
    spec: dict[str, Any]  # the shrunk program, as ProgramSpec JSON
    expected: Expected  # replay's expected outcome
    # -- optional (Note [Fields a case may lack]) ---------------------------------------
    wrappers: list[str] | None = None  # the program's wrapper paths
    exc_type: str | None = None  # the identifying exception's short type
    aspect: str | None = None  # a divergence's first differing aspect
    message: str | None = None  # an exception's normalised message
    frame: str | None = None  # an exception's innermost torch frame
    consequences: list[list[str]] | None = None  # (oracle, aspect) folded into this finding
    explanation: str | None = None  # the oracle's words
    severity: int | None = None  # 1..5, oracles.identity.SEVERITIES
    group: str | None = None  # bug | refusal | metadata (oracles/groups.py); format 5
    upstream: list[int] | None = None  # pytorch issues it matches (oracles/upstream.py)
    title: str | None = None  # one-line bug title
    difference: str | None = None  # the first difference, in words
    # every difference, as data (schema/difference.py, Difference.to_dict); format 5
    differences: list[dict[str, Any]] | None = None
    bug_in: BugIn | None = None  # whose bug: torch, the bundled pythonify, or ours
    size: list[int] | None = None  # the spec's size key (shrinking order)
    seed: int | None = None  # the seed stream's seed
    campaign_seed: int | None = None  # the campaign's --seed
    torch: str | None = None  # torch.__version__ that found it
    pyfy_fuzz: str | None = None  # pyfy_fuzz.__version__ that found it
    backend: str | None = None  # aot_eager | inductor
    device: str | None = None  # cpu | cuda
    pythonify: str | None = None  # the implementation under test (bundled | torch | plugin)
    count: int | None = None  # sightings
    first_seen: str | None = None  # ISO time
    last_seen: str | None = None  # ISO time
    shrink: dict[str, Any] | None = None  # how the program was shrunk
    # repro.py run under other torches: ReleaseRecord dicts (pyfy_fuzz/corpus/releases.py)
    releases: list[dict[str, Any]] | None = None
    # the optional fields the file had (Note [Fields a case may lack])
    present: frozenset[str] = frozenset()
    # fields this build does not model, as they were
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.format != FORMAT:
            raise CaseError(f"format {self.format!r} is not {FORMAT}")
        try:
            as_kind(self.kind), as_subject(self.subject)
        except ValueError as e:
            raise CaseError(str(e)) from None
        if self.expected not in get_args(Expected):
            raise CaseError(f"expected must be 'fail' or 'pass', got {self.expected!r}")
        if self.bug_in is not None and self.bug_in not in get_args(BugIn):
            raise CaseError(f"bug_in must be one of {get_args(BugIn)}, got {self.bug_in!r}")
        unknown = self.present - set(_OPTIONAL)
        if unknown:
            raise CaseError(f"present names fields that are not optional: {sorted(unknown)}")

    @classmethod
    def from_json(cls, case: object) -> CaseRecord:
        """The record of a case.json dict, or CaseError (OldFormat for `migrate`'s formats)
        saying what is wrong."""
        if not isinstance(case, dict):
            raise CaseError("is not an object")
        missing = [k for k in _REQUIRED if k not in case]
        if missing:
            raise CaseError(f"lacks {', '.join(missing)}")
        if case["format"] in OLD_FORMATS:
            raise OldFormat(f"has the old format {case['format']!r}")
        if case["format"] != FORMAT:
            raise CaseError(f"has format {case['format']!r}, this build reads {FORMAT}")
        missing = [k for k in _REQUIRED_IDENTITY if k not in case]
        if missing:
            raise CaseError(f"lacks {', '.join(missing)}")
        try:
            spec_from_dict(case["spec"])
        except SpecError as e:
            raise CaseError(f"spec is invalid ({e})") from None
        known = {k: case[k] for k in (*_REQUIRED, *_REQUIRED_IDENTITY, *_OPTIONAL) if k in case}
        present = frozenset(k for k in _OPTIONAL if k in case)
        extra = {k: v for k, v in case.items() if k not in known}
        return cls(**known, present=present, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The case.json dict: the fields the file had (Note [Fields a case may lack])."""
        out = {k: getattr(self, k) for k in (*_REQUIRED, *_REQUIRED_IDENTITY)}
        out.update({k: getattr(self, k) for k in _OPTIONAL if k in self.present})
        out.update(self.extra)
        return out


_OPTIONAL = tuple(
    f.name
    for f in fields(CaseRecord)
    if f.name not in (*_REQUIRED, *_REQUIRED_IDENTITY, "present", "extra")
)
# Every optional field: what a record the campaign writes has (`present`).
OPTIONAL_FIELDS = frozenset(_OPTIONAL)
