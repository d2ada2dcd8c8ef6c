"""Exceptions: where the reference raises, the subject must raise the same type (or a subclass);
where it does not, the subject must not. A subject that raises where eager did not is a crash;
a compile or capture that fails outright is a crash of that subject.

Dynamo re-raises a user's error found during tracing as TorchRuntimeError; observations record
the original (see by_design: dynamo-wrapped-exception). For pythonify, calls where
torch.compile itself crashed are skipped: that crash is already torch.compile's finding.
"""

from __future__ import annotations

from pyfy_fuzz.schema.difference import PROBES, CallRef, Difference
from pyfy_fuzz.schema.observation import CallObs, ExcObs, SubjectObs, TensorObs

from ._base import finding
from ._calls import exc_facts, raise_difference
from .by_design import excuse, refused_by_design
from .evidence import Evidence
from .finding import Finding
from .versions import net_noop_backward_error

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
    "raise_diff",
]

NAME = "exceptions"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 0
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True


def raise_diff(
    oracle: str, subject: str, call: CallRef, how: str, ref: ExcObs | None, got: ExcObs | None
) -> Difference:
    """The difference of a call that raised otherwise than its reference (`how`:
    raise_difference's word), recording the exception that identifies it: the subject's, or
    the reference's where the subject returned."""
    if how == "returned":
        assert ref is not None
        return Difference(oracle, subject, call, "exception", "returned", exc=exc_facts(ref))
    assert got is not None
    if how == "raised":
        return Difference(oracle, subject, call, "exception", "raised", exc=exc_facts(got))
    assert ref is not None
    return Difference(
        oracle, subject, call, "exception", "other", exc=exc_facts(got), ref_exc=exc_facts(ref)
    )


def check(ev: Evidence) -> list[Finding]:
    """Long: one pass over the pairs in the order docs/ORACLES.md states the rules (setup
    errors, each call, the probes); each arm is a few lines and they share the pair's locals."""
    out: list[Finding] = []
    for subject, ref, got, _ in ev.pairs():
        if got.setup_error is not None:
            if subject == "pythonify" and _eager_refuses(ev):
                continue  # Note [A capture of a program eager refuses]
            if ref.setup_error is None and not refused_by_design(subject, got.setup_error):
                d = raise_diff(NAME, subject, CallRef("setup"), "raised", None, got.setup_error)
                out.append(finding(ev, NAME, subject, [d], kind="crash", exc=d.exc))
            continue
        for i, (r, g) in enumerate(zip(ref.calls, got.calls, strict=False)):
            if subject == "pythonify" and ev.eager.calls[i].raised is None and r.raised is not None:
                continue  # torch.compile crashed here; that is its finding, not pythonify's
            if subject == "pythonify" and _refused_where_torch_recompiled(ev, i, g.raised):
                continue  # Note [A plan call torch.compile recompiled]
            how = raise_difference(r.raised, g.raised)
            if how is None:
                if (
                    r.raised is not None
                    and g.raised is not None
                    and r.raised.phase != g.raised.phase
                ):
                    excuse("error-at-compile-not-backward")
                continue
            if how == "raised" and g.raised is not None and refused_by_design(subject, g.raised):
                break
            if how == "returned" and subject == "torch.compile" and net_noop_backward_error(r, g):
                break
            if how == "raised" and subject == "torch.compile" and g.raised is not None:
                if _refused_on_first_use(r, g.raised):
                    break
            d = raise_diff(NAME, subject, CallRef("plan", i), how, r.raised, g.raised)
            crash = how == "raised" and (
                subject == "torch.compile" or ev.eager.calls[i].raised is None
            )
            out.append(finding(ev, NAME, subject, [d], kind="crash" if crash else None, exc=d.exc))
            break
        probe = _probe_calls(subject, ref, got)
        if probe is not None and not (
            probe.prop == "raised" and refused_by_design(subject, _raised(got, probe))
        ):
            crash = probe.prop == "raised"
            out.append(
                finding(ev, NAME, subject, [probe], kind="crash" if crash else None, exc=probe.exc)
            )
    return out


