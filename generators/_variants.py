"""Which of a later call's relationships to call 0 apply to a program (Note [Call
relationships] in pyfy_fuzz/schema/spec.py), read off its spec.

A relationship that changes nothing for a program (a `leaf` where no argument requires grad)
tests no guard: the generators never draw it (`variant_changes`), and a finding's identity
leaves it out (`effective_variant`). Each rule mirrors what the program does with the token:
`_root` and `relate` (generators/_prelude.py, generators/_relations.py) and make_inputs'
aliasing branch (generators/_render_inputs.py).
"""

from __future__ import annotations

from pyfy_fuzz.schema.config import call_context

from ._model import root_geometry
from ._spec import CALL_RELATIONS, InputSpec, ProgramSpec, numel, variant_tokens

__all__ = ["effective_variant", "variant_changes"]

_FLOATS = ("float32", "float64", "float16", "bfloat16")


def variant_changes(spec: ProgramSpec, variant: str | None = None) -> bool:
    """Whether a variant call (the plan's, or `variant`) gets other inputs or another context
    than call 0 (what `_root`, `make_inputs` and `relate` do with it): some relationship it
    names applies to the program (Note [Call relationships]). A variant that changes nothing
    tests no guard; it repeats call 0."""
    variant = spec.plan.variant if variant is None else variant
    tokens = variant_tokens(variant)
    return _builds(spec, tokens) and any(_token_changes(spec, t) for t in tokens)


def effective_variant(spec: ProgramSpec, variant: str | None) -> str | None:
    """`variant` less the relationships that change nothing for this program (a `leaf` where
    no argument requires grad): what the call really changes, which names its bug (Note
    [Variant-call identity] in oracles/guards.py: an `aliasing+leaf` call that only changes
    aliasing ran on the graph compiled for other aliasing, like an `aliasing` one). `again`
    stays: it passes the call before's very tensors whatever else it changes."""
    tokens = variant_tokens(variant)
    kept = [t for t in tokens if t == "again" or _token_changes(spec, t)]
    return "+".join(kept) if kept else variant


def _builds(spec: ProgramSpec, tokens: tuple[str, ...]) -> bool:
    """Whether make_inputs can build the call: a grown root keeps its slices, selects and
    transposes, but a reshape or expand to call 0's sizes no longer fits it, nor a
    view(dtype) a root of another dtype (a plan whose later call cannot be built is drawn
    without that call, never run to fail)."""
    grown = {i.root for i in spec.inputs if not i.scalar and "shape" in tokens}
    if "relation" in tokens:
        grown.add(0)
    steps = [(i.root, s.op) for i in spec.inputs if i.kind == "view" for s in i.views]
    if "dtype" in tokens and any(op == "view_dtype" for _, op in steps):
        return False  # a root of another dtype has another element size than its partner
    return not any(root in grown and op in ("reshape", "expand") for root, op in steps)


def _token_changes(spec: ProgramSpec, token: str) -> bool:
    """Long: one short rule per relationship token, each mirroring what `_root`, make_inputs'
    aliasing branch or `relate` does with the program's arguments; split, each rule would sit
    apart from the others it must stay consistent with."""
    tensors = [i for i in spec.inputs if not i.scalar]
    owned = [i for i in tensors if i.kind != "dup"]
    plain = [  # arguments `relate` changes: plain tensors (no subclass)
        i for i in owned if i.kind in ("root", "view") and spec.roots[i.root].subclass is None
    ]
    if token == "dtype":
        return any(spec.roots[i.root].dtype in _FLOATS for i in owned)
    if token == "aliasing":
        return len(tensors) >= 2 or any(i.kind in ("view", "set_shared") for i in tensors)
    if token == "shape":  # a root passed itself grows (views and set_ keep their sizes)
        return any(spec.roots[i.root].shape for i in owned if i.kind == "root")
    if token == "relation":  # the first root grows; another passed itself shares a size
        used = {i.root for i in owned if i.kind == "root"}
        first = set(spec.roots[0].shape) if 0 in used else set()
        return any(first & set(spec.roots[k].shape) for k in used if k != 0)

    def alone(i: InputSpec) -> bool:  # a root passed itself, sharing memory with no other
        return (
            i.kind == "root"
            and sum(not j.scalar and j.root == i.root for j in owned) == 1
            and not any(j.kind == "dup" and spec.inputs[j.of] is i for j in spec.inputs)
        )

    if token == "overlap":  # two roots passed alone, needing no grad, of one dtype
        once = [
            i
            for i in plain
            if alone(i)
            and spec.roots[i.root].grad == "none"
            and numel(spec.roots[i.root].shape) >= 2
        ]
        dtypes = [spec.roots[i.root].dtype for i in once]
        return len(dtypes) != len(set(dtypes))
    if token == "share":  # two roots passed alone, of one shape and dtype
        kinds = [
            (spec.roots[i.root].shape, spec.roots[i.root].dtype)
            for i in plain
            if alone(i) and numel(spec.roots[i.root].shape) >= 1
        ]
        return len(kinds) != len(set(kinds))
    if token == "shift":  # two plain arguments of one root (a dup is the same tensor)
        roots = [
            i.root if i.kind != "dup" else spec.inputs[i.of].root
            for i in tensors
            if spec.roots[i.root if i.kind != "dup" else spec.inputs[i.of].root].subclass is None
        ]
        return any(roots.count(r) >= 2 and numel(spec.roots[r].shape) >= 1 for r in roots)
    if token == "nonleaf":
        return any(i.kind == "root" and spec.roots[i.root].grad == "leaf" for i in plain)
    if token in ("leaf", "no_requires_grad"):
        grads = {"leaf": ("nonleaf",), "no_requires_grad": ("leaf", "nonleaf")}[token]
        return any(
            spec.roots[i.root].grad in grads
            or (i.kind == "view" and spec.roots[i.root].grad != "none")
            for i in plain
        )
    if token == "strided":
        # A root laid out strided already has to_strided's geometry (it is "contiguous" when
        # its last dimension has size 1): nothing changes.
        return any(
            alone(i)
            and root_geometry(spec.roots[i.root])[0].is_contiguous()
            and spec.roots[i.root].layout != "strided"
            and spec.roots[i.root].shape
            and spec.roots[i.root].grad != "nonleaf"
            for i in plain
        )
    if token == "scalars":  # to_other_scalars: every Python number argument changes
        return any(i.scalar for i in spec.inputs)
    if token in ("no_grad", "inference_mode"):
        return call_context(spec.plan.config) != token
    if token == "again":  # accumulated gradients show only where a backward reaches a leaf
        leaves = any(spec.roots[i.root].grad == "leaf" for i in owned)
        return spec.plan.backward and (leaves or bool(spec.module and spec.module.params))
    raise ValueError(f"unknown relationship {token!r}; expected one of {CALL_RELATIONS}")
