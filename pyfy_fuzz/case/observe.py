"""Observations: what one subject did with one program, as plain data the oracles compare.

A subject is anything with a `call(*args)` (eager function, torch.compile's callable, the
pythonified file's `call`). `observe_subject` drives it through the program's call plan with
the program's own `drive` (same seeds, tangents, backward, hooks for every subject) and records,
per call: outputs (values, dtype, geometry, subclass inner tensors, autograd facts), every input
and shared base after the call, which of them the call bumped the version counter of, how
outputs alias inputs and each other, gradients (of non-leaf arguments too: the drive retains
them), the second backward, the exception and the phase it came from. Then the plan's variant
call, and three probes on fresh inputs: outputs mutated in place (is the write visible through
the inputs, as in eager?), inputs' version counters bumped before backward (must backward
refuse?), arguments saved by autograd before the call (must backward refuse after it?).

Values are detached clones; no live tensor of the run is kept once the observation is built,
except the last calls' outputs, re-read after all calls to catch a replay that overwrote them.
"""

from __future__ import annotations

import builtins
import os
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from generators import Program
from generators.source import effective_variant
from oracles.compare import bitwise_equal
from pyfy_fuzz.schema.observation import (
    AliasObs,
    CallObs,
    ExcObs,
    ProbeObs,
    SubjectObs,
    TensorObs,
)

__all__ = [
    "autograd_order",
    "exc_obs",
    "exception_tail",
    "mutation_probe",
    "named_inputs",
    "observe_call",
    "observe_subject",
    "saved_probe",
    "Target",
    "tensor_obs",
    "torch_frame",
    "unwrap_exception",
    "version_probe",
]

# ---------------------------------------------------------------------------- records


_WRAPPED = re.compile(r"\bgot (\w+)\(")
_TORCH_DIR = os.path.dirname(os.path.dirname(torch.__file__)) + os.sep


# torch._check's helpers: every check passes through them, so innermost they say nothing of
# where the bug is; the function that checked does (a meta function, a ref). The dispatcher's
# OpOverload.__call__ stays: its callers are dispatch modes (fake, functional, proxy) that
# differ by compile phase, not by bug.
_GENERIC_FRAMES = ("torch/__init__.py:_check",)


def torch_frame(exc: BaseException) -> str:
    """ "torch/<path>:<function>" of the innermost traceback frame in torch's package that is
    not a generic dispatch or check helper (walked by hand: no source lines are read, so it is
    cheap on every raised exception); the generic one where there is nothing else."""
    found, generic = "", ""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith(_TORCH_DIR + "torch" + os.sep):
            frame = f"{name[len(_TORCH_DIR) :]}:{tb.tb_frame.f_code.co_name}".replace(os.sep, "/")
            if tb.tb_frame.f_code.co_name.startswith("<") and found:
                pass  # a comprehension or lambda: Python 3.12 inlines it into its function
            elif frame.startswith(_GENERIC_FRAMES):
                generic = frame
            else:
                found, generic = frame, ""
        tb = tb.tb_next
    return found or generic


def _wrapped_type_mro(text: str) -> tuple[str, ...]:
    """Dynamo raises TorchRuntimeError *from None* when running a node on fake tensors fails
    ("... got RuntimeError(\"shape '[1]' is invalid ...\")"): the user-level error survives
    only in the message. Recover its type when it is a builtin one."""
    m = _WRAPPED.search(text)
    cls = getattr(builtins, m.group(1), None) if m else None
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return ()
    return tuple(f"{c.__module__}.{c.__qualname__}" for c in cls.__mro__)


def unwrap_exception(exc: BaseException) -> BaseException:
    """Dynamo re-raises a user's error found while tracing as TorchRuntimeError from it; the
    user-level type is the cause's. Compiler failures (BackendCompilerFailed) stay what they
    are: a crash of the compiler, not the program's own error."""
    name = type(exc).__name__
    if name in ("TorchRuntimeError", "UncapturedHigherOrderOpError") and exc.__cause__:
        return exc.__cause__
    return exc


