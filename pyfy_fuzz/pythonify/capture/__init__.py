"""Capture: one torch.compile whose backend records everything pythonify needs.

The capture compiles under `CAPTURE_SETTINGS`, not torch's defaults: the backward is lowered
with the forward, so its graph exists when the file is written, and AOTAutograd's and the FX
graph caches are off, so every wrapper's post_compile runs where the recorder sees it. So
the callable it returns (`Capture.compiled`) is not what a user runs; pyfy-fuzz judges
torch.compile on a separate stock compile (Note [The stock reference] in
pyfy_fuzz/case/subjects/stock.py), and a corpus entry records these settings.

    result.py     Capture, graph input records and snapshots
    recorder.py   the post_compile patches (each wrapper's `record`, wrappers/) and graphs
    dynamo.py     the Dynamo front-end (torch.compile with a recording backend)
    aot.py        the AOT front-end (aot_function / compile_fx)
    hooks.py      hooks outside the graph: replayed after it (Note [Hooks on inputs]) or refused
    grads.py      the `.grad` Dynamo stores on inputs after it (Note [Gradients the graph stores])
    exprs.py      source expressions for argument paths and return structures
    scalars.py    Dynamo's guards on Python scalar arguments (Note [Scalar arguments])
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..errors import PythonifyUnsupported
from ..file_runtime import inlined_saved_hooks
from ..inputs import clone_preserving_aliasing
from .aot import capture_aot
from .dynamo import bind_names, bound_locals, capture_dynamo
from .exprs import path_expr
from .hooks import hook_snapshot, input_hook_replays
from .options import capture_options, option
from .recorder import Recorder, render_graphs
from .result import BACKENDS, FRONTENDS, Capture, GraphInputRecord, InputSnapshot, snapshot

__all__ = [
    "BACKENDS",
    "CAPTURE_SETTINGS",
    "FRONTENDS",
    "Capture",
    "GraphInputRecord",
    "InputSnapshot",
    "capture",
    "capture_options",
    "snapshot",
]


# What the capture's compile changes from torch's defaults, by qualified config name. The FX
# graph cache settings apply to inductor only.
CAPTURE_SETTINGS: dict[str, object] = {
    "torch._functorch.config.force_non_lazy_backward_lowering": True,
    "torch._functorch.config.enable_autograd_cache": False,
    "torch._inductor.config.fx_graph_cache": False,
    "torch._inductor.config.fx_graph_remote_cache": False,
}


def _settings(module: str) -> dict[str, Any]:
    prefix = module + "."
    return {k[len(prefix) :]: v for k, v in CAPTURE_SETTINGS.items() if k.startswith(prefix)}


def capture(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    backend: str,
    frontend: str,
    dynamic: bool,
    mode: str | None,
    fakify_first_call: bool = False,
) -> Capture:
    """Compile `fn` once on copies of `args` and record the wrapper stack."""
    fakify_first_call = _check_options(backend, frontend, mode, fakify_first_call)
    is_module = isinstance(fn, torch.nn.Module)
    arg_names = bind_names(fn, is_module)
    if len(args) != len(arg_names):
        raise ValueError(f"fn takes {len(arg_names)} arguments ({arg_names}), got {len(args)}")
    copies = clone_preserving_aliasing(args)
    arg_leaves = _arg_leaves(arg_names, copies)
    grad_enabled = torch.is_grad_enabled()
    inference_mode = torch.is_inference_mode_enabled()
    saved_hooks = inlined_saved_hooks()
    hooks_before = hook_snapshot(fn)
    rec = Recorder()
    rec.fakify_first_call = fakify_first_call
    compiled, inputs, out_expr = _compile_recording(
        fn, copies, rec, backend, frontend, dynamic, arg_names
    )
    frame_args = copies if rec.frame_args is None else rec.frame_args
    sources = {id(r.example): r.source for r in inputs}
    bound = bound_locals(fn, copies, is_module)
    hooks = input_hook_replays(fn, arg_names, frame_args, sources, bound, hooks_before)
    if hooks and frontend != "dynamo":
        raise PythonifyUnsupported("a hook registered on an input under frontend='aot'")
    if "RuntimeWrapper" not in rec.wrappers:
        raise PythonifyUnsupported("a program without a compiled graph", "nothing was compiled")
    training = "AOTDispatchAutograd" in rec.wrappers
    return Capture(
        backend=backend,
        frontend=frontend,
        dynamic=dynamic,
        mode=mode,
        device=_device_of(copies),
        compiled=compiled,
        inputs=inputs,
        output_expr=out_expr,
        hooks=hooks,
        grad_stores=rec.grad_stores,
        module_call=rec.module_call,
        fake_first_outputs=rec.fake_first_outputs,
        arg_names=arg_names,
        is_module=is_module,
        wrappers=rec.wrappers,
        graphs=render_graphs(rec),
        render=rec.render,
        grad_enabled=grad_enabled,
        inference_mode=inference_mode,
        saved_hooks=saved_hooks,
        arg_leaves=arg_leaves,
        static_input_indices=rec.static_input_indices,
        symbol_ranges=rec.symbol_ranges,
        scalar_guards=rec.scalar_guards,
        fx_meta={(role if training else "inference"): m for role, m in rec.fx_meta.items()},
    )


def _check_options(backend: str, frontend: str, mode: str | None, fakify: bool) -> bool:
    """Bad options raise ValueError; whether to fakify the first call (the argument, or the
    caller's `capture_options`)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if frontend not in FRONTENDS:
        raise ValueError(f"frontend must be one of {FRONTENDS}, got {frontend!r}")
    if mode not in (None, "default", "reduce-overhead"):
        raise ValueError(f"mode must be None, 'default' or 'reduce-overhead', got {mode!r}")
    fakify = fakify or bool(option("fakify_first_call"))
    if fakify and frontend != "dynamo":
        raise ValueError("fakify_first_call needs frontend='dynamo'")
    return fakify


def _compile_recording(
    fn: Callable[..., Any],
    copies: tuple[Any, ...],
    rec: Recorder,
    backend: str,
    frontend: str,
    dynamic: bool,
    arg_names: list[str],
) -> tuple[Callable[..., Any], list[GraphInputRecord], str]:
    """The one compile and capture run, with the wrappers patched, the backward compiled
    eagerly and no cache; the global RNG, grad mode and a module's state are put back after."""
    rng = torch.random.get_rng_state()
    grad_enabled = torch.is_grad_enabled()
    patches = _settings("torch._functorch.config")
    module_state = _save_module_state(fn) if isinstance(fn, torch.nn.Module) else []
    try:
        with rec.hooks(), torch._functorch.config.patch(patches), _inductor_cache_off(backend):
            if frontend == "dynamo":
                is_module = isinstance(fn, torch.nn.Module)
                return capture_dynamo(fn, copies, rec, backend, dynamic, is_module, arg_names)
            if isinstance(fn, torch.nn.Module):
                raise PythonifyUnsupported("frontend='aot' with an nn.Module", "pass a function")
            return capture_aot(fn, copies, rec, backend, dynamic, arg_names)
    finally:
        torch.random.set_rng_state(rng)
        torch.set_grad_enabled(grad_enabled)
        _restore_module_state(module_state)


# A parameter or buffer, its value, and its `.grad` object with that gradient's value.
_ModuleState = list[tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]]


