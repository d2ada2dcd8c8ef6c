"""Per-call comparisons shared by the oracles (and by the guard oracle on the variant call).

Each function compares one reference call with one observed call and returns explanations
(empty: no difference). `exact` and `strict` come from the pair: pythonify against
torch.compile is exact and strict (same graphs, same kernels); torch.compile against eager is
exact under aot_eager and tolerant otherwise, with the by-design relaxations of by_design.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pyfy_fuzz.schema.difference import CallRef, Difference, ExcFacts
from pyfy_fuzz.schema.observation import AliasObs, CallObs, ExcObs, ProbeObs, TensorObs

from .by_design import excuse
from .compare import TensorDiff, diff_tensor
from .evidence import Evidence

# The call a per-call comparison's differences name until the caller says which it was
# (`at_call`): the comparisons see two CallObs, not where in the drive they were made.
_UNPLACED = CallRef("plan", 0)


@dataclass
class PairContext:
    evidence: Evidence
    subject: str  # torch.compile | pythonify
    exact: bool
    ref64: CallObs | None = None

    @property
    def strict(self) -> bool:
        return self.subject == "pythonify"

    def diff(self, oracle: str, locus: Any, prop: str, **fields: Any) -> Difference:
        """A difference of this pair, in a call the caller places (`at_call`)."""
        return Difference(oracle, self.subject, _UNPLACED, locus, prop, **fields)

    def tensor(self, oracle: str, locus: Any, d: TensorDiff, **fields: Any) -> Difference:
        """A tensor's difference at `locus` (`fields`: its index or name, ...)."""
        return self.diff(
            oracle, locus, d.prop, inner=d.inner, expected=d.expected, actual=d.actual, **fields
        )


def exc_facts(e: ExcObs) -> ExcFacts:
    """What a difference keeps of an observed exception."""
    return ExcFacts(e.short_type, e.message, e.phase, e.frame)


def at_call(diffs: list[Difference], call: CallRef) -> list[Difference]:
    """`diffs` placed in `call`."""
    return [replace(d, call=call) for d in diffs]


def _ref64_out(ctx: PairContext, j: int) -> TensorObs | None:
    if ctx.ref64 is None or ctx.ref64.raised is not None or j >= len(ctx.ref64.outputs):
        return None
    o = ctx.ref64.outputs[j]
    return o if isinstance(o, TensorObs) else None


def _aliases_input(call: CallObs, tensor_index: int) -> bool:
    if tensor_index >= len(call.aliasing):
        return False
    a = call.aliasing[tensor_index]
    return bool(a.is_input or a.shares_storage_with_inputs)


def _structure_excused(ref: CallObs, got: CallObs, ctx: PairContext) -> bool:
    if ctx.strict or ctx.evidence.frontend != "aot":
        return False
    if ref.structure.replace("TreeSpec(tuple,", "TreeSpec(list,", 1) == got.structure:
        return excuse("aot-frontend-output-list")
    return False