def exc_obs(exc: BaseException, phase: str) -> ExcObs:
    """What a subject raised, as the record the oracles read: the user-level exception
    (unwrap_exception), what a compiler failure wrapped, and the innermost torch frame."""
    exc = unwrap_exception(exc)
    mro = tuple(f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__)
    text = str(exc).strip()
    inner = getattr(exc, "inner_exception", None)
    inner_mro: tuple[str, ...] = ()
    frame = torch_frame(inner if isinstance(inner, BaseException) else exc)
    if isinstance(inner, BaseException):
        # BackendCompilerFailed: what the compiler raised is the interesting part, and its
        # type tells one compiler crash from another in the signature.
        mro = (f"{mro[0]}({type(inner).__name__})", *mro)
        text = f"{type(inner).__name__}: {inner}".strip()
        inner_mro = tuple(f"{c.__module__}.{c.__qualname__}" for c in type(inner).__mro__)
    elif type(exc).__name__ == "TorchRuntimeError":
        inner_mro = _wrapped_type_mro(text)
    lines = (text.splitlines() or [""])[0][:300]
    tail = exception_tail(exc, 6, 2000)
    return ExcObs(mro[0], mro, lines, phase, tail, inner_mro, frame)


# ---------------------------------------------------------------------------- recording


def _type_name(x: Any) -> str:
    t = type(x)
    return f"{t.__module__}.{t.__qualname__}"


def tensor_obs(t: torch.Tensor, values: bool = True) -> TensorObs:
    sub = is_traceable_wrapper_subclass(t)
    inner: tuple[tuple[str, TensorObs], ...] = ()
    if sub:
        attrs, _ = t.__tensor_flatten__()  # type: ignore[attr-defined]
        inner = tuple((a, tensor_obs(getattr(t, a), values)) for a in attrs)
    plain = not sub and type(t) in (torch.Tensor, torch.nn.Parameter)
    with torch.no_grad():
        vals = t.detach().clone() if (values and not sub) else None
    grad_fn: Any
    try:
        is_leaf, grad_fn = t.is_leaf, t.grad_fn
    except RuntimeError as exc:
        # A no_grad view whose base was later mutated with grad on: autograd refuses to say
        # (eager and compiled alike); record the refusal as the fact.
        is_leaf, grad_fn = False, f"<refused: {type(exc).__name__}>"
    return TensorObs(
        type_name="torch.Tensor" if plain else _type_name(t),
        dtype=str(t.dtype),
        shape=tuple(t.shape),
        stride=_outer(lambda: tuple(int(x) for x in t.stride())),
        offset=_outer(lambda: int(t.storage_offset())),
        values=vals,
        inner=inner,
        requires_grad=t.requires_grad,
        is_leaf=is_leaf,
        grad_fn=grad_fn if grad_fn is None or isinstance(grad_fn, str) else type(grad_fn).__name__,
        is_inference=t.is_inference(),
    )


def _outer(get: Callable[[], Any]) -> Any:
    """A geometry fact of the (possibly wrapper-subclass) tensor, None where it has none."""
    try:
        return get()
    except (RuntimeError, NotImplementedError):
        return None


def _storage_key(t: torch.Tensor) -> tuple[int, str] | None:
    if is_traceable_wrapper_subclass(t):
        return None
    st = t.untyped_storage()
    if st.nbytes() == 0:
        return None
    return (st.data_ptr(), str(st.device))


def _leaf_out(x: Any) -> TensorObs | str:
    return tensor_obs(x) if isinstance(x, torch.Tensor) else repr(x)


def _leaf_out_later(x: Any) -> TensorObs | str:
    """Re-read an output after later calls; on a GPU, cudagraph trees refuse stale reads."""
    try:
        return _leaf_out(x)
    except Exception as exc:
        return f"<unreadable: {type(exc).__name__}: {str(exc)[:200]}>"


