"""The generated file's own runtime: binding arguments, checking guards, loading graphs.

These helpers belong to no wrapper: every file needs them around the wrapper stack. Like the
wrappers' runtime helpers they are real code copied verbatim into the file (Note [Runtime
helpers are real code] in wrappers/source.py); `RUNTIME` lists them in the order they appear.
"""

from __future__ import annotations

import base64
import importlib
import io
from typing import Any

import torch

from .errors import PythonifyGuardError

__all__ = [
    "ARG_NAMES",
    "bind",
    "inlined_saved_hooks",
    "INPUT_SOURCES",
    "IS_MODULE",
    "RUNTIME",
]

# --------------------------------------------------------------------------- defined by the file
# The generated file's guard and entry sections define these; declared here (never emitted) so
# that the helpers below type-check as they will run.
ARG_NAMES: list[str] = []
IS_MODULE = False
INPUT_SOURCES: list[str] = []
_GRAD_ENABLED = True
_INFERENCE_MODE = False
_SAVED_HOOKS: tuple[str, str] | None = None
_INFERENCE_GUARDS: list[tuple[int, str, bool]] = []
_TENSOR_GUARDS: list[Any] = []
_ARG_TENSOR_GUARDS: list[Any] = []
_LEAF_GUARDS: list[tuple[int, str, bool]] = []
_SAME_OBJECT: list[list[int]] = []
_SHARED_STORAGE: list[list[int]] = []
_ALIAS_LAYOUT: list[list[tuple[int, bool, int]]] = []
_SIZE_SYMBOLS: dict[str, list[tuple[int, int | None]]] = {}
_SYMBOL_RANGES: dict[str, tuple[int, int | None]] = {}
_SCALAR_GUARDS: list[tuple[str, type, str, Any]] = []


# --------------------------------------------------------------------------- runtime (emitted)


def _as_list(outs):
    if isinstance(outs, tuple):
        return list(outs)
    if isinstance(outs, list):
        return outs
    return [outs]


def _dtype(name):
    return getattr(torch, name.split(".")[-1])


def _import_type(path):
    module, _, qualname = path.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _is_wrapper_subclass(x):
    return type(x) is not torch.Tensor and hasattr(x, "__tensor_flatten__")


def _load_inductor_graph(source, name, realign=(), writeback=()):
    """Exec Inductor's output module and return its `call` in the boxed convention. Inputs in
    `realign` were assumed 16-byte aligned: misaligned ones are cloned, and those in `writeback`
    (mutated) are copied back after the call, as Inductor's runtime does."""
    import types

    mod = types.ModuleType(f"pythonify_inductor_{name}")
    mod.__file__ = f"<pythonify inductor {name}>"
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    graph_call = mod.call

    def run(args):
        args = list(args)
        old, new = [], []
        for i in realign:
            t = args[i]
            if t.data_ptr() % 16:
                clone = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
                clone.copy_(t)
                args[i] = clone
                if i in writeback:
                    old.append(t)
                    new.append(clone)
        outs = graph_call(args)
        for o, n in zip(old, new, strict=False):
            o.copy_(n)
        return outs

    return run


def _load_constants(encoded):
    return {
        k: torch.load(io.BytesIO(base64.b64decode(v)), weights_only=True)
        for k, v in encoded.items()
    }


# What inputs that are not arguments (self, closure cells, globals) resolve against.
_BOUND = {"fn": None}


def bind(fn):
    """Resolve parameters, buffers, globals and closure cells against `fn` at call time."""
    _BOUND["fn"] = fn


def _call_module(forward, args):
    """torch.compile(module) compiles `forward` only: the module's own `__call__` -- its hooks,
    the BackwardHook wrapping of a full backward hook's inputs and outputs -- runs around the
    graph in eager Python (OptimizedModule compiles `orig_mod.__call__`, whose nn.Module frames
    Dynamo skips). So the file, once bound to the module, calls it with this forward."""
    module = _BOUND["fn"]
    if module is None:
        return forward(*args)
    module.forward = forward  # an instance attribute: this call's forward
    try:
        return module(*args)
    finally:
        del module.forward


