"""The Dynamo front-end: torch.compile(fullgraph=True) with a recording backend.

The backend records each graph input's source (`L['x']`, `L['self']._parameters['w']`,
`G['w']`), its dynamic dims and a snapshot, then compiles with aot_eager or Inductor through the
recorder's compilers. After capture the same callable is plain torch.compile: a call that fails
its guards recompiles unrecorded, as torch.compile would.
"""

from __future__ import annotations

import contextlib
import inspect
import unittest.mock
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.fx
import torch.utils._pytree as pytree

from ..errors import PythonifyUnsupported
from ..graph_render import arg_expr
from ..meta import FakeOutput, ScalarGuard
from .exprs import structure
from .grads import grad_snapshot, grad_stores
from .recorder import Recorder, plain_backend
from .result import GraphInputRecord, snapshot
from .scalars import GuardWatch, float_guards, refuse_returned_scalar, scalar_guards

__all__ = ["bind_names", "bound_locals", "break_frames", "capture_dynamo"]


def bind_names(fn: Callable[..., Any], is_module: bool) -> list[str]:
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


def _graph_inputs(gm: torch.fx.GraphModule) -> tuple[list[GraphInputRecord], list[Any]]:
    """Each placeholder's source (what Dynamo guards it as) and snapshot; and its fake value,
    whose sizes `_resolve_sizes` reads once the compile is done."""
    out, fakes = [], []
    for node in gm.graph.find_nodes(op="placeholder"):
        ga = node.meta.get("grapharg")
        if ga is None or ga.source is None:
            raise PythonifyUnsupported("a graph input without a source", node.name)
        name = ga.source.name
        as_tensor = getattr(ga, "pass_arg_as_tensor", None)
        if as_tensor is None:
            raise PythonifyUnsupported(
                f"torch {torch.__version__}", "GraphArg has no field 'pass_arg_as_tensor'"
            )
        out.append(
            GraphInputRecord(
                source=name() if callable(name) else name,
                example=ga.example,
                snapshot=snapshot(ga.example),
                # Note [Scalar arguments] in scalars.py: a float Dynamo passes as a tensor
                pass_arg_as_tensor=bool(as_tensor),
            )
        )
        fakes.append(node.meta.get("example_value"))
    return out, fakes


# Note [Size symbols]
# With dynamic shapes, Dynamo gives each dynamic size a symbol, and its guards (built from the
# ShapeEnv once the compile is done, AOTAutograd's tracing included) hold the relations the
# compile relied on: two sizes with one symbol must be equal, a symbol that tracing
# specialised (replaced by a number) is static, and each symbol stays in its value range
# (sizes 0 and 1 are specialised, so a dynamic size is >= 2). Checking each dynamic dim on its
# own lets a call whose inputs no longer share a size through the file's guards where
# torch.compile recompiles (found by a campaign: guard-unsound). So the sizes are read off the
# fake inputs after the compile, through the ShapeEnv's replacements.


def _resolve_sizes(
    records: list[GraphInputRecord], fakes: list[Any]
) -> tuple[list[GraphInputRecord], dict[str, tuple[int, int | None]]]:
    """The records with their dynamic dims and size symbols (Note [Size symbols]), and each
    symbol's value range (lower, upper or None: unbounded)."""
    ranges: dict[str, tuple[int, int | None]] = {}

    def number(s: Any) -> int | None:
        """The stride when the compile saw a number, None when an expression of sizes."""
        if not isinstance(s, torch.SymInt) or s.node.is_constant():
            return int(s)
        expr = s.node.shape_env.replace(s.node.expr)
        return int(expr) if expr.is_number else None

    def symbol(s: Any) -> str | None:
        if not isinstance(s, torch.SymInt) or s.node.is_constant():
            return None
        env = s.node.shape_env
        expr = env.replace(s.node.expr)
        if expr.is_number:
            return None  # specialised by tracing: a static size
        if not expr.is_Symbol:
            raise PythonifyUnsupported("a size that is an expression of other sizes", str(expr))
        name = str(expr)
        vr = env.var_to_range.get(expr)
        if vr is not None:
            ranges[name] = (_bound(vr.lower) or 0, _bound(vr.upper))
        return name

    out = []
    for r, fake in zip(records, fakes, strict=True):
        if isinstance(fake, torch.Tensor):
            named = [(d, symbol(s)) for d, s in enumerate(fake.shape)]
            dyn = tuple(d for d, n in named if n is not None)
            syms = tuple(n for _, n in named if n is not None)
            strides = tuple(number(s) for s in fake.stride()) if dyn else ()
            out.append(replace(r, dynamic_dims=dyn, symbols=syms, static_strides=strides))
        elif isinstance(fake, torch.SymInt):
            name = symbol(fake)
            out.append(replace(r, symbols=(name,) if name else ()))
        else:
            out.append(r)
    return out, ranges


