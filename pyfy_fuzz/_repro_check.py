"""The one check a repro.py performs, read off the finding (torch-free).

Note [One check]
~~~~~~~~~~~~~~~~
A finding's first difference line (its explanation's first "  - ..." line, e.g. "call 1:
output 0: values differ: expected [...]") names what differs and in which call. `read_check`
turns it into a `Check`: which calls run (the plan's calls up to the one that differs; then the
variant call, for the guards oracle; or instead one fresh call without backward, for the
in-place and version probes, as pyfy_fuzz.observe makes them), how far backward runs, the
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
- runs: an interpreter crash or a hang -- the process dying is the repro.

A line it cannot read falls back to comparing every output's values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from generators.source import no_retain
from pyfy_fuzz.schema.spec import OutSpec, ProgramSpec, variant_tokens


@dataclass(frozen=True)
class Check:
    """What a repro compares; see Note [One check]."""

    compare: str  # raises | values | equal | presence | later | seq_nr | runs
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


_CALL = re.compile(r"^call (\d+): ")
_VARIANT = re.compile(
    r"^(variant call|sequence call (\d+)) \(([\w+]+)(, recompiled)?\)"
    r"( accepted by the file's guards)?: "
)
# "raised X in call: ...; eager did not", "returned; eager raised X",
# "BackendCompilerFailed(RuntimeError); eager returned" (the guards oracle's variant call)
_RAISES = re.compile(r"^(raised |returned|[\w.]+(\(\w+\))?; eager (returned|raised))")
_PROBE = re.compile(r"^(in-place|version|saved) probe call: ")
# The seed of each probe's fresh call, after the plan's calls (pyfy_fuzz.observe).
_PROBE_SEED = {"in-place": 0, "write": 0, "version": 1, "saved": 2}
# The end of a "raised" line whose reference ran: "...; eager did not", "X; eager returned".
_REFERENCE_RAN = re.compile(r"; (eager|torch\.compile) (did not|returned)$")


def first_difference(finding: dict[str, Any]) -> str:
    """The first "  - ..." line of the explanation: the aspect, with the program's names."""
    explanation = str(finding.get("explanation") or "")
    for line in explanation.splitlines():
        if line.startswith("  - "):
            return line[4:].strip()
    return str(finding.get("difference") or explanation.strip())


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
    """The drive's retain_grad, as a repro writes it (pyfy_fuzz._repro_helpers.retain_grads),
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
    kind, oracle, plan = finding["kind"], finding["oracle"], spec.plan
    line = first_difference(finding)
    bw = "first" if plan.backward else ""
    if kind in ("interpreter-crash", "hang"):
        return Check("runs", kind, calls=plan.calls, variant=plan.variant is not None, backward=bw)
    if kind == "harness-error":
        return Check("raises", "what each side raises", calls=plan.calls, backward=bw)
    if oracle == "seq_nr":
        return _seq_nr_check(spec, finding, line)
    if m := re.match(r"output (\d+) of call (\d+) changed", line):
        out, call = int(m.group(1)), int(m.group(2))
        label = f"output {out} of call {call} changed after the later calls"
        return Check("later", label, calls=plan.calls, snapshot=(call, out), backward=bw)
    calls, variant, sequence, rest = plan.calls, False, 0, line
    if m := _VARIANT.match(line):
        variant, rest = plan.variant is not None, line[m.end() :]
        if m[2] is not None:
            sequence = min(int(m[2]) + 1, len(plan.sequence)) if variant else 0
    elif m := _CALL.match(line):
        calls, rest = int(m.group(1)) + 1, line[m.end() :]
    ran = bool(_REFERENCE_RAN.search(rest))
    if m := _PROBE.match(rest):  # the probe's own call raised: once more after the plan's
        seed = plan.calls + _PROBE_SEED[m.group(1)]
        return Check("raises", "what each side raises", probe_seed=seed, reference_runs=ran)
    if _RAISES.match(rest) or " failed to compile" in rest:
        return Check(
            "raises",
            "what each side raises",
            calls=calls,
            variant=variant,
            sequence=sequence,
            backward=bw,
            reference_runs=ran,
        )
    fact = _read_fact(spec, rest)
    if fact is None:  # a difference this module cannot read: every output's values
        return Check("values", f"the outputs ({rest[:60]})", "out", calls, variant, sequence)
    check = Check(
        fact.compare,
        fact.label,
        fact.fact,
        calls,
        variant,
        sequence,
        backward=fact.backward,
        before=fact.before,
    )
    if fact.probe:  # the probes call once more, on fresh inputs, after the plan's calls
        seed = plan.calls + _PROBE_SEED[fact.probe]
        return Check(fact.compare, fact.label, fact.fact, probe_seed=seed, before=fact.before)
    return replace(check, grad_mode=fact.grad_mode)


def _seq_nr_check(spec: ProgramSpec, finding: dict[str, Any], line: str) -> Check:
    """Under Dynamo the backward compiles with the forward (force_non_lazy_backward_lowering,
    as pyfy-fuzz compiles); aot_function compiles it at the first backward."""
    how = "order" if line.startswith("by seq_nr") else "invariants"
    how = "grad_acc" if "marked as gradient accumulation" in line else how
    how = "file" if finding["subject"] == "pythonify" else how
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


def _read_fact(spec: ProgramSpec, rest: str) -> _Fact | None:
    """A per-call difference ("output 0.requires_grad True vs False", "grad of a0: ...")."""
    if m := re.match(r"output (\d+)\.(requires_grad|is_leaf|is_inference) ", rest):
        j, attr = int(m.group(1)), m.group(2)
        return _Fact("equal", f"output {j}.{attr}", f"{leaf(spec, j)}.{attr}")
    if m := re.match(r"output (\d+)\.grad_fn ", rest):
        j = int(m.group(1))
        return _Fact("presence", f"output {j}.grad_fn", f"{leaf(spec, j)}.grad_fn")
    if m := re.match(r"output (\d+) is input ", rest):
        fact = f'[f"a{{i}}" for i, a in enumerate(args) if a is {_tensor(spec, int(m[1]))}]'
        return _Fact("equal", f"which arguments output {m[1]} is", fact)
    if m := re.match(r"output (\d+)\._base: ", rest):
        fact = f"base_of({_tensor(spec, int(m[1]))}, args, tensors)"
        return _Fact("equal", f"output {m[1]}._base", fact)
    if m := re.match(r"output (\d+) shares storage with (inputs|outputs) ", rest):
        k, t = int(m[1]), _tensor(spec, int(m[1]))
        fact = (
            f"sharing({t}, args)"
            if m[2] == "inputs"
            else f"[j for j in sharing({t}, tensors) if j != {k}]"
        )
        return _Fact("equal", f"the {m[2]} output {k} shares storage with", fact)
    if m := re.match(r"writing into output (\d+) in place: ", rest):
        label = f"whether autograd lets output {m[1]} be written in place"
        return _Fact("raises", label, f"write_into({_tensor(spec, int(m[1]))})", probe="write")
    if m := re.match(r"writing into output (\d+) changed ", rest):
        fact = f"seen_by_write({_tensor(spec, int(m[1]))}, args, tensors)"
        return _Fact("equal", f"what sees a write into output {m[1]}", fact, probe="write")
    if re.match(r"input \S+: version counter ", rest):
        label = "which arguments' version counters the call moved"
        return _Fact("equal", label, "moved(args, before)", before="before = versions(args)")
    if rest.startswith("backward through tensors saved before the call"):
        label = "whether backward refuses tensors saved before the call"
        fact = "backward_saved(saved)"
        return _Fact("raises", label, fact, probe="saved", before="saved = save_products(args)")
    if rest.startswith("backward after bumping"):
        label = "whether backward refuses arguments whose version counter moved"
        return _Fact("raises", label, "bumped_backward(out, args)", probe="version")
    return _read_more(spec, rest)


def _read_more(spec: ProgramSpec, rest: str) -> _Fact | None:
    if rest.startswith("output structure "):
        return _Fact("equal", "the output structure", "tree_structure(out)")
    if rest.startswith("grad mode after the call "):
        return _Fact("equal", "the grad mode after the call", "grad_mode", grad_mode=True)
    if rest.startswith("inputs after the call: "):
        fact = "[a._base is not None for a in args if isinstance(a, torch.Tensor)]"
        return _Fact("equal", "which arguments have a _base after the call", fact)
    if rest.startswith("second backward"):
        return _Fact("raises", "what the second backward raises", "second", "second-outcome")
    if rest.startswith("leaves "):
        fact = (
            '[f"a{i}" for i, a in enumerate(args) if getattr(a, "requires_grad", 0) and a.is_leaf]'
        )
        return _Fact("equal", "which arguments are leaves requiring grad", fact, "first")
    if rest.startswith("grad: ran "):
        fact = "[o.requires_grad for o in tree_leaves(out) if isinstance(o, torch.Tensor)]"
        return _Fact("equal", "which outputs require grad (whether backward runs)", fact)
    if m := re.match(r"output (\d+): ", rest):
        j = int(m[1])
        return _tensor_fact(leaf(spec, j), f"output {j}", rest[m.end() :])
    if m := re.match(r"input (\S+) after the call: ", rest):
        return _tensor_fact(_named(m[1]), f"input {m[1]} after the call", rest[m.end() :])
    if rest.startswith("saved-tensor hooks: "):  # Note [Saved-tensor hook contract]
        label = "whether a packed tensor was never unpacked, or an unpack got what no pack made"
        fact = "[n > 0 for n in saved_hooks_summary()[1:]]"
        return _Fact("equal", label, fact, "first", before="SAVED_LOG.clear()")
    if rest.startswith("hooks ran "):
        return _Fact("equal", "the hooks that ran (any order)", "sorted(take_hook_log())", "first")
    if m := re.match(r"grad( after the second backward)? of (\S+): ", rest):
        what = f"grad of {m[2]}" + (" after the second backward" if m[1] else "")
        grad = _tensor_fact(f"{_named(m[2])}.grad", what, rest[m.end() :])
        return replace(grad, backward="second" if m[1] else "first")
    return None


def _tensor_fact(expr: str, what: str, text: str) -> _Fact:
    """The fact for one tensor difference ("values differ: ...", "shape (3,) vs (1, 3)")."""
    if m := re.match(r"inner tensor (\w+): ", text):
        return _tensor_fact(f"{expr}.{m[1]}", f"{what}.{m[1]}", text[m.end() :])
    if text.startswith("values differ"):
        return _Fact("values", f"{what}: values differ", expr)
    if text.startswith("None vs") or text.endswith("vs None"):
        return _Fact("presence", f"{what} (None or a tensor)", expr)
    attrs = {
        "shape": f"tuple({expr}.shape)",
        "dtype": f"{expr}.dtype",
        "stride": f"{expr}.stride()",
        "storage offset": f"{expr}.storage_offset()",
        "type": f"type({expr}).__name__",
    }
    for word, fact in attrs.items():
        if text.startswith(word + " "):
            return _Fact("equal", f"{what}: {word}", fact)
    if "a tensor" in text:
        return _Fact("equal", f"{what}: a tensor or not", f"type({expr}).__name__")
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
    """Statically: refs name tensors, except an argument of kind int."""
    if o.kind != "ref":
        return False
    m = re.fullmatch(r"a(\d+)", o.ref)
    return not (m and int(m[1]) < len(spec.inputs) and spec.inputs[int(m[1])].kind == "int")
