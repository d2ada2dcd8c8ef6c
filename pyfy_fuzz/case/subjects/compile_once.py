"""The two compiles of a case: the implementation's, which writes the file, and the stock one.

The implementation compiles the program's function on its seed-0 inputs and writes the file.
torch.compile is tested on a plain compile of a fresh copy of the program under torch's
defaults (Note [The stock reference] in stock.py), whatever the implementation did: the
capture's compile runs under settings of its own and is never torch.compile's reference; it
is only the file's (`capture_target`, Note [Two references] in oracles/evidence.py). When the
implementation crashes, whether the stock compile fails the same way tells a torch crash (both
fail) from a crash of the pythonify implementation (only it fails).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from generators import Program
from pyfy_fuzz.case.recording import Target, exc_obs, exception_tail
from pyfy_fuzz.case.subjects.impl import Produced, PythonifyImpl
from pyfy_fuzz.pythonify import capture_options
from pyfy_fuzz.schema.config import aot_options, stock_compile
from pyfy_fuzz.schema.config import capture_options as options_of
from pyfy_fuzz.schema.observation import ExcObs
from pyfy_fuzz.schema.spec import CallPlan

__all__ = [
    "CompileOnce",
    "capture_target",
    "compile_once",
    "plain_compile",
]


@dataclass
class CompileOnce:
    compiled: Any  # the stock torch.compile of a fresh copy: the torch.compile subject
    compiled_module: Any  # the module instance it is bound to (None for functions)
    produced: Produced | None
    unsupported: str | None = None  # why the implementation declined
    produce_error: ExcObs | None = None  # it crashed (maybe because torch.compile did)
    capture_module: Any = None  # the module the capture's callable is bound to (None: a function)


def plain_compile(fn: Any, backend: str, plan: CallPlan, device: str = "cpu") -> Any:
    """torch.compile as a user would call it (graph breaks allowed; under reduce-overhead with
    torch's CUDA graphs: Note [The CUDA-graph reference] in stock.py), or, for the AOT
    front-end, aot_function (aot_eager) or compile_fx on the traced flat function (inductor),
    compiled at the first call of each argument structure, as a user would."""
    if plan.frontend != "aot":
        name, mode = stock_compile(backend, plan.mode, device)
        return torch.compile(fn, backend=name, dynamic=plan.dynamic, mode=mode)
    import torch.utils._pytree as pytree

    compiled_by_spec: dict[str, Any] = {}

    def flat_call(*args: Any) -> Any:
        leaves, spec = pytree.tree_flatten(args)
        key = str(spec)
        if key not in compiled_by_spec:
            compiled_by_spec[key] = _aot_compile(
                lambda *ls: fn(*pytree.tree_unflatten(list(ls), spec)), leaves, backend, plan
            )
        return compiled_by_spec[key](*leaves)

    return flat_call


def _aot_compile(flat_fn: Any, leaves: list[Any], backend: str, plan: CallPlan) -> Any:
    if backend == "aot_eager":
        from functorch.compile import min_cut_rematerialization_partition, nop
        from torch._functorch.aot_autograd import aot_function

        return aot_function(
            flat_fn,
            fw_compiler=nop,
            bw_compiler=nop,
            partition_fn=min_cut_rematerialization_partition,
            keep_inference_input_mutations=bool(
                aot_options(plan.config)["keep_inference_input_mutations"]
            ),
        )
    if backend == "inductor":
        from torch._inductor.compile_fx import compile_fx

        from pyfy_fuzz.pythonify.capture.aot import trace_flat

        return compile_fx(trace_flat(flat_fn, len(leaves)), list(leaves))
    raise NotImplementedError(f"the AOT front-end is not compiled with backend {backend!r}")


def compile_once(program: Program, impl: PythonifyImpl, backend: str, path: Path) -> CompileOnce:
    plan = program.plan
    fn, args = program.make_fn(), program.make_inputs(0)
    program.module.mark_inputs(args)  # the plan's input marking, as drive's calls get it
    try:
        # compiled as the stock compile will be, at its first call inside drive: under the
        # plan's saved-tensor hooks and call-site knob (Note [Drawn configurations] in
        # schema/config.py); the inputs are made outside, as drive's are
        with (
            program.module.compile_site(),
            capture_options(**options_of(plan.config), **aot_options(plan.config)),
        ):
            produced = impl.produce(
                fn,
                args,
                path,
                backend=backend,
                frontend=plan.frontend,
                dynamic=plan.dynamic,
                mode=plan.mode,
            )
        module = fn if isinstance(fn, torch.nn.Module) else None
        result = CompileOnce(None, None, produced, capture_module=module)
    except impl.unsupported as exc:
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        result = CompileOnce(None, None, None, unsupported=reason)
    except Exception as exc:
        err = replace(exc_obs(exc, "compile"), traceback_tail=exception_tail(exc, 8, 3000))
        result = CompileOnce(None, None, None, produce_error=err)
    # No Dynamo reset here: the capture's cache entry stays, so the capture's callable (the
    # file's reference, Note [Two references]) runs what it compiled. The stock compile cannot
    # use that entry (Dynamo guards on the backend) and compiles afresh at its first call.
    fn = program.make_fn()
    result.compiled_module = fn if isinstance(fn, torch.nn.Module) else None
    # compiled at its first call
    result.compiled = plain_compile(fn, backend, plan, program.device)
    return result


def capture_target(once: CompileOnce) -> Target | None:
    """The implementation's own compile, which the file models: pythonify's reference (Note
    [Two references] in oracles/evidence.py). None where it produced nothing."""
    if once.produced is None:
        return None
    return Target("capture", once.produced.compiled, once.capture_module)
