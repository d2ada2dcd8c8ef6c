"""Exceptions: where the reference raises, the subject must raise the same type (or a subclass);
where it does not, the subject must not. A subject that raises where eager did not is a crash;
a compile or capture that fails outright is a crash of that subject.

Dynamo re-raises a user's error found during tracing as TorchRuntimeError; observations record
the original (see by_design: dynamo-wrapped-exception). For pythonify, calls where
torch.compile itself crashed are skipped: that crash is already torch.compile's finding.
"""

from __future__ import annotations

from pyfy_fuzz.observe import ExcObs, SubjectObs

from ._base import finding, reference_name
from ._calls import raise_difference
from .by_design import refused_by_design
from .evidence import Evidence
from .finding import Finding
from .versions import net_noop_backward_error

__all__ = [
    "NAME",
    "check",
]

NAME = "exceptions"


def _txt(e: ExcObs) -> str:
    return f"{e.short_type} in {e.phase}: {e.message}"


def check(ev: Evidence) -> list[Finding]:
    """Long: one pass over the pairs in the order docs/ORACLES.md states the rules (setup
    errors, each call, the probes); each arm is a few lines and they share the pair's locals."""
    out: list[Finding] = []
    for subject, ref, got, _ in ev.pairs():
        refname = reference_name(subject)
        if got.setup_error is not None:
            if ref.setup_error is None and not refused_by_design(subject, got.setup_error):
                e = got.setup_error
                out.append(
                    finding(
                        ev,
                        NAME,
                        subject,
                        [f"{subject} failed to compile: {_txt(e)}"],
                        kind="crash",
                        exc=e,
                    )
                )
            continue
        for i, (r, g) in enumerate(zip(ref.calls, got.calls, strict=False)):
            if subject == "pythonify" and ev.eager.calls[i].raised is None and r.raised is not None:
                continue  # torch.compile crashed here; that is its finding, not pythonify's
            how = raise_difference(r.raised, g.raised)
            if how == "raised" and g.raised is not None and refused_by_design(subject, g.raised):
                break
            if how == "raised" and g.raised is not None:
                e = g.raised
                crash = subject == "torch.compile" or ev.eager.calls[i].raised is None
                out.append(
                    finding(
                        ev,
                        NAME,
                        subject,
                        [f"call {i}: raised {_txt(e)}; {refname} did not"],
                        kind="crash" if crash else None,
                        exc=e,
                    )
                )
                break
            if how == "returned" and r.raised is not None:
                if subject == "torch.compile" and net_noop_backward_error(r, g):
                    break
                out.append(
                    finding(
                        ev,
                        NAME,
                        subject,
                        [f"call {i}: returned; {refname} raised {_txt(r.raised)}"],
                        exc=r.raised,
                    )
                )
                break
            if how == "other" and r.raised is not None and g.raised is not None:
                out.append(
                    finding(
                        ev,
                        NAME,
                        subject,
                        [f"call {i}: raised {_txt(g.raised)}; {refname} raised {_txt(r.raised)}"],
                        exc=g.raised,
                    )
                )
                break
        probe = _probe_calls(ref, got, refname)
        if probe is not None and not (probe[0] and refused_by_design(subject, probe[2])):
            crash, text, exc = probe
            out.append(finding(ev, NAME, subject, [text], kind="crash" if crash else None, exc=exc))
    return out


def _probe_call(obs: SubjectObs) -> list[ExcObs | None]:
    """Whether each probe's own call (not its backward) raised."""
    return [
        p if isinstance(p, ExcObs) and p.phase == "probe-call" else None
        for p in (obs.mutation_probe, obs.version_probe, obs.saved_probe)
    ]


def _probe_calls(ref: SubjectObs, got: SubjectObs, refname: str) -> tuple[bool, str, ExcObs] | None:
    """The probes call the subject again -- beyond the plan's calls, where CUDA-graph replays
    happen -- so their calls raising is compared like any call's: (crash?, text, exception)."""
    if ref.mutation_probe is None or got.mutation_probe is None:
        return None  # probes not run (eager's reproducibility run, the float64 reference)
    if any(c.raised is not None for c in ref.calls):
        return None  # the program raises: the plan's calls judged it, errors may move phase
    names = ("in-place probe", "version probe", "saved probe")
    for what, r, g in zip(names, _probe_call(ref), _probe_call(got), strict=True):
        if g is not None and g.short_type == "PythonifyGuardError":
            # The probe wrote into the outputs (a returned buffer or argument may now require
            # grad): torch.compile recompiles for such inputs, the file's guards refuse them --
            # its contract, as on the guards oracle's variant call.
            continue
        how = raise_difference(r, g)
        if how == "raised" and g is not None:
            return True, f"{what} call: raised {_txt(g)}; {refname} did not", g
        if how == "returned" and r is not None:
            return False, f"{what} call: returned; {refname} raised {_txt(r)}", r
        if how == "other" and r is not None and g is not None:
            return False, f"{what} call: raised {_txt(g)}; {refname} raised {_txt(r)}", g
    return None
