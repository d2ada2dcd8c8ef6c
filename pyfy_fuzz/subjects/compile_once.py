"""The one compile both torch.compile and pythonify subjects are built from.

The implementation compiles the program's function on its seed-0 inputs and writes the file.
If it cannot model the program (unsupported) or crashes, torch.compile is still tested, with a
plain compile of its own; whether that plain compile fails the same way tells a torch crash
(both fail) from a crash of the pythonify implementation (only it fails).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from generators import Program
from pyfy_fuzz.observe import ExcObs, exception_tail
from pyfy_fuzz.schema.spec import CallPlan

from .impl import Produced, PythonifyImpl

__all__ = [
    "CompileOnce",
    "compile_once",
    "plain_compile",
]


@dataclass
class CompileOnce:
    compiled: Any  # callable for the torch.compile subject
    compiled_module: Any  # the module instance it is bound to (None for functions)
    produced: Produced | None
    unsupported: str | None = None  # why the implementation declined
    produce_error: ExcObs | None = None  # it crashed (maybe because torch.compile did)


def plain_compile(fn: Any, backend: str, plan: CallPlan) -> Any:
    """torch.compile as a user would call it (graph breaks allowed), or aot_function for the
    AOT front-end."""
    if plan.frontend == "aot":
        import torch.utils._pytree as pytree
        from functorch.compile import min_cut_rematerialization_partition, nop
        from torch._functorch.aot_autograd import aot_function

        if backend != "aot_eager":
            raise NotImplementedError("the AOT front-end is only compiled with aot_eager")

        compiled_by_spec: dict[Any, Any] = {}

        def flat_call(*args: Any) -> Any:
            leaves, spec = pytree.tree_flatten(args)
            key = str(spec)
            if key not in compiled_by_spec:  # one compile per argument structure, as a user would
                compiled_by_spec[key] = aot_function(
                    lambda *ls: fn(*pytree.tree_unflatten(list(ls), spec)),
                    fw_compiler=nop,
                    bw_compiler=nop,
                    partition_fn=min_cut_rematerialization_partition,
                    keep_inference_input_mutations=True,
                )
            return compiled_by_spec[key](*leaves)

        return flat_call
    return torch.compile(fn, backend=backend, dynamic=plan.dynamic)


def compile_once(program: Program, impl: PythonifyImpl, backend: str, path: Path) -> CompileOnce:
    plan = program.plan
    fn = program.make_fn()
    module = fn if isinstance(fn, torch.nn.Module) else None
    try:
        produced = impl.produce(
            fn,
            program.make_inputs(0),
            path,
            backend=backend,
            frontend=plan.frontend,
            dynamic=plan.dynamic,
            mode=plan.mode,
        )
        return CompileOnce(produced.compiled, module, produced)
    except impl.unsupported as exc:
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        result = CompileOnce(None, None, None, unsupported=reason)
    except Exception as exc:
        err = replace(ExcObs.of(exc, "compile"), traceback_tail=exception_tail(exc, 8, 3000))
        result = CompileOnce(None, None, None, produce_error=err)
    torch._dynamo.reset()
    fn = program.make_fn()
    result.compiled_module = fn if isinstance(fn, torch.nn.Module) else None
    result.compiled = plain_compile(fn, backend, plan)  # a fallback: `produced` is None
    return result