def named_inputs(args: tuple[Any, ...], module: Any) -> list[tuple[str, torch.Tensor]]:
    """Every tensor the caller can see after the call: argument leaves, their bases, and the
    module's parameters and buffers. Names are stable across subjects."""
    named: list[tuple[str, torch.Tensor]] = []
    for path, leaf in pytree.tree_flatten_with_path(args)[0]:
        if isinstance(leaf, torch.Tensor):
            name = "a" + pytree.keystr(path).strip("[]").replace("][", ".")
            named.append((name, leaf))
            if leaf._base is not None:
                named.append((f"{name}._base", leaf._base))
    if isinstance(module, torch.nn.Module):
        named += [(f"self.{n}", p) for n, p in module.named_parameters()]
        named += [(f"self.{n}", b) for n, b in module.named_buffers()]
    return named


def _aliasing(outs: list[torch.Tensor], named: list[tuple[str, torch.Tensor]]) -> list[AliasObs]:
    facts = []
    keys = [_storage_key(o) for o in outs]
    input_keys = [(n, _storage_key(x)) for n, x in named]
    for k, o in enumerate(outs):
        base = "none"
        if o._base is not None:
            base = "other"
            for j, p in enumerate(outs):
                if o._base is p:
                    base = f"output:{j}"
            for n, x in named:
                if x._base is not None and o._base is x._base and not n.endswith("._base"):
                    base = f"base_of:{n}"
            for n, x in named:
                if o._base is x and not n.endswith("._base"):
                    base = f"input:{n}"
        key = keys[k]
        facts.append(
            AliasObs(
                index=k,
                is_input=tuple(n for n, x in named if o is x and not n.endswith("._base")),
                base=base,
                shares_storage_with_inputs=tuple(
                    n for n, kx in input_keys if key is not None and kx == key
                ),
                shares_storage_with_outputs=tuple(
                    j for j, kj in enumerate(keys) if j != k and key is not None and kj == key
                ),
            )
        )
    return facts


def _grads(grads: list[torch.Tensor | None] | None) -> list[TensorObs | None] | None:
    if grads is None:
        return None
    return [None if g is None else tensor_obs(g) for g in grads]


def _leaf_names(drive_module: Any, args: tuple[Any, ...], module: Any, named: list) -> list[str]:
    leaves = drive_module._leaves(module, args)
    names = []
    for leaf in leaves:
        found = [n for n, x in named if x is leaf]
        names.append(found[0] if found else "?")
    return names


@dataclass(frozen=True)
class Target:
    """What a subject runs: `call(*args)`, and the nn.Module whose parameters are leaves."""

    name: str
    call: Callable[..., Any]
    module: Any = None
    extra: Callable[[], dict[str, Any]] | None = None


def exception_tail(exc: BaseException, lines: int, chars: int) -> str:
    """The last frames and the message of `exc`, formatted cheaply: formatting whole chained
    Dynamo tracebacks (source lines, carets) to keep six lines cost ~3% of a case (cProfile)."""
    text = traceback.format_exception(exc, limit=-4, chain=False)
    return "".join(text[-lines:])[-chars:]