def _bind_locals(args):
    if len(args) != len(ARG_NAMES):
        raise TypeError(f"call() takes {len(ARG_NAMES)} arguments {ARG_NAMES}, got {len(args)}")
    L = dict(zip(ARG_NAMES, args, strict=False))
    fn = _BOUND["fn"]
    G: dict = {}
    if fn is not None:
        target = type(fn).forward if IS_MODULE else fn
        if IS_MODULE:
            import inspect

            params = list(inspect.signature(target).parameters)
            L[params[0]] = fn
            # Dynamo traces a module call through a frame with locals fn/args/kwargs.
            L.update(fn=fn, args=tuple(args), kwargs={})
        code = getattr(target, "__code__", None)
        cells = getattr(target, "__closure__", None) or ()
        if code is not None:
            for var, cell in zip(code.co_freevars, cells, strict=False):
                try:
                    L.setdefault(var, cell.cell_contents)
                except ValueError:
                    pass
        G = getattr(target, "__globals__", {})
    return L, G


def _over_globals(factory, G):
    """A hook's factory rebuilt over the function's globals (the file's own when unbound), so
    the hook it makes resolves names as the function's code does (Note [Hooks on inputs])."""
    import types

    return types.FunctionType(factory.__code__, G or globals(), factory.__name__)


def _storage_keys(t):
    if _is_wrapper_subclass(t):
        attrs, _ = t.__tensor_flatten__()
        keys = set()
        for a in attrs:
            keys |= _storage_keys(getattr(t, a))
        return keys
    try:
        return {(t.untyped_storage()._cdata, str(t.device))}
    except (RuntimeError, NotImplementedError):
        return set()


def inlined_saved_hooks():
    """The code (pack, unpack) of the saved-tensor hooks on top now where both are
    GraphModules, which AOTAutograd inlines into the graphs it compiles (torch's
    saved_tensors_hooks_are_inlineable), else None: the state Dynamo's
    AUTOGRAD_SAVED_TENSORS_HOOKS guard holds (Note [Saved-tensor hooks inlined] in
    wrappers/runtime.py). A torch without the query inlines none."""
    top = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
    hooks = top(True) if top is not None else None
    if not hooks or not all(isinstance(h, torch.fx.GraphModule) for h in hooks):
        return None
    return str(hooks[0].code), str(hooks[1].code)


def _check_autograd_state(flat):
    """Grad mode, inference mode, inlined saved-tensor hooks and inference tensors, as at
    compile time (Dynamo guards the first three as global state, the last through each
    input's dispatch keys)."""
    if torch.is_grad_enabled() != _GRAD_ENABLED:
        raise PythonifyGuardError(
            f"grad mode: compiled with grad enabled={_GRAD_ENABLED}, "
            f"called with {torch.is_grad_enabled()}"
        )
    if torch.is_inference_mode_enabled() != _INFERENCE_MODE:
        raise PythonifyGuardError(
            f"inference mode: compiled with it {'on' if _INFERENCE_MODE else 'off'}, "
            f"called with it {'off' if _INFERENCE_MODE else 'on'}"
        )
    inlined = inlined_saved_hooks()
    if inlined != _SAVED_HOOKS:
        said = {None: "no GraphModule hooks", _SAVED_HOOKS: "those hooks"}
        raise PythonifyGuardError(
            f"saved-tensor hooks: compiled with {said[_SAVED_HOOKS]} on top, "
            f"called with {said.get(inlined, 'other GraphModule hooks')}"
        )
    for i, src, was_inference in _INFERENCE_GUARDS:  # not a tensor: the tensor guards say so
        x = flat[i]
        if isinstance(x, torch.Tensor) and x.is_inference() != was_inference:
            raise PythonifyGuardError(
                f"{src}: compiled for {'an' if was_inference else 'a non-'}inference tensor"
            )


