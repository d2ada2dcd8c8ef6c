"""ProgramSpec: a generated program as plain, versioned data (no torch import).

Part of the torch-free schema (issue 15): the generators build specs, the harness stores,
shrinks and replays them, and the repro renders them, all from this one module. (It was
`generators/_spec.py`, which still re-exports it for the generators' own modules.)

A spec says which tensors exist before the call (`roots`: one storage each), how the
function's arguments are made from them (`inputs`: the root itself, a view chain, the same
object again, or a tensor sharing the storage through set_), what the body does (`body`:
statements over named values), what it returns (`outputs`), and how it is driven (`plan`).
Values are named by string refs: ``a<i>`` the i-th argument, ``v<k>`` the k-th intermediate,
``p<i>``/``b<i>`` a module parameter/buffer. Everything round-trips through JSON, so a failing
case can be stored in a corpus and replayed by a later version that still reads
`SPEC_VERSION`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from pyfy_fuzz.schema.config import CATALOGUE as _CATALOGUE
from pyfy_fuzz.schema.config import check_config

__all__ = [
    "ALIASING_RELATIONS",
    "CALL_RELATIONS",
    "CONTEXTS",
    "CallPlan",
    "DTYPES",
    "FLOAT_DTYPES",
    "FunctionSpec",
    "GRAD_KINDS",
    "INPUT_KINDS",
    "SCALAR_INPUTS",
    "InputSpec",
    "LAYOUTS",
    "ModuleSpec",
    "OutSpec",
    "PLAN_BACKENDS",
    "ProgramSpec",
    "RANDOM_OPS",
    "RootSpec",
    "SPEC_VERSION",
    "SUBCLASSES",
    "SpecError",
    "Stmt",
    "THROUGH",
    "ViewStep",
    "draws_random",
    "numel",
    "spec_from_dict",
    "validate",
    "variant_tokens",
]

SPEC_VERSION = 1


def numel(shape: tuple[int, ...]) -> int:
    """Elements of a tensor of `shape` (1 for a 0-d one)."""
    n = 1
    for s in shape:
        n *= s
    return n


DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "bool")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
LAYOUTS = ("contiguous", "transposed", "strided", "expanded", "offset")
GRAD_KINDS = ("none", "leaf", "nonleaf")
INPUT_KINDS = ("root", "view", "dup", "set_shared", "int", "float")
# The kinds that are Python scalars, not tensors (Note [Scalar arguments] in generators).
SCALAR_INPUTS = ("int", "float")
PLAN_BACKENDS = ("aot_eager", "inductor")  # runner.BACKENDS, which a spec may name
# nested_two_tensor: TwoTensor(TwoTensor(..), TwoTensor(..)), whose inner tensors are subclasses
# themselves (AOT flattens and rebuilds it recursively: SubclassCreationMeta's attrs nest).
SUBCLASSES = ("two_tensor", "mirror", "nested_two_tensor")
# Statement ops that draw from the global generator: a program with one is compiled with
# Inductor's fallback_random (runner.py; by_design: inductor-rng, rng-dead-code).
RANDOM_OPS = ("rand_like", "randn_like", "dropout", "bernoulli")


def draws_random(spec: ProgramSpec) -> bool:
    """The program has a statement that draws random numbers (used or dead)."""
    return any(s.op in RANDOM_OPS for s in spec.body)


CONTEXTS = ("no_grad", "inference_mode", "enable_grad")

# Note [The front-end axis]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# What calls the function: the drive calls it directly, or through torch machinery a training
# loop wraps compiled regions in (`CallPlan.through`, drawn apart from the family):
# "checkpoint", torch.utils.checkpoint's non-reentrant form (the call runs under its
# saved-tensor hooks, and backward runs it again to recompute what it did not keep), and
# "checkpoint_reentrant", its reentrant form (an autograd.Function whose forward calls it
# under no_grad and whose backward calls it again under enable_grad: a compiled region inside
# a custom Function, compiled for inference first and for training in backward). Every
# subject is called through the same machinery (`_prelude.through`), so eager stays the
# reference. Only plans with a backward draw one, and only where:
# - the program goes through Dynamo: aot_function has no guards, and a reentrant checkpoint's
#   recompute passes detached copies of its arguments under grad, which its one compile does
#   not cover (a dedupe program's graph asserts its inputs are still duplicates);
# - the body writes no argument in place: a checkpoint keeps its arguments for the recompute
#   and refuses them changed, but only when backward unpacks something saved, which the
#   partitioner decides, so eager and Inductor would differ by design (the issue-36 triage's
#   3b38).
# Non-reentrant checkpoint runs with early_stop=False: with early stop, eager's recompute
# stops at the last saved tensor it needs, before the side effects after it (a buffer's
# in-place update), while a compiled region is one call that runs whole (Inductor keeps the
# write in its graph): how far a recompute runs is not what either promises. Without early
# stop both run everything again.
THROUGH = ("checkpoint", "checkpoint_reentrant")

# Note [Call relationships]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# A later call differs from call 0 in the relationships a variant names, "+"-joined (e.g.
# "overlap+no_grad"); each token changes one thing, and what a token cannot change in a
# program (no argument it applies to) it leaves alone:
#   shape      every root one longer in each dimension;
#   relation   the first root only, so sizes other roots shared with it now differ;
#   dtype      float32 <-> float64, halves -> float32;
#   aliasing   aliased arguments unaliased (copies), or two tensor arguments made one;
#   overlap    two independent arguments made partially overlapping views of one storage;
#   nonleaf    leaf arguments requiring grad become non-leaves (clones of such a leaf);
#   leaf       non-leaf arguments become leaves requiring grad;
#   no_requires_grad  arguments requiring grad are detached;
#   strided    contiguous arguments become strided (every other element of a storage);
#   no_grad, inference_mode   the call runs under that context (the arguments are call 0's);
#   again      the very arguments of the call before, their .grad kept: gradients accumulate
#              over the two calls (with a context at most);
#   share      two arguments of one shape and dtype that shared memory with no other become
#              two views of one new storage (distinct objects, the same memory), each keeping
#              its requires_grad and leafness;
#   shift      arguments that shared memory become views of a storage one element longer,
#              all but the first of each group one element further on: another overlap.
# "aliasing" (on arguments distinct in call 0: one passed twice), overlap and share alias
# arguments that call 0 kept apart, shift changes the aliasing call 0 had: ALIASING_RELATIONS.
# Eager is the truth for each such call; torch.compile must recompile or be right, and the
# pythonified file must agree with it or raise PythonifyGuardError (oracles/guards.py).
CALL_RELATIONS = (
    "shape",
    "relation",
    "dtype",
    "aliasing",
    "overlap",
    "nonleaf",
    "leaf",
    "no_requires_grad",
    "strided",
    "no_grad",
    "inference_mode",
    "again",
    "share",
    "shift",
    "scalars",
)
# The relationships that change only which arguments share memory (Note [Call relationships]).
ALIASING_RELATIONS = ("aliasing", "overlap", "share", "shift")


def variant_tokens(variant: str | None) -> tuple[str, ...]:
    """The relationships a variant call changes (Note [Call relationships])."""
    return tuple(variant.split("+")) if variant else ()


class SpecError(ValueError):
    """A spec (or its JSON) is malformed; the message says which field and why."""


@dataclass(frozen=True)
class RootSpec:
    """A tensor that owns a storage. `layout` says how its strides look; `grad` whether it
    is a leaf requiring grad, a non-leaf (a view of a clone of such a leaf), or neither."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    layout: str = "contiguous"
    grad: str = "none"
    subclass: str | None = None  # wrap the root in a traceable tensor subclass


