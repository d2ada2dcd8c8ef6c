"""Run one case: a program through eager (twice), torch.compile and the pythonified file, then
every oracle.

    result = run_case(spec, backend="aot_eager")
    result.findings, result.status, result.wrapper_paths, result.timings

Status: "ok" (compared; findings may be empty), "discarded" (eager did not reproduce itself,
or misbehaved: ground_truth.py), or "invalid" (the spec could not be rendered). `unsupported`
says why the pythonify file was not produced, when it was not; torch.compile is still compared
with eager then. Where eager's error was dead code, torch.compile's reference is eager without
it (dead_code.py).

Errors in pyfy-fuzz itself propagate; only the subjects' exceptions become observations.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch._dynamo

import oracles
from generators import Program, ProgramSpec, materialize, rounds
from oracles import Evidence, Finding
from oracles.by_design import excuse, recording
from pyfy_fuzz.case.dead_code import dead_code_errors
from pyfy_fuzz.case.fp64 import fp64_fn, to_fp64
from pyfy_fuzz.case.ground_truth import (
    EagerQuirks,
    nondeterminism,
    nondeterministic_ops,
    observe_eager,
    watched,
)
from pyfy_fuzz.case.observe import observe_subject
from pyfy_fuzz.case.recording import Target, exc_obs
from pyfy_fuzz.case.subjects import (
    WARM,
    BundledPythonify,
    CacheCounts,
    CompileOnce,
    PythonifyImpl,
    Served,
    capture_target,
    case_caches,
    compile_once,
    drawn_config,
    eager_target,
    log_only_skipped,
    pythonified_target,
    served,
    shared_code_limits,
    torch_compile_target,
    warm_applies,
    warm_target,
)
from pyfy_fuzz.schema.observation import SubjectObs
from pyfy_fuzz.schema.paths import spec_paths
from pyfy_fuzz.schema.spec import CallPlan, draws_random

__all__ = ["BACKENDS", "CaseResult", "DEVICES", "case_backend", "run_case"]

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
    # What AOTAutograd's cache did for the warm subject (Note [The warm subject]); None where
    # torch would not consult the cache (aot_eager without force_autograd_cache).
    warm: Served | None = None
    # Knobs of the plan's configuration this torch lacks: the case ran without them.
    config_skipped: tuple[str, ...] = ()


# Note [The AOT front-end under Inductor keeps no grad mode]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The AOT front-end with Inductor is the harness's own construction: the flat function traced
# by torch.fx.symbolic_trace, then compile_fx (pythonify.capture.aot.trace_flat, for the stock
# compile and the capture alike). symbolic_trace runs `with torch.no_grad()`,
# `torch.set_grad_enabled(...)` and the context axis's blocks while it traces and records
# none of them (FX by design, pytorch#62043): every grad-mode change in the body is lost, and
# what comes out differs from eager for the harness's reasons, not torch's (the issue-36
# triage's N36d.5: a no_grad output requiring grad). torch.compile and aot_function keep
# them. Until that front-end traces grad mode (aot_function with Inductor's compilers, or a
# pre-dispatch make_fx trace), a program through it that changes grad mode compiles with
# aot_eager instead; the case, its entry and its repro say so by their backend.


def _changes_grad_mode(spec: ProgramSpec) -> bool:
    return any(s.ctx is not None or s.op == "set_grad_enabled" for s in spec.body)


def case_backend(spec: ProgramSpec, backend: str) -> str:
    """The backend a case compiles with: the spec's own, else the one it is run with; not
    Inductor for an AOT-front-end program that changes grad mode (Note [The AOT front-end
    under Inductor keeps no grad mode])."""
    chosen = spec.plan.backend or backend
    if chosen == "inductor" and spec.plan.frontend == "aot" and _changes_grad_mode(spec):
        return "aot_eager"
    return chosen


def _fp64_target(program: Program) -> Target:
    fn = fp64_fn(program.make_fn())

    def call(*args: Any) -> Any:
        return fn(*to_fp64(args))

    return Target("eager-fp64", call, fn if isinstance(fn, torch.nn.Module) else None)


class _Clock:
    """Per-stage timings (CaseResult.timings) and the stage a campaign worker is told about."""

    def __init__(self, on_phase: Callable[[str], None] | None) -> None:
        self.timings: dict[str, float] = {}
        self.start = self.last = time.perf_counter()
        self.phase = on_phase or (lambda name: None)

    def lap(self, key: str) -> None:
        """Charge the time since the previous lap to `key`."""
        now = time.perf_counter()
        self.timings[key] = self.timings.get(key, 0.0) + now - self.last
        self.last = now


@dataclass(frozen=True)
class _Subjects:
    """What the compiled subjects did, and the eager run torch.compile is judged against."""

    once: CompileOnce  # the one compile both subjects come from
    compiled: SubjectObs
    pythonified: SubjectObs | None  # None: no file (unsupported, or the compile failed alike)
    file_mod: ModuleType | None  # the loaded file, for its SEQ_NR tables
    reference: Program  # the program torch.compile is judged against (see dead_code_errors)
    eager: SubjectObs  # eager's observation of `reference`
    dead_code: bool  # eager's errors were dead code (by_design: dead-code-error)
    ref64: SubjectObs | None  # eager in float64 (tolerances for inductor)
    warm: SubjectObs | None = None  # the warm subject, where it was served from the cache
    capture: SubjectObs | None = None  # the compile the file models (Note [Two references])
    served: Served | None = None  # what the cache did for it (None: not consulted)


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
    torch.compile, torch.compile-warm, pythonify, capture, eager-fp64, oracles): a campaign
    worker reports it so a case that kills the interpreter is attributed to the subject that
    was running. A spec that names its own backend (`CallPlan.backend`: a campaign's mix drew
    it) compiles with that one (`case_backend`).

    Long: the stages in the order a case runs them, each a line or two, under the case's
    contexts (the drawn configuration, fresh caches, the recompile limit)."""
    backend = case_backend(spec, backend)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    _check_device(device)
    clock = _Clock(on_phase)
    clock.phase("materialize")
    program = materialize(spec, device=device)
    clock.lap("materialize_s")
    torch._dynamo.reset()
    eager = _eager_or_discard(spec, program, clock)
    if isinstance(eager, CaseResult):
        return eager
    with (
        _rng_config(spec),
        _functorch_config(program.plan),
        drawn_config(program.plan, device) as skipped,
        case_caches(),
        shared_code_limits(),
        log_only_skipped(),  # Note [Work only for logs]
    ):
        got = _compiled_subjects(
            spec, program, eager, impl or BundledPythonify(), backend, device, workdir, clock
        )
    ev = _evidence(got, program, backend, device)
    clock.phase("oracles")
    findings, excused = _judge(ev, got)
    clock.lap("oracles_s")
    clock.timings["total_s"] = time.perf_counter() - clock.start
    once = got.once
    unsupported = once.unsupported or (
        f"compile failed: {once.produce_error.short_type}"
        if once.produce_error and got.pythonified is None
        else None
    )
    return CaseResult(
        spec,
        "ok",
        findings=findings,
        wrapper_paths=list(ev.wrappers),
        unsupported=unsupported,
        excused=excused,
        timings=clock.timings,
        pythonified_path=once.produced.path if once.produced else None,
        evidence=ev if keep_evidence else None,
        warm=got.served,
        config_skipped=skipped,
    )


