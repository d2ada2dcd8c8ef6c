"""One difference seen through two oracles is one finding: the consequence folds into its cause.

Note [Consequences]
~~~~~~~~~~~~~~~~~~~
Each oracle looks at one property, so one bug that changes a tensor shows up under every
oracle that looks at that tensor. Saved apart, the views of one bug become entries of their
own (issue 14 counted 1.43 entries per torch root cause), and which one a campaign saves first
depends on the program. Three such pairs are folded here, within one case and one subject:

- *A returned argument is reported as the argument.* When the program returns an argument
  (eager's output *is* that input object) and the mutation oracle says the argument differs
  after the call, the outputs oracle saying that output differs reports the same tensor
  twice: "input a0 after the call: values differ" is the cause, "output 0: values differ" its
  echo. Likewise an output computed from an argument whose write was lost
  (`a0.mul_(2); return a0.tanh()`) has the wrong values because the argument does: which
  outputs read the argument is not observed, so in a call where an argument's values differ,
  every output whose values differ is taken as the echo. The outputs finding folds into the
  mutation finding when every one of its lines is such an echo (same call; an output eager
  returned as a differing argument, or a values difference).
- *Gradients follow autograd metadata.* When an output's is_leaf or requires_grad differs
  (a leaf became a graph node, or an output stopped requiring grad), different gradients
  follow necessarily: a gradient flows where eager had none, or none where eager had one.
  The grads finding folds into that autograd finding.
- *A lost or extra write moves the version counter with it.* When the mutation oracle says an
  argument (or its `_base`: they share one counter) differs after a call, the versions
  oracle saying that argument's counter moved differently in that call reports the same
  write, and the saved probe (a fresh call: backward through tensors saved before it ran
  where eager's raised, or the reverse) follows from it. The versions finding folds into the
  mutation finding when every one of its lines is such an echo.

A folded finding keeps every line of both (the explanation lists the consequence's lines
under the cause's), and its severity is the worst of the two (`identity.severity_of` reads
`consequences`): an autograd difference that makes gradients wrong is a wrong-gradient bug.
The identity is the cause's alone, so every program showing the cause is one entry whichever
echoes it happens to have.

What is not folded: a consequence whose lines are not all explained (an unrelated output
differs too stays its own finding), and anything across subjects -- torch.compile's and the
pythonified file's findings are separate bugs by construction (`_torch_alone`).
"""

from __future__ import annotations

from dataclasses import replace

from pyfy_fuzz.schema.difference import Difference, describe

from .evidence import Evidence
from .finding import Finding

__all__ = ["fold"]


def _plan(f: Finding, locus: str) -> list[Difference]:
    """`f`'s differences at `locus` in the plan's calls."""
    return [d for d in f.differences if d.locus == locus and d.call.kind == "plan"]


def _folded(cause: Finding, echo: Finding) -> Finding:
    extra = "\n".join(f"  - ({d.oracle}) {describe(d)}" for d in echo.differences[:6])
    return replace(
        cause,
        explanation=cause.explanation + ("\n" + extra if extra else ""),
        consequences=(*cause.consequences, (echo.oracle, echo.aspect), *echo.consequences),
        differences=cause.differences + echo.differences,
    )


def _echoes_mutation(ev: Evidence, subject: str, outputs: Finding, mutation: Finding) -> bool:
    """Every difference of `outputs` is about an output the reference returned as an argument
    that `mutation` says differs after the same call, or is a values difference in a call
    where an argument's values differ."""
    ref = next(r for s, r, _, _ in ev.pairs() if s == subject)
    inputs = _plan(mutation, "input")
    differing = {(d.call.index, d.name) for d in inputs}
    wrong_values = {d.call.index for d in inputs if d.prop == "values"}
    for d in outputs.differences:
        if d.locus != "output" or d.call.kind != "plan" or d.index is None:
            return False
        call = d.call.index
        if call in wrong_values and d.prop == "values":
            continue
        if call >= len(ref.calls):
            return False
        alias = [a for a in ref.calls[call].aliasing if a.index == d.index]
        if not alias or not any((call, name) in differing for name in alias[0].is_input):
            return False
    return bool(outputs.differences)


def _echoes_write(versions: Finding, mutation: Finding) -> bool:
    """Every difference of `versions` is about an argument whose value `mutation` says differs
    after the same call (a view argument and its `_base` are one counter), or is the saved
    probe's, in a case where an argument differs."""
    differing = {(d.call.index, d.name.split(".")[0]) for d in _plan(mutation, "input")}
    for d in versions.differences:
        if d.locus == "saved_probe" and differing:
            continue
        if d.locus != "version" or d.call.kind != "plan":
            return False
        if (d.call.index, d.name.split(".")[0]) not in differing:
            return False
    return bool(versions.differences)


def _moves_leafness(autograd: Finding) -> bool:
    """An output's is_leaf or requires_grad differs in a plan call."""
    return any(d.prop in ("is_leaf", "requires_grad") for d in _plan(autograd, "output"))


def fold(ev: Evidence, found: list[Finding]) -> list[Finding]:
    """`found` with each consequence folded into its cause (Note [Consequences]); the order
    of the rest is kept."""
    out = list(found)
    for subject in sorted({f.subject for f in found}):

        def of(oracle: str, subject: str = subject) -> Finding | None:
            return next(
                (f for f in out if f.subject == subject and f.oracle == oracle and not f.exc_type),
                None,
            )

        outputs, mutation = of("outputs"), of("mutation")
        if outputs and mutation and _echoes_mutation(ev, subject, outputs, mutation):
            out[out.index(mutation)] = _folded(mutation, outputs)
            out.remove(outputs)
        versions, mutation = of("versions"), of("mutation")
        if versions and mutation and _echoes_write(versions, mutation):
            out[out.index(mutation)] = _folded(mutation, versions)
            out.remove(versions)
        autograd, grads = of("autograd"), of("grads")
        if autograd and grads and _moves_leafness(autograd):
            out[out.index(autograd)] = _folded(autograd, grads)
            out.remove(grads)
    return out