def _dynamo_graphs() -> int:
    """Graphs Dynamo has compiled in this process (torch's own counter)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _guard_failures() -> dict[Any, int]:
    """How many guard-failure reasons Dynamo has recorded so far, per code object."""
    from torch._dynamo.utils import guard_failures

    return {code: len(reasons) for code, reasons in list(guard_failures.items())}


def _guard_failures_since(before: dict[Any, int]) -> tuple[str, ...]:
    """The reasons recorded after `before` was taken. Per code object: Dynamo appends to each
    code's own list, so a flat slice of all lists would pick up another code's old reasons."""
    from torch._dynamo.utils import guard_failures

    return tuple(
        r for code, reasons in list(guard_failures.items()) for r in reasons[before.get(code, 0) :]
    )


def _recording(
    target: Target, named: list[tuple[str, torch.Tensor]], box: dict[str, Any]
) -> Callable[..., Any]:
    """The target's call, keeping its output in box["out"] and, in box["moved"], the inputs
    whose version counter the call itself moved (read right before and after it)."""

    def call(*a: Any) -> Any:
        before, states = _versions(named), [_state(t) for _, t in named]
        out = target.call(*a)
        box["out"] = out
        box["moved"] = tuple(
            n for (n, _), b, v in zip(named, before, _versions(named), strict=True) if b != v
        )
        box["unchanged"] = tuple(
            n
            for (n, t), s in zip(named, states, strict=True)
            if s is not None and _same_state(s, _state(t))
        )
        return out

    return call


def observe_call(
    program: Program, target: Target, seed: int, variant: str | None
) -> tuple[CallObs, list[Any]]:
    """One call as the plan says; returns the observation and the live outputs.

    Long: one observation holds every per-call fact the oracles compare (outputs, inputs
    after, aliasing, grads, hooks, version counters, saved-tensor hooks), read in one place
    so that each is read at the same moment for every subject."""
    try:
        args = program.make_inputs(seed, variant)
    except Exception as exc:
        if variant is None:
            raise  # the program cannot build its own inputs: a pyfy-fuzz bug
        # this variant does not exist for the program
        return CallObs(seed, variant, raised=exc_obs(exc, "inputs")), []
    module = target.module
    owner = module if module is not None else target.call
    named = named_inputs(args, module)
    leaf_names = _leaf_names(program.module, args, owner, named)
    box: dict[str, Any] = {}
    call = _recording(target, named, box)
    raised = None
    log = getattr(program.module, "HOOK_LOG", None)
    if isinstance(log, list):
        log.clear()
    saved_log = getattr(program.module, "SAVED_LOG", None)
    if isinstance(saved_log, list):
        saved_log.clear()
    try:
        result = program.module.drive(call, args, seed, module=owner, variant=variant)
    except Exception as exc:
        raised = exc_obs(exc, "backward" if "out" in box else "call")
        result = None
    torch.set_grad_enabled(True)
    out = box.get("out")
    leaves = pytree.tree_leaves(out) if "out" in box else []
    tensors = [x for x in leaves if isinstance(x, torch.Tensor)]
    obs = CallObs(
        seed,
        variant,
        raised=raised,
        structure=str(pytree.tree_structure(out)) if "out" in box else "",
        outputs=[_leaf_out(x) for x in leaves],
        inputs_after=[(n, tensor_obs(x)) for n, x in named],
        aliasing=_aliasing(tensors, named),
        leaves=tuple(leaf_names),
        hooks=tuple(str(x) for x in log) if isinstance(log, list) else (),
        versions_moved=box.get("moved"),
        unchanged=box.get("unchanged"),
        saved_hooks=(
            tuple(program.module.saved_hooks_summary()) if program.plan.saved_tensor_hooks else None
        ),
    )
    if result is not None:
        second = result["second"]
        obs = replace(
            obs,
            grad_enabled_after=bool(result["grad_enabled_after"]),
            grads=_grads(result["grads"]),
            second=(
                exc_obs(second, "second_backward")
                if isinstance(second, BaseException)
                else _grads(second)
            ),
        )
    return obs, leaves


def _state(t: torch.Tensor) -> tuple[Any, ...] | None:
    """A plain tensor's geometry and a copy of its values (None for a wrapper subclass)."""
    if type(t) not in (torch.Tensor, torch.nn.Parameter):
        return None
    with torch.no_grad():
        return (tuple(t.shape), t.stride(), t.storage_offset(), t.detach().clone())


def _same_state(a: tuple[Any, ...], b: tuple[Any, ...] | None) -> bool:
    return b is not None and a[:3] == b[:3] and bitwise_equal(a[3], b[3])


def _versions(named: list[tuple[str, torch.Tensor]]) -> list[int | None]:
    """Each tensor's version counter (None for an inference tensor, which has none)."""
    found: list[int | None] = []
    for _, t in named:
        try:
            found.append(int(t._version))
        except RuntimeError:
            found.append(None)
    return found


def _bump(x: torch.Tensor) -> None:
    if not x.is_inference():
        torch.autograd.graph.increment_version(x)


def _mutate(o: torch.Tensor) -> None:
    """Write into `o` in place (grad mode on) so that every element changes: add_(1) would not
    change NaN, inf or large half-precision values."""
    if o.dtype == torch.bool:
        o.logical_not_()
    elif is_traceable_wrapper_subclass(o):
        o.add_(1)
    else:
        with torch.no_grad():
            src = torch.where(o.detach() == 7, 8, 7).to(o.dtype)
        o.copy_(src)


