"""The probes: one more seeded call on fresh inputs, outside the plan's drive, and what the
subject then does. Outputs mutated in place (is the write visible through the inputs, as in
eager?), inputs' version counters bumped before backward (must backward refuse?), arguments
saved by autograd before the call (must backward refuse after it?), and eager's backward
order with its sequence numbers (the seq_nr oracle's reference). observe_subject runs the
first three after the plan's calls; the runner asks eager for the order.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from generators import Program
from oracles.compare import bitwise_equal
from pyfy_fuzz.case.recording import Target, exc_obs, named_inputs, tensor_obs
from pyfy_fuzz.schema.observation import ExcObs, ProbeObs

__all__ = ["autograd_order", "mutation_probe", "saved_probe", "version_probe"]


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
            # A refused write may have written first (eager's copy_ into an inference tensor
            # outside inference_mode writes, then raises): the next write's "what saw it"
            # starts from what is there now, not from before this one.
            before_in, before_out = _values_now(in_ts), _values_now(outs)
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
