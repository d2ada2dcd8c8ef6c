"""The configuration catalogue: the torch settings a case may be drawn under.

Note [Drawn configurations]
Users do not all run torch.compile with its defaults, and several wrapper paths exist only
under a setting: DebugAssertWrapper only with `functorch.config.debug_assert`, the disabled
autocast of RuntimeWrapper only for a call under autocast, effect tokens unlifted from the
graph only with `unlift_effect_tokens`. A case's `CallPlan.config` names the knobs of this
catalogue it runs under (each knob is one setting away from torch's default); the empty tuple
is the stock configuration, which the shrinker tries first, so a finding keeps a knob only when
the bug needs it.

Three kinds of knob:
- "compile": a torch config entry (`target` "torch._functorch.config.debug_assert"), patched
  around every compile of the case -- the capture, the stock reference and the warm one -- so
  the file models the compile it is compared with. A torch that lacks the entry skips the knob
  and says so (never a crash).
- "call": how the program is called (`target` "call.no_grad"), the same for every subject,
  eager included: the generated program's drive applies it around each call.
- "capture": how pythonify's capture compiles (`target` "capture.fakify_first_call": as
  DDPOptimizer does). It changes the file and the compile it is judged on (the capture's own
  callable, Note [Two references]); torch.compile, stock, is untouched, so a torch finding
  never keeps one.
- "inputs": how the arguments are marked before each call (`maybe_mark_dynamic` of dim 0):
  the drive marks every subject's, compile_once the capture's, repro.py its own.
- "aot": an argument of aot_function (`target` "aot.keep_inference_input_mutations"), for the
  AOT front-end: the capture, the stock AOT reference and repro.py pass it alike.
- "hooks": saved-tensor hooks the drive installs around every subject's call and backward
  (`target` "hooks.saved_tensors" -> the form): fx GraphModules, which torch.compile inlines
  into its graphs (Note [Saved-tensor hooks as graphs] in generators/_saved_hooks.py).
A knob with `beside` set changes nothing alone: it is drawn only as the second knob of a
configuration whose first is of that kind (how the inlined hooks choose what to pack).

Everything here is data, readable without torch: generators draw from it, the runner applies
it (subjects/stock.py), repro.py writes it into the script, `--config` is checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CATALOGUE",
    "ConfigKnob",
    "KnobKind",
    "aot_options",
    "call_context",
    "capture_options",
    "check_config",
    "compile_knobs",
    "graph_hooks_form",
    "stock_compile",
]

KnobKind = Literal["compile", "call", "capture", "aot", "inputs", "hooks"]


@dataclass(frozen=True)
class ConfigKnob:
    """One setting, away from torch's default, that changes which wrapper path runs."""

    name: str  # the catalogue's name, as CallPlan.config holds it ("debug_assert")
    # compile: a torch config entry; call: how the program is called; capture: how the
    # capture compiles (the file's reference only: torch.compile stays stock)
    kind: KnobKind
    # compile: "module.entry" -> value; several for one knob that needs them together.
    # call: the one call-site context ("call.no_grad", "call.inference_mode", "call.autocast").
    # capture: "capture.<option of pythonify's capture>" -> value.
    # aot: "aot.<aot_function argument>" -> value (the AOT front-end's compiles, all of them).
    # inputs: "inputs.<marking>" -> value: how the arguments are marked before every call.
    settings: tuple[tuple[str, object], ...]
    reaches: str  # the wrapper path or behaviour it changes (why it is in the catalogue)
    backends: tuple[str, ...] = ("aot_eager", "inductor")  # where it means anything
    frontends: tuple[str, ...] = ("dynamo", "aot")
    devices: tuple[str, ...] = ("cpu", "cuda")  # cuda only: torch ignores it on CPU
    beside: KnobKind | None = None  # drawn only after a first knob of this kind

    def __post_init__(self) -> None:
        if not self.settings:
            raise ValueError(f"knob {self.name!r} sets nothing")
        if self.kind == "call" and (len(self.settings) != 1 or not _is_call(self.settings)):
            raise ValueError(f"call knob {self.name!r} names one call.<context>")
        if self.kind == "compile" and (_is_call(self.settings) or _is_capture(self.settings)):
            raise ValueError(f"compile knob {self.name!r} names a call context or a capture")
        for kind in ("capture", "aot", "inputs", "hooks"):
            if self.kind == kind and not all(t.startswith(kind + ".") for t, _ in self.settings):
                raise ValueError(f"{kind} knob {self.name!r} names {kind}.<option> only")


