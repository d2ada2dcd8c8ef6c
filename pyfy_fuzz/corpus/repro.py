"""render_repro(spec, finding, backend=...) -> repro.py, the script a PyTorch engineer pastes
into a pt2 issue; check_repro(entry_dir) runs one where pyfy-fuzz cannot be imported.

The script needs torch and the standard library only, and holds only what the program uses:
`def f` (or a small nn.Module) whose body generators._render's statement code renders, the
tensor subclass, custom op and autograd.Functions it uses, `make_inputs()` with the campaign's
very values and the aliasing written out (_repro_inputs), the torch config the case ran under,
the compile as the campaign made it (torch.compile, or aot_function for the AOT front-end), and
ONE check: the aspect of the finding (Note [One check] in _repro_check). It runs the reference
(eager; torch.compile for a pythonify finding, whose file `pythonified.py` lies next to it) and
the subject, prints both, and exits 1 while they differ, 0 once fixed. The full oracles stay in
the package: `pyfy-fuzz replay`.

torch-free, like the rest of what writes a corpus entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from generators.source import (
    HOOK_FUNCTIONS,
    HOOKS,
    MIRROR,
    RELATE_FUNCTIONS,
    RELATE_TOKENS,
    function_source,
    module_init,
    out_expr,
    render,
    saved_hooks_source,
    stmt_lines,
    uses_effect_op,
    variant_context,
)
from oracles.identity import identity_type, normalise_message, strip_type_prefix, title_of
from pyfy_fuzz.schema.config import aot_options, call_context, compile_knobs, stock_compile
from pyfy_fuzz.schema.observation import CUDAGRAPH_RUNNERS as RUNNERS
from pyfy_fuzz.schema.spec import ProgramSpec, draws_random, variant_tokens

from pyfy_fuzz.corpus import _repro_helpers as H
from pyfy_fuzz.corpus._repro_check import Check, leaf, read_check, retains_grads
from pyfy_fuzz.corpus._repro_inputs import inputs_source

__all__ = [
    "BACKENDS",
    "FINDING_KEYS",
    "MAX_LINES",
    "REFERENCE_RAISES",
    "NOT_RUN",
    "ReproStopped",
    "check_repro",
    "render_repro",
    "repro_not_run",
    "repro_record",
    "title",
]

BACKENDS = ("aot_eager", "inductor")
MAX_LINES = 90  # a repro longer than this is no longer something one pastes into an issue
FINDING_KEYS = ("kind", "oracle", "subject")
_DEVICE_RE = re.compile(r"[a-z][a-z0-9_]*(:[0-9]+)?")
# The helpers whose name in a fact means the script defines them (seen_by_write needs write_into).
_FACT_HELPERS = (
    H.write_into,
    H.seen_by_write,
    H.base_of,
    H.sharing,
    H.bumped_backward,
    H.moved,
    H.backward_saved,
    H.retain_grads,
)
# A fact helper -> the helpers it needs before it (or its Check.before line calls).
_NEEDS: dict[Callable[..., Any], tuple[Callable[..., Any], ...]] = {
    H.seen_by_write: (H.write_into,),
    H.moved: (H.versions,),
    H.backward_saved: (H.save_products,),
}


# Note [A repro's exit codes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A repro exits 1 only when it shows its own finding: the exact property, or for a crash the
# exception's type and the words of its message. 0: fixed. 2: something else raised (an
# error the script does not check -- never "the bug", which an uncaught exception's exit 1
# would claim). 3: the reference (eager; torch.compile for the file) raises where the check
# needs its result: no bug to show, not a bug report. One excepthook does both, at no cost in
# lines: the reference's result is always bound to `expected` (a crash's reference run too),
# so an uncaught error before that name exists is the reference's (or its inputs').
_EXCEPTHOOK = (
    "# an error this script does not check exits 2; 3 while the reference runs (no bug to show)\n"
    "sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), "
    'os._exit(2 if "expected" in globals() else 3))'
)
REFERENCE_RAISES = 3

# An "again" call's inputs: the very arguments of the call before (the loop's last `args`).
_AGAIN = "(lambda seed: args)"


def _make(name: str, variant: str | None) -> str:
    """The inputs function of a later call: its own, or the call before's arguments."""
    return _AGAIN if "again" in variant_tokens(variant) else name