def _values_now(ts: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    return [tensor_obs(t).plain_values() for t in ts]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(bitwise_equal(x, y) for x, y in zip(a, b, strict=True))


def _fresh_call(
    program: Program, target: Target, seed: int, watermark: list[int] | None = None
) -> tuple[tuple[Any, ...], Any] | ExcObs:
    """One more seeded call on fresh inputs, outside the plan's `drive` (no backward):
    (args, output), or what it raised. Grad mode is restored either way. `watermark` gets the
    first autograd sequence number the call can give a node."""
    args = program.make_inputs(seed)
    if watermark is not None:
        watermark.append(_next_sequence_nr())
    torch.manual_seed(seed)
    try:
        return args, target.call(*args)
    except Exception as exc:
        return exc_obs(exc, "probe-call")
    finally:
        torch.set_grad_enabled(True)


def _next_sequence_nr() -> int:
    """Sequence numbers count up per thread as autograd nodes are made: make one, read it."""
    with torch.enable_grad():
        probe = torch.zeros((), requires_grad=True) * 1
    return int(probe.grad_fn._sequence_nr()) + 1  # type: ignore[union-attr]


def _requiring_grad(out: Any) -> list[torch.Tensor]:
    return [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]


def mutation_probe(program: Program, target: Target, seed: int) -> list[ProbeObs] | ExcObs:
    """Call once more, then write into each output in turn (grad mode on, as a user would):
    record whether autograd refused, and which inputs and other outputs saw the write."""
    called = _fresh_call(program, target, seed)
    if isinstance(called, ExcObs):
        return called
    args, out = called
    named = named_inputs(args, target.module)
    outs = [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]
    probes = []
    in_ts = [x for _, x in named]
    before_in, before_out = _values_now(in_ts), _values_now(outs)
    for k, o in enumerate(outs):
        try:
            _mutate(o)
        except Exception as exc:
            probes.append(ProbeObs(k, exc_obs(exc, "probe")))
            continue
        now_in, now_out = _values_now(in_ts), _values_now(outs)
        probes.append(
            ProbeObs(
                k,
                None,
                tuple(
                    n
                    for (n, _), a, b in zip(named, before_in, now_in, strict=True)
                    if not _same(a, b)
                ),
                tuple(
                    j
                    for j, (a, b) in enumerate(zip(before_out, now_out, strict=True))
                    if j != k and not _same(a, b)
                ),
            )
        )
        before_in, before_out = now_in, now_out
    return probes


def version_probe(program: Program, target: Target, seed: int) -> ExcObs | str | None:
    """Call, bump every argument's version counter (values unchanged), then backward: autograd
    must refuse exactly when a bumped tensor was saved for backward, in every subject alike."""
    called = _fresh_call(program, target, seed)
    if isinstance(called, ExcObs):
        return called  # the exceptions oracle compares it
    args, out = called
    diff = _requiring_grad(out)
    if not diff:
        return None
    for x in pytree.tree_leaves(args):
        if isinstance(x, torch.Tensor):
            _bump(x)
    try:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])
    except Exception as exc:
        return exc_obs(exc, "backward")
    return "ok"


def saved_probe(program: Program, target: Target, seed: int) -> ExcObs | str | None:
    """Autograd saves every floating tensor argument (`x * w`, w a leaf requiring grad: mul
    saves x for w's gradient) before the call, then the call, then backward through those
    products alone: it must raise exactly where the call mutated a saved argument (or anything
    sharing its version counter), as eager does. Unlike the version probe, the saving happens
    outside the compiled function, so no partitioner choice is involved: strict for every pair."""
    args = program.make_inputs(seed)
    products = []
    with torch.enable_grad():
        for x in pytree.tree_leaves(args):
            if (
                isinstance(x, torch.Tensor)
                and x.is_floating_point()
                and not x.is_inference()
                and not is_traceable_wrapper_subclass(x)
            ):
                w = torch.ones((), dtype=x.dtype, device=x.device, requires_grad=True)
                products.append((x * w).sum())
    if not products:
        return None
    torch.manual_seed(seed)
    try:
        target.call(*args)
    except Exception as exc:
        return exc_obs(exc, "probe-call")
    finally:
        torch.set_grad_enabled(True)
    try:
        torch.autograd.backward(products)
    except Exception as exc:
        return exc_obs(exc, "backward")
    return "ok"


