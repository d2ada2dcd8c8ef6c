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
refuse?), arguments saved by autograd before the call (must backward refuse after it?). The
probes are in probes.py; a tensor's and an exception's records are made in recording.py.

Values are detached clones; no live tensor of the run is kept once the observation is built,
except the last calls' outputs, re-read after all calls to catch a replay that overwrote them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from generators import Program
from generators.source import effective_variant
from oracles.compare import bitwise_equal
from pyfy_fuzz.case.probes import mutation_probe, saved_probe, version_probe
from pyfy_fuzz.case.recording import Target, exc_obs, named_inputs, tensor_obs
from pyfy_fuzz.schema.observation import (
    AliasObs,
    CallObs,
    ExcObs,
    ProbeObs,
    SubjectObs,
    TensorObs,
    UserCall,
    is_function_callee,
)

__all__ = ["Target", "observe_call", "observe_subject"]

# ---------------------------------------------------------------------------- one call


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
    whose version counter the call itself moved (read right before and after it). Only the
    drive's own call is recorded: a checkpoint's recompute calls it again in backward (Note
    [The front-end axis] in pyfy_fuzz/schema/spec.py), and what the user got is the first."""

    def call(*a: Any) -> Any:
        if "out" in box:
            return target.call(*a)
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
    user_calls = _user_calls(log)
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
        hooks=tuple(c.callee for c in user_calls if not is_function_callee(c.callee)),
        user_calls=user_calls,
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


def _user_calls(log: Any) -> tuple[UserCall, ...]:
    """The program's HOOK_LOG as records (Note [What user code receives] in
    generators/_hooks.py): `(callee, *received)` entries, each received None or (shape,
    dtype, requires_grad, version)."""
    if not isinstance(log, list):
        return ()
    found = []
    for entry in log:
        callee, *received = entry
        found.append(
            UserCall(
                str(callee),
                tuple(
                    None if r is None else (tuple(r[0]), str(r[1]), bool(r[2]), r[3])
                    for r in received
                ),
            )
        )
    return tuple(found)


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


# ---------------------------------------------------------------------------- the plan


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
        graphs, reasons = _dynamo_graphs(), _guard_failures()
        call_obs, outs = observe_call(program, target, seed, None)
        failed = _guard_failures_since(reasons)
        if seed:  # a later call's guards may reject what call 0 left behind (module state)
            recompiled = _dynamo_graphs() > graphs or bool(failed)
            call_obs = replace(call_obs, recompiled=recompiled, recompile_reasons=failed)
        elif failed:  # call 0 compiled twice: a reentrant checkpoint's backward runs it with
            # grad on after its forward ran it under no_grad (Note [The front-end axis])
            call_obs = replace(call_obs, recompiled=True, recompile_reasons=failed)
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