@dataclass(frozen=True)
class ViewStep:
    """One view op: slice(dim, start, stop, step), transpose(d0, d1), unsqueeze(d),
    squeeze(d), select(d, i), reshape(*shape) (a view), expand(*shape), diagonal(),
    as_strided(size, stride, offset), unfold(dim, size, step), view_dtype(dtype) (the same
    bytes as a dtype of the same element size)."""

    op: str
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class InputSpec:
    """One argument. kind: root (the root itself), view (views of the root), dup (argument
    `of` again, the same object), set_shared (a new tensor set_ onto the root's storage with
    the geometry of `views`), int or float (a Python scalar `value`, of that type)."""

    kind: str
    root: int = 0
    views: tuple[ViewStep, ...] = ()
    of: int = 0
    value: int | float = 0

    @property
    def scalar(self) -> bool:
        """A Python number, not a tensor (SCALAR_INPUTS)."""
        return self.kind in SCALAR_INPUTS


@dataclass(frozen=True)
class Stmt:
    """One statement of the body. `args` holds refs (strings) and constants; `outs` the names
    it binds (empty for in-place ops and effects); `ctx` a context manager around it."""

    op: str
    args: tuple[Any, ...] = ()
    outs: tuple[str, ...] = ()
    ctx: str | None = None