def _save_module_state(m: torch.nn.Module) -> _ModuleState:
    """The capture run executes fn once; undo what it does to parameters and buffers: their
    values, and the `.grad` a backward inside the function stores or accumulates into (Note
    [Gradients the graph stores] in grads.py) -- the same gradient object, its value back."""
    with torch.no_grad():
        return [
            (
                t,
                t.detach().clone(),
                None if t.grad is None else (t.grad, t.grad.detach().clone()),
            )
            for t in [*m.parameters(), *m.buffers()]
        ]


def _restore_module_state(saved: _ModuleState) -> None:
    with torch.no_grad():
        for t, v, grad in saved:
            if t.shape == v.shape:
                t.copy_(v)
            if not t.is_leaf:
                continue
            if grad is None:
                t.grad = None
            else:
                grad[0].copy_(grad[1])
                t.grad = grad[0]


@contextlib.contextmanager
def _inductor_cache_off(backend: str) -> Iterator[None]:
    if backend != "inductor":
        yield
        return
    import torch._inductor.config as iconfig

    with iconfig.patch(_settings("torch._inductor.config")):
        yield


def _device_of(args: tuple[Any, ...]) -> str:
    for a in pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor):
            return a.device.type
    return "cpu"


def _arg_leaves(arg_names: list[str], args: tuple[Any, ...]) -> list[tuple[str, InputSnapshot]]:
    out = []
    for path, leaf in pytree.tree_flatten_with_path(args)[0]:
        snap = snapshot(leaf)
        if snap is not None:
            first, rest = path_expr(path)
            out.append((f"L[{arg_names[first]!r}]{rest}", snap))
    return out
