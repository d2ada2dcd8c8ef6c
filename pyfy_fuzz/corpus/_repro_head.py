"""The head of repro.py: its docstring and imports, the settings the case ran under, the
subclass, custom op, autograd.Functions and hooks the program uses, and the program itself
(`def f` or `class Program`, as generators._render renders statements).

`ScriptHead` is the script being put together: what it shows (spec, finding, backend, device,
the one check), and what its parts ask of the whole as they are written (the helpers after
observe(), the names to import). The parts after the head build on it, each a class over the
one before: the calls (_repro_calls), the two sides (_repro_sides), the main block and its
verdict (_repro_main); repro.render_repro puts them together.

torch-free, like the rest of what writes a corpus entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from generators.source import (
    HOOK_FUNCTIONS,
    HOOKS,
    MIRROR,
    function_source,
    graph_hooks_source,
    module_init,
    out_expr,
    render,
    run_as_python_lines,
    saved_hooks_source,
    stmt_lines,
    takes_grad,
    uses_effect_op,
)
from oracles.identity import title_of
from pyfy_fuzz.corpus import _repro_helpers as H
from pyfy_fuzz.corpus._repro_check import Check, read_check
from pyfy_fuzz.schema.config import call_context, compile_knobs, graph_hooks_form
from pyfy_fuzz.schema.spec import ProgramSpec, draws_random

__all__ = ["REFERENCE_RAISES", "ScriptHead", "title"]


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


class ScriptHead:
    """One script being put together: what it shows and what its parts ask for, and the
    head's parts; each method returns the lines of one part of it."""

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
            fn = function_source(k, spec.functions[k], log=self._reads_log()).splitlines()
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
        take = self._reads_log()
        logs = bool(set(names) - {"_double_grad"} or (take and self._functions()))
        logger = ["_log_call", "_tensor_seen"] if logs else []  # what the others log with
        names = list(dict.fromkeys(logger + names))
        lines = ["HOOK_LOG = []", ""] if take or logs else []
        for n in names:
            lines += [*H.function_from(HOOKS, n), ""]
        if logs and takes_grad(list(spec.body)):  # Note [Hook frames run as Python]
            lines += [*run_as_python_lines([n for n in names if n != "_hook_grad_fns"]), ""]
        if take:
            lines += [*H.source(H.take_hook_log, not self.compact), ""]
        if self._logs_saved_hooks():
            lines += [*saved_hooks_source().splitlines(), ""]
        form = graph_hooks_form(spec.plan.config)
        if form is not None and self.check.probe_seed is None:  # a probe's call has no hooks
            lines += [*graph_hooks_source(form, define=True).splitlines(), ""]
        return lines

    def _reads_log(self) -> bool:
        """The fact is read off HOOK_LOG: only then do the custom Functions log too."""
        return "take_hook_log()" in self.check.fact

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