# Note [A capture of a program eager refuses]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The implementation's capture runs the program on call 0's arguments, its backward included
# (it lowers the backward with the forward), to write the file. Where eager refuses that call
# (`a view of a leaf Variable that requires grad is being used in an in-place operation`),
# whatever the capture then meets is torch's handling of an invalid program -- found: a
# squeeze_ of such a view made AOTAutograd's compiled backward return a gradient of the
# pre-squeeze shape, raised only by the capture because the plan ran no backward -- and
# torch.compile accepting the program at all is already torch.compile's finding. So a setup
# error of the file is pythonify's only where eager ran call 0.


# Note [A plan call torch.compile recompiled]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A call of the plan gets fresh arguments of call 0's kind, but what the function reads beside
# them may have changed since: a module's buffer that call 0 wrote with a value requiring
# grad (`self.b0.copy_(x + self.p0)`) requires grad from then on. Dynamo's guards reject the
# call and torch.compile recompiles; the pythonified file, which cannot recompile, raises
# PythonifyGuardError -- its contract for any call its compile did not cover. So where
# torch.compile recompiled at that call or an earlier later call (whose new graph it keeps
# using), the file's guard error is not a crash. Call 0 counts where its guards failed within
# it: a reentrant checkpoint runs the function under no_grad, then again in backward with grad
# on (Note [The front-end axis] in pyfy_fuzz/schema/spec.py).


def _refused_where_torch_recompiled(ev: Evidence, i: int, raised: ExcObs | None) -> bool:
    if raised is None or raised.short_type != "PythonifyGuardError":
        return False
    refs = [ev.compiled, ev.capture]  # at this call or one before it (the new graph stays)
    return any(r is not None and any(c.recompiled for c in r.calls[: i + 1]) for r in refs)


# The words of autograd's handle_view_on_rebase for a view made under no_grad whose base was
# then written with grad on (torch/csrc/autograd/variable.cpp).
_FORBIDDEN_VIEW = "was created in no_grad mode and its base or another view of its base"


def _refused_on_first_use(ref: CallObs, raised: ExcObs) -> bool:
    """by_design: error-at-call-not-first-use. Eager returned an output autograd refuses to
    describe (its grad_fn recorded as refused: recording.tensor_obs), and torch.compile raised
    that same refusal at the call."""
    refused = any(
        isinstance(o, TensorObs) and str(o.grad_fn).startswith("<refused") for o in ref.outputs
    )
    if refused and _FORBIDDEN_VIEW in raised.message:
        return excuse("error-at-call-not-first-use")
    return False


def _eager_refuses(ev: Evidence) -> bool:
    return bool(ev.eager.calls) and ev.eager.calls[0].raised is not None


def _probe_call(obs: SubjectObs) -> list[ExcObs | None]:
    """Whether each probe's own call (not its backward) raised, in PROBES' order."""
    return [
        p if isinstance(p, ExcObs) and p.phase == "probe-call" else None
        for p in (obs.mutation_probe, obs.version_probe, obs.saved_probe)
    ]


def _raised(obs: SubjectObs, d: Difference) -> ExcObs:
    """The subject's exception in the probe call `d` names."""
    e = _probe_call(obs)[PROBES.index(d.call.probe)]
    assert e is not None
    return e


def _probe_calls(subject: str, ref: SubjectObs, got: SubjectObs) -> Difference | None:
    """The probes call the subject again -- beyond the plan's calls, where CUDA-graph replays
    happen -- so their calls raising is compared like any call's."""
    if ref.mutation_probe is None or got.mutation_probe is None:
        return None  # probes not run (eager's reproducibility run, the float64 reference)
    if any(c.raised is not None for c in ref.calls):
        return None  # the program raises: the plan's calls judged it, errors may move phase
    for what, r, g in zip(PROBES, _probe_call(ref), _probe_call(got), strict=True):
        if g is not None and g.short_type == "PythonifyGuardError":
            # The probe wrote into the outputs (a returned buffer or argument may now require
            # grad): torch.compile recompiles for such inputs, the file's guards refuse them --
            # its contract, as on the guards oracle's variant call.
            continue
        how = raise_difference(r, g)
        if how == "raised" and g is not None and ref.calls and subject == "torch.compile":
            if _refused_on_first_use(ref.calls[0], g):  # a fresh call of the same program
                continue
        if how is not None:
            return raise_diff(NAME, subject, CallRef("probe", probe=what), how, r, g)
    return None