def _eager_or_discard(
    spec: ProgramSpec, program: Program, clock: _Clock
) -> SubjectObs | CaseResult:
    """Eager's observation, or the discarded CaseResult when eager cannot be the ground truth:
    it misbehaves, or a second run differs from the first."""
    clock.phase("eager")
    eager = observe_eager(program)
    # The second run checks that eager reproduces itself; its probes would repeat the first's.
    # It also watches eager for misbehaviour of its own (only where the program can show it).
    quirks = EagerQuirks() if any(s.op == "dropout" for s in spec.body) else None
    with nondeterministic_ops(program.device) as flagged:
        again = observe_subject(program, watched(eager_target(program), quirks), probes=False)
    clock.lap("eager_s")
    if flagged:
        reason = f"nondeterministic on {program.device}: {flagged[0]}"
        return CaseResult(spec, "discarded", reason=reason, timings=clock.timings)
    if quirks is not None and quirks.found is not None:
        misbehaves = f"eager misbehaves: {quirks.found}"
        return CaseResult(spec, "discarded", reason=misbehaves, timings=clock.timings)
    why = nondeterminism(eager, again)
    if why is not None:
        return CaseResult(
            spec, "discarded", reason=f"nondeterministic: {why}", timings=clock.timings
        )
    return eager