@dataclass
class _Seen:
    """What the recording backend saw of the one graph it recorded."""

    inputs: list[GraphInputRecord] = field(default_factory=list)  # each placeholder's record
    fakes: list[Any] = field(default_factory=list)  # ... and its fake value (`_resolve_sizes`)
    outputs: list[Any] = field(default_factory=list)  # the graph's outputs at the latest call


# Note [A compile Dynamo restarts]
# ---------------------------------
# A pass inside the backend can ask Dynamo to trace the frame again: AOTAutograd's
# `tensorify_python_scalars` raises TensorifyScalarRestartAnalysis when a float it traced as a
# symbol was specialized, and Dynamo then re-traces with that float a constant and calls the
# backend once more, for the same one graph. The restarted compile built nothing torch runs,
# so the recorder forgets it (its wrappers, graphs, inputs) and the retry is the first graph
# again; counting it as a second would refuse a function torch compiles to one graph. Found
# on a graph-break region (`v0 = a0 * 2` after the whole function's compile had marked a float
# for specialization in torch's global TensorifyState).


def _recording_backend(rec: Recorder, backend: str, seen: _Seen) -> Callable[..., Any]:
    """The backend `capture_dynamo` compiles with: records the first graph's inputs into
    `seen`, compiles it through the recorder's compilers and wraps it to keep its outputs."""

    def record_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        if rec.done:
            # After capture the reference callable is plain torch.compile: a later call that
            # fails its guards recompiles, unrecorded, as torch.compile would.
            return plain_backend(gm, example_inputs, backend)
        rec.calls += 1
        if rec.calls > 1:
            raise PythonifyUnsupported("more than one compiled graph (recompile or graph break)")
        before = rec.snapshot()
        records, placeholder_fakes = _graph_inputs(gm)
        seen.inputs.extend(records)
        seen.fakes.extend(placeholder_fakes)
        ctx = _fakify(True) if rec.fakify_first_call else None
        try:
            inner = _compile_graph(gm, example_inputs, rec, backend)
        except torch._dynamo.exc.RestartAnalysis:
            # Note [A compile Dynamo restarts]: this graph was never compiled.
            rec.restore(before)
            rec.calls -= 1
            del seen.inputs[:], seen.fakes[:]
            raise
        if ctx is not None:  # Note [The fakified first call]
            rec.fake_first_outputs = _fake_first_call(ctx, inner, example_inputs)

        def run(*a: Any) -> Any:
            out = inner(*a)
            seen.outputs[:] = list(out) if isinstance(out, list | tuple) else [out]
            return out

        return run

    return record_backend


def _compile_graph(
    gm: torch.fx.GraphModule, example_inputs: list[Any], rec: Recorder, backend: str
) -> Callable[..., Any]:
    """The graph compiled by `backend` through the recorder's compilers."""
    if backend == "aot_eager":
        from torch._dynamo.backends.debugging import aot_eager

        compiled: Callable[..., Any] = aot_eager(
            gm,
            example_inputs,
            fw_compiler=rec.fx_compiler("forward"),
            bw_compiler=rec.fx_compiler("backward"),
        )
        return compiled
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs, inner_compile=rec.inductor_inner)  # type: ignore[return-value]


def _fake_first_call(
    ctx: Any, inner: Callable[..., Any], example_inputs: list[Any]
) -> list[FakeOutput]:
    """Spend the compiled graph's first call under the compile's fake mode, as DDPOptimizer
    does (Note [The fakified first call]); each output's shape, stride and dtype."""
    _fakify(False)
    mode = ctx.fake_mode  # the compile's, as DDPOptimizer's: real inputs made fake
    with mode, unittest.mock.patch.object(mode, "allow_non_fake_inputs", True):
        fake_args = [
            torch._dynamo.utils.to_fake_tensor(a, mode) if isinstance(a, torch.Tensor) else a
            for a in example_inputs
        ]
        try:
            out = inner(*fake_args)
        except Exception as exc:  # torch's own fakified call: not the file's to model
            raise PythonifyUnsupported(
                "a program whose fakified first call fails in torch (DDPOptimizer's protocol)",
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            ) from exc
    return [
        (tuple(o.shape), tuple(o.stride()), str(o.dtype)) if isinstance(o, torch.Tensor) else None
        for o in (out if isinstance(out, list | tuple) else [out])
    ]


