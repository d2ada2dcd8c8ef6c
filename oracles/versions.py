"""Version counters: which inputs each call bumps, and whether a tensor autograd saved before
the call is then seen as modified (Note [Version counters]).

- Per call: the inputs whose version counter moved during the subject's call must be the
  reference's. A mutated input that is not bumped lets a backward that saved it run on the new
  values without the error eager gives; an untouched input that is bumped makes a later
  backward refuse where eager's runs.
- The saved probe (probes.saved_probe): autograd saves every floating argument before a call,
  backward runs after it; it must raise exactly where the reference's raises.
"""

from __future__ import annotations

from pyfy_fuzz.schema.difference import CallRef, Difference
from pyfy_fuzz.schema.observation import CallObs, ExcObs, SubjectObs

from ._base import finding, merge, per_call
from ._calls import PairContext
from .by_design import excuse
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
    "diff_versions",
    "net_noop_backward_error",
]

NAME = "versions"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 3
# True: its pythonify findings compare the file with torch.compile's outputs, so
# check_all asks whether the file agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True

# Note [Version counters]
# Eager bumps an input's version counter once per in-place op on it (or on any view of it, or
# on a detach() of it: they share the counter). A compiled function applies an input's
# mutations as one copy_ in the epilogue, or in the graph followed by
# torch.autograd.graph.increment_version (RuntimeWrapper's increment_mutation_versions), so
# the *amount* differs by design (by_design: version-counter-amount) and is never compared.
# Whether the counter moved is what autograd's saved-tensor check reads (a saved tensor
# whose version changed refuses to unpack), so that is compared, per call, against the
# reference: eager for torch.compile, the compile the file models for pythonify. The saved
# probe checks the consequence directly, with the saving outside the compiled function.
# Eager itself does not always bump: BatchNorm updates its running stats inside its kernel
# and their counters stay (measured, torch 2.13), and a write through `.data` (or a
# parameter's `.data` replaced) is autograd's to ignore by definition; where eager changed an
# input without moving its counter, torch.compile moving it is not reported (eager's quirk,
# and the bump is what autograd's check needs; upstream keeps the `.data` case open as
# pytorch#139152). An input with no elements is judged alike: no write shows on it. The quirk
# is the program's, so it is one verdict per case and input: a call whose write left the
# input as it was is judged as the calls where it showed.


def diff_versions(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """Inputs whose counter moved in one subject and not in the other."""
    if ref.versions_moved is None or got.versions_moved is None:
        return []
    r, g = set(ref.versions_moved), set(got.versions_moved)
    missed = sorted(r - g)
    if ctx.subject == "torch.compile" and ref.unchanged is not None:
        # in-place changes that leave the input exactly as it was are no mutation to AOT
        kept = [n for n in missed if n in ref.unchanged]
        if kept and excuse("net-noop-mutation-version"):
            missed = [n for n in missed if n not in kept]
    out = [ctx.diff(NAME, "version", "moved", name=n, expected=True, actual=False) for n in missed]
    extra = sorted(g - r)
    if ctx.subject == "torch.compile":
        quirk = _eager_quirk(ref) | _case_quirk(ctx.evidence.eager)
        extra = [n for n in extra if n not in quirk]
    out += [ctx.diff(NAME, "version", "moved", name=n, expected=False, actual=True) for n in extra]
    return out


def _eager_quirk(ref: CallObs) -> set[str]:
    """Inputs whose counter torch.compile may move where eager's did not (Note [Version
    counters]): those eager wrote without moving it (BatchNorm's running stats, an in-kernel
    update; a `.data` write, pytorch#139152): the compiled copy_ that bumps them is what
    autograd needs. And inputs with no elements, which any write leaves as they were, so
    whether eager wrote one cannot be read off it: one verdict at every shape."""
    if ref.unchanged is None:
        return set()
    names = {name for name, _ in ref.inputs_after}
    empty = {name for name, t in ref.inputs_after if 0 in t.shape}
    return (names - set(ref.unchanged)) | empty


def _case_quirk(eager: SubjectObs) -> set[str]:
    """The inputs any of eager's calls wrote without moving their counter (`_eager_quirk`):
    the quirk is the program's (a `.data` write, a write through an inference-tensor alias),
    so one verdict per case and input. A call whose write left the input as it was (0 * 0.5)
    shows no write, yet is the same quirk (the 12-07 campaign's 731b70b7b63c)."""
    calls = [*eager.calls, *([eager.variant] if eager.variant else []), *eager.sequence]
    return set().union(*(_eager_quirk(c) for c in calls))


def _quirk_only(ref: SubjectObs, got: SubjectObs) -> bool:
    """torch.compile's first call moved only counters eager's left where eager's quirk says
    it may (`_eager_quirk`): the saved probe's backward then raises for that reason alone."""
    if not (ref.calls and got.calls):
        return False
    r, g = ref.calls[0], got.calls[0]
    if r.versions_moved is None or g.versions_moved is None:
        return False
    extra = set(g.versions_moved) - set(r.versions_moved)
    missed = set(r.versions_moved) - set(g.versions_moved)
    return bool(extra) and not missed and extra <= _eager_quirk(r) | _case_quirk(ref)


def _net_noop(ref: SubjectObs, got: SubjectObs) -> bool:
    """Every counter eager's first call moved and torch.compile's did not is an input the call
    left as it was (by_design: net-noop-mutation-version): the saved probe's fresh call then
    differs for that reason alone."""
    return bool(ref.calls and got.calls) and _only_unchanged_missed(ref.calls[0], got.calls[0])


def net_noop_backward_error(ref: CallObs, got: CallObs) -> bool:
    """Eager's backward refused a saved tensor whose counter only eager moved, on an input the
    call left as it was (by_design: net-noop-mutation-version): the exceptions oracle's
    "returned; eager raised" is then that by-design difference."""
    e = ref.raised
    if e is None or e.phase != "backward" or "modified by an inplace operation" not in e.message:
        return False
    return _only_unchanged_missed(ref, got)


def _only_unchanged_missed(ref: CallObs, got: CallObs) -> bool:
    """Some counter moved in the reference's call and not in the subject's, and every such
    input is one the call left as it was: by_design net-noop-mutation-version (recorded)."""
    if ref.versions_moved is None or got.versions_moved is None or ref.unchanged is None:
        return False
    missed = set(ref.versions_moved) - set(got.versions_moved)
    return bool(missed) and missed <= set(ref.unchanged) and excuse("net-noop-mutation-version")


def _text(p: ExcObs | str) -> str:
    return "backward ran" if p == "ok" else f"backward raised {p.short_type}"  # type: ignore[union-attr]


def check(ev: Evidence) -> list[Finding]:
    out = per_call(ev, NAME, diff_versions)
    for subject, ref, got, _ in ev.pairs():
        r, g = ref.saved_probe, got.saved_probe
        if r is None or g is None:
            continue
        if any(isinstance(p, ExcObs) and p.phase == "probe-call" for p in (r, g)):
            continue  # the probe's call raised: the exceptions oracle compares that
        if (r == "ok") != (g == "ok"):
            if subject == "torch.compile" and r != "ok" and _net_noop(ref, got):
                continue  # excused: the plan calls show why eager's counter alone moved
            if subject == "torch.compile" and r == "ok" and _quirk_only(ref, got):
                continue  # eager's quirk (Note [Version counters]): it is what moved it
            d = Difference(
                NAME,
                subject,
                CallRef("probe", probe="saved"),
                "saved_probe",
                "outcome",
                expected=_text(r),
                actual=_text(g),
            )
            out.append(finding(ev, NAME, subject, [d]))
    return merge(out)