def _compiled_subjects(
    spec: ProgramSpec,
    program: Program,
    eager: SubjectObs,
    impl: PythonifyImpl,
    backend: str,
    device: str,
    workdir: str | os.PathLike[str] | None,
    clock: _Clock,
) -> _Subjects:
    """One compile, then torch.compile and the pythonified file driven through the plan."""
    directory = (
        Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="pyfy-case-"))
    )
    clock.phase("compile")
    once = compile_once(program, impl, backend, directory / "pythonified.py")
    clock.lap("compile_s")
    clock.phase("torch.compile")
    before = CacheCounts.now()
    guarded = program.plan.frontend != "aot"  # aot_function has no guards to recompile
    compiled = observe_subject(program, torch_compile_target(once), later_calls=guarded)
    cold = CacheCounts.now().since(before)
    clock.lap("compiled_run_s")
    warm, how = _warm(program, backend, cold, clock)
    reference = program
    live = dead_code_errors(spec, device, eager, compiled)
    if live is not None:  # by_design: dead-code-error
        clock.phase("eager")
        reference, eager = live
        clock.lap("eager_s")
    pythonified, file_mod, capture = _file_subjects(program, once, compiled, clock)
    ref64 = None
    if backend != "aot_eager" or rounds(spec):  # the tolerance scheme's reference
        clock.phase("eager-fp64")
        ref64 = observe_subject(reference, _fp64_target(reference), probes=False)
    clock.lap("eager_s")
    return _Subjects(
        once, compiled, pythonified, file_mod, reference, eager, live is not None, ref64,
        warm=warm, served=how, capture=capture,
    )  # fmt: skip


def _file_subjects(
    program: Program, once: CompileOnce, compiled: SubjectObs, clock: _Clock
) -> tuple[SubjectObs | None, ModuleType | None, SubjectObs | None]:
    """The pythonified file through the plan (or its crash), its loaded module, and the
    compile it models through the plan too (Note [Two references] in oracles/evidence.py)."""
    clock.phase("pythonify")
    pythonified: SubjectObs | None = None
    file_mod = None
    if once.produced is not None:
        try:
            target, file_mod = pythonified_target(program, once.produced.path)
        except Exception as exc:  # the generated file does not even import: its crash
            pythonified = SubjectObs("pythonify", setup_error=exc_obs(exc, "load"))
        else:
            pythonified = observe_subject(program, target)
    elif once.produce_error is not None and not _same_crash(once, compiled):
        pythonified = SubjectObs("pythonify", setup_error=once.produce_error)
    clock.lap("pythonified_run_s")
    capture = None
    modelled = capture_target(once)
    if pythonified is not None and pythonified.setup_error is None and modelled is not None:
        clock.phase("capture")  # torch's own compiled callable, the file's reference
        capture = observe_subject(program, modelled, later_calls=program.plan.frontend != "aot")
        clock.lap("capture_run_s")
    return pythonified, file_mod, capture