def capture_dynamo(
    fn: Any,
    copies: tuple[Any, ...],
    rec: Recorder,
    backend: str,
    dynamic: bool,
    is_module: bool,
    arg_names: list[str],
) -> tuple[Callable[..., Any], list[GraphInputRecord], str]:
    """The capture's compile and call: the compiled callable, each graph input's record and
    the return value as an expression over `outs`, L and G."""
    seen = _Seen()
    import torch._dynamo

    backend_fn = _recording_backend(rec, backend, seen)
    watch = GuardWatch()  # Note [Scalar arguments] in scalars.py
    compiled = torch.compile(
        fn,
        backend=backend_fn,
        dynamic=dynamic,
        fullgraph=True,
        options={"guard_filter_fn": watch},
    )
    frame: list[tuple[Any, Any]] = []
    grads_before = grad_snapshot(fn, copies)  # Note [Gradients the graph stores]
    rec.module_call = is_module and _call_runs_outside(compiled, fn)
    forward = _watch_forward(fn, frame) if rec.module_call else contextlib.nullcontext()
    try:
        with forward:
            ret = compiled(*copies)
        if frame:  # Note [The forward frame of a module]
            rec.frame_args, ret = frame[0]
    except torch._dynamo.exc.Unsupported as exc:
        raise PythonifyUnsupported(
            "a graph break", str(exc).splitlines()[0], frames=break_frames(exc)
        ) from exc
    except torch._dynamo.exc.BackendCompilerFailed as exc:
        if isinstance(exc.inner_exception, PythonifyUnsupported):
            raise exc.inner_exception from exc
        raise
    except torch._dynamo.exc.InternalTorchDynamoError as exc:
        # Dynamo failing inside its own tracing under fullgraph=True (found: tensor_split by
        # a tensor of indices, PendingUnbackedSymbolNotFound, where torch.compile without
        # fullgraph breaks the graph and runs): no graph reached our backend, so nothing of
        # the wrappers to model. torch.compile is still judged against eager on the program.
        raise PythonifyUnsupported(
            "Dynamo failed while tracing under fullgraph", str(exc).splitlines()[0][:200]
        ) from exc
    rec.done = True
    if rec.calls == 0:
        raise PythonifyUnsupported("a program without a compiled graph", "Dynamo traced no ops")
    # Note [Scalar arguments] in scalars.py
    rec.scalar_guards = scalar_guards(watch.recorded(), arg_names)
    rec.scalar_guards += float_guards(_shape_env(seen.fakes), arg_names)
    seen.inputs[:], rec.symbol_ranges = _resolve_sizes(seen.inputs, seen.fakes)
    bound = bound_locals(fn, copies, is_module)
    out_expr = _output_expr(ret, seen.outputs, seen.inputs, bound, rec.scalar_guards)
    sources = {id(v): f"L[{k!r}]" for k, v in bound.items() if isinstance(v, torch.Tensor)}
    sources.update({id(r.example): r.source for r in seen.inputs})
    rec.grad_stores = grad_stores(grads_before, sources, seen.outputs)
    # The reference callable must not close over our recording state.
    return compiled, seen.inputs, out_expr


def break_frames(exc: Exception) -> tuple[tuple[str, int], ...]:
    """The user frames Dynamo was tracing when it broke, (filename, line), outermost first:
    `Unsupported.real_stack`, which Note [Regions] in regions.py places the break by."""
    stack = getattr(exc, "real_stack", None)
    if stack is None:
        raise PythonifyUnsupported(
            "a graph break on this torch (torch._dynamo.exc.Unsupported has no `real_stack`, "
            "the user frames pythonify places a break by)",
            type(exc).__name__,
        )
    return tuple((f.filename, f.lineno or 0) for f in stack)


# Note [The forward frame of a module]
# torch.compile of a user's module compiles `forward` only; the module's own __call__ runs
# around it (`_call_runs_outside`; the file does the same, `_call_module`). So what Dynamo's
# frame received and returned is not what the caller passed and got back: a full backward
# hook wraps both in BackwardHookFunction views. The return value is expressed, and hooks on
# inputs are looked for, on the frame's own arguments and return value, which a forward hook
# sees (registered first, and disabled for Dynamo, so it never becomes a frame of its own).
# A torch.nn module (or `wrap_top_frame`) is traced whole, hooks inlined: nothing runs around.


# Note [The fakified first call]
# FakifiedOutWrapper acts only where the compile runs under a TracingContext whose
# `fakify_first_call` is set: then the first call after the compile returns fake outputs with
# the compiled graph's strides. Only DDPOptimizer sets it, and it spends that first call itself,
# under fake mode, right after compiling each bucket's graph. `fakify_first_call=True` makes
# the recording backend do exactly that, so the wrapper is built and recorded, torch's fake
# outputs are kept (`Recorder.fake_first_outputs`) and later calls are real ones -- which is
# why the file's wrapper starts disarmed. (DDP itself splits the program into one graph per
# bucket, which the file does not model yet.)