def diff_outputs(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """The outputs oracle's per-call comparison."""
    if ref.structure != got.structure and not _structure_excused(ref, got, ctx):
        return [
            ctx.diff(
                "outputs",
                "structure",
                "structure",
                expected=_flat(ref.structure),
                actual=_flat(got.structure),
            )
        ]
    out = []
    t = 0
    for j, (r, g) in enumerate(zip(ref.outputs, got.outputs, strict=True)):
        if isinstance(r, TensorObs) and isinstance(g, TensorObs):
            d = diff_tensor(
                r,
                g,
                exact=ctx.exact,
                ref64=_ref64_out(ctx, j),
                offset=_aliases_input(ref, t),
                strict_meta=ctx.strict,
            )
            t += 1
            if d:
                out.append(ctx.tensor("outputs", "output", d, index=j))
        elif isinstance(r, TensorObs) or isinstance(g, TensorObs):
            out.append(
                ctx.diff("outputs", "output", "tensor", index=j, expected=_what(r), actual=_what(g))
            )
        elif r != g:
            out.append(ctx.diff("outputs", "output", "value", index=j, expected=r, actual=g))
    return out


def _flat(structure: str) -> str:
    return " ".join(structure.split())


def _what(x: TensorObs | str) -> str:
    return "a tensor" if isinstance(x, TensorObs) else f"{x}"


def diff_inputs(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """The mutation oracle's per-call comparison: every input after the call."""
    rnames = [n for n, _ in ref.inputs_after]
    gnames = [n for n, _ in got.inputs_after]
    if rnames != gnames:
        return [ctx.diff("mutation", "inputs", "names", expected=rnames, actual=gnames)]
    out = []
    for (n, r), (_, g) in zip(ref.inputs_after, got.inputs_after, strict=True):
        d = diff_tensor(r, g, exact=ctx.exact, offset=True, strict_meta=ctx.strict)
        if d:
            out.append(ctx.tensor("mutation", "input", d, name=n))
    return out


def diff_aliasing(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """The aliasing oracle's per-call comparison (indices count tensor outputs)."""
    if len(ref.aliasing) != len(got.aliasing):
        return []  # the outputs oracle reports the structure difference
    out = []

    def fact(k: int, prop: str, r: Any, g: Any) -> None:
        out.append(ctx.diff("aliasing", "output", prop, index=k, expected=r, actual=g))

    for r, g in zip(ref.aliasing, got.aliasing, strict=True):
        k = r.index
        if r.is_input != g.is_input:
            fact(k, "is_input", list(r.is_input), list(g.is_input))
        if r.base != g.base and not _base_excused(
            r.base, g.base, ctx, r, g, _custom_function_output(ref, k)
        ):
            fact(k, "base", r.base, g.base)
        if r.shares_storage_with_inputs != g.shares_storage_with_inputs:
            fact(
                k,
                "shares_inputs",
                list(r.shares_storage_with_inputs),
                list(g.shares_storage_with_inputs),
            )
        if r.shares_storage_with_outputs != g.shares_storage_with_outputs:
            fact(
                k,
                "shares_outputs",
                list(r.shares_storage_with_outputs),
                list(g.shares_storage_with_outputs),
            )
    return out


def _custom_function_output(call: CallObs, tensor_index: int) -> bool:
    """Whether eager's output came from a custom autograd.Function: its grad_fn is the
    Function's node class, `<Name>Backward` (aten's nodes end in a digit: MulBackward0)."""
    tensors = [o for o in call.outputs if isinstance(o, TensorObs)]
    if tensor_index >= len(tensors):
        return False
    name = tensors[tensor_index].grad_fn or ""
    return name.endswith("Backward")


def _base_excused(
    rb: str, gb: str, ctx: PairContext, r: AliasObs, g: AliasObs, custom_function_output: bool
) -> bool:
    if ctx.strict:
        return False
    ev = ctx.evidence
    if rb == "other" and gb in ("none", "other") or gb == "other" and rb == "none":
        return excuse("view-of-intermediate")
    if (
        ev.backend == "inductor"
        and gb == "none"
        and custom_function_output
        and r.shares_storage_with_inputs == g.shares_storage_with_inputs
    ):
        return excuse("custom-function-view-inductor")
    return False


def diff_autograd(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """The autograd oracle's per-call comparison."""
    out = []
    if ref.grad_enabled_after != got.grad_enabled_after:
        out.append(
            ctx.diff(
                "autograd",
                "grad_mode",
                "enabled",
                expected=ref.grad_enabled_after,
                actual=got.grad_enabled_after,
            )
        )
    tensors = [
        (j, r, g)
        for j, (r, g) in enumerate(zip(ref.outputs, got.outputs, strict=False))
        if isinstance(r, TensorObs) and isinstance(g, TensorObs)
    ]
    for j, r, g in tensors:
        # is_leaf first: which way the output moved (a leaf became a graph node or the other
        # way) names the bug; requires_grad and grad_fn mostly follow from it.
        for what in ("is_leaf", "requires_grad", "is_inference"):
            if getattr(r, what) != getattr(g, what):
                out.append(
                    ctx.diff(
                        "autograd",
                        "output",
                        what,
                        index=j,
                        expected=getattr(r, what),
                        actual=getattr(g, what),
                    )
                )
        refused = [x for x in (r.grad_fn, g.grad_fn) if x is not None and x.startswith("<")]
        if (r.grad_fn is None) != (g.grad_fn is None) or (refused and r.grad_fn != g.grad_fn):
            out.append(
                ctx.diff(
                    "autograd", "output", "grad_fn", index=j, expected=r.grad_fn, actual=g.grad_fn
                )
            )
        elif r.grad_fn != g.grad_fn and not ctx.strict:
            excuse("grad-fn-type")
    return out + diff_saved_hooks(ref, got, ctx)


def diff_saved_hooks(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """Note [Saved-tensor hook contract] (generators/_saved_hooks.py): what was packed may
    differ from eager's; a packed tensor backward never unpacked, or an unpack of something no
    pack returned, is a broken promise where eager kept it. The pythonified file runs
    torch.compile's graphs (`ctx.strict`): it must pack exactly as many tensors."""
    if ref.saved_hooks is None or got.saved_hooks is None or ref.raised or got.raised:
        return []
    (r_packed, r_never, r_foreign), (packed, never, foreign) = ref.saved_hooks, got.saved_hooks
    out = []

    def broken(prop: str, expected: int, actual: int) -> None:
        out.append(
            ctx.diff(
                "autograd", "saved_hooks", prop, expected=expected, actual=actual, note=str(packed)
            )
        )

    if ctx.strict and packed != r_packed:
        broken("packed", r_packed, packed)
    if never and not r_never:
        broken("never_unpacked", r_never, never)
    if foreign and not r_foreign:
        broken("foreign_unpacks", r_foreign, foreign)
    return out


def _grad_list(
    ref: list[TensorObs | None] | None,
    got: list[TensorObs | None] | None,
    leaves: tuple[str, ...],
    ctx: PairContext,
    locus: str,
    retained: frozenset[str] = frozenset(),
) -> list[Difference]:
    if (ref is None) != (got is None):
        return [
            ctx.diff("grads", "backward", "ran", expected=ref is not None, actual=got is not None)
        ]
    if ref is None or got is None:
        return []
    out = []
    for name, r, g in zip(leaves, ref, got, strict=True):
        if (r is None) != (g is None):
            out.append(
                ctx.diff(
                    "grads",
                    locus,
                    "presence",
                    name=name,
                    expected="None" if r is None else "a tensor",
                    actual="None" if g is None else "a tensor",
                    kind_detail="retained" if name in retained else "",
                )
            )
        elif r is not None and g is not None:
            # by_design: grad-accumulation-order (torch.compile only; pythonify is bitwise).
            exact = ctx.exact and ctx.strict
            d = diff_tensor(r, g, exact=exact, strict_meta=ctx.strict)
            if d is None and not exact and ctx.exact and diff_tensor(r, g, exact=True):
                excuse("grad-accumulation-order")
            if d:
                detail = "retained" if name in retained else ""
                out.append(ctx.tensor("grads", locus, d, name=name, kind_detail=detail))
    return out


def _retained(call: CallObs) -> frozenset[str]:
    """The arguments whose gradient the drive retained (retain_grad): those that are not
    leaves -- a stale grad_fn shows in them, an unused output's zeros in leaves."""
    return frozenset(n for n, t in call.inputs_after if not t.is_leaf)


def diff_grads(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """The grads oracle's per-call comparison."""
    if ref.leaves != got.leaves:
        return [
            ctx.diff("grads", "leaves", "names", expected=list(ref.leaves), actual=list(got.leaves))
        ]
    retained = _retained(ref)
    out = _grad_list(ref.grads, got.grads, ref.leaves, ctx, "grad", retained)
    rs, gs = ref.second, got.second
    if isinstance(rs, ExcObs) or isinstance(gs, ExcObs):
        if not (isinstance(rs, ExcObs) and isinstance(gs, ExcObs)):
            r_txt = rs.short_type if isinstance(rs, ExcObs) else "no error"
            g_txt = gs.short_type if isinstance(gs, ExcObs) else "no error"
            out.append(ctx.diff("grads", "second_backward", "raised", expected=r_txt, actual=g_txt))
        elif not gs.is_a(rs):
            out.append(
                ctx.diff(
                    "grads", "second_backward", "type", expected=rs.short_type, actual=gs.short_type
                )
            )
    else:
        out += _grad_list(rs, gs, ref.leaves, ctx, "grad2", retained)
    if sorted(ref.hooks) != sorted(got.hooks):  # Note [Which hook order is promised]
        out.append(
            ctx.diff("grads", "hooks", "ran", expected=list(ref.hooks), actual=list(got.hooks))
        )
    return out


# Note [Which hook order is promised]
# Autograd runs a tensor's hooks in the order they were registered, when that tensor's
# gradient is computed; across tensors the order follows the backward graph's topology, which
# torch.compile changes by design (one CompiledFunctionBackward node computes every input's
# gradient at once). So the oracle compares which hooks ran, how often and on which gradient
# shapes -- a dropped, doubled or misplaced hook -- and not the interleaving across tensors.
# The order on one tensor, and a module's pre-hook before its hook, are checked by the parity
# suite (tests/pythonify/test_parity_hooks.py).


def raise_difference(ref: ExcObs | None, got: ExcObs | None) -> str | None:
    """How `got` raising differs from `ref`: "raised" (only got raised), "returned" (only ref
    raised), "other" (both, got not an instance of ref's type), or None."""
    if ref is None:
        return None if got is None else "raised"
    if got is None:
        return "returned"
    return None if got.is_a(ref) else "other"


def raised_differently(ref: ExcObs | None, got: ExcObs | None) -> bool:
    return raise_difference(ref, got) is not None


# Eager's refusal to write into a view made inside a custom autograd.Function (torch/csrc/
# autograd/variable.cpp, handle_view_on_rebase, CreationMeta::IN_CUSTOM_FUNCTION).
_CUSTOM_FUNCTION_VIEW = "This view was created inside a custom Function"


def probe_write_differs(ref: ProbeObs, got: ProbeObs, ctx: PairContext) -> bool:
    """Whether writing into an output in place was refused in one subject and not the other
    (or with another error type) -- less by_design: custom-function-view-write, where eager
    refuses a custom Function's view output and torch.compile allows the write."""
    if not raised_differently(ref.raised, got.raised):
        return False
    if (
        not ctx.strict
        and got.raised is None
        and ref.raised is not None
        and ref.raised.type_name == "builtins.RuntimeError"
        and _CUSTOM_FUNCTION_VIEW in ref.raised.message
    ):
        return not excuse("custom-function-view-write")
    return True
