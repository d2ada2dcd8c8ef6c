"""Capture: one torch.compile whose backend records everything pythonify needs.

The same compile produces the reference callable (`Capture.compiled`) and the records, so the
generated file and torch.compile can only disagree where the generator models a wrapper
differently, which is what the fuzzer looks for.

Wrapper metadata is read by patching each wrapper class's `post_compile` for the duration of
the compile: the patch copies the wrapper's fields into plain IR records and then calls the
original. Nothing torch builds at runtime (wrapper closures, generated wrapper source) is kept.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
import torch.utils._pytree as pytree

from . import _compat as C
from . import wrappers as W
from .errors import PythonifyUnsupported
from .graph_render import FxNodeMeta, RenderContext, fx_node_meta, render_fx, seq_nr_table
from .inputs import clone_preserving_aliasing
from .meta import CompiledGraph, IRNode
from .wrappers import (
    autograd,
    debug_assert,
    dedupe,
    effect_tokens,
    fakified_out,
    rng,
    runtime,
    subclass,
    synthetic_base,
)

BACKENDS = ("aot_eager", "inductor")
FRONTENDS = ("dynamo", "aot")


@dataclass
class GraphInputRecord:
    """One input of the compiled graph: where it comes from and what it looked like."""

    source: str  # expression over L / G, e.g. "L['x']" or "L['self']._parameters['w']"
    example: Any  # the (copied) example value; identity is used to map outputs back
    dynamic_dims: tuple[int, ...] = ()
    snapshot: InputSnapshot | None = None  # taken before the capture call mutates anything


@dataclass(frozen=True)
class InputSnapshot:
    """A graph input as the compile saw it, before the capture run could mutate it."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    device: str
    requires_grad: bool
    cls: type
    obj_id: int
    storages: frozenset[tuple[int, str]]


def snapshot(x: Any) -> InputSnapshot | None:
    if not isinstance(x, torch.Tensor):
        return None
    return InputSnapshot(
        shape=tuple(int(s) for s in x.shape),
        stride=tuple(int(s) for s in x.stride()),
        dtype=str(x.dtype),
        device=str(x.device),
        requires_grad=bool(x.requires_grad),
        cls=type(x),
        obj_id=id(x),
        storages=frozenset(_storage_keys(x)),
    )


def _storage_keys(t: torch.Tensor) -> list[tuple[int, str]]:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if is_traceable_wrapper_subclass(t):
        attrs, _ = t.__tensor_flatten__()
        out: list[tuple[int, str]] = []
        for a in attrs:
            out += _storage_keys(getattr(t, a))
        return out
    try:
        return [(t.untyped_storage()._cdata, str(t.device))]
    except (RuntimeError, NotImplementedError):
        return []


@dataclass
class Capture:
    backend: str
    frontend: str
    dynamic: bool
    mode: str | None
    device: str
    compiled: Callable[..., Any]
    inputs: list[GraphInputRecord]
    output_expr: str
    arg_names: list[str]
    is_module: bool
    # torch wrapper name -> its recorded node (None: the wrapper returned the function as is)
    wrappers: dict[str, IRNode | None] = field(default_factory=dict)
    graphs: dict[str, CompiledGraph] = field(default_factory=dict)
    render: RenderContext = field(default_factory=RenderContext)
    grad_enabled: bool = True
    # Tensor leaves of the call's arguments (source, snapshot): Dynamo guards on how they alias
    # even when it dedupes them before AOTAutograd sees them.
    arg_leaves: list[tuple[str, InputSnapshot]] = field(default_factory=list)
    static_input_indices: list[int] = field(default_factory=list)
    # Graph name (inference / forward / backward) -> torch's node metadata for that graph.
    fx_meta: dict[str, tuple[FxNodeMeta, ...]] = field(default_factory=dict)


