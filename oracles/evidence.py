"""Evidence: the three observations of one case plus what the compile reported, as the oracles
see it. Built by the runner, frozen; oracles only read it (which by-design entries applied is
recorded apart: Note [Excuses are recorded, not stored] in by_design.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyfy_fuzz.schema.observation import SubjectObs

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
    # The compile the file models (the implementation's capture), run through the same plan:
    # pythonify's reference (Note [Two references]); None: compare the file with `compiled`.
    capture: SubjectObs | None = None
    # The program calls an op whose values may round otherwise once decomposed
    # (generators.rounds): torch.compile's values are compared at the dtype's tolerance even
    # under aot_eager (by design: decomposition-rounding).
    rounding: bool = False

    # Note [Two references]
    # torch.compile is judged on the stock compile (`compiled`: torch's defaults, compiled at
    # its first observed call). The file is judged on the compile it was written from, the
    # capture's, whose callable had already run when the file was written. The two can
    # differ where torch does: a compiling call that behaves unlike later ones (found: a
    # function that turns grad mode off and returns a view of its input gets eager's leaf at
    # the compiling call and a SliceBackward0 view at every later one; the file, like any
    # later call, gives the view), or a setting only the capture uses. Those differences are
    # torch's, seen by the stock compile against eager; pythonify's findings are the file's.

    @property
    def file_reference(self) -> SubjectObs:
        """What the file is compared with: the capture's compile where it was observed."""
        return self.capture if self.capture is not None else self.compiled

    @property
    def compile_exact(self) -> bool:
        """aot_eager runs eager's kernels on the same values: any difference is real, unless
        a composite op was decomposed into others (`rounding`)."""
        return self.backend == "aot_eager" and not self.rounding

    def pairs(self) -> list[tuple[str, SubjectObs, SubjectObs, bool]]:
        """(subject, reference, observed, exact): torch.compile against eager, pythonify
        against the compile it models (same compiled graphs, so always exact; Note [Two
        references])."""
        out = [("torch.compile", self.eager, self.compiled, self.compile_exact)]
        if self.pythonified is not None:
            out.append(("pythonify", self.file_reference, self.pythonified, True))
        return out