def autograd_order(program: Program, target: Target, seed: int) -> list[tuple[str, int]] | None:
    """The backward nodes eager's engine runs, in order, with their sequence numbers.

    AccumulateGrad and error nodes carry UINT64_MAX and are left out (seeds/004), and so are
    nodes made before the call (e.g. the clone that makes a non-leaf argument): the compiled
    backward covers the function only."""
    watermark: list[int] = []
    called = _fresh_call(program, target, seed, watermark)
    if isinstance(called, ExcObs):
        return None
    first = watermark[0]
    diff = _requiring_grad(called[1])
    if not diff:
        return None
    order: list[tuple[str, int]] = []
    seen: set[int] = set()
    try:
        stack: list[Any] = [o.grad_fn for o in diff if o.grad_fn is not None]
    except RuntimeError:  # autograd refuses to build the graph (view + in-place): no order
        return None
    handles = []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        seq = node._sequence_nr()
        if first <= seq < 2**63 - 1 and type(node).__name__ != "AccumulateGrad":

            def pre(grad_outputs: Any, node: Any = node, seq: int = seq) -> None:
                order.append((type(node).__name__, seq))

            handles.append(node.register_prehook(pre))
        stack += [n for n, _ in node.next_functions]
    try:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])
    except Exception:
        return None
    finally:
        for h in handles:
            h.remove()
    return order


def _variant_call(program: Program, target: Target, variant: str) -> CallObs:
    """A call (seed 0) whose relationships to call 0 differ as `variant` says, with whether
    Dynamo compiled a new graph for it and the guard failures it gave."""
    graphs, reasons = _dynamo_graphs(), _guard_failures()
    obs, _ = observe_call(program, target, 0, variant)
    failed = _guard_failures_since(reasons)
    return replace(
        obs,
        # what the call changes, as the oracles name it (a relationship that changes nothing
        # for this program is left out: generators' effective_variant)
        variant=effective_variant(program.spec, variant),
        # a new graph, or guards that failed: a recompile that raised before its graph
        # existed is a recompile too (its error is not a reused graph's)
        recompiled=_dynamo_graphs() > graphs or bool(failed),
        recompile_reasons=failed,
    )


def observe_subject(
    program: Program, target: Target, *, probes: bool = True, later_calls: bool = True
) -> SubjectObs:
    """Run the whole plan on `target`; see the module docstring. `later_calls=False` skips
    the variant call and the sequence: for a target without guards (aot_function compiles
    once, at its first call that succeeds), where call 0 raised, a later call would compile
    the graph that the probes after it then run on with call 0's kind of inputs."""
    plan = program.plan
    calls: list[CallObs] = []
    live: list[list[Any]] = []
    for seed in range(plan.calls):
        call_obs, outs = observe_call(program, target, seed, None)
        calls.append(call_obs)
        live.append(outs)
    calls = [
        replace(c, outputs_later=[_leaf_out_later(x) for x in outs])
        for c, outs in zip(calls, live, strict=True)
    ]
    del live
    variant = None
    sequence: list[CallObs] = []
    if plan.variant is not None and later_calls:  # before the probes (module state)
        variant = _variant_call(program, target, plan.variant)
        sequence = [_variant_call(program, target, v) for v in plan.sequence]
    mutation: list[ProbeObs] | ExcObs | None = None
    version: ExcObs | str | None = None
    saved: ExcObs | str | None = None
    if probes:
        mutation = mutation_probe(program, target, plan.calls)
        if plan.backward:
            version = version_probe(program, target, plan.calls + 1)
            saved = saved_probe(program, target, plan.calls + 2)
    extra = target.extra() if target.extra is not None else {}
    torch.set_grad_enabled(True)
    return SubjectObs(
        target.name,
        calls=calls,
        mutation_probe=mutation,
        version_probe=version,
        saved_probe=saved,
        variant=variant,
        sequence=sequence,
        extra=extra,
    )
