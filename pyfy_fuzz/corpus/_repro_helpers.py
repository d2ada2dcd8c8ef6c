"""Helpers a repro.py defines, written here as real code and emitted with inspect.getsource.

Each is emitted only into the repros whose check uses it (pyfy_fuzz.corpus.repro). They are written
as the script shows them: no annotations (the script imports no typing), and only names the
script itself has -- torch, tree_leaves, make_inputs, graphs, boxed_nop, ... -- which exist
here for mypy alone (TYPE_CHECKING). They are never called in-process, but for `canary`,
which pyfy-fuzz's workers run after every case; the functions at the end turn them (and two
of generators._render's definitions) into the lines of a script.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyfy_fuzz.schema.sourcepin import pin

if TYPE_CHECKING:  # what the generated script imports or defines itself
    import torch
    from torch._dynamo.backends.debugging import aot_eager, boxed_nop
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch.utils._pytree import tree_leaves

    def make_inputs(seed: int = 0) -> tuple[Any, ...]: ...

    graphs: dict[str, list[Any]] = {}
    EFFECTS: list[float] = []
    HOOK_LOG: list[Any] = []


# -- the in-place probe and aliasing facts ----------------------------------------------------


def write_into(t):  # type: ignore[no-untyped-def]
    """Write into t in place, as a user would (grad mode on): None, or autograd's refusal."""
    try:
        if t.dtype == torch.bool:
            t.logical_not_()
        else:
            t.copy_(torch.where(t.detach() == 7, 8, 7).to(t.dtype))  # every element changes
    except Exception as e:
        return e
    return None


def seen_by_write(t, args, tensors):  # type: ignore[no-untyped-def]
    """The arguments and other outputs that see a write into output t."""
    named = {f"a{i}": a for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    named.update({f"output {j}": o for j, o in enumerate(tensors) if o is not t})
    before = {n: x.detach().clone() for n, x in named.items()}
    write_into(t)
    return [n for n, x in named.items() if not torch.equal(x.detach(), before[n])]


def base_of(t, args, tensors):  # type: ignore[no-untyped-def]
    """What t._base is: none, input:a<i>, base_of:a<i> (an argument's own base), output:<j>,
    or other (an intermediate of the function)."""
    named = [(i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    found = [f"input:a{i}" for i, a in named if t._base is a]
    found += [f"base_of:a{i}" for i, a in named if a._base is not None and t._base is a._base]
    found += [f"output:{j}" for j, o in enumerate(tensors) if t._base is o]
    return "none" if t._base is None else (found + ["other"])[0]


def sharing(t, others):  # type: ignore[no-untyped-def]
    """Indices of the tensors in `others` that share t's storage."""
    ptr = t.untyped_storage().data_ptr()
    tensors = [(i, x) for i, x in enumerate(others) if isinstance(x, torch.Tensor)]
    return [i for i, x in tensors if ptr and x.untyped_storage().data_ptr() == ptr]


def bumped_backward(out, args):  # type: ignore[no-untyped-def]
    """Bump every argument's version counter (values unchanged), then backward: None, or the
    error autograd raises for a saved tensor that changed."""
    for a in args:
        if isinstance(a, torch.Tensor) and not a.is_inference():
            torch.autograd.graph.increment_version(a)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    try:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])
    except Exception as e:
        return e
    return None


# -- version counters: which arguments a call bumps, and tensors saved before it ---------------


def versions(args):  # type: ignore[no-untyped-def]
    """Each tensor argument's version counter (and its _base's), by name."""
    found = {}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and not a.is_inference():
            found[f"a{i}"] = a._version
            if a._base is not None:
                found[f"a{i}._base"] = a._base._version
    return found


def moved(args, before):  # type: ignore[no-untyped-def]
    """The arguments whose version counter moved since `before` (what versions(args) gave)."""
    now = versions(args)
    return [n for n in before if now[n] != before[n]]


def save_products(args):  # type: ignore[no-untyped-def]
    """Autograd saves each floating argument: x * w saves x for w's gradient."""
    products = []
    for a in args:
        if type(a) is torch.Tensor and a.is_floating_point() and not a.is_inference():
            w = torch.ones((), dtype=a.dtype, device=a.device, requires_grad=True)
            products.append((a * w).sum())
    return products


def backward_saved(products):  # type: ignore[no-untyped-def]
    """Backward through the products: None, or autograd's error for a saved tensor changed."""
    try:
        torch.autograd.backward(products)
    except Exception as e:
        return e
    return None


def retain_grads(args, skip=()):  # type: ignore[no-untyped-def]
    """Non-leaf arguments requiring grad keep their .grad, as pyfy-fuzz's drive asks (but
    those in `skip`, changed in place by a metadata op: eager asserts on those)."""
    for k, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.requires_grad and not a.is_leaf and k not in skip:
            a.retain_grad()


# -- a process left broken ---------------------------------------------------------------------


def canary(device="cpu"):  # type: ignore[no-untyped-def]
    """None while this process runs as a fresh one would, else (what, detail) of the first
    check that fails: inference mode off, grad mode on, no TorchDispatchMode or
    TorchFunctionMode left active, a parameter's forward and backward to the right gradient."""
    import torch  # pyfy-fuzz's workers call it in-process (Note [A broken process])
    from torch.overrides import _get_current_function_mode_stack as function_modes
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack as dispatch_modes

    if torch.is_inference_mode_enabled():  # first: it turns grad mode off
        return "inference_mode", "on"
    if not torch.is_grad_enabled():
        return "grad_mode", "off"
    for what, modes in (("dispatch_mode", dispatch_modes()), ("function_mode", function_modes())):
        if modes:  # a mode's class names it: how many were pushed varies from case to case
            return what, ", ".join(sorted({type(m).__name__ for m in modes}))
    try:
        w = torch.nn.Parameter(torch.ones(1, 3, device=device))
        torch.nn.functional.linear(torch.ones(2, 3, device=device), w).sin().sum().backward()
    except Exception as e:
        return type(e).__name__, str(e)[:300]
    expected = torch.full((1, 3), -1.9799849932008908)  # 2 cos 3, as in a fresh process
    if w.grad is None or not torch.allclose(w.grad.cpu(), expected):
        return "wrong_gradient", str(w.grad)
    return None


# -- the warm-cache subject --------------------------------------------------------------------


def fill_cache(compiled, inputs):  # type: ignore[no-untyped-def]
    """The cold compile, forward and backward: torch lowers the backward at the first backward
    and saves AOTAutograd's cache entry only once both graphs exist."""
    out = compiled(*inputs)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if diff:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])


