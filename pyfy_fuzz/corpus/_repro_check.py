"""The one check a repro.py performs, read off the finding (torch-free).

Note [One check]
~~~~~~~~~~~~~~~~
A finding's first Difference (Note [Differences are data] in schema/difference.py) names what
differs and in which call, as fields. `read_check` turns it into a `Check`: which calls run
(the plan's calls up to the one that differs; then the variant call and the sequence's calls
up to the one that differs, for a later call; or instead one fresh call without backward,
for the in-place, version and saved probes, as pyfy_fuzz.case.probes makes them), how far
backward runs, the
expression observe() returns (over `out`, `args` and `fn`), and how the two sides' results
compare:

- raises: what each side raises (None for nothing); the subject must raise an instance of the
  reference's type (a compiler crash counts by what the compiler raised). Where the reference
  ran (a crash where eager runs: `reference_runs`) the script is simpler: the reference's call,
  then the subject's in a try whose except is the bug;
- values: torch.testing.assert_close, exact under aot_eager (eager's kernels) and against the
  pythonified file (torch.compile's graphs), torch's tolerances under inductor;
- equal: metadata and aliasing facts (requires_grad, a shape, `_base`, shared storage);
- presence: None or not (a gradient, a grad_fn);
- later: an output of an earlier call re-read after the later calls (CUDA-graph replays);
- seq_nr: the node metadata of the graphs AOTAutograd hands a recording backend;
- runs: an interpreter crash or a hang -- the process dying is the repro (every call the
  drive made: the plan's, the variant and the sequence);
- canary: a process left broken -- every call the drive made, then the canary
  (`_repro_helpers.canary`) in the same process (Note [A broken process] in worker.py);
- guard: the file must refuse a later call's inputs where torch.compile recompiled for them
  (guard parity): what each side raises, the file's PythonifyGuardError expected;
- skips: how many graphs ran without CUDA graphs, torch's count against the file's.

Every locus has its check; a finding without differences (an entry of an older format) is
refused with a message naming `pyfy-fuzz migrate`, never checked on something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from generators.source import no_retain
from pyfy_fuzz.schema.difference import PROBES, Difference, describe
from pyfy_fuzz.schema.observation import PROMISED_PAIRS
from pyfy_fuzz.schema.spec import OutSpec, ProgramSpec, variant_tokens


@dataclass(frozen=True)
class Check:
    """What a repro compares; see Note [One check]."""

    # raises | values | equal | presence | later | seq_nr | runs | guard | skips | canary
    compare: str
    label: str  # what differs, in words, for the verdict line
    fact: str = ""  # what observe() returns; for seq_nr: invariants | grad_acc | order | file
    calls: int = 1  # the plan's calls that run (seeds 0..calls-1)
    variant: bool = False  # then the variant call (seed 0): the difference is in it
    sequence: int = 0  # then this many calls of the plan's sequence (seed 0): the last differs
    probe_seed: int | None = None  # instead: one fresh call on this seed, without backward
    backward: str = ""  # "" | first | second (two backwards) | second-outcome
    snapshot: tuple[int, int] | None = None  # later: (call, output) kept and re-read
    grad_mode: bool = False  # the fact is the grad mode right after the call
    reference_runs: bool = False  # raises: only the subject raises (a crash where eager runs)
    before: str = ""  # a line run right before each call (what the fact compares against)


def first_difference(finding: dict[str, Any]) -> Difference:
    """The difference a finding is identified by, or ValueError for one that records none
    (a case.json of format 4 or older: `pyfy-fuzz migrate` re-runs it)."""
    diffs = finding.get("differences") or ()
    if not diffs:
        raise ValueError(
            f"the finding {finding.get('signature', '')!r} records no differences "
            "(an entry of an older format: run `pyfy-fuzz migrate`)"
        )
    return Difference.from_dict(diffs[0])


def difference_line(finding: dict[str, Any]) -> str:
    """The first difference in words, with the program's names (the verdict's header)."""
    try:
        return describe(first_difference(finding))
    except ValueError:
        return str(finding.get("difference") or "")


def read_check(spec: ProgramSpec, finding: dict[str, Any]) -> Check:
    """The one check a repro of `finding` performs (Note [One check]), with the drive's
    retain_grad before each call where the drive made one: a retained .grad is a hook on the
    argument's grad_fn, and torch can treat the call differently for it (an in-place
    metadata change of a view that retains its grad trips an internal assert in eager)."""
    check = _read_check(spec, finding)
    if check.probe_seed is not None or check.compare == "seq_nr" or not retains_grads(spec):
        return check
    retain = retain_line(spec)
    lines = [retain, *(x for x in check.before.splitlines() if x != retain)]
    return replace(check, before="\n".join(lines))


def retain_line(spec: ProgramSpec) -> str:
    """The drive's retain_grad, as a repro writes it (pyfy_fuzz.corpus._repro_helpers.retain_grads),
    skipping the arguments the drive skips (Note [Arguments whose grad is not retained])."""
    skip = no_retain(spec)
    return f"retain_grads(args, skip={skip!r})" if skip else "retain_grads(args)"


def retains_grads(spec: ProgramSpec) -> bool:
    """Whether the program's drive may call retain_grad on an argument: it does before each
    call that runs backward, on each argument requiring grad that is not a leaf (a view of a
    root requiring grad, a non-leaf root, or a call's "nonleaf" relationship)."""
    plan = spec.plan
    grads = {k for k, r in enumerate(spec.roots) if r.grad != "none"}
    if not plan.backward or not grads:
        return False
    tokens = {t for v in (plan.variant, *plan.sequence) for t in variant_tokens(v)}
    return (
        "nonleaf" in tokens
        or any(spec.roots[k].grad == "nonleaf" for k in grads)
        or any(i.kind in ("view", "set_shared") and i.root in grads for i in spec.inputs)
    )


def _read_check(spec: ProgramSpec, finding: dict[str, Any]) -> Check:
    kind, plan = finding["kind"], spec.plan
    bw = "first" if plan.backward else ""
    later = plan.variant is not None
    sequence = len(plan.sequence) if later else 0
    if kind in ("interpreter-crash", "hang", "process-broken"):  # every call the drive made
        compare = "canary" if kind == "process-broken" else "runs"
        return Check(compare, kind, calls=plan.calls, variant=later, sequence=sequence, backward=bw)
    if kind == "harness-error":
        return Check(
            "raises",
            "what each side raises",
            calls=plan.calls,
            variant=later,
            sequence=sequence,
            backward=bw,
        )
    d = first_difference(finding)
    if d.locus == "seq_nr":
        return _seq_nr_check(spec, d)
    if d.locus == "later":
        label = f"output {d.index} of call {d.call.index} changed after the later calls"
        snapshot = (d.call.index, d.index or 0)
        return Check("later", label, calls=plan.calls, snapshot=snapshot, backward=bw)
    if d.locus == "cudagraph_skip":
        return Check("skips", "which graphs ran without CUDA graphs", "out", calls=plan.calls)
    where = _placed(spec, d)
    if d.call.kind == "probe":
        # observe makes the probes' fresh calls after the plan's, in PROBES' order
        seed = plan.calls + PROBES.index(d.call.probe)
        if d.locus == "exception":  # the probe's own call raised: once more after the plan's
            ran = d.prop == "raised"
            return Check("raises", "what each side raises", probe_seed=seed, reference_runs=ran)
        fact = _read_fact(spec, d)
        return Check(fact.compare, fact.label, fact.fact, probe_seed=seed, before=fact.before)
    if d.locus == "exception":
        return Check(
            "raises",
            "what each side raises",
            backward=bw,
            reference_runs=d.prop == "raised",
            **where,
        )
    if d.locus == "guard":
        label = "whether the file's guards refuse the later call's inputs"
        return Check("guard", label, backward=bw, **where)
    fact = _read_fact(spec, d)
    return Check(
        fact.compare,
        fact.label,
        fact.fact,
        backward=fact.backward,
        before=fact.before,
        grad_mode=fact.grad_mode,
        **where,
    )


def _placed(spec: ProgramSpec, d: Difference) -> dict[str, Any]:
    """Which calls run for a difference in `d.call`: the plan's up to it, or all of them and
    the later calls up to the one that differs."""
    plan = spec.plan
    if d.call.kind == "plan":
        return {"calls": d.call.index + 1, "variant": False, "sequence": 0}
    if d.call.kind == "setup":
        return {"calls": 1, "variant": False, "sequence": 0}
    variant = plan.variant is not None
    sequence = min(d.call.index + 1, len(plan.sequence)) if d.call.kind == "sequence" else 0
    return {"calls": plan.calls, "variant": variant, "sequence": sequence if variant else 0}


def _seq_nr_check(spec: ProgramSpec, d: Difference) -> Check:
    """Under Dynamo the backward compiles with the forward (force_non_lazy_backward_lowering,
    as pyfy-fuzz compiles); aot_function compiles it at the first backward."""
    how = {"order": "order", "forward_grad_acc": "grad_acc", "no_seq_nr": "no_seq_nr"}.get(
        d.prop, "invariants"
    )
    how = "file" if d.subject == "pythonify" else how
    bw = "first" if spec.plan.frontend == "aot" else ""
    return Check("seq_nr", "the seq_nr mapping", fact=how, backward=bw)


@dataclass(frozen=True)
class _Fact:
    compare: str
    label: str
    fact: str
    backward: str = ""
    probe: str = ""  # "" | write | version | saved
    grad_mode: bool = False
    before: str = ""  # Check.before


def _read_fact(spec: ProgramSpec, d: Difference) -> _Fact:  # noqa: C901 -- one arm a locus
    """The fact a repro compares for a difference at `d.locus`."""
    loc, p = d.locus, d.prop
    if loc == "output":
        j = d.index or 0
        if p in ("requires_grad", "is_leaf"):
            return _Fact("equal", f"output {j}.{p}", f"{leaf(spec, j)}.{p}")
        if p == "is_inference":  # a method, not an attribute: called, or two methods compare
            return _Fact("equal", f"output {j}.{p}()", f"{leaf(spec, j)}.{p}()")
        if p == "grad_fn":
            return _Fact("presence", f"output {j}.grad_fn", f"{leaf(spec, j)}.grad_fn")
        if p == "is_input":
            fact = f'[f"a{{i}}" for i, a in enumerate(args) if a is {_tensor(spec, j)}]'
            return _Fact("equal", f"which arguments output {j} is", fact)
        if p == "base":
            fact = f"base_of({_tensor(spec, j)}, args, tensors)"
            return _Fact("equal", f"output {j}._base", fact)
        if p in ("shares_inputs", "shares_outputs"):
            t = _tensor(spec, j)
            fact = (
                f"sharing({t}, args)"
                if p == "shares_inputs"
                else f"[k for k in sharing({t}, tensors) if k != {j}]"
            )
            return _Fact("equal", f"the {p[7:]} output {j} shares storage with", fact)
        return _tensor_fact(leaf(spec, j), f"output {j}", d)
    if loc == "write":
        j = d.index or 0
        if p == "allowed":
            label = f"whether autograd lets output {j} be written in place"
            return _Fact("raises", label, f"write_into({_tensor(spec, j)})")
        fact = f"seen_by_write({_tensor(spec, j)}, args, tensors)"
        return _Fact("equal", f"what sees a write into output {j}", fact)
    if loc == "version" and (d.name or "").startswith("self."):
        # a module's parameter or buffer: versions(args) never sees it (run G's a872)
        t, label = _named(str(d.name)), f"whether the call moved {d.name}'s version counter"
        return _Fact("equal", label, f"{t}._version != before", before=f"before = {t}._version")
    if loc == "version":
        label = "which arguments' version counters the call moved"
        return _Fact("equal", label, "moved(args, before)", before="before = versions(args)")
    if loc == "saved_probe":
        label = "whether backward refuses tensors saved before the call"
        return _Fact("raises", label, "backward_saved(saved)", before="saved = save_products(args)")
    if loc == "version_probe":
        label = "whether backward refuses arguments whose version counter moved"
        return _Fact("raises", label, "bumped_backward(out, args)")
    if loc == "input":  # read after the drive's backwards, as observe reads it
        after = _tensor_fact(_named(d.name), f"input {d.name} after the call", d)
        return replace(after, backward=_plan_backwards(spec))
    if loc == "user_code":
        return _user_code_fact(d)
    if loc in ("grad", "grad2"):
        what = f"grad of {d.name}" + (" after the second backward" if loc == "grad2" else "")
        grad = _tensor_fact(f"{_named(d.name)}.grad", what, d)
        return replace(grad, backward="second" if loc == "grad2" else "first")
    return _whole_call_fact(loc)


def _plan_backwards(spec: ProgramSpec) -> str:
    """The backwards the campaign's drive ran before it read the arguments: a write a
    backward makes into a forward input (a custom Function's bw_mutate, the issue-36 triage's
    f88a) shows only after them. Only such a program runs them: another repro stays as short
    as the call."""
    if not spec.plan.backward or not any(fn.body == "bw_mutate" for fn in spec.functions):
        return ""
    return "second-outcome" if spec.plan.second_backward == "retain" else "first"


def _whole_call_fact(loc: str) -> _Fact:
    """The facts of a call as a whole (no output, input or gradient named)."""
    if loc == "structure":
        return _Fact("equal", "the output structure", "tree_structure(out)")
    if loc == "grad_mode":
        return _Fact("equal", "the grad mode after the call", "grad_mode", grad_mode=True)
    if loc == "inputs":
        fact = "[a._base is not None for a in args if isinstance(a, torch.Tensor)]"
        return _Fact("equal", "which arguments have a _base after the call", fact)
    if loc == "second_backward":
        return _Fact("raises", "what the second backward raises", "second", "second-outcome")
    if loc == "leaves":
        fact = (
            '[f"a{i}" for i, a in enumerate(args) if getattr(a, "requires_grad", 0) and a.is_leaf]'
        )
        return _Fact("equal", "which arguments are leaves requiring grad", fact, "first")
    if loc == "backward":
        fact = "[o.requires_grad for o in tree_leaves(out) if isinstance(o, torch.Tensor)]"
        return _Fact("equal", "which outputs require grad (whether backward runs)", fact)
    if loc == "saved_hooks":  # Note [Saved-tensor hook contract]
        label = "whether a packed tensor was never unpacked, or an unpack got what no pack made"
        fact = "[n > 0 for n in saved_hooks_summary()[1:]]"
        return _Fact("equal", label, fact, "first", before="SAVED_LOG.clear()")
    if loc == "hooks":  # by name; the custom Functions' entries are the user_code oracle's
        fact = 'sorted(e[0] for e in take_hook_log() if "." not in e[0])'
        return _Fact("equal", "the hooks that ran (any order)", fact, "first")
    raise ValueError(f"no repro check for a difference at {loc!r}")


def _user_code_fact(d: Difference) -> _Fact:
    """What a hook or custom Function method was handed, how often it ran, in which order
    (oracles/user_code.py), read off the program's HOOK_LOG after the call and backward."""
    name, p = d.name, d.prop
    if p == "runs":
        fact = f"[e[0] for e in take_hook_log()].count({name!r})"
        return _Fact("equal", f"how often {name} runs", fact, "first")
    if p == "order":
        if name.endswith(".*"):
            keep = f" if e[0].startswith({name[:-1]!r})"
        elif name in PROMISED_PAIRS:
            keep = f" if e[0] in {PROMISED_PAIRS[name]!r}"
        else:
            keep = ""
        fact = f"[e[0] for e in take_hook_log(){keep}]"
        return _Fact("equal", f"the order {name} runs in", fact, "first")
    fact = f"received(take_hook_log(), {name!r}, {p!r})"
    return _Fact("equal", f"what {name} receives ({p.replace('_', ' ')})", fact, "first")


def _tensor_fact(expr: str, what: str, d: Difference) -> _Fact:
    """The fact for one tensor's difference (its values, its shape, ...)."""
    if d.inner:
        for attr in d.inner.split("."):
            expr, what = f"{expr}.{attr}", f"{what}.{attr}"
    if d.prop == "values":
        return _Fact("values", f"{what}: values differ", expr)
    if d.prop == "presence":
        return _Fact("presence", f"{what} (None or a tensor)", expr)
    attrs = {
        "shape": f"tuple({expr}.shape)",
        "dtype": f"{expr}.dtype",
        "stride": f"{expr}.stride()",
        "storage_offset": f"{expr}.storage_offset()",
        "type": f"type({expr}).__name__",
        "inner_names": f"type({expr}).__name__",
        "tensor": f"type({expr}).__name__",
    }
    if d.prop in attrs:
        return _Fact("equal", f"{what}: {d.prop.replace('_', ' ')}", attrs[d.prop])
    return _Fact("equal", what, expr)  # a non-tensor output: "1 vs 2"


def _named(name: str) -> str:
    """An input's name in the observations (a1, a1._base, self.p0) as code in observe()."""
    if m := re.fullmatch(r"a(\d+)((\.\w+)*)", name):
        return f"args[{m[1]}]{m[2]}"
    if name.startswith("self."):
        return "fn" + name[len("self") :]  # the module (or torch.compile's wrapper of it)
    return name


def flat_outputs(spec: ProgramSpec) -> list[OutSpec]:
    """The output leaves in pytree order (None and ints included, as tree_leaves gives them)."""

    def walk(o: OutSpec) -> list[OutSpec]:
        return [x for i in o.items for x in walk(i)] if o.kind == "tuple" else [o]

    return [x for o in spec.outputs for x in walk(o)]


def leaf(spec: ProgramSpec, j: int) -> str:
    """Code for the j-th output leaf: `out`, `out[j]`, or `tree_leaves(out)[j]` when nested."""
    if len(spec.outputs) == 1 and spec.outputs[0].kind != "tuple":
        return "out"
    if all(o.kind != "tuple" for o in spec.outputs):
        return f"out[{j}]"
    return f"tree_leaves(out)[{j}]"


def _tensor(spec: ProgramSpec, k: int) -> str:
    """Code for the k-th *tensor* output (the aliasing oracle and the probes count tensors)."""
    tensors = [j for j, o in enumerate(flat_outputs(spec)) if _is_tensor(spec, o)]
    return leaf(spec, tensors[k]) if k < len(tensors) else f"tensors[{k}]"


def _is_tensor(spec: ProgramSpec, o: OutSpec) -> bool:
    """Statically: refs name tensors, except a scalar argument (int, float)."""
    if o.kind != "ref":
        return False
    m = re.fullmatch(r"a(\d+)", o.ref)
    return not (m and int(m[1]) < len(spec.inputs) and spec.inputs[int(m[1])].scalar)
