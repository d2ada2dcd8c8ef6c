"""Differences between torch.compile and eager that are by design, in one place.

Each entry says what differs and why it is not a bug. An oracle that meets the difference case
by case calls `excuse(entry_id)`, which records that it applied (counted per case, so a report
can show how often each excuse was used; Note [Excuses are recorded, not stored]). The
structural entries (version-counter-amount, size-one-stride, dynamo-wrapped-exception,
decomposition-rounding, inductor-rng, rng-dead-code, donated-buffer-retain-graph) are kept by
what is compared or configured and are listed here so that every excuse lives in one place.
The list is short on purpose: an entry must name one documented behaviour of torch.compile,
and never covers pythonify, which must match torch.compile exactly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from pyfy_fuzz.schema.observation import ExcObs

__all__ = [
    "BY_DESIGN",
    "ByDesign",
    "as_markdown",
    "excuse",
    "recording",
    "refused_by_design",
]


@dataclass(frozen=True)
class ByDesign:
    id: str
    oracle: str
    what: str
    reason: str


BY_DESIGN: tuple[ByDesign, ...] = (
    ByDesign(
        "view-of-intermediate",
        "aliasing",
        "an output that is a view of an intermediate (its _base is no input or output) comes "
        "back as a non-view, or as a view of a different intermediate",
        "AOTAutograd regenerates such outputs from the graph's outputs (output_info "
        "alias_of_intermediate*); only storage sharing between outputs and with inputs is "
        "user-visible and that is still compared.",
    ),
    ByDesign(
        "custom-function-view-inductor",
        "aliasing",
        "under inductor, an output of a custom autograd.Function that is a view of its input "
        "shares storage with the input but has _base None",
        "inductor returns custom_function_view outputs without replaying the view "
        "(NOTES-torch-2.13: by-design differences).",
    ),
    ByDesign(
        "version-counter-amount",
        "mutation",
        "an input mutated in place has a different _version after the call",
        "compiled input mutations are applied as one copy_ (or several) in the epilogue, or "
        "in the graph followed by one increment_version; only whether autograd sees a saved "
        "tensor as modified matters. Whether each input's counter moved is compared "
        "(oracles/versions.py, Note [Version counters]); by how much never is.",
    ),
    ByDesign(
        "net-noop-mutation-version",
        "versions",
        "the call changes an input in place and back (unsqueeze_ then squeeze_; a write of "
        "the values it holds): eager bumps its version counter, torch.compile does not",
        "AOTAutograd decides what an input mutation is by comparing the input before and "
        "after the traced function (collect_metadata_analysis: has_metadata_mutation compares "
        "sizes, strides and offset): changes that cancel out are no mutation, so nothing is "
        "replayed on the input and its counter does not move. The values and geometry are "
        "eager's, which the mutation oracle checks; the counter of any input the call leaves "
        "changed is still compared.",
    ),
    ByDesign(
        "partitioner-saved-tensors",
        "mutation",
        "after the arguments' version counters are bumped (values unchanged), backward raises "
        "in one of eager / torch.compile and runs in the other",
        "the partitioner chooses what the compiled backward saves (often the inputs, recomputing "
        "intermediates, or the reverse), so which arguments backward depends on differs from "
        "eager's choice. A mutation inside the program of a tensor eager saved still makes "
        "eager's backward raise and is compared by the exceptions oracle; the version probe "
        "stays strict between pythonify and torch.compile, which share the graphs.",
    ),
    ByDesign(
        "inductor-rng",
        "outputs",
        "random numbers under inductor differ from eager's",
        "inductor generates its own Philox-based RNG; the runner compiles with "
        "torch._inductor.config.fallback_random=True so values stay comparable.",
    ),
    ByDesign(
        "rng-dead-code",
        "outputs",
        "a random op whose result is unused (rand_like, randn_like, bernoulli, dropout) is "
        "dropped by torch.compile, so every later random draw differs from eager's",
        "while tracing, dead-code elimination (torch.fx Graph.eliminate_dead_code) counts "
        "random ops as side-effect free unless torch._inductor.config.fallback_random is set, "
        "the flag by which torch.compile promises eager's random numbers (for any backend). "
        "The runner sets it for every backend, not only inductor; measured on torch 2.13 with "
        "aot_eager: with it the unused op stays and the draws equal eager's, so values are "
        "still compared exactly.",
    ),
    ByDesign(
        "dead-code-error",
        "exceptions",
        "eager raises in a statement whose result nothing uses (e.g. an out-of-bounds "
        "as_strided, checked only on real storage) and torch.compile returns",
        "torch.compile removes side-effect-free ops whose results are unused (Dynamo's and "
        "AOTAutograd's dead-code elimination), and errors only running the op would raise go "
        "with them; eager's semantics for dead code are not preserved. Decided on the "
        "program, not by message: the runner runs eager on the spec without its dead pure "
        "statements and the in-place writes into values nothing else reads (dead_code."
        "dead_writes); where that run returns at every call that raised and torch.compile "
        "returned there too, it is torch.compile's reference (outputs, gradients, everything "
        "still compared). An error of a statement whose result is used is still reported.",
    ),
    ByDesign(
        "custom-function-view-write",
        "autograd",
        "writing in place into an output that eager made as a view inside a custom "
        "autograd.Function (or an input the Function returned as-is): eager refuses ('This "
        "view was created inside a custom Function'), torch.compile allows it",
        "eager forbids the write so that autograd's view+inplace handling cannot override the "
        "Function's custom backward; the compiled region hands such an output out as an output "
        "of its own CompiledFunction node (or a view regenerated outside the Function), whose "
        "backward stays right after the write (measured on torch 2.13: the gradient after the "
        "write equals eager's for the same computation done out of place). Only this refusal, "
        "only eager refusing while torch.compile allows; never for pythonify.",
    ),
    ByDesign(
        "error-at-compile-not-backward",
        "exceptions",
        "an error eager raises in backward() (a tensor saved for backward modified by an "
        "inplace operation) is raised by torch.compile at the call",
        "AOTAutograd traces the joint forward and backward graph when it compiles "
        "(aot_dispatch_autograd), and autograd's saved-tensor version check fires during "
        "that trace: the same error, earlier. A call's exception is compared by type whatever "
        "the phase, so such a program is not reported; one that never calls backward, where "
        "eager runs and torch.compile still raises, is (pytorch#185497).",
    ),
    ByDesign(
        "error-at-call-not-first-use",
        "exceptions",
        "torch.compile raises 'A view was created in no_grad mode and its base or another view "
        "of its base has been modified inplace with grad mode enabled' at the call, where "
        "eager returns such a view",
        "eager hands back a view autograd forbids using: its is_leaf, grad_fn and any op on it "
        "raise that same documented error (autograd's handle_view_on_rebase; pytorch#113793, "
        "closed as expected: eager raises on print too). AOTAutograd's metadata analysis reads "
        "each output's grad_fn while tracing, so it meets the refusal at the call. Excused only "
        "where eager's returned output was recorded as refused and the compile's error is that "
        "refusal (found as a torch bug, N11's no_grad-view form, by the issue-36 triage).",
    ),
    ByDesign(
        "dynamo-wrapped-exception",
        "exceptions",
        "Dynamo raises TorchRuntimeError where eager raises the user-level error",
        "Dynamo finds the error while tracing on fake tensors and re-raises it from the "
        "original; the original's type (__cause__) is compared instead.",
    ),
    ByDesign(
        "size-one-stride",
        "outputs",
        "a stride differs in a dimension of size 0 or 1, or on an output with no elements",
        "such strides never change which element an index reads; torch's own output-stride "
        "checks ignore them.",
    ),
    ByDesign(
        "decomposition-rounding",
        "outputs",
        "under aot_eager, a value differs from eager's in the last bits in a program that "
        "calls a composite op of torch's vocabulary (generators/_stmts_aten.py)",
        "an op with a CompositeImplicitAutograd kernel is decomposed into other aten ops while "
        "tracing, and the decomposition may round otherwise than eager's kernel: such a "
        "program (generators.rounds, read off the derived table) is compared at the dtype's "
        "tolerance, torch.testing's, as under Inductor, with the float64 eager reference; "
        "integer and bool values stay exact, and pythonify stays bitwise equal to "
        "torch.compile (the same graphs).",
    ),
    ByDesign(
        "grad-accumulation-order",
        "grads",
        "under aot_eager, a gradient differs from eager's in the last bits (a tensor used twice "
        "gets its gradient contributions summed in another order)",
        "eager's autograd engine accumulates a leaf's gradient contributions as its nodes "
        "finish; the compiled backward sums them inside one graph, in the partitioner's order. "
        "Floating-point addition is not associative, so gradients are compared with the "
        "dtype's tolerance (torch.testing's), not bitwise; outputs and mutations stay exact, "
        "and pythonify stays bitwise equal to torch.compile (the same graphs).",
    ),
    ByDesign(
        "compile-refuses-as-strided-view-mutation",
        "exceptions",
        "torch.compile raises where eager runs: a mutation on a view chain that contains an "
        "as_strided() view",
        "functionalization cannot replay a mutation through as_strided (non-compositional), "
        "so torch bans the pattern in compile with a message saying so and how to work "
        "around it (torch/_subclasses/functional_tensor.py): a documented limitation, not a "
        "wrong result. The pythonified file is still compared with torch.compile.",
    ),
    ByDesign(
        "compile-refuses-subclass-synthetic-base",
        "exceptions",
        "torch.compile raises where eager runs: tensor-subclass arguments that alias one "
        "another and are mutated (or a plain argument aliasing a subclass one)",
        "such inputs need a synthetic base, and AOTAutograd refuses a synthetic base whenever "
        "a graph input or output is a tensor subclass, with a message saying 'This is not "
        "supported today' (runtime_wrappers.py, AOTSyntheticBaseWrapper.pre_compile, torch "
        "2.13): a documented limitation, not a wrong result. The capture copies the aliasing "
        "too, so the pythonified file is refused alike.",
    ),
    ByDesign(
        "compile-refuses-set-with-other-mutations",
        "exceptions",
        "torch.compile raises where eager runs: an argument set_ (or resize_) onto other "
        "memory that the function also mutates in a way AOTAutograd cannot keep in the graph "
        "(a data mutation autograd sees)",
        "Note [set_() Input Mutations in AOTAutograd]: a set_ of a graph input is replayed in "
        "the graph only when every other mutation of that input could be too, and otherwise "
        "_check_if_mutation_can_be_in_graph raises 'This is not supported today' "
        "(functional_utils.py, torch 2.13): a documented limitation, not a wrong result.",
    ),
    ByDesign(
        "custom-function-compiled",
        "user_code",
        "a custom autograd.Function's method (forward, setup_context, backward) logs nothing "
        "under torch.compile, where eager's log has it per call",
        "Dynamo traces the Function into the graph (autograd_function_apply) and AOTAutograd "
        "its backward into the compiled backward, or -- after a graph break at the apply -- "
        "compiles the forward's frame on its own: the Python runs once, while traced, and "
        "graphs run its ops from then on. The log is not written while torch traces (Note "
        "[What user code receives] in generators/_hooks.py: a side effect there would make "
        "Dynamo run the Function eagerly). Excused only where torch.compile's log has no "
        "entry of that method in the call at all; a method that runs is compared run by run, "
        "and the pythonified file, which runs the same graphs as its reference, always is.",
    ),
    ByDesign(
        "user-code-version",
        "user_code",
        "a tensor torch hands to a hook or a custom Function (a gradient, an argument) has "
        "another _version than eager's",
        "a version counter counts in-place writes, and torch.compile makes tensors with other "
        "writes than eager's: a gradient comes out of the compiled backward (a fresh buffer, "
        "or summed in place), an argument mutated by the compiled region is written back with "
        "copy_ (version-counter-amount). Whether an argument is there, its shape, dtype and "
        "requires_grad are compared; the pythonified file's counters are compared exactly.",
    ),
    ByDesign(
        "grad-fn-type",
        "autograd",
        "outputs' grad_fn has another type (CompiledFunctionBackward vs MulBackward0)",
        "the compiled region is one autograd node; only whether grad_fn exists is compared.",
    ),
    ByDesign(
        "aot-frontend-output-list",
        "outputs",
        "with the AOT front-end (aot_function, the only way to reach AOTDedupeWrapper), a "
        "function that returns a tuple gives a list",
        "aot_function returns its flat outputs as a list (torch 2.13); the leaves are still "
        "compared one by one. torch.compile (Dynamo) keeps the tuple and is compared strictly.",
    ),
    ByDesign(
        "donated-buffer-retain-graph",
        "exceptions",
        "a backward with retain_graph=True raises 'compiled with non-empty donated buffers'",
        "donated buffers (torch._functorch.config.donated_buffer) let the compiled backward "
        "reuse saved tensors' memory, and torch refuses retain_graph with a message saying so; "
        "the runner turns donation off for plans with a retained second backward, so the "
        "gradients are still compared.",
    ),
    ByDesign(
        "cudagraph-overwritten-output",
        "cudagraph",
        "on a GPU, torch's cudagraph trees (Inductor's mode='reduce-overhead', the "
        "cudagraphs backend) raise when an output of an earlier replay is read after a later "
        "replay",
        "torch documents it (CUDAGraph Trees: outputs of a replay are overwritten by the next, "
        'and reading a stale one raises "accessing tensor output of CUDAGraphs that has been '
        'overwritten by a subsequent run"; torch.compiler.cudagraph_mark_step_begin); only '
        "that error is excused, and the pythonified file, which hands out copies, is still "
        "checked.",
    ),
)

_BY_ID = {b.id: b for b in BY_DESIGN}


# Note [Excuses are recorded, not stored]
# ---------------------------------------------------------------------------------------------
# Evidence is frozen: oracles only read it. Which by-design entries applied is what a case's
# *caller* wants to know (CaseResult.excused, the campaign's counts), so `excuse` records the
# entry in the innermost `recording()` the caller opened, and the caller reads what was
# recorded when the block ends. A check made outside any recording (a unit test of one oracle)
# records nothing. A re-check whose result is discarded (check_all asking whether the file
# agrees with eager) opens a recording of its own, so its excuses do not count.
_RECORDING: ContextVar[list[str] | None] = ContextVar("by_design_recording", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the by-design entries `excuse` records inside the block, each once, in order."""
    got: list[str] = []
    token = _RECORDING.set(got)
    try:
        yield got
    finally:
        _RECORDING.reset(token)