# -- seq_nr: the graphs AOTAutograd hands its compilers ---------------------------------------


def keep(name):  # type: ignore[no-untyped-def]
    """A compiler keeping the nodes of the graph AOTAutograd hands it, run as it is."""

    def compiler(gm, example_inputs):  # type: ignore[no-untyped-def]
        graphs[name] = [n for n in gm.graph.nodes if n.op == "call_function"]
        return boxed_nop(gm, example_inputs)

    return compiler


def aot_eager_backend(gm, example_inputs):  # type: ignore[no-untyped-def]
    """aot_eager, keeping the call_function nodes of the graphs AOTAutograd compiles."""

    def keep(name):  # type: ignore[no-untyped-def]
        def compiler(gm, example_inputs):  # type: ignore[no-untyped-def]
            graphs[name] = [n for n in gm.graph.nodes if n.op == "call_function"]
            return boxed_nop(gm, example_inputs)

        return compiler

    return aot_eager(gm, example_inputs, fw_compiler=keep("forward"), bw_compiler=keep("backward"))


def inductor_backend(gm, example_inputs):  # type: ignore[no-untyped-def]
    """inductor, keeping the call_function nodes of each graph its inner compile is handed."""

    def inner(gm, example_inputs, **kwargs):  # type: ignore[no-untyped-def]
        graphs["backward" if kwargs.get("is_backward") else "forward"] = [
            n for n in gm.graph.nodes if n.op == "call_function"
        ]
        return compile_fx_inner(gm, example_inputs, **kwargs)

    return compile_fx(gm, example_inputs, inner_compile=inner)


def unmapped(graphs):  # type: ignore[no-untyped-def]
    """Backward nodes whose seq_nr names no forward node -- one in the forward graph, or one the
    partitioner recomputes in backward -- gradient accumulations (is_gradient_acc) and nodes
    with no seq_nr at all (another mapping kind: no_seq_nr) aside."""
    fw, bw = graphs["forward"], graphs.get("backward", [])
    forward = {n.meta.get("seq_nr") for n in fw + bw if not n.meta.get("autograd_backward")}
    autograd = [n for n in bw if n.meta.get("autograd_backward")]  # not forward ops recomputed
    unmapped = [n for n in autograd if n.meta.get("seq_nr") not in forward | {None}]
    return [n for n in unmapped if n.meta["seq_nr"] >= 0 and not n.meta.get("is_gradient_acc")]


def no_seq_nr(graphs):  # type: ignore[no-untyped-def]
    """Backward nodes with no seq_nr at all (None, or negative), gradient accumulations aside."""
    bw = graphs.get("backward", [])
    autograd = [n for n in bw if n.meta.get("autograd_backward")]  # not forward ops recomputed
    return [
        n
        for n in autograd
        if (n.meta.get("seq_nr") is None or n.meta["seq_nr"] < 0)
        and not n.meta.get("is_gradient_acc")
    ]