def _is_call(settings: tuple[tuple[str, object], ...]) -> bool:
    return any(target.startswith("call.") for target, _ in settings)


def _is_capture(settings: tuple[tuple[str, object], ...]) -> bool:
    return any(
        target.startswith(("capture.", "aot.", "inputs.", "hooks.")) for target, _ in settings
    )


_F = "torch._functorch.config."
_KNOBS = (
    ConfigKnob(
        "debug_assert",
        "compile",
        ((_F + "debug_assert", True),),
        "debug_assert/requires_grad: DebugAssertWrapper checks each input's requires_grad",
    ),
    ConfigKnob(
        "no_donated_buffer",
        "compile",
        ((_F + "donated_buffer", False),),
        "autograd: saved activations are not donated to the backward (bw_donated_idxs empty)",
    ),
    ConfigKnob(
        "no_view_replay",
        "compile",
        ((_F + "view_replay_for_aliased_outputs", False),),
        "runtime: outputs that alias are regenerated with as_strided, not by replaying views",
    ),
    ConfigKnob(
        "unlift_effect_tokens",
        "compile",
        ((_F + "unlift_effect_tokens", True),),
        "effect_tokens: the graph makes and sinks its tokens; the wrapper passes none",
    ),
    ConfigKnob(
        "no_tangent_stride_guess",
        "compile",
        ((_F + "guess_tangent_strides_as_outputs", False),),
        "autograd: tangents are traced contiguous, then coerced at backward time",
    ),
    ConfigKnob(
        "functionalize_rng",
        "compile",
        ((_F + "functionalize_rng_ops", True),),
        "rng/functionalized: FunctionalizedRngRuntimeWrapper threads seed and offset",
        devices=("cuda",),
    ),
    ConfigKnob(
        "memory_budget",
        "compile",
        ((_F + "activation_memory_budget", 0.5),),
        "partitioner: the min-cut partitioner recomputes activations under a memory budget, "
        "random ops among them (pytorch#190758); it partitions Inductor's and the AOT "
        "front-end's joint graphs",
    ),
    # The min-cut partitioner's other settings (it partitions Inductor's and the AOT
    # front-end's joint graphs; issue 36: partitioners.py had 457 of 786 branches unreached).
    ConfigKnob(
        "memory_budget_greedy",
        "compile",
        (
            (_F + "activation_memory_budget", 0.5),
            (_F + "activation_memory_budget_solver", "greedy"),
        ),
        "partitioner: the memory budget met by the greedy knapsack instead of dynamic "
        "programming (another choice of what to recompute)",
    ),
    ConfigKnob(
        "aggressive_recompute",
        "compile",
        (
            (_F + "aggressive_recomputation", True),
            (_F + "ban_recompute_not_in_allowlist", False),
            (_F + "ban_recompute_reductions", False),
        ),
        "partitioner: the min-cut may recompute any op, reductions and ops off its allowlist "
        "included, instead of saving it",
    ),
    ConfigKnob(
        "recompute_views",
        "compile",
        ((_F + "recompute_views", True),),
        "partitioner: views of saved tensors are recomputed in the backward from their base, "
        "not saved",
    ),
    ConfigKnob(
        "no_cse",
        "compile",
        ((_F + "cse", False),),
        "graph_compile: the joint graph is partitioned without common-subexpression "
        "elimination (duplicate nodes reach the partitioner and the saved set)",
    ),
    ConfigKnob(
        "fallback_random",
        "compile",
        (("torch._inductor.config.fallback_random", True),),
        "inductor draws random numbers with eager's kernels (rng programs set it anyway)",
        backends=("inductor",),
    ),
    ConfigKnob(
        "bundled_cache",
        "compile",
        ((_F + "force_autograd_cache", True), (_F + "bundled_autograd_cache", True)),
        "aot_eager served from AOTAutograd's cache (the warm subject), as precompile does",
        backends=("aot_eager",),
    ),
    ConfigKnob(
        "mark_dynamic",
        "inputs",
        (("inputs.maybe_mark_dynamic", 0),),
        "graph/dynamic without dynamic=True: dim 0 of every argument of size >= 2 marked "
        "dynamic (torch._dynamo.maybe_mark_dynamic) before each call, as a user marks a batch",
        frontends=("dynamo",),
    ),
    ConfigKnob(
        "drop_inference_mutations",
        "aot",
        (("aot.keep_inference_input_mutations", False),),
        "runtime/input_mutation/out_of_graph: an inference graph returns its input mutations "
        "and RuntimeWrapper applies them (aot_function's keep_inference_input_mutations)",
        frontends=("aot",),
    ),
    ConfigKnob(
        "ddp_fakify",
        "capture",
        (("capture.fakify_first_call", True),),
        "fakified_out/first_call: the capture compiles as DDPOptimizer does, fakify_first_call "
        "set and the first call spent under fake mode, so FakifiedOutWrapper is built",
        frontends=("dynamo",),
    ),
    ConfigKnob(
        "trace_autograd_ops",
        "compile",
        (("torch._dynamo.config.trace_autograd_ops", True),),
        "graph: Dynamo traces a torch.autograd.grad inside the function into its graph instead "
        "of breaking there (Note [torch.autograd.grad inside the function] in generators)",
        frontends=("dynamo",),
    ),
    ConfigKnob(
        "capture_scalars",
        "compile",
        (("torch._dynamo.config.capture_scalar_outputs", True),),
        "graph/unbacked: Dynamo traces Tensor.item() into the graph as an unbacked symbol "
        "instead of breaking there (Note [Reading a tensor's metadata] in generators)",
        frontends=("dynamo",),
    ),
    # How Dynamo generalises on a recompile, and what it traces with unbacked sizes (issue 36:
    # builder._automatic_dynamic and the shape guards were mostly unreached).
    ConfigKnob(
        "unbacked_recompile",
        "compile",
        (("torch._dynamo.config.automatic_dynamic_shapes_mark_as", "unbacked"),),
        "graph/dynamic: a recompile after a size changed marks that dim unbacked, not dynamic "
        "(no guard on it; AOTAutograd and the runtime wrappers see unbacked symbols)",
        frontends=("dynamo",),
    ),
    ConfigKnob(
        "exclusion_guard",
        "compile",
        (("torch._dynamo.config.automatic_dynamic_exclusion_guard", True),),
        "guards: a recompile made dynamic by a size change excludes the sizes the static graph "
        "took, so those calls keep the static graph",
        frontends=("dynamo",),
    ),
    ConfigKnob(
        "dynamic_output_shapes",
        "compile",
        (
            ("torch._dynamo.config.capture_dynamic_output_shape_ops", True),
            ("torch._dynamo.config.capture_scalar_outputs", True),
        ),
        "graph/unbacked: ops whose output size depends on data (nonzero, masked_select, "
        "unique) and item() are traced with unbacked sizes instead of breaking the graph",
        frontends=("dynamo",),
    ),
    ConfigKnob(
        "graph_saved_hooks",
        "hooks",
        (("hooks.saved_tensors", "clone"),),
        "runtime/saved_hooks_inlined: saved-tensor hooks that are GraphModules (a copy packed) "
        "are inlined into the forward's end and the backward's start, and the runtime wrapper "
        "disables the ambient hooks around the compiled call",
    ),
    ConfigKnob(
        "graph_saved_hooks_flat",
        "hooks",
        (("hooks.saved_tensors", "flat"),),
        "runtime/saved_hooks_inlined: inlined GraphModule hooks whose pack returns a flat copy "
        "and the shape (constants inlined, SymInts saved beside the tensors)",
    ),
    # What the inlined hooks pack (functorch.config.saved_tensors_hooks_filtering_mode; the
    # default, "donated", packs only intermediates the backward may free; "no_static", all
    # but parameters and buffers, is left out: a knob drawn only beside another is rare
    # enough already).
    ConfigKnob(
        "saved_hooks_all",
        "compile",
        ((_F + "saved_tensors_hooks_filtering_mode", "all"),),
        "graph_compile: inlined saved-tensor hooks pack every saved tensor, the forward's "
        "inputs and outputs included",
        beside="hooks",
    ),
    ConfigKnob(
        "no_grad",
        "call",
        (("call.no_grad", True),),
        "runtime: called under torch.no_grad(), an inference graph, no autograd wrapper",
    ),
    ConfigKnob(
        "inference_mode",
        "call",
        (("call.inference_mode", True),),
        "runtime: called under torch.inference_mode(), inference tensors in and out",
    ),
    ConfigKnob(
        "autocast",
        "call",
        (("call.autocast", "bfloat16"),),
        "runtime/disable_amp: compiled under autocast, the graph runs with autocast disabled",
    ),
)