@dataclass(frozen=True)
class OutSpec:
    """A returned value: kind ref (a named value), int, none, size (dim `value` of `ref`), or
    tuple (nested `items`)."""

    kind: str
    ref: str = ""
    value: int = 0
    items: tuple[OutSpec, ...] = ()


@dataclass(frozen=True)
class FunctionSpec:
    """A custom torch.autograd.Function. body: scale | sin | dirty (mark_dirty, in place) |
    view (returns a view of its input) | bw_mutate (scales, and its backward doubles the saved
    input in place: a forward input mutated during the backward). Flags pick the ctx
    features used."""

    style: str = "ctx"  # "ctx": forward(ctx, x); "setup_context": forward(x) + setup_context
    body: str = "scale"
    non_differentiable: bool = False  # a second output marked non-differentiable
    materialize_grads: bool = True
    once_differentiable: bool = False
    backward_print: bool = False  # an effect inside backward (backward tokens)
    # Tensor inputs: 1, or 2 (forward(ctx, x, w); backward returns a gradient per input only
    # where ctx.needs_input_grad says; the same tensor may be passed twice: F.apply(x, x)).
    # Bodies scale and sin only.
    arity: int = 1
    # A second differentiable output (y * 2): backward(ctx, g, g2) gets two gradients, None
    # for an unused one under set_materialize_grads(False). Not with non_differentiable.
    two_outputs: bool = False
    # An effectful custom op (pyfy_gen::record, ORDERED) inside backward.
    backward_record: bool = False


@dataclass(frozen=True)
class ModuleSpec:
    """The function is an nn.Module's forward; parameters p<i>, buffers b<i>, an optional
    BatchNorm1d (`batchnorm` features) whose running stats are mutated in training."""

    params: tuple[tuple[int, ...], ...] = ()
    tied: bool = False  # the last parameter name is the first parameter again
    buffers: tuple[tuple[int, ...], ...] = ()
    batchnorm: int | None = None
    full_backward_hook: bool = False


@dataclass(frozen=True)
class CallPlan:
    """How the program is driven: `calls` calls with fresh inputs (seeds 0..calls-1), then an
    optional `variant` call whose inputs differ (shape, dtype or aliasing); backward through
    the outputs with `tangents`, and a second backward (`second_backward`: retain: with
    retain_graph on the first, or no_retain: expected to raise). The compile is static or
    dynamic, through Dynamo or the AOT front-end, with or without CUDA graphs."""

    calls: int = 2
    # The variant call's relationships to call 0, "+"-joined CALL_RELATIONS (Note [Call
    # relationships]); None: no variant call.
    variant: str | None = None
    backward: bool = True
    tangents: str = "randn"  # "randn" | "ones"
    second_backward: str | None = None  # None | "retain" | "no_retain"
    dynamic: bool = False
    frontend: str = "dynamo"  # "dynamo" | "aot"
    mode: str | None = None  # None | "reduce-overhead"
    # Run call and backward inside torch.autograd.graph.saved_tensors_hooks (Dynamo cannot
    # trace the context manager inside the function, so it wraps the call).
    saved_tensor_hooks: bool = False
    # Before each call, the drive registers a logging hook and pre-hook on the grad_fn of every
    # non-leaf tensor argument: autograd runs them for every subject (seed 003's node hooks,
    # which Dynamo cannot trace inside the function).
    grad_fn_hooks: bool = False
    # The configuration catalogue's knobs the case runs under (schema.config.CATALOGUE, Note
    # [Drawn configurations]); () is torch's defaults.
    config: tuple[str, ...] = ()
    # The backend this case compiles with; None: whatever run_case is given (the campaign's).
    # A campaign's default mix sets it on the cases it draws for Inductor, so the case keeps
    # it through shrinking, saving and replay.
    backend: str | None = None
    # Calls after the variant call, each with its own relationships to call 0 (a variant
    # string each): a sequence such as overlapping -> independent -> no_grad, judged call by
    # call (oracles/guards.py). Only drawn with a variant call.
    sequence: tuple[str, ...] = ()
    # What calls the function (Note [The front-end axis]): None, the drive directly; else one
    # of THROUGH, around every call of the plan.
    through: str | None = None