def order_differences(fn, graphs):  # type: ignore[no-untyped-def]
    """Eager's backward nodes of one call, by sequence number, against the compiled backward's
    seq_nr groups, each named by the forward ops with that seq_nr (plain aten nodes only)."""
    norm = lambda name: "".join(filter(str.isalnum, name.lower()))  # noqa: E731
    args = make_inputs()
    first = (torch.zeros((), requires_grad=True) * 1).grad_fn._sequence_nr() + 1  # type: ignore[union-attr]
    todo, nodes = [o.grad_fn for o in tree_leaves(fn(*args)) if isinstance(o, torch.Tensor)], {}
    while todo:  # the nodes the call made: not a non-leaf input's clone, not AccumulateGrad
        node = todo.pop()
        if node is not None and first <= node._sequence_nr() < 2**63 - 1:
            nodes[node._sequence_nr()] = type(node).__name__
            todo += [n for n, _ in node.next_functions]
    eager = [nodes[k] for k in sorted(nodes)]
    print("eager's backward nodes:", eager)
    bw, ops = graphs.get("backward", []), {}  # type: ignore[var-annotated]
    for n in graphs["forward"] + [n for n in bw if not n.meta.get("autograd_backward")]:
        op = str(n.target).removeprefix("aten.").split(".")[0]
        ops.setdefault(n.meta.get("seq_nr"), set()).add(norm(op))
    backward = [n for n in bw if n.meta.get("autograd_backward")]
    groups = sorted(
        {n.meta.get("seq_nr") for n in backward if not n.meta.get("is_gradient_acc")} - {None}
    )
    names = [norm(e.rsplit("Backward", 1)[0]) for e in eager if e[-1].isdigit()]  # aten nodes
    if len(names) != len(eager) or len(groups) != len(names) or not set(groups) <= set(ops):
        return []
    return [
        f"group {k} maps to forward {sorted(ops[g])}; eager's node {k} is {eager[k]}"
        for k, (g, name) in enumerate(zip(groups, names, strict=True))
        if any(x in o or o in x for o in ops[g] for x in names)  # else: ops derived for backward
        and not any(name in o or o in name for o in ops[g])
    ]


def ranked(tables):  # type: ignore[no-untyped-def]
    """seq_nr tables as ranks: the numbers themselves count every autograd node ever made."""
    order = sorted({s for t in tables.values() for s in t.values()})
    return {g: {n: order.index(s) for n, s in t.items()} for g, t in tables.items()}


# -- definitions the program needs --------------------------------------------------------------


def take_hook_log():  # type: ignore[no-untyped-def]
    """The hooks that ran since the last call, in order (the program's HOOK_LOG)."""
    out = list(HOOK_LOG)
    HOOK_LOG.clear()
    return out


def received(log, callee, prop):  # type: ignore[no-untyped-def]
    """What each run of `callee` in a HOOK_LOG received, as `prop` (arity, presence, shape,
    dtype, requires_grad, version) of each argument; the runs in a fixed order (which run
    comes first across tensors is not promised: Note [Pairing runs] in oracles/user_code.py)."""
    at = {"shape": 0, "dtype": 1, "requires_grad": 2, "version": 3}

    def seen(args):  # type: ignore[no-untyped-def]
        if prop == "arity":
            return len(args)
        if prop == "presence":
            return tuple("None" if a is None else "a tensor" for a in args)
        return tuple(None if a is None else a[at[prop]] for a in args)

    return sorted((seen(args) for name, *args in log if name == callee), key=repr)


def register_effect_op() -> None:
    """pyfy_gen::record: the ORDERED effectful custom op the program's effect statement calls
    (its body is emitted as top-level statements)."""
    from torch._library.effects import EffectType

    @torch.library.custom_op("pyfy_gen::record", mutates_args=())
    def record(x: torch.Tensor) -> None:
        EFFECTS.append(float(x.detach().float().sum()))

    record.register_fake(lambda x: None)
    torch.library._register_effectful_op("pyfy_gen::record", EffectType.ORDERED)


# -- emitting -------------------------------------------------------------------------------------


def source(fn: Callable[..., Any], docstring: bool = True) -> list[str]:
    """A helper's source as the script shows it: mypy's markers and blank lines dropped, and
    its docstring too where the script must be shorter."""
    text = re.sub(r"  # (type: ignore\[[\w-]+\]|noqa: E731)", "", inspect.getsource(fn))
    lines = text.splitlines()
    if not docstring:
        node = ast.parse(text).body[0]
        assert isinstance(node, ast.FunctionDef), f"expected a function, got {type(node).__name__}"
        doc = node.body[0]
        del lines[doc.lineno - 1 : doc.end_lineno]
    return [line for line in lines if line.strip()]


def body_source(fn: Callable[..., Any]) -> list[str]:
    """A function's body as top-level statements (signature and docstring dropped)."""
    text = textwrap.dedent(inspect.getsource(fn))
    node = ast.parse(text).body[0]
    assert isinstance(node, ast.FunctionDef), f"expected a function, got {type(node).__name__}"
    start = node.body[1].lineno - 1  # body[0] is the docstring
    return textwrap.dedent("\n".join(text.splitlines()[start:])).splitlines()


def function_from(text: str, name: str) -> list[str]:
    """The function `name` out of a block of source (generators._render's hook definitions)."""
    node = next(
        n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name
    )
    segment = ast.get_source_segment(text, node)
    assert segment is not None, f"expected the source of {name}, got none"
    return segment.splitlines()


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
