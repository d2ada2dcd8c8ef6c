"""Finding: one difference between subjects, with a signature stable across runs."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from pyfy_fuzz.pythonify.paths import signature_paths

KINDS = ("compile-divergence", "pythonify-divergence", "crash", "guard-unsound")
# What only a campaign can see: a case that killed its worker, outlived its time limit, or made
# pyfy-fuzz itself raise. Oracles never produce these.
CAMPAIGN_KINDS = ("interpreter-crash", "hang", "harness-error")
SUBJECTS = ("torch.compile", "pythonify")
# Who was running when a worker died: eager itself, or the harness (pyfy-fuzz's own bug).
CAMPAIGN_SUBJECTS = ("eager", "pyfy-fuzz")


@dataclass(frozen=True)
class Finding:
    """`subject` differs from its reference (eager for torch.compile, torch.compile for
    pythonify) under `oracle`. `explanation` says which output/input and expected vs got;
    the signature uses none of it, so two runs of one bug share it."""

    kind: str
    oracle: str
    subject: str
    wrappers: tuple[str, ...]
    explanation: str
    exc_type: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS + CAMPAIGN_KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r}; expected one of {KINDS}")
        if self.subject not in SUBJECTS + CAMPAIGN_SUBJECTS:
            raise ValueError(f"unknown subject {self.subject!r}; expected one of {SUBJECTS}")

    @property
    def signature(self) -> str:
        """kind + oracle + subject + wrapper paths (less refinements) + exception type: never
        values, shapes or addresses. Readable prefix, hash of the rest; safe as a directory
        name."""
        paths = signature_paths(self.wrappers)
        key = "|".join([self.kind, self.oracle, self.subject, *paths, self.exc_type or ""])
        digest = hashlib.sha1(key.encode()).hexdigest()[:12]
        return f"{self.kind}.{self.oracle}.{digest}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["wrappers"] = list(self.wrappers)
        d["signature"] = self.signature
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Finding:
        return Finding(
            kind=d["kind"],
            oracle=d["oracle"],
            subject=d["subject"],
            wrappers=tuple(d.get("wrappers", ())),
            explanation=d.get("explanation", ""),
            exc_type=d.get("exc_type"),
        )