@dataclass(frozen=True)
class ProgramSpec:
    """A whole program: see the module docstring."""

    family: str
    roots: tuple[RootSpec, ...]
    inputs: tuple[InputSpec, ...]
    body: tuple[Stmt, ...]
    outputs: tuple[OutSpec, ...]
    functions: tuple[FunctionSpec, ...] = ()
    module: ModuleSpec | None = None
    plan: CallPlan = field(default_factory=CallPlan)
    version: int = SPEC_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> ProgramSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"spec is not JSON: {exc}") from None
        return spec_from_dict(data)

    def size(self) -> tuple[int, ...]:
        """What shrinking minimises, most important first: inputs, statements, elements."""
        elements = sum(numel(r.shape) for r in self.roots)
        return (len(self.inputs), len(self.body), elements, len(self.outputs))


def _tuples(x: Any) -> Any:
    """JSON lists back to tuples, recursively (specs are hashable and compare by value)."""
    if isinstance(x, list):
        return tuple(_tuples(v) for v in x)
    return x


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected an object, got {type(data).__name__}")
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {sorted(unknown)}")
    try:
        return cls(**{k: _tuples(v) for k, v in data.items()})
    except TypeError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _out_from(data: Any, where: str) -> OutSpec:
    out = _build(OutSpec, data, where)
    items = tuple(_out_from(d, f"{where}.items[{i}]") for i, d in enumerate(out.items))
    return OutSpec(out.kind, out.ref, out.value, items)


def spec_from_dict(data: Any) -> ProgramSpec:
    """Rebuild a spec from `asdict` output (or parsed JSON); raise SpecError if malformed."""
    if not isinstance(data, dict):
        raise SpecError(f"spec: expected an object, got {type(data).__name__}")
    version = data.get("version")
    if version != SPEC_VERSION:
        raise SpecError(
            f"spec version {version!r} is not supported (this build reads {SPEC_VERSION})"
        )
    try:
        spec = ProgramSpec(
            family=data["family"],
            roots=tuple(_build(RootSpec, d, f"roots[{i}]") for i, d in enumerate(data["roots"])),
            inputs=tuple(_inp_from(d, f"inputs[{i}]") for i, d in enumerate(data["inputs"])),
            body=tuple(_build(Stmt, d, f"body[{i}]") for i, d in enumerate(data["body"])),
            outputs=tuple(_out_from(d, f"outputs[{i}]") for i, d in enumerate(data["outputs"])),
            functions=tuple(
                _build(FunctionSpec, d, f"functions[{i}]")
                for i, d in enumerate(data.get("functions", ()))
            ),
            module=None
            if data.get("module") is None
            else _build(ModuleSpec, data["module"], "module"),
            plan=_build(CallPlan, data.get("plan", {}), "plan"),
        )
        validate(spec)
    except KeyError as exc:
        raise SpecError(f"spec: missing field {exc}") from None
    except (TypeError, AttributeError) as exc:  # a container or index of the wrong type
        raise SpecError(f"spec: malformed ({exc})") from None
    return spec


def _inp_from(data: Any, where: str) -> InputSpec:
    inp = _build(InputSpec, data, where)
    views = tuple(_build(ViewStep, v, f"{where}.views[{k}]") for k, v in enumerate(inp.views))
    value = float(inp.value) if inp.kind == "float" else inp.value  # a float written 3 is 3.0
    return InputSpec(inp.kind, inp.root, views, inp.of, value)