def _warm(
    program: Program, backend: str, cold: CacheCounts, clock: _Clock
) -> tuple[SubjectObs | None, Served | None]:
    """The warm subject's observation, where the cold compile filled the cache and the warm
    one was served from it (Note [The warm subject]), and what the cache did."""
    if not warm_applies(backend):
        return None, None
    if cold.bypass or not cold.saved:  # nothing to serve: no warm compile
        return None, "bypass" if cold.bypass else "unsaved"
    clock.phase(WARM)
    before = CacheCounts.now()
    obs = observe_subject(
        program, warm_target(program, backend), later_calls=program.plan.frontend != "aot"
    )
    how = served(CacheCounts.now().since(before))
    clock.lap("warm_run_s")
    return (obs if how in ("hit", "partial") else None), how


def _judge(ev: Evidence, got: _Subjects) -> tuple[list[Finding], list[str]]:
    """Every oracle on the evidence, then on the warm subject's; and the by-design entries
    that applied."""
    with recording() as excused:
        if got.dead_code:
            excuse("dead-code-error")
        findings = oracles.check_all(ev)
        if got.warm is not None:
            findings += _warm_findings(replace(ev, compiled=got.warm, pythonified=None), findings)
    return findings, excused


def _warm_findings(ev: Evidence, cold: list[Finding]) -> list[Finding]:
    """The oracles on the warm subject against eager, less what the cold subject shows too:
    a bug of both is the cold compile's."""
    known = {f.coarse for f in cold if f.subject == "torch.compile"}
    return [
        replace(f, subject=WARM)
        for f in oracles.check_all(ev)
        if f.subject == "torch.compile" and f.coarse not in known
    ]


def _evidence(got: _Subjects, program: Program, backend: str, device: str) -> Evidence:
    produced = got.once.produced
    return Evidence(
        eager=got.eager,
        compiled=got.compiled,
        pythonified=got.pythonified,
        backend=backend,
        device=device,
        frontend=program.plan.frontend,
        mode=program.plan.mode,
        # what the compile exercised, then what the spec tried (its call relationships)
        wrappers=(*(produced.wrapper_paths if produced else ()), *spec_paths(program.spec)),
        ref64=got.ref64,
        # no file: no graphs; an implementation without torch's metadata: None (not compared)
        fx_meta=(
            {} if produced is None else None if produced.fx_meta is None else dict(produced.fx_meta)
        ),
        file_seq_nr=getattr(got.file_mod, "SEQ_NR", None),
        file_grad_acc=getattr(got.file_mod, "GRADIENT_ACC_NODES", None),
        capture=got.capture,
        rounding=rounds(program.spec),
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


def _same_crash(once: CompileOnce, compiled: SubjectObs) -> bool:
    """The implementation crashed compiling on call 0's inputs; did the plain torch.compile
    raise the same type on call 0 (the program or torch failing, not pythonify)?"""
    err = once.produce_error
    first = compiled.calls[0].raised if compiled.calls else None
    return first is not None and err is not None and first.type_name == err.type_name


def _functorch_config(plan: CallPlan) -> contextlib.AbstractContextManager[object]:
    import torch._functorch.config as fconfig

    # by_design: donated-buffer-retain-graph. A retained second backward is part of the plan.
    if plan.second_backward == "retain" and hasattr(fconfig, "donated_buffer"):
        return fconfig.patch(donated_buffer=False)
    return contextlib.nullcontext()


def _rng_config(spec: ProgramSpec) -> contextlib.AbstractContextManager[object]:
    """torch.compile promises eager's random numbers only with fallback_random, for every
    backend: inductor otherwise draws its own (by_design: inductor-rng), and while tracing,
    dead-code elimination treats random ops as pure unless it is set, so an unused rand_like
    vanishes and every later draw moves (by_design: rng-dead-code; measured on torch 2.13
    under aot_eager: with the flag the op stays and the draws match eager's). Only a program
    that draws random numbers gets it: every other reference is stock (Note [The stock
    reference] in subjects/stock.py)."""
    if not draws_random(spec):
        return contextlib.nullcontext()
    import torch._inductor.config as iconfig

    return iconfig.patch(fallback_random=True)
