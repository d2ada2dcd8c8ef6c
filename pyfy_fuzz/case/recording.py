"""What a subject left, as the records the oracles compare: a tensor (`tensor_obs`: values,
dtype, geometry, subclass inner tensors, autograd facts), what it raised (`exc_obs`: the
user-level exception, what a compiler failure wrapped, the innermost torch frame), and every
tensor a caller can see after a call (`named_inputs`). `Target` is what a subject runs.

The records themselves are plain data in pyfy_fuzz/schema/observation.py; observe.py drives a
subject and probes.py makes the probes' calls, both recording with these.
"""

from __future__ import annotations

import builtins
import os
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from pyfy_fuzz.schema.observation import ExcObs, TensorObs

__all__ = [
    "Target",
    "exc_obs",
    "exception_tail",
    "named_inputs",
    "tensor_obs",
    "torch_frame",
    "unwrap_exception",
]


@dataclass(frozen=True)
class Target:
    """What a subject runs: `call(*args)`, and the nn.Module whose parameters are leaves."""

    name: str  # the subject's name in its observation (eager, torch.compile, pythonify, ...)
    call: Callable[..., Any]  # the subject's callable, called as the program's drive calls it
    module: Any = None  # the nn.Module whose parameters and buffers count as inputs, or None
    extra: Callable[[], dict[str, Any]] | None = None  # the subject's own report, after the run


# ---------------------------------------------------------------------------- what raised


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


def exception_tail(exc: BaseException, lines: int, chars: int) -> str:
    """The last frames and the message of `exc`, formatted cheaply: formatting whole chained
    Dynamo tracebacks (source lines, carets) to keep six lines cost ~3% of a case (cProfile)."""
    text = traceback.format_exception(exc, limit=-4, chain=False)
    return "".join(text[-lines:])[-chars:]


# ---------------------------------------------------------------------------- tensors


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