class _Recorder:
    """Collects wrapper records and graphs during one compile."""

    def __init__(self) -> None:
        self.wrappers: dict[str, IRNode | None] = {}
        self.static_input_indices: list[int] = []
        self.gms: list[tuple[str, torch.fx.GraphModule, str | None]] = []
        self.render = RenderContext()
        self.calls = 0
        self.done = False
        # torch's own view of each graph's nodes (seq_nr etc.), kept apart from what we render.
        self.fx_meta: dict[str, tuple[FxNodeMeta, ...]] = {}
        # id(AOTSyntheticBaseWrapper) -> how each synthetic base was made, read in pre_compile.
        self.base_kinds: dict[int, list[str]] = {}

    # -- graphs --------------------------------------------------------------------------
    def fx_compiler(self, role: str) -> Callable[..., Any]:
        from torch._dynamo.backends.debugging import boxed_nop

        def compile_(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            self.gms.append((role, gm, None))
            self.fx_meta[role] = fx_node_meta(gm)
            return boxed_nop(gm, example_inputs)

        return compile_

    def inductor_inner(self, gm: torch.fx.GraphModule, example_inputs: Any, **kwargs: Any) -> Any:
        from torch._inductor.compile_fx import compile_fx_inner

        role = "backward" if kwargs.get("is_backward") else "forward"
        seq_gm = _copy_seq_meta(gm)
        self.fx_meta[role] = fx_node_meta(gm)
        out = compile_fx_inner(gm, example_inputs, **kwargs)
        src = getattr(out, "source_code", None)
        if not isinstance(src, str):
            raise PythonifyUnsupported("inductor output without source_code", type(out).__name__)
        check = tuple(int(i) for i in getattr(out, "inputs_to_check", ()) or ())
        mutated = {int(i) for i in getattr(out, "mutated_input_idxs", ()) or ()}
        if getattr(out, "_defers_input_alignment", False):
            check = tuple(i for i in check if i in mutated)
        seq_gm._realign = (check, tuple(i for i in check if i in mutated))  # type: ignore[assignment]
        self.gms.append((role, seq_gm, src))
        return out

    # -- wrappers ------------------------------------------------------------------------
    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        classes = C.wrapper_classes(tuple(W.POST_COMPILE_FIELDS))
        saved: list[tuple[type, str, Any]] = []
        for name, cls in classes.items():
            saved.append((cls, "post_compile", cls.__dict__["post_compile"]))
            cls.post_compile = self._wrap_post_compile(name, cls.post_compile)  # type: ignore[attr-defined]
        sb = classes["AOTSyntheticBaseWrapper"]
        if "pre_compile" in sb.__dict__:  # else: base kinds unknown, no path variant
            saved.append((sb, "pre_compile", sb.__dict__["pre_compile"]))
            sb.pre_compile = self._wrap_synthetic_base_pre_compile(sb.pre_compile)  # type: ignore[attr-defined]
        ada = C.autograd_dispatch_class()
        saved.append((ada, "post_compile", ada.__dict__["post_compile"]))
        orig_ada = ada.post_compile  # type: ignore[attr-defined]

        def ada_post_compile(spec: Any) -> Any:
            self._record_autograd(spec)
            return orig_ada(spec)

        ada.post_compile = staticmethod(ada_post_compile)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            for cls, attr, orig in saved:
                setattr(cls, attr, orig)

    def _wrap_post_compile(self, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self

        @functools.wraps(orig)
        def post_compile(
            self: Any, compiled_fn: Any, aot_config: Any, *, runtime_metadata: Any
        ) -> Any:
            C.check_fields(name, self, W.POST_COMPILE_FIELDS[name])
            C.check_fields("ViewAndMutationMeta", runtime_metadata, C.META_FIELDS)
            recorder._record(name, self, aot_config, runtime_metadata)
            return orig(self, compiled_fn, aot_config, runtime_metadata=runtime_metadata)

        return post_compile

    def _wrap_synthetic_base_pre_compile(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        """Read which kind of synthetic base torch made: only pre_compile sees the inputs
        (Note [How a synthetic base is made] in wrappers/synthetic_base.py)."""
        recorder = self

        @functools.wraps(orig)
        def pre_compile(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig(self, *args, **kwargs)
            recorder.base_kinds[id(self)] = synthetic_base.base_kinds(out)
            return out

        return pre_compile

    def _record(self, name: str, w: Any, aot_config: Any, meta: Any) -> None:
        """Each wrapper's own `record` (wrappers/) builds its node from torch's metadata."""
        if name in self.wrappers and name != "FakifiedOutWrapper":
            raise PythonifyUnsupported(
                "more than one compiled region", f"{name} ran twice in one compile"
            )
        node: IRNode | None
        if name == "AOTSyntheticBaseWrapper":
            node = synthetic_base.record(w, aot_config, meta, self.base_kinds.get(id(w), []))
        else:
            node = _RECORDERS[name](w, aot_config, meta)
        if name == "RuntimeWrapper":
            self.static_input_indices = list(meta.static_input_indices or [])
        self.wrappers[name] = node

    def _record_autograd(self, spec: Any) -> None:
        C.check_fields("AOTDispatchAutogradCompileSpec", spec, autograd.FIELDS)
        self.wrappers[autograd.AOTAutogradWrapperNode.wrapper] = autograd.record(spec)


# runtime_wrappers class name -> its model's `record` (AOTSyntheticBaseWrapper also reads what
# pre_compile saw, and AOTDispatchAutograd records from its compile spec).
_RECORDERS: dict[str, Callable[[Any, Any, Any], IRNode | None]] = {
    "RuntimeWrapper": runtime.record,
    "EffectTokensWrapper": effect_tokens.record,
    "AOTDispatchSubclassWrapper": subclass.record,
    "FunctionalizedRngRuntimeWrapper": rng.record,
    "FakifiedOutWrapper": fakified_out.record,
    "AOTDedupeWrapper": dedupe.record,
    "DebugAssertWrapper": debug_assert.record,
}


def _plain_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], backend: str) -> Any:
    if backend == "aot_eager":
        from torch._dynamo.backends.debugging import aot_eager

        return aot_eager(gm, example_inputs)
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


def _copy_seq_meta(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Inductor mutates the graph it lowers; keep the seq_nr view of it as handed to us."""
    holder = torch.fx.GraphModule(gm, torch.fx.Graph())
    holder._seq = seq_nr_table(gm)  # type: ignore[assignment]
    return holder


# ------------------------------------------------------------------------------ front-ends


def _bind_names(fn: Callable[..., Any], is_module: bool) -> list[str]:
    target = fn.forward if is_module else fn  # type: ignore[attr-defined]
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise PythonifyUnsupported("a callable without a signature", repr(fn)) from exc
    names = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.KEYWORD_ONLY):
            raise PythonifyUnsupported(f"keyword-only or **kwargs parameter {p.name!r}")
        if p.kind == p.VAR_POSITIONAL:
            raise PythonifyUnsupported(f"*args parameter {p.name!r}")
        names.append(p.name)
    return names


def _self_name(fn: Any) -> str:
    params = list(inspect.signature(type(fn).forward).parameters)
    return params[0] if params else "self"


def capture(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    backend: str,
    frontend: str,
    dynamic: bool,
    mode: str | None,
) -> Capture:
    """Compile `fn` once on copies of `args` and record the wrapper stack."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if frontend not in FRONTENDS:
        raise ValueError(f"frontend must be one of {FRONTENDS}, got {frontend!r}")
    if mode not in (None, "default", "reduce-overhead"):
        raise ValueError(f"mode must be None, 'default' or 'reduce-overhead', got {mode!r}")
    is_module = isinstance(fn, torch.nn.Module)
    if isinstance(fn, torch.nn.Module):
        _refuse_backward_module_hooks(fn)
    arg_names = _bind_names(fn, is_module)
    if len(args) != len(arg_names):
        raise ValueError(f"fn takes {len(arg_names)} arguments ({arg_names}), got {len(args)}")
    copies = clone_preserving_aliasing(args)
    arg_leaves = _arg_leaves(arg_names, copies)
    rec = _Recorder()
    rng = torch.random.get_rng_state()
    grad_enabled = torch.is_grad_enabled()
    fconfig = torch._functorch.config
    patches: dict[str, Any] = dict(
        force_non_lazy_backward_lowering=True, enable_autograd_cache=False
    )
    module_state = _save_module_state(fn) if isinstance(fn, torch.nn.Module) else []
    hooks_before = _hook_counts(fn)
    try:
        with rec.hooks(), fconfig.patch(**patches), _inductor_cache_off(backend):
            if frontend == "dynamo":
                compiled, inputs, out_expr = _capture_dynamo(
                    fn, copies, rec, backend, dynamic, is_module
                )
            else:
                if is_module:
                    raise PythonifyUnsupported(
                        "frontend='aot' with an nn.Module", "pass a function"
                    )
                compiled, inputs, out_expr = _capture_aot(
                    fn, copies, rec, backend, dynamic, arg_names
                )
    finally:
        torch.random.set_rng_state(rng)
        torch.set_grad_enabled(grad_enabled)
        _restore_module_state(module_state)
    _refuse_input_hooks(arg_names, copies, fn, hooks_before)
    cap = Capture(
        backend=backend,
        frontend=frontend,
        dynamic=dynamic,
        mode=mode,
        device=_device_of(copies),
        compiled=compiled,
        inputs=inputs,
        output_expr=out_expr,
        arg_names=arg_names,
        is_module=is_module,
        wrappers=rec.wrappers,
        render=rec.render,
        grad_enabled=grad_enabled,
        arg_leaves=arg_leaves,
    )
    cap.graphs = _render_graphs(rec, cap)
    training = "AOTDispatchAutograd" in rec.wrappers
    cap.fx_meta = {(role if training else "inference"): m for role, m in rec.fx_meta.items()}
    if "RuntimeWrapper" not in rec.wrappers:
        raise PythonifyUnsupported("a program without a compiled graph", "nothing was compiled")
    cap.static_input_indices = rec.static_input_indices
    return cap


def _refuse_backward_module_hooks(m: torch.nn.Module) -> None:
    """Full backward hooks wrap the module's inputs and outputs in BackwardHookFunction views
    outside the graph; the file does not replay that wrapping (an output returned as the input
    itself, where torch.compile returns a view of it, was found by the aliasing oracle)."""
    for name, sub in m.named_modules():
        if sub._backward_hooks or sub._backward_pre_hooks:
            raise PythonifyUnsupported("nn.Module full backward hooks", name or type(m).__name__)


def _hook_counts(fn: Any) -> dict[int, int]:
    if not isinstance(fn, torch.nn.Module):
        return {}
    return {id(p): len(getattr(p, "_backward_hooks", None) or {}) for p in fn.parameters()}


def _refuse_input_hooks(
    arg_names: list[str], copies: tuple[Any, ...], fn: Any, hooks_before: dict[int, int]
) -> None:
    """A hook the function registers on an input or parameter (`x.register_hook(h)`) is a side
    effect Dynamo replays after the graph; the file does not model it, and dropping it would
    change gradients silently (found by the grads oracle), so refuse."""
    named = [(n, t) for n, t in zip(arg_names, copies, strict=True)]
    if isinstance(fn, torch.nn.Module):
        named += [
            (f"self.{n}", p)
            for n, p in fn.named_parameters()
            if len(getattr(p, "_backward_hooks", None) or {}) > hooks_before.get(id(p), 0)
        ]
    for name, t in named:
        for leaf in pytree.tree_leaves(t):
            if isinstance(leaf, torch.Tensor) and getattr(leaf, "_backward_hooks", None):
                raise PythonifyUnsupported(
                    "a tensor hook registered on an input (register_hook)", name
                )


def _save_module_state(m: torch.nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The capture run executes fn once; undo what it does to parameters and buffers."""
    with torch.no_grad():
        return [(t, t.detach().clone()) for t in [*m.parameters(), *m.buffers()]]


def _restore_module_state(saved: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    with torch.no_grad():
        for t, v in saved:
            if t.shape == v.shape:
                t.copy_(v)


@contextlib.contextmanager
def _inductor_cache_off(backend: str) -> Iterator[None]:
    if backend != "inductor":
        yield
        return
    import torch._inductor.config as iconfig

    with iconfig.patch(fx_graph_cache=False, fx_graph_remote_cache=False):
        yield


def _device_of(args: tuple[Any, ...]) -> str:
    for a in pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor):
            return a.device.type
    return "cpu"


def _capture_dynamo(
    fn: Any, copies: tuple[Any, ...], rec: _Recorder, backend: str, dynamic: bool, is_module: bool
) -> tuple[Callable[..., Any], list[GraphInputRecord], str]:
    from torch._dynamo.backends.debugging import aot_eager

    graph_inputs: list[GraphInputRecord] = []
    graph_outputs: list[Any] = []

    def record_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        if rec.done:
            # After capture the reference callable is plain torch.compile: a later call that
            # fails its guards recompiles, unrecorded, as torch.compile would.
            return _plain_backend(gm, example_inputs, backend)
        rec.calls += 1
        if rec.calls > 1:
            raise PythonifyUnsupported("more than one compiled graph (recompile or graph break)")
        for node in gm.graph.find_nodes(op="placeholder"):
            ga = node.meta.get("grapharg")
            if ga is None or ga.source is None:
                raise PythonifyUnsupported("a graph input without a source", node.name)
            name = ga.source.name
            fake = node.meta.get("example_value")
            dyn: tuple[int, ...] = ()
            if isinstance(fake, torch.Tensor):
                dyn = tuple(
                    d
                    for d, s in enumerate(fake.shape)
                    if isinstance(s, torch.SymInt) and not s.node.is_constant()
                )
            graph_inputs.append(
                GraphInputRecord(
                    source=name() if callable(name) else name,
                    example=ga.example,
                    dynamic_dims=dyn,
                    snapshot=snapshot(ga.example),
                )
            )
        if backend == "aot_eager":
            inner = aot_eager(
                gm,
                example_inputs,
                fw_compiler=rec.fx_compiler("forward"),
                bw_compiler=rec.fx_compiler("backward"),
            )
        else:
            from torch._inductor.compile_fx import compile_fx

            inner = compile_fx(gm, example_inputs, inner_compile=rec.inductor_inner)  # type: ignore[assignment]

        def run(*a: Any) -> Any:
            out = inner(*a)
            graph_outputs[:] = list(out) if isinstance(out, list | tuple) else [out]
            return out

        return run

    import torch._dynamo

    compiled = torch.compile(fn, backend=record_backend, dynamic=dynamic, fullgraph=True)
    try:
        ret = compiled(*copies)
    except torch._dynamo.exc.Unsupported as exc:
        raise PythonifyUnsupported("a graph break", str(exc).splitlines()[0]) from exc
    except torch._dynamo.exc.BackendCompilerFailed as exc:
        if isinstance(exc.inner_exception, PythonifyUnsupported):
            raise exc.inner_exception from exc
        raise
    rec.done = True
    if rec.calls == 0:
        raise PythonifyUnsupported("a program without a compiled graph", "Dynamo traced no ops")
    bound = _bound_locals(fn, copies, is_module)
    out_expr = _output_expr(ret, graph_outputs, graph_inputs, bound)
    # The reference callable must not close over our recording state.
    return compiled, graph_inputs, out_expr


def _bound_locals(fn: Any, args: tuple[Any, ...], is_module: bool) -> dict[str, Any]:
    names = _bind_names(fn, is_module)
    L = dict(zip(names, args, strict=True))
    target = type(fn).forward if is_module else fn
    if is_module:
        # Dynamo traces the module call through a frame whose locals are fn/args/kwargs
        # (torch 2.13); older frames name forward's own `self`. Offer both.
        L[_self_name(fn)] = fn
        L.update(fn=fn, args=tuple(args), kwargs={})
    code = getattr(target, "__code__", None)
    closure = getattr(target, "__closure__", None) or ()
    if code is not None:
        for var, cell in zip(code.co_freevars, closure, strict=False):
            with contextlib.suppress(ValueError):
                L[var] = cell.cell_contents
    return L


def _capture_aot(
    fn: Callable[..., Any],
    copies: tuple[Any, ...],
    rec: _Recorder,
    backend: str,
    dynamic: bool,
    arg_names: list[str],
) -> tuple[Callable[..., Any], list[GraphInputRecord], str]:
    flat, spec = pytree.tree_flatten(copies)
    paths = [_path_expr(p) for p, _ in pytree.tree_flatten_with_path(copies)[0]]
    inputs = [
        GraphInputRecord(
            source=f"L[{arg_names[int(p[0])]!r}]{p[1]}",
            example=a,
            dynamic_dims=tuple(range(a.dim())) if dynamic and isinstance(a, torch.Tensor) else (),
            snapshot=snapshot(a),
        )
        for p, a in zip(paths, flat, strict=True)
    ]
    for r, a in zip(inputs, flat, strict=True):
        if not isinstance(a, torch.Tensor):
            raise PythonifyUnsupported("frontend='aot' with a non-tensor argument", r.source)

    def flat_fn(*leaves: Any) -> Any:
        return fn(*pytree.tree_unflatten(list(leaves), spec))

    if backend == "aot_eager":
        from functorch.compile import min_cut_rematerialization_partition
        from torch._functorch.aot_autograd import aot_function

        compiled_flat = aot_function(
            flat_fn,
            fw_compiler=rec.fx_compiler("forward"),
            bw_compiler=rec.fx_compiler("backward"),
            partition_fn=min_cut_rematerialization_partition,
            keep_inference_input_mutations=True,
            dynamic=dynamic,
        )
    else:
        from torch._inductor.compile_fx import compile_fx

        gm = _trace_flat(flat_fn, len(flat))
        inner: Any = compile_fx(gm, list(flat), inner_compile=rec.inductor_inner)

        def compiled_flat(*leaves: Any) -> Any:
            return inner(*leaves)

    def compiled(*args: Any) -> Any:
        return compiled_flat(*pytree.tree_leaves(args))

    # Saved tensors are packed as copies for this one run, so that the backward forced below
    # compiles even where torch's own runtime would refuse it (a saved input that the forward
    # mutates: the file then reproduces that refusal, as torch.compile does).
    with torch.autograd.graph.saved_tensors_hooks(_pack_copy, _unpack_copy):
        ret = compiled(*copies)
        graph_outputs = pytree.tree_leaves(ret)
        _force_backward(rec, graph_outputs)
    out_expr = _aot_output_expr(ret, graph_outputs)
    return compiled, inputs, out_expr


def _force_backward(rec: _Recorder, outs: list[Any]) -> None:
    """aot_function compiles the backward lazily, whatever force_non_lazy_backward_lowering
    says; one backward through the capture run's outputs (on our copies) compiles it now."""
    if "AOTDispatchAutograd" not in rec.wrappers or any(r == "backward" for r, _, _ in rec.gms):
        return
    diff = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    if diff:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])


def _pack_copy(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone()


def _unpack_copy(t: torch.Tensor) -> torch.Tensor:
    return t


def _arg_leaves(arg_names: list[str], args: tuple[Any, ...]) -> list[tuple[str, InputSnapshot]]:
    out = []
    for path, leaf in pytree.tree_flatten_with_path(args)[0]:
        snap = snapshot(leaf)
        if snap is not None:
            first, rest = _path_expr(path)
            out.append((f"L[{arg_names[first]!r}]{rest}", snap))
    return out


def _trace_flat(flat_fn: Callable[..., Any], n: int) -> torch.fx.GraphModule:
    """A torch.fx graph of the flat function, as compile_fx expects from a front-end."""
    names = [f"a{i}" for i in range(n)]
    src = f"def f({', '.join(names)}):\n    return flat_fn({', '.join(names)})\n"
    ns: dict[str, Any] = {"flat_fn": flat_fn}
    exec(src, ns)  # noqa: S102 - a positional-arity shim, not user code
    gm = torch.fx.symbolic_trace(ns["f"])
    return gm


def _path_expr(path: tuple[Any, ...]) -> tuple[int, str]:
    first = path[0]
    rest = "".join(f"[{k.idx!r}]" if hasattr(k, "idx") else f"[{k.key!r}]" for k in path[1:])
    return (first.idx, rest)  # type: ignore[return-value]


def _output_expr(
    ret: Any, graph_outputs: list[Any], inputs: list[GraphInputRecord], L: dict[str, Any]
) -> str:
    """Express Dynamo's return value in terms of `outs[i]`, L and G, by object identity."""

    def leaf(x: Any) -> str:
        if isinstance(x, torch.Tensor):
            for i, o in enumerate(graph_outputs):
                if o is x:
                    return f"outs[{i}]"
            for r in inputs:
                if r.example is x:
                    return r.source
            for k, v in L.items():
                if v is x:
                    return f"L[{k!r}]"
            raise PythonifyUnsupported(
                "an output tensor that is neither a graph output nor an input",
                "Dynamo built it outside the graph",
            )
        if x is None or isinstance(x, bool | int | float | str):
            if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
                return f"float({str(x)!r})"
            return repr(x)
        if isinstance(x, torch.SymInt | torch.SymFloat):
            raise PythonifyUnsupported("a symbolic scalar output")
        raise PythonifyUnsupported(f"an output of type {type(x).__name__}")

    return _structure(ret, leaf)


def _aot_output_expr(ret: Any, graph_outputs: list[Any]) -> str:
    counter = iter(range(len(graph_outputs)))
    return _structure(ret, lambda x: f"outs[{next(counter)}]")


def _structure(x: Any, leaf: Callable[[Any], str]) -> str:
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        inner = ", ".join(_structure(v, leaf) for v in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, list):
        return "[" + ", ".join(_structure(v, leaf) for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(v, leaf)}" for k, v in x.items()) + "}"
    return leaf(x)


def _render_graphs(rec: _Recorder, cap: Capture) -> dict[str, CompiledGraph]:
    training = "AOTDispatchAutograd" in rec.wrappers
    out: dict[str, CompiledGraph] = {}
    for role, gm, src in rec.gms:
        name = role if training else "inference"
        if name in out:
            raise PythonifyUnsupported("more than one compiled graph per role", name)
        fn_name = f"compiled_{name}"
        if src is None:
            out[name] = render_fx(gm, name, fn_name, rec.render)
        else:
            seq, acc = gm._seq  # type: ignore[misc]
            realign, writeback = gm._realign  # type: ignore[misc]
            out[name] = CompiledGraph(
                name=name,
                kind="inductor",
                source=src,
                seq_nr=seq,
                grad_acc=acc,
                realign_inputs=realign,
                realign_writeback=writeback,
            )
    if training and "backward" not in out:
        raise PythonifyUnsupported("a training graph whose backward did not compile at capture")
    return out
