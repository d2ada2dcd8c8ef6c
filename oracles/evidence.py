"""Evidence: the three observations of one case plus what the compile reported, as the oracles
see it. Built by the runner, frozen; oracles only read it (which by-design entries applied is
recorded apart: Note [Excuses are recorded, not stored] in by_design.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyfy_fuzz.observe import SubjectObs

__all__ = [
    "Evidence",
]


@dataclass(frozen=True)
class Evidence:
    eager: SubjectObs
    compiled: SubjectObs
    pythonified: SubjectObs | None  # None: the file was not produced (unsupported, compile failed)
    backend: str = "aot_eager"
    device: str = "cpu"
    frontend: str = "dynamo"
    mode: str | None = None
    wrappers: tuple[str, ...] = ()
    ref64: SubjectObs | None = None  # eager in float64, for the tolerance scheme
    # torch's node metadata per graph (pythonify.graph_render.FxNodeMeta), and the file's tables.
    # torch's node metadata per graph; None: the implementation under test does not expose it
    fx_meta: dict[str, tuple[Any, ...]] | None = field(default_factory=dict)
    file_seq_nr: dict[str, dict[str, int]] | None = None
    file_grad_acc: dict[str, list[str]] | None = None

    @property
    def compile_exact(self) -> bool:
        """aot_eager runs eager's kernels on the same values: any difference is real."""
        return self.backend == "aot_eager"

    def pairs(self) -> list[tuple[str, SubjectObs, SubjectObs, bool]]:
        """(subject, reference, observed, exact): torch.compile against eager, pythonify
        against torch.compile (same compiled graphs, so always exact)."""
        out = [("torch.compile", self.eager, self.compiled, self.compile_exact)]
        if self.pythonified is not None:
            out.append(("pythonify", self.compiled, self.pythonified, True))
        return out