# The catalogue, by name (CallPlan.config holds names).
CATALOGUE: dict[str, ConfigKnob] = {k.name: k for k in _KNOBS}

# At most one call-site context: they nest, but one already reaches each path.
_CALL_CONTEXTS = frozenset(k.name for k in _KNOBS if k.kind == "call")


def check_config(names: tuple[str, ...]) -> None:
    """Raise ValueError, in one line, for a name the catalogue lacks, a repeat, two call-site
    contexts or two hooks knobs."""
    for name in names:
        if name not in CATALOGUE:
            raise ValueError(
                f"unknown configuration knob {name!r}; the catalogue has {sorted(CATALOGUE)}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"configuration knobs repeat: {list(names)}")
    calls = [n for n in names if n in _CALL_CONTEXTS]
    if len(calls) > 1:
        raise ValueError(f"at most one call-site knob, got {calls}")
    hooks = [n for n in names if CATALOGUE[n].kind == "hooks"]
    if len(hooks) > 1:
        raise ValueError(f"at most one saved-tensor hooks knob, got {hooks}")


def call_context(config: tuple[str, ...]) -> str | None:
    """The call-site knob of a configuration, by context name ("no_grad", "autocast"), if any."""
    for name in config:
        knob = CATALOGUE[name]
        if knob.kind == "call":
            return knob.settings[0][0].removeprefix("call.")
    return None


def graph_hooks_form(config: tuple[str, ...]) -> str | None:
    """The saved-tensor hooks form a configuration's hooks knob names ("clone"), if any."""
    for name in config:
        if CATALOGUE[name].kind == "hooks":
            return str(CATALOGUE[name].settings[0][1])
    return None


def capture_options(config: tuple[str, ...]) -> dict[str, object]:
    """What a configuration asks of pythonify's capture: option -> value."""
    return {
        target.removeprefix("capture."): value
        for name in config
        if CATALOGUE[name].kind == "capture"
        for target, value in CATALOGUE[name].settings
    }


def aot_options(config: tuple[str, ...]) -> dict[str, object]:
    """The AOT front-end's aot_function arguments under a configuration (its knobs over the
    project's defaults): the capture, the stock AOT reference and repro.py all pass these."""
    out: dict[str, object] = {"keep_inference_input_mutations": True}
    for name in config:
        if CATALOGUE[name].kind == "aot":
            out.update((t.removeprefix("aot."), v) for t, v in CATALOGUE[name].settings)
    return out


def compile_knobs(config: tuple[str, ...], device: str) -> list[ConfigKnob]:
    """The compile knobs of a configuration that mean anything on `device` ("cuda:1" counts as
    "cuda"): the ones every compile of the case runs under, and repro.py sets."""
    kind = device.split(":", 1)[0]
    knobs = [CATALOGUE[name] for name in config]
    return [k for k in knobs if k.kind == "compile" and kind in k.devices]


def stock_compile(backend: str, mode: str | None, device: str) -> tuple[str, str | None]:
    """(backend, mode) of the torch.compile a case is judged on (Note [The CUDA-graph
    reference]): on CUDA, reduce-overhead under aot_eager is torch's `cudagraphs` backend."""
    if mode == "reduce-overhead" and backend == "aot_eager" and device.startswith("cuda"):
        return "cudagraphs", None
    return backend, mode
