"""A program of one family: the draws around the family's builder (a later call's
relationships, the configuration, the random statements, the outputs and the call plan), and
`family_strategy`, the Hypothesis strategy `programs()` mixes.

The order of the draws is what Hypothesis shrinks by: the variant call and the configuration
come before the family's forced structure, the random tail after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import event
from hypothesis import strategies as st

from pyfy_fuzz.schema.config import CATALOGUE

from ._build import Builder
from ._families import DECLARATIONS
from ._prelude import METADATA_OPS
from ._spec import CALL_RELATIONS, THROUGH, CallPlan, OutSpec, ProgramSpec, variant_tokens
from ._stmts import (
    INPLACE,
    stmt_binary,
    stmt_cast,
    stmt_data,
    stmt_detach,
    stmt_grad_mode,
    stmt_identity,
    stmt_inplace,
    stmt_matmul,
    stmt_metadata,
    stmt_reduce,
    stmt_unary,
    stmt_view,
    takes_grad,
)
from ._stmts_aten import stmt_aten
from ._stmts_extra import (
    stmt_autograd_grad,
    stmt_backward,
    stmt_batchnorm,
    stmt_effect,
    stmt_function,
    stmt_hook,
    stmt_rng,
)
from ._stmts_func import differentiates, stmt_func
from ._stmts_probe import stmt_probe
from ._stmts_scalar import stmt_scalar
from ._variants import variant_changes
from ._vocabulary import by_name

__all__ = ["GROUPS", "build", "family_strategy", "in_context", "random_stmt"]


# ------------------------------------------------------------------ the random tail

# A statement group (a key of Profile.weights) -> the function that draws one of its statements.
GROUPS = {
    "unary": stmt_unary,
    "binary": stmt_binary,
    "reduce": stmt_reduce,
    "matmul": stmt_matmul,
    "cast": stmt_cast,
    "view": stmt_view,
    "detach": stmt_detach,
    "identity": stmt_identity,
    "data": stmt_data,
    "inplace": stmt_inplace,
    "metadata": stmt_metadata,
    "grad_mode": stmt_grad_mode,
    "effect": stmt_effect,
    "rng": stmt_rng,
    "function": stmt_function,
    "hook": stmt_hook,
    "batchnorm": stmt_batchnorm,
    "autograd_grad": stmt_autograd_grad,
    "backward": stmt_backward,
    "aten": stmt_aten,
    "scalar": stmt_scalar,
    "probe": stmt_probe,
    "func": stmt_func,
}


def random_stmt(b: Builder) -> None:
    """One statement from the profile's weighted groups (falls back to unary, then nothing),
    under a context drawn apart from the group (Note [The context axis])."""
    weights = [
        (g, w)
        for g, w in b.profile.weights.items()
        if w > 0 and (g != "scalar" or b.scalars)  # drawn only where it can apply
    ]
    x = b.integer(0, sum(w for _, w in weights) - 1)
    group = weights[-1][0]
    for name, w in weights:
        if x < w:
            group = name
            break
        x -= w
    ctx = _axis_context(b, group)
    if not in_context(b, ctx, GROUPS[group]):
        stmt_unary(b)


# Note [The context axis]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Which autograd state a statement runs in is drawn apart from what the statement is (issue
# 36: no ingredient confined to the family that introduced it): any group but those that set
# grad mode themselves or break the graph (grad_mode, effect) may run inside `with
# torch.no_grad()`, `torch.enable_grad()` or `torch.inference_mode()`, about one statement
# in four. The group is drawn *under* the context, so the model sees its grad mode (no result
# requires grad under no_grad) and its inference mode: a tensor made inside inference_mode is
# an inference tensor, which eager refuses to save for backward or write in place outside
# it, so outside it is returned at most (`_stmts.tensors`). A statement whose group drew a
# context of its own keeps that one (a Stmt has one `ctx`); the rest of what the group
# appended takes the drawn one. One draw per statement; 0, where shrinking goes, is none.
#
# No view is made under inference_mode: inside a compiled region that raises "Cannot set
# version_counter for inference tensor" and leaves the process's dispatch keys broken for what
# runs next (pytorch#180823; PB1 and N36c.3 in reports/triage-2026-12-07-issue36.md). A campaign
# recycles such a worker, but each one costs it a process, and tests that compile in-process
# fail from then on; the bug is known, so the axis leaves view-making groups out of that
# context (and stmt_aten its view classes, and stmt_probe its `x[i] = n`, which writes
# through the view `x[i]`: the tests met it in a test_aim program).
_AXIS_CONTEXTS = ("no_grad", "enable_grad", "inference_mode")
_UNWRAPPED = frozenset({"grad_mode", "effect"})
_NO_VIEWS_IN_INFERENCE = frozenset(
    {"view", "detach", "identity", "data", "metadata", "matmul", "function"}  # gram: x @ x.mT
)


def _axis_context(b: Builder, group: str) -> str | None:
    k = b.integer(0, 11)
    if group in _UNWRAPPED or k < 9:
        return None
    ctx = _AXIS_CONTEXTS[k - 9]
    if ctx == "inference_mode" and group in _NO_VIEWS_IN_INFERENCE:
        return None
    return ctx


def in_context(b: Builder, ctx: str | None, draw: Callable[[Builder], bool]) -> bool:
    """Draw one statement group's statements with the builder in `ctx`'s modes, and put the
    statements it appended (those without a context of their own) under `ctx`."""
    if ctx is None:
        return draw(b)
    start, saved = len(b.body), (b.grad_on, b.inference_on)
    b.grad_on = ctx == "enable_grad"
    b.inference_on = b.inference_on or ctx == "inference_mode"
    try:
        if not draw(b):
            return False
    finally:
        b.grad_on, b.inference_on = saved
    for i in range(start, len(b.body)):
        stmt = b.body[i]
        if stmt.ctx is None:
            b.body[i] = replace(stmt, ctx=ctx)
            if ctx == "inference_mode":
                for name in stmt.outs:
                    b.vals[name] = replace(b.vals[name], inference=True, requires_grad=False)
    event(f"context: {ctx}")
    return True


# ------------------------------------------------------------------ outputs and plan


def _draw_out(b: Builder, depth: int = 0) -> OutSpec:
    refs = [n for n in b.vals if n[0] in "av"]  # module parameters and buffers stay inside
    kind = 0 if not b.chance(5) or b.profile.frontend == "aot" else b.integer(1, 4)
    if kind == 0 or not refs:
        if not refs:
            return OutSpec("none")
        return OutSpec("ref", ref=b.pick(refs[::-1]))  # shrinks toward the latest value
    if kind == 1:
        return OutSpec("int", value=b.integer(0, 3))
    if kind == 2:
        return OutSpec("none")
    if kind == 3:
        sized = [r for r in refs if b.vals[r].ndim > 0]
        if not sized:
            return OutSpec("none")
        r = b.pick(sized)
        return OutSpec("size", ref=r, value=b.integer(0, b.vals[r].ndim - 1))
    if depth >= 1:
        return OutSpec("ref", ref=b.pick(refs[::-1]))
    return OutSpec("tuple", items=tuple(_draw_out(b, depth + 1) for _ in range(b.integer(1, 2))))


def _requires_grad(b: Builder, out: OutSpec) -> bool:
    """Whether an output the model describes requires grad (with grad on at the call)."""
    if out.kind == "tuple":
        return any(_requires_grad(b, o) for o in out.items)
    return out.kind == "ref" and out.ref in b.vals and b.vals[out.ref].requires_grad


# What a statement writes in place: its first argument, for the hand-written writes and
# metadata changes; for an aten statement of an in-place class, self (its first value).
_WRITES = frozenset({*INPLACE, *METADATA_OPS, "data_mul_"})


def _writes_an_argument(b: Builder) -> bool:
    """Whether the body writes, in place, memory an argument of the call owns (a checkpoint
    keeps its arguments for the recompute and refuses them changed: Note [The front-end
    axis])."""
    owned = {b.vals[f"a{k}"].storage for k in range(len(b.inputs)) if f"a{k}" in b.vals}
    for s in b.body:
        if s.op == "aten":
            op = by_name().get(str(s.args[0]))
            if op is None or op.cls not in ("inplace", "inplace_view"):
                continue
            target = s.args[1]
        elif s.op in _WRITES and s.args:
            target = s.args[0]
        elif s.op == "apply_fn" and _writing_function(b, s.args[0]):
            target = s.args[1]  # a Function writing its input (mark_dirty, or in backward)
        else:
            continue
        if isinstance(target, str) and target in b.vals and b.vals[target].storage in owned:
            return True
    return False


def _writing_function(b: Builder, k: object) -> bool:
    return isinstance(k, int) and b.functions[k].body in ("dirty", "bw_mutate")


def _config(b: Builder) -> tuple[str, ...]:
    """A configuration from the catalogue (Note [Drawn configurations] in
    pyfy_fuzz/schema/config.py): torch's defaults for three programs in four, else one knob,
    sometimes with a second compile knob (half the time one only drawn `beside` the first's
    kind, where it has one). Shrinks to the defaults."""
    if not b.chance(4):
        return ()
    names = sorted(
        n for n, k in CATALOGUE.items() if b.profile.frontend in k.frontends and k.beside is None
    )
    first = b.draw(st.sampled_from(names))
    config: tuple[str, ...] = (first,)
    beside = sorted(n for n, k in CATALOGUE.items() if k.beside == CATALOGUE[first].kind)
    if beside and b.chance(2):  # what the first knob's hooks pack
        config += (b.draw(st.sampled_from(beside)),)
    elif b.chance(4):
        more = [n for n in names if n != first and CATALOGUE[n].kind == "compile"]
        config += (b.draw(st.sampled_from(more)),)
    for name in config:
        event(f"config: {name}")
    return config


# A later call's relationships (Note [Call relationships]), each one draw: one relationship,
# the four that came first (issue 8's variants) keeping most of their share, aliasing the
# largest (the guards it tests are the rarest), eight times over, the new ones four; then
# every pair that does not name two ways of changing one thing, once each (a pair for about
# one call in three): the self-test's guard mutants need the four. One draw per call: each
# new draw moved where Hypothesis's shrinking ends for whole families
# (tests/generators/test_shrinking.py).
_EXCLUSIVE = (
    {"shape", "relation"},
    {"leaf", "nonleaf", "no_requires_grad"},
    {"no_grad", "inference_mode"},
    {"aliasing", "overlap"},
)


def _pair(a: str, b: str) -> str:
    """Two relationships of one later call. "again" goes with a grad context at most, on
    either side of the pair: "again+share" would run call 0's arguments once more under a
    name that says share (torch 2.15's triage: a known T2 under a new signature). Such a pair
    is its other relationship alone, kept in its slot of the table so every other draw stays
    where it was."""
    if "again" in (a, b) and not {a, b} - {"again"} <= {"no_grad", "inference_mode"}:
        return b if a == "again" else a
    return f"{a}+{b}"


_RELATION_TABLE: tuple[str, ...] = (
    (("aliasing",) * 3 + ("shape", "dtype", "relation") * 2) * 8
    + CALL_RELATIONS[4:] * 4
    + tuple(
        _pair(a, b)
        for k, a in enumerate(CALL_RELATIONS)
        for b in CALL_RELATIONS[k + 1 :]
        if not any({a, b} <= g for g in _EXCLUSIVE)
        and (b != "again" or a in ("no_grad", "inference_mode"))  # again: with a context at most
    )
)


def _relationship(b: Builder) -> str:
    """A later call's relationships to call 0: shrinks to "aliasing"."""
    variant = str(b.pick(_RELATION_TABLE))
    for t in variant_tokens(variant):
        event(f"call relationship: {t}")
    return variant


def _sequence(b: Builder) -> tuple[str, ...]:
    """Calls after the variant call: none for most plans, else one to three."""
    n = max(0, b.integer(0, 9) - 6)
    if n:
        event("plan: a sequence of calls")
    return tuple(_relationship(b) for _ in range(n))


def _plan(b: Builder, variant: str | None, config: tuple[str, ...] = ()) -> CallPlan:
    p = b.profile
    dynamic = p.frontend == "dynamo" and b.chance(6)
    if dynamic:
        event("plan: dynamic=True")
    if variant:
        event(f"plan: variant call ({variant})")
    calls = b.integer(p.min_calls, 3)
    tangents = "randn" if not b.chance(4) else "ones"
    second_backward = None if not b.chance(5) else b.pick(("retain", "no_retain"))
    # One draw for what wraps the call: either kind of hooks or a front-end of Note [The
    # front-end axis] (1 in 10 each); a new draw of its own moved where Hypothesis's shrinking
    # ends for whole families (tests/generators). Only with a backward: both checkpoints
    # differ from a plain call in what backward does; and only through Dynamo: aot_function
    # has no guards, and a reentrant checkpoint runs it again under grad with detached
    # copies of its arguments, which is outside its contract (a dedupe program's graph
    # asserts its inputs are still duplicates).
    hooks = b.integer(0, 9) if b.backward else 0
    through = THROUGH[hooks - 8] if hooks >= 8 and p.frontend == "dynamo" else None
    if through is not None and _writes_an_argument(b):
        through = None  # Note [The front-end axis]: a checkpoint's arguments stay unwritten
    if through == "checkpoint" and differentiates(b.body):
        through = None  # its saved-tensor hooks: Note [torch.func transforms inside the function]
    if through == "checkpoint_reentrant" and (
        not any(_requires_grad(b, o) for o in b.outputs) or takes_grad(b.body)
    ):  # its backward refuses a recompute with nothing to differentiate, and its forward
        through = None  # runs under no_grad, where a grad inside the function is refused
    if through is not None:
        event(f"front-end: through {through}")
    return CallPlan(
        calls=calls,
        variant=variant,
        backward=b.backward,
        tangents=tangents,
        second_backward=second_backward,
        dynamic=dynamic,
        frontend=p.frontend,
        mode=p.mode,
        saved_tensor_hooks=hooks == 7 and not differentiates(b.body),
        grad_fn_hooks=hooks == 6,
        config=config,
        through=through,
    )


def _scalar_arguments(b: Builder, variant: str | None) -> None:
    """Python number arguments, for any family on the Dynamo front-end (Note [Scalar
    arguments] in _stmts_scalar.py): one program in four, and every one whose later call
    changes them. Not under a cudagraph mode, whose trees take tensors."""
    if b.profile.frontend != "dynamo" or b.profile.mode is not None:
        return
    if "scalars" in variant_tokens(variant) or b.chance(4):
        for _ in range(b.integer(1, 2)):
            b.input_scalar(b.pick(("int", "float")))


def _reads_a_number(b: Builder) -> bool:
    return any(isinstance(a, str) and a in b.scalars for s in b.body for a in s.args)


def build(draw: Callable[..., object], family: str, max_ops: int, max_inputs: int) -> ProgramSpec:
    declared = DECLARATIONS[family]
    profile = replace(declared.profile, max_ops=max_ops, max_inputs=max_inputs)
    b = Builder(draw=draw, profile=profile)  # type: ignore[arg-type]
    # The variant call is drawn first: drawn last, after a program's worth of choices,
    # Hypothesis's generation left it at its simplest (None) for all but ~1 in 10 programs,
    # and aliasing variants came in ~1 in 60 (measured); the guard oracles starved.
    variant = None if not b.chance(3) else _relationship(b)
    # Later calls, each with relationships of its own: drawn only with a variant call, so a
    # program without one (where shrinking goes) draws nothing more.
    sequence = _sequence(b) if variant else ()
    twin = "aliasing" in variant_tokens(variant) and b.chance(2)  # shrinking keeps it simple
    config = _config(b)  # early, for the same reason
    b.backward = not b.chance(5)
    declared.build(b)
    if b.later is not None:  # the family's own later call (_later_aliasing)
        variant = b.later
    if not b.inputs:
        b.input_root(b.add_root())
    _scalar_arguments(b, variant)
    plain = [i.root for i in b.inputs if i.kind == "root" and not b.roots[i.root].subclass]
    if twin and plain:
        b.input_root(b.add_twin(plain[0]))
    for _ in range(b.integer(0, b.profile.max_ops)):
        random_stmt(b)
    if b.scalars and not _reads_a_number(b):
        stmt_scalar(b)  # a number argument nothing reads tests nothing (no guard, no input)
    if not b.outputs or b.chance(3):
        b.outputs += [_draw_out(b) for _ in range(b.integer(1, 2))]
    event(f"family: {family}")
    # A statement may have moved the program to the AOT front-end after the knobs were drawn
    # (stmt_metadata): a knob that front-end does not take goes (ddp_fakify needs Dynamo).
    config = tuple(n for n in config if b.profile.frontend in CATALOGUE[n].frontends)
    if differentiates(b.body):  # no saved-tensor hooks around a torch.func gradient
        config = tuple(n for n in config if "hooks" not in (CATALOGUE[n].kind, CATALOGUE[n].beside))
    if takes_grad(b.body):  # a call site without grad would make every call refuse it
        config = tuple(n for n in config if n not in ("no_grad", "inference_mode"))
        traced = "trace_autograd_ops"  # half of them with Dynamo tracing the grad
        if b.profile.frontend == "dynamo" and traced not in config and b.chance(2):
            config += (traced,)
    spec = b.spec(_plan(b, variant, config))
    # A variant that gives call 0's inputs again tests no guard (and read the file's replay
    # of torch's own error as guard-unsound): none. Likewise a later call of the sequence.
    sequence = tuple(v for v in sequence if variant_changes(spec, v))
    if variant is not None and not variant_changes(spec):
        variant, sequence = (sequence[0], sequence[1:]) if sequence else (None, ())
    return replace(spec, plan=replace(spec.plan, variant=variant, sequence=sequence))


def family_strategy(
    family: str, max_ops: int = 5, max_inputs: int = 3
) -> st.SearchStrategy[ProgramSpec]:
    @st.composite
    def _strategy(draw: Callable[..., object]) -> ProgramSpec:
        return build(draw, family, max_ops, max_inputs)

    return _strategy()