def render_repro(
    spec: ProgramSpec, finding: dict[str, Any], *, backend: str, device: str = "cpu"
) -> str:
    """The source of repro.py for `finding` (a Finding's or a case.json's dict: kind, oracle,
    subject, explanation, and title / aspect where it has them) on `spec`, as the campaign ran
    it under `backend` on `device`. Raises ValueError for an unknown backend, a malformed
    device, or a finding without kind, oracle or subject."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not isinstance(device, str) or not _DEVICE_RE.fullmatch(device):
        raise ValueError(f"device must be a torch device string like 'cuda', got {device!r}")
    missing = [k for k in FINDING_KEYS if k not in finding]
    if missing:
        raise ValueError(f"finding lacks {missing}; expected at least the keys {FINDING_KEYS}")
    # A long program (a subclass, custom Functions, five statements) can push the script past
    # MAX_LINES: then the helpers lose their docstrings; and eager's backward order, which
    # needs ~25 lines of helper, gives way to the seq_nr invariants, saying so (`pyfy-fuzz
    # replay` checks the order).
    repro = _Repro(spec, finding, backend, device)
    source = repro.source()
    if len(source.splitlines()) > MAX_LINES:
        source = _Repro(spec, finding, backend, device, compact=True).source()
    if len(source.splitlines()) > MAX_LINES and repro.check.fact == "order":
        check = replace(repro.check, fact="invariants", label="order left out")
        source = _Repro(spec, finding, backend, device, check, compact=True).source()
    return source


class _Repro:
    """One script being put together; each method returns the lines of one part of it."""

    def __init__(
        self,
        spec: ProgramSpec,
        finding: dict[str, Any],
        backend: str,
        device: str,
        check: Check | None = None,
        compact: bool = False,
    ):
        self.spec, self.finding, self.backend, self.device = spec, finding, backend, device
        self.check: Check = check or read_check(spec, finding)
        self.compact = compact  # helpers without docstrings, classes without blank lines
        self.subject = str(finding["subject"])
        self.helpers: list[Callable[..., Any]] = []  # emitted after observe(), in this order
        self.imports: set[str] = set()  # names the parts ask for (tree_leaves, aot_function)

    def source(self) -> str:
        main = self._main()  # first: it decides the helpers and imports the file needs
        seq_nr_call = self.check.compare == "seq_nr" and not self.check.backward
        observe = [] if seq_nr_call else self._observe()  # one call, in main
        helpers = [H.source(h, not self.compact) for h in self.helpers]
        self._need_names([line for h in helpers for line in h])  # what the helpers call
        parts = [
            self._docstring(),
            self._imports(),
            self._config(),
            self._definitions(),
            self._program(),
            inputs_source(self.spec, self.device, "make_inputs", None),
        ]
        for _, make, variant in self._runs():  # the later calls' own inputs
            if make.startswith("make_") and make != "make_inputs":
                parts.append(inputs_source(self.spec, self.device, make, variant))
        used = {t for _, _, v in self._runs() for t in variant_tokens(v)}
        for t in RELATE_TOKENS:  # the relationships' functions make_*_inputs call
            if t in used:
                parts.append(H.source(RELATE_FUNCTIONS[t], not self.compact))
        parts += [observe, *helpers, main]
        return "\n\n".join("\n".join(p) for p in parts if p) + "\n"

    # -- what the program is made of -------------------------------------------------------
    def _uses(self, *ops: str) -> bool:
        return any(s.op in ops for s in self.spec.body)

    def _functions(self) -> list[int]:
        """The custom autograd.Functions the body applies (the spec may hold unused ones)."""
        return sorted({int(s.args[0]) for s in self.spec.body if s.op == "apply_fn"})

    def _subclasses(self) -> set[str]:
        return {r.subclass for r in self.spec.roots if r.subclass is not None}

    def _needs_grad(self) -> bool:
        m = self.spec.module
        return any(r.grad != "none" for r in self.spec.roots) or bool(m and m.params)

    def _fn(self) -> str:
        """A fresh instance of the program: the function, or a new module."""
        return "f" if self.spec.module is None else "Program()"

    # -- the parts -------------------------------------------------------------------------
    def _docstring(self) -> list[str]:
        title_ = title(self.finding, self.backend, self.spec.plan.mode)
        title_ = title_.replace("\\", "/").replace('"""', "'''")
        return [
            f'"""{title_}',
            "python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, "
            '3: the reference raises."""',
        ]

    def _imports(self) -> list[str]:
        spec, names, lines = self.spec, self.imports, []
        if self.subject == "pythonify":
            lines.append("import importlib.util")
        lines += ["import os"]
        if "re" in names:
            lines.append("import re")
        lines += ["import sys"]  # the exit codes (Note [A repro's exit codes])
        if self._caches():
            lines.append("import tempfile")
        if self.finding["kind"] == "hang":
            lines.append("import faulthandler")
        if "nullcontext" in names:
            lines.append("from contextlib import nullcontext")
        lines += ["", "import torch"] if lines else ["import torch"]
        config = "\n".join(self._config())
        lines += [
            f"import {m}"
            for m in ("torch._functorch.config", "torch._inductor.config")
            if m in config
        ]
        if "aot_function" in names or "aot_function_only" in names:
            nop = ", nop" if "aot_function" in names else ""
            lines.append(f"from functorch.compile import min_cut_rematerialization_partition{nop}")
            lines.append("from torch._functorch.aot_autograd import aot_function")
        if "aot_eager" in names:
            lines.append("from torch._dynamo.backends.debugging import aot_eager, boxed_nop")
        elif "boxed_nop" in names:
            lines.append("from torch._dynamo.backends.debugging import boxed_nop")
        if "compile_fx_inner" in names:
            lines.append("from torch._inductor.compile_fx import compile_fx, compile_fx_inner")
        elif "compile_fx" in names:
            lines.append("from torch._inductor.compile_fx import compile_fx")
        if any(spec.functions[k].once_differentiable for k in self._functions()):
            lines.append("from torch.autograd.function import once_differentiable")
        if self._subclasses() & {"two_tensor", "nested_two_tensor"}:
            lines.append("from torch.testing._internal.two_tensor import TwoTensor")
        if "mirror" in self._subclasses():
            lines.append("from torch.utils._python_dispatch import return_and_correct_aliasing")
        if "counters" in names:
            lines.append("from torch._dynamo.utils import counters")
        pytree = [n for n in ("tree_leaves", "tree_structure") if n in names]
        if pytree:
            lines.append(f"from torch.utils._pytree import {', '.join(pytree)}")
        return [*lines, _EXCEPTHOOK]

    def _config(self) -> list[str]:
        """The settings the campaign compiled under (runner._rng_config, _functorch_config,
        the case's cold caches and, for the seq_nr checks, the capture's eager backward
        lowering), where they can change what this script does."""
        check, lines = self.check, []
        if draws_random(self.spec):
            lines.append("torch._inductor.config.fallback_random = True  # eager's random numbers")
        lazy = self.spec.plan.frontend == "aot"  # aot_function compiles the backward lazily
        # Eager backward lowering hands the backward graph to its compiler with the forward:
        # the seq_nr checks read that graph (as the capture, which lowers it so, recorded it).
        # Everything else the script shows is the stock torch.compile's, which lowers the
        # backward lazily (Note [The stock reference] in subjects/stock.py).
        needs_graph = check.compare == "seq_nr"
        runs_backward = check.backward and check.probe_seed is None
        if self._needs_grad() and not lazy and needs_graph and not runs_backward:
            lines.append(
                "torch._functorch.config.force_non_lazy_backward_lowering = True  # as pyfy-fuzz"
            )
        if self.spec.plan.second_backward == "retain" and check.backward.startswith("second"):
            lines.append("torch._functorch.config.donated_buffer = False  # for retain_graph")
        lines += [line for line in self._drawn_config() if line not in lines]
        if self._caches():
            # torch's caches on, but cold, as the campaign's stock reference compiled
            # (Note [The stock reference] in subjects/stock.py)
            lines.append('os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # cold')
        if self.finding["kind"] == "hang":
            lines.append("faulthandler.dump_traceback_later(120, exit=True)  # hung: exit 1")
        return lines

    def _drawn_config(self) -> list[str]:
        """The compile knobs of the case's configuration (Note [Drawn configurations] in
        schema/config.py) as assignments; call knobs wrap the calls instead (`_calls`)."""
        return [
            f"{target} = {value!r}  # the case's configuration: {knob.name}"
            for knob in compile_knobs(self.spec.plan.config, self.device)
            for target, value in knob.settings
        ]

    def _caches(self) -> bool:
        """Does torch consult AOTAutograd's and the FX graph caches for this compile?"""
        return self.backend == "inductor" or "bundled_cache" in self.spec.plan.config

    def _call_site(self) -> str | None:
        """The `with` line of the configuration's call-site knob, if it has one."""
        context = call_context(self.spec.plan.config)
        if context is None:
            return None
        if context == "autocast":
            device = self.device.split(":")[0]
            return (
                f'with torch.autocast("{device}", dtype=torch.bfloat16):  # the case\'s call site'
            )
        return f"with torch.{context}():  # the case's call site (configuration)"

    def _definitions(self) -> list[str]:
        """The subclass, the custom op, the custom Functions and the hook the program uses."""
        spec, lines = self.spec, []
        if "mirror" in self._subclasses():
            mirror = [x for x in MIRROR.splitlines() if x.strip()]  # without blank lines
            lines += [x for x in mirror if not (self.compact and x.strip().startswith('"""'))]
            lines.append("")
            if self.subject == "pythonify":  # the file imports the class from the program
                module = _program_module(spec, self.device)
                lines += [f"sys.modules[{module!r}] = sys.modules[__name__]", ""]
        if uses_effect_op(self.spec):
            lines += ["EFFECTS = []", *H.body_source(H.register_effect_op), ""]
        for k in self._functions():
            fn = function_source(k, spec.functions[k]).splitlines()
            lines += [x for x in fn if x.strip() or not self.compact] + [""]
        lines += self._hooks()
        return lines[:-1]

    def _hooks(self) -> list[str]:
        """HOOK_LOG and the hook functions the program registers, as generators._render
        defines them; take_hook_log() where the log is the fact."""
        spec = self.spec
        names = [
            HOOK_FUNCTIONS[s.args[1] if len(s.args) > 1 else 0]
            for s in spec.body
            if s.op == "register_hook"
        ]
        names += ["_log_accumulated"] * self._uses("post_accumulate_hook")
        if spec.module is not None and spec.module.full_backward_hook:
            names += ["_module_pre_hook", "_module_hook"]
        if spec.plan.grad_fn_hooks:
            names += ["_log_node_pre", "_log_node", "_hook_grad_fns"]
        names = list(dict.fromkeys(names))
        take = "take_hook_log()" in self.check.fact
        lines = ["HOOK_LOG = []", ""] if take or set(names) - {"_double_grad"} else []
        for n in names:
            lines += [*H.function_from(HOOKS, n), ""]
        if take:
            lines += [*H.source(H.take_hook_log, not self.compact), ""]
        if self._logs_saved_hooks():
            lines += [*saved_hooks_source().splitlines(), ""]
        return lines

    def _logs_saved_hooks(self) -> bool:
        """The fact is what the saved-tensor hooks saw: the program's logging hooks, not the
        plain copy the other repros install."""
        return "saved_hooks_summary()" in self.check.fact

    def _program(self) -> list[str]:
        """`def f` or `class Program`: the body as generators._render renders statements."""
        spec = self.spec
        params = ", ".join(f"a{i}" for i in range(len(spec.inputs)))
        body = [line for s in spec.body for line in stmt_lines(s)]
        outs = [out_expr(o) for o in spec.outputs]
        ret = f"return {', '.join(outs)}" if outs else "return None"
        if spec.module is None:
            return [f"def f({params}):", *(f"    {b}" for b in body), f"    {ret}"]
        init = module_init(spec.module)
        lines = [f"DEVICE = {self.device!r}", "", "class Program(torch.nn.Module):"]
        if self.device == "cpu":  # the parameters need no move
            init = [x.replace(".to(DEVICE)", "").replace(", device=DEVICE", "") for x in init]
            lines = lines[2:]
        lines += init
        if spec.module.full_backward_hook:
            lines.append("        self.register_full_backward_pre_hook(_module_pre_hook)")
            lines.append("        self.register_full_backward_hook(_module_hook)")
        sep = ", " if params else ""
        lines += ["", f"    def forward(self{sep}{params}):", *(f"        {b}" for b in body)]
        return [*lines, f"        {ret}"]

    # -- observe(fn): the calls, and what they show ----------------------------------------
    def _observe(self) -> list[str]:
        """observe(fn): the calls, returning the fact; for a check of what raises,
        outcome(fn): the calls in a try, returning what they raised (or None)."""
        check, fact = self.check, self.check.fact
        head, body = self._calls()
        self._need_names(head + body)
        if self._crash_form():  # run(fn), unless one line calls: then main calls inline
            return [] if self._one_call() else ["def run(fn):", *head, *body]
        if check.compare in ("raises", "runs", "guard", "canary") and not fact and head:
            # Each call alone, as pyfy-fuzz's drive observes them: an earlier call that raises
            # on both sides does not hide the last one's difference (the GPU corpus's
            # guards.8569: eager and torch.compile both raised at the variant call first).
            assert len(head) == 1 and head[0].startswith("    for "), head
            return [
                "def outcome(fn):  # None, or what the last call raises (each call runs alone)",
                *head,
                "        raised = None",
                "        try:",
                *(f"    {x}" for x in body),
                "        except Exception as e:  # a compiler crash: what the compiler raised",
                '            raised = getattr(e, "inner_exception", None) or e',
                "    return raised",
            ]
        if check.compare in ("raises", "runs", "guard", "canary") and not fact:
            return [
                "def outcome(fn):  # None, or what the calls raise",
                "    try:",
                *(f"    {x}" for x in head + body),
                "    except Exception as e:  # a compiler crash: what the compiler raised",
                '        return getattr(e, "inner_exception", None) or e',
                "    return None",
            ]
        lines = ["def observe(fn):", *head, *body]
        if check.compare == "later":
            lines.append("    return returned, kept  # as returned, and after the later calls")
        elif check.compare != "seq_nr":
            if "tensors" in fact:
                lines.append(
                    "    tensors = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor)]"
                )
            lines.append(f"    return {fact}")
            if lines[1:] == ["    out = fn(*make_inputs())", "    return out"]:
                lines[1:] = ["    return fn(*make_inputs())"]  # the output is the fact
        self._need_names(lines)
        return lines

    def _crash_form(self) -> bool:
        """A crash where the reference runs: its call, then the subject's in a try. (The
        pythonify guards check excuses the file's own refusal, so it keeps outcome().)"""
        check = self.check
        guards_file = self.subject == "pythonify" and self.finding["oracle"] == "guards"
        return check.compare == "raises" and check.reference_runs and not guards_file

    def _one_call(self) -> str | None:
        """`fn(*make_inputs(...))` where that one line is all the calls are, else None."""
        head, body = self._calls()
        one = body[0].strip() if not head and len(body) == 1 else ""
        return one if re.fullmatch(r"fn\(\*make_\w*inputs\(\d*\)\)", one) else None

    def _need_names(self, lines: list[str]) -> None:
        text = "\n".join(lines)
        self.imports.update(n for n in ("tree_leaves", "tree_structure") if n + "(" in text)
        if re.search(r"\bnullcontext\b", text):
            self.imports.add("nullcontext")

    def _dynamic_arg(self) -> str:
        """The compile's `dynamic=` as pyfy-fuzz passes it (compile_once: the plan's dynamic):
        True, or False where a later call has other shapes -- left out, torch's default would
        recompile it with dynamic shapes, another compile (the GPU corpus's versions.700a:
        its repro met a dynamic recompile's crash, not its finding)."""
        if self.spec.plan.dynamic:
            return ", dynamic=True"
        return ", dynamic=False" if any(v for _, _, v in self._runs()) else ""

    def _runs(self) -> list[tuple[int, str, str | None]]:
        """(seed, inputs function, variant) of each call, in order."""
        check, plan = self.check, self.spec.plan
        if check.probe_seed is not None:
            # Under reduce-overhead the file's CUDA-graph runners warm up, capture, then
            # replay: the probe's call is one of those only after the campaign's earlier
            # calls (the plan's, the earlier probes'), so the repro makes them first.
            first = 0 if plan.mode == "reduce-overhead" else check.probe_seed
            return [(s, "make_inputs", None) for s in range(first, check.probe_seed + 1)]
        runs: list[tuple[int, str, str | None]] = [
            (s, "make_inputs", None) for s in range(check.calls)
        ]
        if not check.variant:
            return runs
        runs.append((0, _make("make_variant_inputs", plan.variant), plan.variant))
        for k in range(check.sequence):
            runs.append((0, _make(f"make_call_{k}_inputs", plan.sequence[k]), plan.sequence[k]))
        return runs

    def _loop(
        self, runs: list[tuple[int, str, str | None]], during: bool
    ) -> tuple[str, list[str], str, str]:
        """(seed expression, loop head, body indent, inputs expression) for the calls."""
        if len(runs) == 1:
            seed = str(runs[0][0])
            return seed, [], "    ", f"{runs[0][1]}({'' if seed == '0' else seed})"
        if all(m == "make_inputs" for _, m, _ in runs):
            return "seed", [f"    for seed in range({len(runs)}):"], "        ", "make_inputs(seed)"
        if during:
            triples = ", ".join(f"({s}, {m}, {self._during(v)})" for s, m, v in runs)
            head = f"    for seed, make, during in ({triples}):  # the last breaks the guards"
        else:
            pairs = ", ".join(f"({s}, {m})" for s, m, _ in runs)
            head = f"    for seed, make in ({pairs}):  # the last breaks the compile's guards"
        return "seed", [head], "        ", "make(seed)"

    def _during(self, variant: str | None) -> str:
        """The context a call runs under, as a callable: the variant's, or the call site's."""
        context = variant_context(variant) or call_context(self.spec.plan.config)
        if context == "autocast":
            device = self.device.split(":")[0]
            return f'lambda: torch.autocast("{device}", dtype=torch.bfloat16)'
        return "nullcontext" if context is None else f"torch.{context}"

    def _calls(self) -> tuple[list[str], list[str]]:
        """The loop over the calls (none for one call) and its body, indented.

        Long: it writes, in the order a call runs them, every step pyfy-fuzz's drive makes
        around the call (inputs, hooks, marks, call site, backward, the reads between two
        backwards); each step is a line or two that the next may depend on."""
        spec, check, runs = self.spec, self.check, self._runs()
        # A probe's fresh call is made apart from the drive (pyfy_fuzz.case.observe._fresh_call):
        # no call site, hooks, marks or retained grads, and no backward.
        drive = check.probe_seed is None
        backward = check.backward if drive else ""
        # a later call under a context of its own (no_grad, inference_mode): each call's
        during = any(variant_context(v) for _, _, v in runs)
        seed, head, indent, make = self._loop(runs, during)
        marks = drive and "mark_dynamic" in spec.plan.config
        grad_fn_hooks = drive and spec.plan.grad_fn_hooks
        # Between two backwards the drive reads each argument's .grad (and is_leaf): on a view
        # whose base was written that read rebuilds its grad_fn, which the second backward
        # then takes -- so the repro reads them too (grads.a2b7 of the issue-27 run showed
        # the second backward's gradient only with that read).
        reads = backward.startswith("second") and retains_grads(spec)
        uses_args = (
            reads
            or bool(re.search(r"\bargs\b", check.fact))
            or bool(check.before)
            or any(m == _AGAIN for _, m, _ in runs)
            or grad_fn_hooks
            or marks
        )
        site = "with during():  # the call's own context" if during else self._call_site()
        # the drive makes the inputs before it enters the call site: made inside
        # inference_mode they would be inference tensors, inside no_grad a non-leaf a leaf
        # (the 1-hour campaign's autograd.72dd showed nothing with its inputs made inside)
        uses_args = uses_args or (site is not None and drive)
        inner = ["out = fn(*args)" if uses_args else f"out = fn(*{make})"]
        if site is not None and drive:
            inner = [site, f"    {inner[0]}"]
        if check.grad_mode:
            inner.append("grad_mode = torch.is_grad_enabled()")
        if self._uses("set_grad_enabled"):
            inner.append("torch.set_grad_enabled(True)  # pyfy-fuzz's drive restores it")
        inner += self._backward(backward, seed, reads)
        if spec.plan.saved_tensor_hooks and drive:  # around the call and its backward
            pack = "lambda t: t.clone(), lambda t: t"  # generators' _pack, _unpack, unlogged
            pack = "_pack, _unpack" if self._logs_saved_hooks() else pack
            hooks = f"with torch.autograd.graph.saved_tensors_hooks({pack}):"
            inner = [hooks, *(f"    {x}" for x in inner)]
        body = [f"args = {make}"] if uses_args else []
        if grad_fn_hooks:
            body.append("_hook_grad_fns(args)  # as pyfy-fuzz's drive")
        if marks:
            body += [
                "for a in tree_leaves(args):  # the case's mark_dynamic knob, as pyfy-fuzz's drive",
                "    if isinstance(a, torch.Tensor) and a.dim() and a.shape[0] >= 2:",
                "        torch._dynamo.maybe_mark_dynamic(a, 0)",
            ]
        if spec.module is not None and spec.module.params and backward and len(runs) > 1:
            body.append("fn.zero_grad()  # fresh .grad per call, as pyfy-fuzz's drive")
        if draws_random(self.spec):
            body.append(f"torch.manual_seed({seed})")
        body += check.before.splitlines()
        body += inner
        reads_out = [b for b in body if not re.match(r"\s*out = fn\(", b)] + [check.fact]
        if not any(re.search(r"\b(out|tensors)\b", b) for b in reads_out) and not check.snapshot:
            body = [re.sub(r"^(\s*)out = fn\(", r"\1fn(", b) for b in body]  # nothing reads it
        if check.snapshot is not None:
            c, j = check.snapshot
            kept = f"kept, returned = {leaf(spec, j)}, {leaf(spec, j)}.detach().clone()"
            body += [kept] if len(runs) == 1 else [f"if seed == {c}:", f"    {kept}"]
        return head, [indent + b for b in body]

    def _backward(self, backward: str, seed: str, reads: bool = False) -> list[str]:
        """Backward as pyfy-fuzz's drive runs it: through the sum of every output requiring
        grad times its tangent (randn from a generator seeded 1000 + seed, or ones), so each
        output gets its tangent as the campaign's did (a subclass output, a subclass one)."""
        if not backward:
            return []
        to = "" if self.device == "cpu" else ", device=o.device"
        requiring = "isinstance(o, torch.Tensor) and o.requires_grad"
        lines = [f"diff = [o for o in tree_leaves(out) if {requiring}]"]
        if self.spec.plan.tangents == "ones":
            tangent = f"torch.ones(o.shape, dtype=o.dtype{to})"
        else:
            lines.append(
                f"g = torch.Generator().manual_seed({'1000' if seed == '0' else '1000 + seed'})"
            )
            tangent = f"torch.randn(o.shape, generator=g).to({'o.device, ' if to else ''}o.dtype)"
        retain = self.spec.plan.second_backward == "retain" and backward != "first"
        lines += [f"loss = sum((o * {tangent}).sum() for o in diff)", "if diff:"]
        lines.append(f"    loss.backward({'retain_graph=True' if retain else ''})")
        if backward == "first":
            return lines
        if reads:  # Note above: the drive reads each gradient between the backwards
            lines.append(
                "    [a.grad for a in tree_leaves(args) if isinstance(a, torch.Tensor) "
                "and a.requires_grad and (a.is_leaf or a.retains_grad)]  # as pyfy-fuzz's drive"
            )
        if backward == "second":
            return [*lines, "    loss.backward()"]
        return [
            *lines[: -3 if reads else -2],
            "second = None",
            *lines[-3 if reads else -2 :],
            "    try:",
            "        loss.backward()",
            "    except RuntimeError as e:",
            "        second = e",
        ]

    # -- the sides, and the verdict --------------------------------------------------------
    def _compiled(self) -> tuple[list[str], str]:
        """(lines making the compiled callable, its expression): torch.compile, or the AOT
        front-end as the campaign calls it (compile_once.plain_compile)."""
        plan, fn = self.spec.plan, self._fn()
        dynamic = self._dynamic_arg()
        keep = aot_options(plan.config)["keep_inference_input_mutations"]
        if plan.frontend != "aot":
            name, mode = stock_compile(self.backend, plan.mode, self.device)
            mode_arg = f', mode="{mode}"' if mode else ""
            return [], f'torch.compile({fn}, backend="{name}"{dynamic}{mode_arg})'
        if self.backend == "inductor":
            self.imports.add("compile_fx")
            return [], f"compile_fx(torch.fx.symbolic_trace({fn}), list(make_inputs()))"
        self.imports.add("aot_function")
        return [
            "compiled = aot_function(  # the AOT front-end, without Dynamo",
            f"    {fn}, fw_compiler=nop, bw_compiler=nop, keep_inference_input_mutations={keep},",
            f"    partition_fn=min_cut_rematerialization_partition{dynamic},",
            ")",
        ], "compiled"

    def _load_file(self) -> list[str]:
        """pythonified.py, imported from next to this script and bound to its own program."""
        lines = [
            'path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pythonified.py")',
            'file_spec = importlib.util.spec_from_file_location("pythonified", path)',
            "pythonified = importlib.util.module_from_spec(file_spec)",
            "file_spec.loader.exec_module(pythonified)",
        ]
        if self.spec.module is None:
            return [*lines, "pythonified.bind(f)"]
        # call() runs m's own __call__ around the compiled forward and then deletes the
        # instance attribute `forward` it set: `m.forward = pythonified.call` would run the
        # hooks twice, and every later m(...) would be eager Program.forward.
        lines += ["m = Program()", "pythonified.bind(m)"]
        if self.spec.module.params:  # the drive zero-grads the module between calls
            lines.append("pythonified.call.zero_grad = m.zero_grad")
        return lines

    def _sides(self) -> tuple[list[str], str, str, str, str]:
        """(setup lines, reference label, reference, subject label, subject)."""
        fresh = self._fn()
        if self.subject == "eager":
            return [], "eager", fresh, "eager", fresh
        if self.subject == "torch.compile-warm":
            return self._warm_sides(fresh)
        if self.subject != "pythonify":
            setup, compiled = self._compiled()
            return setup, "eager", fresh, "torch.compile", compiled
        file_call = "pythonified.call"
        if self.finding["oracle"] == "guards":  # inputs the compile never saw: eager rules
            return self._load_file(), "eager", fresh, "pythonified.py", file_call
        setup, compiled = self._compiled()
        return setup + self._load_file(), "torch.compile", compiled, "pythonified.py", file_call

    def _warm_sides(self, fresh: str) -> tuple[list[str], str, str, str, str]:
        """The compile served from AOTAutograd's cache (Note [The warm subject] in
        subjects/warm.py): a cold compile run forward and backward fills the cache directory
        _config made, Dynamo forgets it, and the same compile again is the subject."""
        setup, compiled = self._compiled()
        self.helpers.append(H.fill_cache)
        self.imports.add("tree_leaves")
        inputs = ["make_inputs()"]
        if self.check.variant and self.spec.plan.variant is not None:
            inputs.append("make_variant_inputs()")  # its graph is cached too
        lines = [*setup, f"cold = {compiled}"]
        fill = [f"fill_cache(cold, {i})  # compiles, then saves the cache entry" for i in inputs]
        site = self._call_site()
        lines += fill if site is None else [site, *(f"    {x}" for x in fill)]
        lines += ["torch._dynamo.reset()  # the compile below is served from the cache", *setup]
        return lines, "eager", fresh, "torch.compile (warm cache)", compiled

    def _main(self) -> list[str]:
        """Long: it writes the repro's main block in the order the script reads: inputs, the
        reference side, the compiled side, the one comparison."""
        check = self.check
        if check.compare == "seq_nr":
            return self._main_seq_nr()
        for helper in _FACT_HELPERS:
            if helper.__name__ + "(" in check.fact + check.before:
                needed: list[Callable[..., Any]] = [*_NEEDS.get(helper, ()), helper]
                self.helpers += [h for h in needed if h not in self.helpers]
        if check.compare == "canary":
            return self._main_canary()
        setup, ref_label, ref, got_label, got = self._sides()
        width = max(len(ref_label), len(got_label)) + 2
        rl, gl = f"{ref_label}:".ljust(width), f"{got_label}:".ljust(width)
        if check.compare == "runs":
            target = ref if self.subject == "eager" else got
            dies = "hangs (it exits 1 after 120 s)" if check.label == "hang" else "dies"
            return [
                *setup,
                f"# While the bug is present, the interpreter {dies} in this call.",
                f"result = outcome({target})",
                f'print(f"{gl}{{result!r:.300}}")',
                f'print("{got_label} ran through: the bug is fixed")',
            ]
        if check.compare == "guard":
            return [
                *setup,
                f"expected = outcome({ref})  # torch.compile's guards reject these: it recompiles",
                f"actual = outcome({got})",
                f'print(f"{rl}{{expected!r:.300}}")',
                f'print(f"{gl}{{actual!r:.300}}")',
                'if type(actual).__name__ != "PythonifyGuardError":',
                f'    raise SystemExit("BUG: {got_label} accepts what torch.compile rejects")',
                'print("the file refuses them too: the bug is fixed")',
            ]
        if check.compare == "skips":
            return self._main_skips(setup, ref, got, rl, gl)
        if self._crash_form():
            one = self._one_call()
            call = (lambda fn: fn + one[2:]) if one else (lambda fn: f"run({fn})")
            bug = f"BUG: {got_label} raises where {ref_label} runs: {{e!r:.300}}"
            exc_type, words = self._raised()
            checks = [f"type(e).__name__ == {exc_type!r}"] if exc_type else []
            if len(words) == 1:
                checks.append(f"{words[0]!r} in str(e)")
            elif words:  # every run, in order, as the identity's normalised message has them
                self.imports.add("re")
                pattern = ".*?".join(re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", w) for w in words)
                checks.append(f"re.search({pattern!r}, str(e), re.S)")
            same = " and ".join(checks) or "True"
            return [
                *setup,
                f"expected = {call(ref)}  # {ref_label} runs",
                "try:",
                f"    {call(got)}",
                "except Exception as e:",
                '    e = getattr(e, "inner_exception", None) or e  # what the compiler raised',
                f"    if not ({same}):",
                '        print(f"another error, not this bug: {e!r:.300}")',
                "        raise SystemExit(2) from None",
                f'    raise SystemExit(f"{bug}") from None',
                f'print("{got_label} runs too: the bug is fixed")',
            ]
        run = "outcome" if check.compare == "raises" and not check.fact else "observe"
        lines = [*setup, f"expected = {run}({ref})", f"actual = {run}({got})"]
        if check.compare == "later":
            return lines + self._verdict_later(rl, gl, ref_label, got_label)
        fmt = "!r:.300" if check.compare == "raises" else ""
        lines += [f'print(f"{rl}{{expected{fmt}}}")', f'print(f"{gl}{{actual{fmt}}}")']
        what = f"{check.label}: {got_label} differs from {ref_label}"
        if check.compare == "values":
            exact = self.backend == "aot_eager" or self.subject == "pythonify"
            tol = ", rtol=0, atol=0" if exact else ""
            return lines + [
                "try:",
                f"    torch.testing.assert_close(actual, expected{tol}, equal_nan=True)",
                "except AssertionError as e:",
                f'    raise SystemExit(f"BUG: {what}\\n{{e}}") from None',
                'print("same values: the bug is fixed")',
            ]
        if check.compare == "raises":
            differs = "not isinstance(actual, type(expected))"
            if self.subject == "pythonify" and self.finding["oracle"] == "guards":
                differs = f'type(actual).__name__ != "PythonifyGuardError" and {differs}'
            if not check.fact:
                what = f"{got_label} raises differently from {ref_label}"
        elif check.compare == "presence":
            differs = "(actual is None) != (expected is None)"
        else:
            differs = "actual != expected"
        return lines + [
            f"if {differs}:",
            f'    raise SystemExit("BUG: {what}")',
            'print("same: the bug is fixed")',
        ]

    def _main_canary(self) -> list[str]:
        """A process left broken (Note [A broken process] in pyfy_fuzz/campaign/worker.py): the
        subject's calls as the campaign made them, whatever they raise, then the canary in
        this same process; exit 1 while it fails. Only the subject runs: no reference."""
        if self.subject == "pythonify":
            setup, label, got = self._load_file(), "pythonified.py", "pythonified.call"
        else:
            setup, _, _, label, got = self._sides()
        self.helpers.append(H.canary)
        device = "" if self.device == "cpu" else repr(self.device)
        return [
            *setup,
            f"raised = outcome({got})  # the calls as pyfy-fuzz made them: an error is no bug",
            f'print(f"{label}: {{raised!r:.300}}")',
            f"broken = canary({device})  # then what a fresh process does, in this one",
            'print(f"the canary after it: {broken}")',
            "if broken is not None:",
            f'    raise SystemExit(f"BUG: {label} leaves the process broken: {{broken}}")',
            'print("the process is left as a fresh one: the bug is fixed")',
        ]

    def _raised(self) -> tuple[str, list[str]]:
        """(type name, words of its message) of the exception the finding is identified by:
        the type as the compiler raised it, and the runs of the normalised message that no
        program value fills in, in order ([] where it has none). Every run, not only the
        longest: "setStorage: ... are out of bounds for storage of size N" and
        "as_strided_scatter: ... are out of bounds ..." are two bugs (torch 2.15's triage: a
        repro that checked the tail alone reproduced another bug on 2.13)."""
        diffs = self.finding.get("differences") or ()
        exc = (diffs[0].get("exc") or {}) if diffs else {}
        exc_type = identity_type(str(exc.get("type") or self.finding.get("exc_type") or ""))
        # the message as str(e) gives it: a compiler failure's "<Type>: " prefix taken off
        raw = strip_type_prefix(str(exc.get("message", "")))
        message = normalise_message(raw) if raw else str(self.finding.get("message") or "")
        runs = re.split(r"\bN\b|\[\.\.\.\]|<\w+>|0x\?|\w*N_N\w*", message)
        found = [w for r in runs if (w := r.strip(" :;,.'\"")) and (not raw or w in raw)]
        if found:
            return exc_type, found
        # e.g. a class of the program's module, which a script has in __main__
        runs = re.split(r"\d+|\bpyfy_program_[0-9a-f]+\.", raw)
        found = [w for r in runs if (w := r.strip(" :;,.'\"[]()<>"))]
        return exc_type, [max(found, key=len)] if found else []

    def _main_skips(self, setup: list[str], ref: str, got: str, rl: str, gl: str) -> list[str]:
        """Note [Where the file replays, torch replays]: torch counts the graphs its
        cudagraph trees ran without CUDA graphs; the file's runners say why they skipped."""
        self.imports.add("counters")
        runners = ", ".join(repr(r) for r in RUNNERS)
        return [
            *setup,
            'before = counters["inductor"]["cudagraph_skips"]',
            f"observe({ref})",
            'expected = counters["inductor"]["cudagraph_skips"] - before  # graphs torch skipped',
            f"observe({got})",
            f"runners = [getattr(pythonified, n, None) for n in ({runners})]",
            "actual = [r.skipped_reason for r in runners if r is not None and r.skipped_reason]",
            f'print(f"{rl}{{expected}} graph(s) without CUDA graphs")',
            f"print(f\"{gl}{{actual or 'every graph captured'}}\")",
            "if bool(expected) != bool(actual):",
            '    raise SystemExit("BUG: the file runs CUDA graphs where torch does not, or back")',
            'print("the file replays where torch replays: the bug is fixed")',
        ]

    def _verdict_later(self, rl: str, gl: str, ref_label: str, got_label: str) -> list[str]:
        return [
            f'print(f"{rl}returned {{expected[0]}}, later {{expected[1]}}")',
            f'print(f"{gl}returned {{actual[0]}}, later {{actual[1]}}")',
            "if torch.equal(*expected) and not torch.equal(*actual):",
            f'    raise SystemExit("BUG: {self.check.label} under {got_label}, not {ref_label}")',
            'print("outputs keep their values: the bug is fixed")',
        ]

    def _main_seq_nr(self) -> list[str]:
        """Compile with a backend that keeps the graphs AOTAutograd hands its compilers.

        Long: it writes the seq_nr check in the order the script reads: keep the graphs, run
        forward and backward, map backward nodes to forward ones, compare with eager.
        """
        plan, how, fn = self.spec.plan, self.check.fact, self._fn()
        dynamic = self._dynamic_arg()
        keep = aot_options(plan.config)["keep_inference_input_mutations"]
        lines = ["graphs = {}  # forward, backward: their call_function nodes, with torch's meta"]
        if plan.frontend == "aot" and self.backend == "inductor":
            self.helpers.append(H.inductor_backend)
            self.imports.add("compile_fx_inner")
            lines.append(
                f"compiled = inductor_backend(torch.fx.symbolic_trace({fn}), list(make_inputs()))"
            )
            lines.append("observe(compiled)  # compiles the forward, and the backward it runs")
        elif plan.frontend == "aot":
            self.helpers.append(H.keep)
            self.imports.update(("aot_function_only", "boxed_nop"))
            lines += [
                "compiled = aot_function(  # the AOT front-end, keeping the graphs",
                f'    {fn}, fw_compiler=keep("forward"), bw_compiler=keep("backward"),',
                "    partition_fn=min_cut_rematerialization_partition,",
                f"    keep_inference_input_mutations={keep}{dynamic},",
                ")",
                "observe(compiled)  # compiles the forward, and the backward it runs",
            ]
        elif self.backend == "inductor":
            self.helpers.append(H.inductor_backend)
            self.imports.add("compile_fx_inner")
            lines.append(f"torch.compile({fn}, backend=inductor_backend{dynamic})(*make_inputs())")
        else:
            self.helpers.append(H.aot_eager_backend)
            self.imports.add("aot_eager")
            lines.append(f"torch.compile({fn}, backend=aot_eager_backend{dynamic})(*make_inputs())")
        if how == "file":
            return lines + self._seq_nr_file()
        lines.append(
            'print({g: {n.name: n.meta.get("seq_nr") for n in ns} for g, ns in graphs.items()})'
        )
        if how == "grad_acc":
            return lines + [
                'marked = [n.name for n in graphs["forward"] if n.meta.get("is_gradient_acc")]',
                "if marked:",
                '    raise SystemExit(f"BUG: forward nodes marked is_gradient_acc: {marked}")',
                'print("no forward node is marked as a gradient accumulation: the bug is fixed")',
            ]
        if how == "order":
            self.helpers.append(H.order_differences)
            self.imports.add("tree_leaves")
            return lines + [
                f"problems = order_differences({fn}, graphs)",
                "if problems:",
                '    raise SystemExit(f"BUG: by seq_nr, not eager\'s backward order: {problems}")',
                'print("the seq_nr groups follow eager\'s backward order: the bug is fixed")',
            ]
        if how == "no_seq_nr":
            self.helpers.append(H.no_seq_nr)
            return lines + [
                "bad = [n.name for n in no_seq_nr(graphs)]",
                "if bad:",
                '    raise SystemExit(f"BUG: backward nodes with no seq_nr: {bad}")',
                'print("every backward node has a seq_nr: the bug is fixed")',
            ]
        self.helpers.append(H.unmapped)
        if self.check.label == "order left out":
            lines.append(
                "# This finding's aspect, eager's backward order, is checked by pyfy-fuzz replay."
            )
        return lines + [
            "bad = [n.name for n in unmapped(graphs)]",
            "if bad:",
            '    raise SystemExit(f"BUG: backward nodes whose seq_nr names no forward: {bad}")',
            'print("every backward node names a forward node: the bug is fixed")',
        ]

    def _seq_nr_file(self) -> list[str]:
        """The file's SEQ_NR table against torch's graphs, as ranks (see `ranked`)."""
        self.helpers.append(H.ranked)
        return self._load_file() + [
            'if "backward" not in graphs:  # the file names an inference-only graph so',
            '    graphs["inference"] = graphs.pop("forward")',
            "tables = {",
            '    g: {n.name: n.meta["seq_nr"] for n in nodes if "seq_nr" in n.meta}',
            "    for g, nodes in graphs.items()",
            "}",
            "expected, actual = ranked(tables), ranked(pythonified.SEQ_NR)",
            'print("torch.compile: ", expected)',
            'print("pythonified.py:", actual)',
            "if actual != expected:",
            "    raise SystemExit(\"BUG: the file's seq_nr table differs from torch's graphs\")",
            'print("same seq_nr tables: the bug is fixed")',
        ]


def _program_module(spec: ProgramSpec, device: str) -> str:
    """The module name generators.materialize imports the program under: the pythonified file
    imports the program's classes (a tensor subclass) from it."""
    source = render(spec, device)
    return "pyfy_program_" + hashlib.sha1(source.encode()).hexdigest()[:16]


def title(finding: dict[str, Any], backend: str, mode: str | None) -> str:
    """case.json's title where it has one; else the identity's, from the differences."""
    if finding.get("title"):
        return str(finding["title"]).splitlines()[0][:200]
    return title_of(finding, backend, mode)[:200]


# ------------------------------------------------------------------------------ checking

_BLOCKED = ("pyfy_fuzz", "generators", "oracles")
# Runs repro.py as __main__ with pyfy-fuzz's own packages unimportable (an editable install
# would find them even under -I). An exception the script does not catch is no verdict: 2.
_BOOTSTRAP = (
    "import runpy, sys\n"
    f"for name in {_BLOCKED!r}:\n"
    "    sys.modules[name] = None\n"
    "sys.argv = ['repro.py']\n"
    "try:\n"
    "    runpy.run_path('repro.py', run_name='__main__')\n"
    "except Exception:\n"
    "    sys.excepthook(*sys.exc_info())  # the script's own: 2, or 3 while the reference runs\n"
    "    sys.exit(2)\n"
)


def check_repro(
    entry_dir: Path,
    timeout: float = 120,
    stop: threading.Event | None = None,
    python: str | None = None,
) -> tuple[int | None, str]:
    """Run `entry_dir/repro.py` on its own -- pyfy_fuzz, generators and oracles unimportable,
    PYTHONPATH unset -- and return its exit code (Note [A repro's exit codes]: 1: the bug is
    present, 0: fixed, 2: the script raised what it does not check, 3: the reference raises,
    negative: a signal; None: still running after
    `timeout` seconds, then killed) and the last 2000 characters of its output. Once `stop`
    is set the script is killed and ReproStopped raised: no verdict, and no process left.

    The script runs in a session of its own and is killed with its whole process group: an
    Inductor compile's workers, or a compiler it started, die with it rather than outlive a
    campaign that promised to end (Note [Ending on time] in campaign.py). `python`: the
    interpreter to run it with (another torch: Note [Which releases have a bug] in
    releases.py); this one's by default."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [python or sys.executable, "-c", _BOOTSTRAP],
        cwd=entry_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    end = time.monotonic() + timeout
    try:
        while True:
            try:
                out, _ = proc.communicate(timeout=0.25)
                return proc.returncode, out[-2000:]
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    raise ReproStopped(entry_dir) from None
                if time.monotonic() >= end:
                    return None, _kill_group(proc)[-2000:]
    finally:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[str]) -> str:
    """Kill the script's process group (what is left of it: its own descendants once it
    exited) and return what it printed since last read; bounded even where a descendant
    that left the group keeps the pipe open."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.stdout is None or proc.stdout.closed:  # read to its end already
        proc.wait()
        return ""
    try:
        out, _ = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a descendant in a session of its own holds the pipe
        proc.stdout.close()
        proc.wait()
        out = ""
    return out or ""