def _fakify(on: bool) -> Any:
    """Set the compile's TracingContext.fakify_first_call; the context."""
    ctx = torch._guards.TracingContext.try_get()
    if ctx is None or not hasattr(ctx, "fakify_first_call"):
        raise PythonifyUnsupported(
            "fakify_first_call on this torch", "TracingContext has no fakify_first_call"
        )
    ctx.fakify_first_call = on
    return ctx


def _call_runs_outside(compiled: Any, m: torch.nn.Module) -> bool:
    """Whether torch.compile(m) runs m's own __call__ in eager around a compiled `forward`
    (OptimizedModule wraps `m.__call__`), or traces the whole call, hooks inlined (a torch.nn
    module, or `wrap_top_frame`)."""
    wrapped = getattr(getattr(compiled, "_forward", None) or compiled.forward, "__wrapped__", None)
    if wrapped is None:
        raise PythonifyUnsupported(
            "a torch.compile'd module whose call this torch wraps in an unknown way",
            "OptimizedModule.forward has no __wrapped__",
        )
    return inspect.ismethod(wrapped) and wrapped.__self__ is m


@contextlib.contextmanager
def _watch_forward(m: torch.nn.Module, frame: list[tuple[Any, Any]]) -> Iterator[None]:
    @torch._dynamo.disable  # type: ignore[misc]
    def seen(module: Any, args: Any, output: Any) -> None:
        frame.append((tuple(args), output))

    handle = m.register_forward_hook(seen, prepend=True)
    try:
        yield
    finally:
        handle.remove()


def bound_locals(fn: Any, args: tuple[Any, ...], is_module: bool) -> dict[str, Any]:
    names = bind_names(fn, is_module)
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


def _output_expr(
    ret: Any,
    graph_outputs: list[Any],
    inputs: list[GraphInputRecord],
    L: dict[str, Any],
    scalars: list[ScalarGuard],
) -> str:
    """Express Dynamo's return value in terms of `outs[i]`, L and G, by object identity.

    An int can be a constant (Dynamo returns it with LOAD_CONST) or a symbolic size, which
    the graph returns as an output (dynamic shapes): ints are matched to the graph's int
    outputs by value (`_int_outputs`), so the file returns the size the call computes, not
    the capture's value. An unspecialized scalar argument returned as it is is refused
    (`refuse_returned_scalar`)."""
    by_value = _int_outputs(ret, graph_outputs)

    def leaf(x: Any) -> str:
        if type(x) is int and x in by_value:
            return f"outs[{by_value[x]}]"
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
            refuse_returned_scalar(x, scalars)  # Note [Scalar arguments] in scalars.py
            return arg_expr(x)
        if isinstance(x, torch.SymInt | torch.SymFloat):
            raise PythonifyUnsupported("a symbolic scalar output")
        raise PythonifyUnsupported(f"an output of type {type(x).__name__}")

    return structure(ret, leaf)


def _int_outputs(ret: Any, graph_outputs: list[Any]) -> dict[int, int]:
    """value -> index of the graph output that returns it, for the ints of `ret` that equal a
    graph int output. Refused where one value could be either (more such ints in `ret` than
    graph outputs of that value, or two graph outputs of it): the capture cannot tell a
    constant from a size there."""
    ints = [o for o in graph_outputs if type(o) is int]
    if not ints:
        return {}
    returned = [x for x in pytree.tree_leaves(ret) if type(x) is int]
    out: dict[int, int] = {}
    for i, o in enumerate(graph_outputs):
        if type(o) is not int or o not in returned:
            continue
        if o in out or returned.count(o) > ints.count(o):
            raise PythonifyUnsupported(
                "an int output that is a constant or a symbolic size", f"value {o}"
            )
        out[o] = i
    return out


def _shape_env(fakes: list[Any]) -> Any:
    """The compile's ShapeEnv, off its fake inputs; None where it has none."""
    for f in fakes:
        if isinstance(f, torch.SymInt | torch.SymFloat):
            return f.node.shape_env
        mode = getattr(f, "fake_mode", None)
        if mode is not None and mode.shape_env is not None:
            return mode.shape_env
    return None


def _bound(b: Any) -> int | None:
    """A range bound as an int; None for an infinite one (torch's int_oo)."""
    try:
        return int(b) if b.is_finite else None
    except (TypeError, ValueError, AttributeError, OverflowError):
        return None