def _check_scalars(readers):
    """The Python scalars Dynamo guarded, each read by its reader: the exact type; under
    CONSTANT_MATCH / EQUALS_MATCH the value, NaN equal to NaN; under NOT_NAN a float that is
    not NaN (Note [Scalar arguments])."""
    for (src, typ, guard, value), read in zip(_SCALAR_GUARDS, readers, strict=True):
        try:
            v = read()
        except (KeyError, AttributeError, IndexError, TypeError) as exc:
            raise PythonifyGuardError(f"{src}: cannot read it ({exc!r})") from exc
        if type(v) is not typ:
            raise PythonifyGuardError(
                f"{src}: expected {typ.__name__} ({guard}), got {type(v).__name__}"
            )
        if guard == "NOT_NAN":
            if v == v:
                continue
            raise PythonifyGuardError(f"{src}: expected a float that is not NaN ({guard})")
        if guard == "TYPE_MATCH" or v == value or (typ is float and v != v and value != value):
            continue
        raise PythonifyGuardError(f"{src}: expected {value!r} ({guard}), got {v!r}")


def _as_tensor_fullprec(v):
    """A Python scalar Dynamo passes to the graph as a tensor, made as its bytecode makes it
    (torch._as_tensor_fullprec): full precision, on the CPU (Note [Scalar arguments])."""
    if type(v) is float:
        return torch.as_tensor(v, dtype=torch.float64, device="cpu")
    if type(v) is int:
        return torch.as_tensor(v, dtype=torch.int64, device="cpu")
    return torch.as_tensor(v)


def _check_guards(flat):
    """Raise PythonifyGuardError, naming the input, where `flat` breaks a compile assumption."""
    _check_autograd_state(flat)
    _check_tensors(flat, _TENSOR_GUARDS)
    _check_rest(flat)


def _check_tensors(xs, guards):
    """Each guarded tensor of `xs` as the compile saw it: type, dtype, device, shape, stride,
    requires_grad (the graph inputs, or the arguments no graph takes)."""
    for i, src, subclass, dtype, device, shape, stride, requires_grad in guards:
        x = xs[i]
        if not isinstance(x, torch.Tensor):
            raise PythonifyGuardError(f"{src}: expected a Tensor, got {type(x).__name__}")
        if subclass is not None and type(x) is not subclass:
            raise PythonifyGuardError(
                f"{src}: expected {subclass.__name__}, got {type(x).__name__}"
            )
        if subclass is None and _is_wrapper_subclass(x):
            raise PythonifyGuardError(f"{src}: expected a plain Tensor, got {type(x).__name__}")
        if x.dtype != dtype:
            raise PythonifyGuardError(f"{src}: expected dtype {dtype}, got {x.dtype}")
        if str(x.device) != device:
            raise PythonifyGuardError(f"{src}: expected device {device}, got {x.device}")
        if x.dim() != len(shape) or any(
            s is not None and s != a for s, a in zip(shape, x.shape, strict=False)
        ):
            raise PythonifyGuardError(f"{src}: expected shape {shape}, got {tuple(x.shape)}")
        for d, s in enumerate(shape):
            if s is None and x.shape[d] < 2:
                raise PythonifyGuardError(
                    f"{src}: dim {d} is dynamic and was compiled for sizes >= 2, got {x.shape[d]}"
                )
        if stride is not None and any(
            s is not None and s != a for s, a in zip(stride, x.stride(), strict=False)
        ):
            raise PythonifyGuardError(f"{src}: expected stride {stride}, got {tuple(x.stride())}")
        if x.requires_grad != requires_grad:
            raise PythonifyGuardError(
                f"{src}: expected requires_grad={requires_grad}, got {x.requires_grad}"
            )


def _check_rest(flat):
    """Leafness, size symbols and aliasing of the graph inputs."""
    for i, src, is_leaf in _LEAF_GUARDS:
        if flat[i].is_leaf != is_leaf:
            raise PythonifyGuardError(
                f"{src}: compiled for a {'leaf' if is_leaf else 'non-leaf'} requiring grad"
            )
    _check_size_symbols(flat)
    tensor_idx = [g[0] for g in _TENSOR_GUARDS]
    _check_aliasing(
        [flat[i] for i in tensor_idx],
        [INPUT_SOURCES[i] for i in tensor_idx],
        _remap(_SAME_OBJECT, tensor_idx),
        _remap(_SHARED_STORAGE, tensor_idx),
    )
    _check_alias_layout(flat)