class ReproStopped(Exception):
    """check_repro was told to stop before the repro finished (the campaign ended)."""


# case.json's "repro" verdict for a check that did not run to its end: the campaign ended
# first (Note [Ending on time] in campaign.py). `pyfy-fuzz replay --repros` runs it.
NOT_RUN = "not run"


def repro_not_run(why: str) -> dict[str, Any]:
    """What case.json keeps of a repro check that did not run: marked, so a reader (and the
    report) knows it was never tried rather than lost."""
    return {"exit_code": None, "verdict": NOT_RUN, "checked": None, "tail": why}


def repro_record(
    entry_dir: Path, code: int | None, tail: str, kind: str | None = None
) -> dict[str, Any]:
    """What case.json keeps of a check_repro run: whether the repro shows the bug on its own.
    For an interpreter crash the process dying by a signal is the bug (`kind`)."""
    verdicts = {
        None: "timeout",
        0: "passes",
        1: "reproduces",
        2: "error",
        REFERENCE_RAISES: "reference raises",
    }
    died = code is not None and code < 0
    verdict = verdicts.get(code, "interpreter died" if died else "error")
    if died and kind == "interpreter-crash":
        verdict = "reproduces"  # the interpreter dies: that is the finding
    return {
        "exit_code": code,
        "verdict": verdict,
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tail": tail[-2000:],
    }