def excuse(entry_id: str) -> bool:
    """Note that a documented by-design difference applied; always True (for `if` chains)."""
    if entry_id not in _BY_ID:
        raise KeyError(f"no by-design entry {entry_id!r}")
    got = _RECORDING.get()
    if got is not None and entry_id not in got:
        got.append(entry_id)
    return True


# torch.compile refusing a program with a message that says the pattern is unsupported on
# purpose: the message's words, and the entry that documents them.
_DOCUMENTED_REFUSALS = {
    "as_strided() is non-compositional": "compile-refuses-as-strided-view-mutation",
    "to the graph is a tensor subclass. This is not supported today": (
        "compile-refuses-subclass-synthetic-base"
    ),
    "on a graph input, but the input has other mutations that we cannot": (
        "compile-refuses-set-with-other-mutations"
    ),
}


def refused_by_design(subject: str, exc: ExcObs) -> bool:
    """Whether torch.compile raised `exc` to refuse a pattern it documents as unsupported
    (recorded as excused when so). Every oracle that meets torch.compile's errors asks: a plan
    call, a probe call and the guards oracle's variant call refuse alike."""
    if subject != "torch.compile":
        return False
    for text, entry in _DOCUMENTED_REFUSALS.items():
        if text in exc.message or text in exc.traceback_tail:
            return excuse(entry)
    return False


def as_markdown() -> str:
    """The list as a markdown table (docs/ORACLES.md embeds it; a test keeps them in sync)."""
    rows = ["| id | oracle | what differs | why it is by design |", "|---|---|---|---|"]
    rows += [f"| `{b.id}` | {b.oracle} | {b.what} | {b.reason} |" for b in BY_DESIGN]
    return "\n".join(rows)