def _check_size_symbols(flat):
    """Sizes that were one symbol at compile time are still equal, and in its range."""
    for sym, where in _SIZE_SYMBOLS.items():
        sizes = [int(flat[i]) if d is None else flat[i].shape[d] for i, d in where]
        if len(set(sizes)) > 1:
            named = ", ".join(
                INPUT_SOURCES[i] + ("" if d is None else f".size({d})") for i, d in where
            )
            raise PythonifyGuardError(f"{named} were one size ({sym}) at compile time, got {sizes}")
        lower, upper = _SYMBOL_RANGES.get(sym, (0, None))
        if sizes[0] < lower or (upper is not None and sizes[0] > upper):
            raise PythonifyGuardError(
                f"size {sym} = {sizes[0]} is outside the range it was compiled for "
                f"[{lower}, {upper if upper is not None else 'inf'}]"
            )


def _remap(groups, idx):
    pos = {i: n for n, i in enumerate(idx)}
    return [[pos[i] for i in g if i in pos] for g in groups]


def _storage_offset(t):
    try:
        return t.storage_offset()
    except (RuntimeError, NotImplementedError, TypeError):  # a subclass without one
        return 0


def _check_alias_layout(flat):
    """Inputs that shared a storage lie in it as at compile time: the same ones views, the
    same storage offsets relative to each other (Note [Aliased input layout])."""
    for group in _ALIAS_LAYOUT:
        offsets = [_storage_offset(flat[i]) for i, _, _ in group]
        now = [
            (i, flat[i]._base is not None, off - min(offsets))
            for (i, _, _), off in zip(group, offsets, strict=True)
        ]
        if now != [tuple(g) for g in group]:
            names = ", ".join(INPUT_SOURCES[i] for i, _, _ in group)
            raise PythonifyGuardError(
                f"{names} share a storage laid out otherwise than at compile time "
                f"(view, relative offset): compiled {[g[1:] for g in group]}, "
                f"called with {[n[1:] for n in now]}"
            )


def _check_aliasing(tensors, sources, same_object, shared_storage):
    """Pairwise: the same object, or sharing storage, exactly where they were at compile time."""
    keys = [_storage_keys(t) for t in tensors]
    for i in range(len(tensors)):
        for j in range(i + 1, len(tensors)):
            was_same = any(i in g and j in g for g in same_object)
            now_same = tensors[i] is tensors[j]
            if now_same != was_same:
                raise PythonifyGuardError(
                    f"{sources[i]} and {sources[j]}: compiled as "
                    f"{'the same tensor' if was_same else 'distinct tensors'}, "
                    f"called with {'the same' if now_same else 'distinct'} tensors"
                )
            was_shared = was_same or any(i in g and j in g for g in shared_storage)
            now_shared = bool(keys[i] & keys[j])
            if now_shared != was_shared:
                raise PythonifyGuardError(
                    f"{sources[i]} and {sources[j]}: compiled "
                    f"{'sharing' if was_shared else 'not sharing'} storage, called "
                    f"{'sharing' if now_shared else 'not sharing'} storage"
                )


RUNTIME = (
    "_as_list",
    "_dtype",
    "_import_type",
    "_is_wrapper_subclass",
    "_load_inductor_graph",
    "_load_constants",
    "_BOUND",
    "bind",
    "_call_module",
    "_bind_locals",
    "_over_globals",
    "_storage_keys",
    "inlined_saved_hooks",
    "_check_autograd_state",
    "_check_scalars",
    "_as_tensor_fullprec",
    "_check_guards",
    "_check_tensors",
    "_check_rest",
    "_check_size_symbols",
    "_remap",
    "_storage_offset",
    "_check_alias_layout",
    "_check_aliasing",
)
