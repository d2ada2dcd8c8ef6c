"""Run one case: a program through eager (twice), torch.compile and the pythonified file, then
every oracle.

    result = run_case(spec, backend="aot_eager")
    result.findings, result.status, result.wrapper_paths, result.timings

Status: "ok" (compared; findings may be empty), "discarded" (eager did not reproduce itself),
or "invalid" (the spec could not be rendered). `unsupported` says why the pythonify file was
not produced, when it was not; torch.compile is still compared with eager then.

Errors in pyfy-fuzz itself propagate; only the subjects' exceptions become observations.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch._dynamo

import oracles
from generators import ProgramSpec, materialize
from oracles import Evidence, Finding

from .fp64 import fp64_fn, to_fp64
from .observe import ExcObs, SubjectObs, Target, autograd_order, observe_subject
from .subjects import (
    BundledPythonify,
    PythonifyImpl,
    compile_once,
    eager_target,
    pythonified_target,
    torch_compile_target,
)

BACKENDS = ("aot_eager", "inductor")
DEVICES = ("cpu", "cuda")


@dataclass
class CaseResult:
    spec: ProgramSpec
    status: str  # ok | discarded | invalid
    findings: list[Finding] = field(default_factory=list)
    wrapper_paths: list[str] = field(default_factory=list)
    reason: str | None = None  # why discarded / invalid
    unsupported: str | None = None  # why no pythonified file
    excused: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    pythonified_path: Path | None = None
    evidence: Evidence | None = None


def _nondeterminism(a: SubjectObs, b: SubjectObs) -> str | None:
    """Compare two eager runs with the oracles themselves (eager vs eager, exact)."""
    ev = Evidence(eager=a, compiled=b, pythonified=None, backend="aot_eager")
    found = [f for f in oracles.check_all(ev) if f.oracle != "seq_nr"]
    return (
        found[0].explanation.replace(
            "torch.compile differs from eager", "eager differs from itself"
        )
        if found
        else None
    )


def _fp64_target(program: Any) -> Target:
    fn = fp64_fn(program.make_fn())

    def call(*args: Any) -> Any:
        return fn(*to_fp64(args))

    return Target("eager-fp64", call, fn if isinstance(fn, torch.nn.Module) else None)


def run_case(
    spec: ProgramSpec,
    *,
    backend: str = "aot_eager",
    device: str = "cpu",
    impl: PythonifyImpl | None = None,
    workdir: str | os.PathLike[str] | None = None,
    keep_evidence: bool = False,
    on_phase: Callable[[str], None] | None = None,
) -> CaseResult:
    """`on_phase(name)` is told before each stage (materialize, eager, compile,
    torch.compile, pythonify, eager-fp64, oracles): a campaign worker reports it so a case that
    kills the interpreter is attributed to the subject that was running."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    _check_device(device)
    impl = impl or BundledPythonify()
    timings: dict[str, float] = {}
    t_start = time.perf_counter()

    phase = on_phase or (lambda name: None)

    def lap(key: str, t0: float) -> float:
        now = time.perf_counter()
        timings[key] = timings.get(key, 0.0) + now - t0
        return now

    phase("materialize")
    program = materialize(spec, device=device)
    plan = program.plan
    t = lap("materialize_s", t_start)
    torch._dynamo.reset()
    phase("eager")
    eager = observe_subject(program, eager_target(program))
    eager.extra["autograd_order"] = (
        autograd_order(program, eager_target(program), 0) if plan.backward else None
    )
    # The second run checks that eager reproduces itself; its probes would repeat the first's.
    again = observe_subject(program, eager_target(program), probes=False)
    t = lap("eager_s", t)
    why = _nondeterminism(eager, again)
    if why is not None:
        return CaseResult(spec, "discarded", reason=f"nondeterministic: {why}", timings=timings)

    with _inductor_config(backend), _functorch_config(plan):
        directory = (
            Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="pyfy-case-"))
        )
        path = directory / "pythonified.py"
        phase("compile")
        once = compile_once(program, impl, backend, path)
        t = lap("compile_s", t)
        phase("torch.compile")
        compiled = observe_subject(program, torch_compile_target(once))
        t = lap("compiled_run_s", t)
        phase("pythonify")
        pythonified: SubjectObs | None = None
        file_mod = None
        if once.produced is not None:
            try:
                target, file_mod = pythonified_target(program, once.produced.path)
            except Exception as exc:  # the generated file does not even import: its crash
                pythonified = SubjectObs("pythonify", setup_error=ExcObs.of(exc, "load"))
            else:
                pythonified = observe_subject(program, target)
        elif once.produce_error is not None and not _same_crash(once, compiled):
            pythonified = SubjectObs("pythonify", setup_error=once.produce_error)
        t = lap("pythonified_run_s", t)
        ref64 = None
        if backend != "aot_eager":
            phase("eager-fp64")
            ref64 = observe_subject(program, _fp64_target(program), probes=False)
        t = lap("eager_s", t)
    if plan.frontend == "aot":
        compiled.variant = None  # aot_function has no guards; nothing to recompile
    produced = once.produced
    ev = Evidence(
        eager=eager,
        compiled=compiled,
        pythonified=pythonified,
        backend=backend,
        device=device,
        frontend=plan.frontend,
        mode=plan.mode,
        wrappers=tuple(produced.wrapper_paths) if produced else (),
        ref64=ref64,
        # no file: no graphs; an implementation without torch's metadata: None (not compared)
        fx_meta=(
            {} if produced is None else None if produced.fx_meta is None else dict(produced.fx_meta)
        ),
        file_seq_nr=getattr(file_mod, "SEQ_NR", None),
        file_grad_acc=getattr(file_mod, "GRADIENT_ACC_NODES", None),
    )
    phase("oracles")
    findings = oracles.check_all(ev)
    lap("oracles_s", t)
    timings["total_s"] = time.perf_counter() - t_start
    unsupported = once.unsupported or (
        f"compile failed: {once.produce_error.short_type}"
        if once.produce_error and pythonified is None
        else None
    )
    return CaseResult(
        spec,
        "ok",
        findings=findings,
        wrapper_paths=list(ev.wrappers),
        unsupported=unsupported,
        excused=list(ev.excused),
        timings=timings,
        pythonified_path=produced.path if produced else None,
        evidence=ev if keep_evidence else None,
    )


def _check_device(device: str) -> None:
    """Refuse before any work: a CUDA case on a machine without a GPU would otherwise fail
    inside the program's own make_inputs, which reads as a pyfy-fuzz bug."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "device='cuda' needs a GPU, but torch.cuda.is_available() is False "
            f"(torch {torch.__version__}, built with CUDA {torch.version.cuda})"
        )


def _same_crash(once: Any, compiled: SubjectObs) -> bool:
    """The implementation crashed compiling on call 0's inputs; did the plain torch.compile
    raise the same type on call 0 (the program or torch failing, not pythonify)?"""
    err = once.produce_error
    first = compiled.calls[0].raised if compiled.calls else None
    return first is not None and first.type_name == err.type_name


def _functorch_config(plan: Any) -> Any:
    import torch._functorch.config as fconfig

    # by_design: donated-buffer-retain-graph. A retained second backward is part of the plan.
    if plan.second_backward == "retain" and hasattr(fconfig, "donated_buffer"):
        return fconfig.patch(donated_buffer=False)
    return contextlib.nullcontext()


def _inductor_config(backend: str) -> Any:
    if backend != "inductor":
        return contextlib.nullcontext()
    import torch._inductor.config as iconfig

    # by_design: inductor-rng. Random numbers must match eager's to compare values at all.
    return iconfig.patch(fallback_random=True)