def validate(spec: ProgramSpec) -> None:
    """Structural checks (references resolve, enums are known); semantics are eager's to judge."""
    for i, r in enumerate(spec.roots):
        if r.dtype not in DTYPES:
            raise SpecError(f"roots[{i}].dtype: expected one of {DTYPES}, got {r.dtype!r}")
        if r.layout not in LAYOUTS:
            raise SpecError(f"roots[{i}].layout: expected one of {LAYOUTS}, got {r.layout!r}")
        if r.grad not in GRAD_KINDS:
            raise SpecError(f"roots[{i}].grad: expected one of {GRAD_KINDS}, got {r.grad!r}")
        if r.subclass is not None and r.subclass not in SUBCLASSES:
            raise SpecError(
                f"roots[{i}].subclass: expected one of {SUBCLASSES}, got {r.subclass!r}"
            )
        if not isinstance(r.shape, tuple) or any(
            (not isinstance(s, int)) or s < 0 for s in r.shape
        ):
            raise SpecError(f"roots[{i}].shape: expected non-negative ints, got {r.shape!r}")
    for i, inp in enumerate(spec.inputs):
        if inp.kind not in INPUT_KINDS:
            raise SpecError(f"inputs[{i}].kind: expected one of {INPUT_KINDS}, got {inp.kind!r}")
        if not isinstance(inp.root, int) or not isinstance(inp.of, int):
            raise SpecError(f"inputs[{i}]: root and of must be ints")
        if inp.kind in ("root", "view", "set_shared") and not 0 <= inp.root < len(spec.roots):
            raise SpecError(f"inputs[{i}].root: {inp.root} names no root")
        if inp.kind == "dup" and not 0 <= inp.of < i:
            raise SpecError(f"inputs[{i}].of: expected an earlier input, got {inp.of}")
        allowed = (int, float) if inp.kind == "float" else (int,)  # a float may be written 3
        if type(inp.value) not in allowed:
            raise SpecError(
                f"inputs[{i}].value: expected {allowed[-1].__name__}, got {inp.value!r}"
            )
    for k, fn in enumerate(spec.functions):
        if fn.arity not in (1, 2) or (fn.arity == 2 and fn.body not in ("scale", "sin")):
            raise SpecError(f"functions[{k}]: arity {fn.arity!r} with body {fn.body!r}")
        if fn.two_outputs and fn.non_differentiable:
            raise SpecError(f"functions[{k}]: two_outputs and non_differentiable together")
    for i, stmt in enumerate(spec.body):
        if stmt.ctx is not None and stmt.ctx not in CONTEXTS:
            raise SpecError(f"body[{i}].ctx: expected one of {CONTEXTS}, got {stmt.ctx!r}")
    _validate_plan(spec.plan)


def _validate_plan(plan: CallPlan) -> None:
    """The plan's call relationships, backend and configuration knobs."""
    for where, variant in (
        ("plan.variant", plan.variant),
        *((f"plan.sequence[{k}]", v) for k, v in enumerate(plan.sequence)),
    ):
        if (variant is not None or where != "plan.variant") and (
            not isinstance(variant, str)
            or not variant
            or any(t not in CALL_RELATIONS for t in variant_tokens(variant))
        ):
            raise SpecError(
                f"{where}: expected '+'-joined relations of {CALL_RELATIONS}, got {variant!r}"
            )
    if plan.sequence and plan.variant is None:
        raise SpecError("plan.sequence: calls after a variant call need a variant call")
    if plan.through not in (None, *THROUGH):
        raise SpecError(f"plan.through: expected None or one of {THROUGH}, got {plan.through!r}")
    if plan.through is not None and plan.frontend != "dynamo":
        raise SpecError(f"plan.through: {plan.through!r} needs frontend 'dynamo'")
    if plan.backend not in (None, *PLAN_BACKENDS):
        raise SpecError(
            f"plan.backend: expected None or one of {PLAN_BACKENDS}, got {plan.backend!r}"
        )
    if not isinstance(plan.config, tuple) or not all(isinstance(n, str) for n in plan.config):
        raise SpecError(f"plan.config: expected knob names, got {plan.config!r}")
    try:
        check_config(plan.config)
    except ValueError as exc:
        raise SpecError(f"plan.config: {exc}") from None
    for name in plan.config:
        if plan.frontend not in _CATALOGUE[name].frontends:
            raise SpecError(
                f"plan.config: {name!r} needs frontend {_CATALOGUE[name].frontends}, "
                f"got {plan.frontend!r}"
            )
