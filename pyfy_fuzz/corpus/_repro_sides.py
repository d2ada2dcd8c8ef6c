"""The two sides of repro.py: the reference (eager, or torch.compile for the pythonified
file) and the subject (torch.compile as the campaign compiled it, the warm compile served from
the cache, or pythonified.py loaded from next to the script). Built on the calls
(_repro_calls); the main block (_repro_main) builds on it.

torch-free, like the rest of what writes a corpus entry.
"""

from __future__ import annotations

from typing import NamedTuple

from pyfy_fuzz.corpus import _repro_helpers as H
from pyfy_fuzz.corpus._repro_calls import ScriptCalls
from pyfy_fuzz.schema.config import aot_options, stock_compile

__all__ = ["ScriptSides", "Sides"]


class Sides(NamedTuple):
    """What the main block runs: the setup, then the reference and the subject."""

    setup: list[str]  # lines before the calls: the compile, the file loaded, the cache filled
    ref_label: str  # the reference as printed: "eager", or "torch.compile" for the file
    ref: str  # the reference's callable, as an expression
    got_label: str  # the subject as printed: "torch.compile", "pythonified.py", ...
    got: str  # the subject's callable, as an expression

    def padded(self) -> tuple[str, str]:
        """The two labels with their colons, padded to one width: the printed columns."""
        width = max(len(self.ref_label), len(self.got_label)) + 2
        return f"{self.ref_label}:".ljust(width), f"{self.got_label}:".ljust(width)


class ScriptSides(ScriptCalls):
    """The script with its two sides: what compiles the subject, and what runs each."""

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

    def _sides(self) -> Sides:
        """The reference and the subject of this finding, and the lines that make them."""
        fresh = self._fn()
        if self.subject == "eager":
            return Sides([], "eager", fresh, "eager", fresh)
        if self.subject == "torch.compile-warm":
            return self._warm_sides(fresh)
        if self.subject != "pythonify":
            setup, compiled = self._compiled()
            history = self._history()
            if history:
                setup = [*setup, f"compiled = {compiled}", *self._replay(history)]
                compiled = "compiled"
            return Sides(setup, "eager", fresh, "torch.compile", compiled)
        file_call = "pythonified.call"
        if self.finding["oracle"] == "guards":  # inputs the compile never saw: eager rules
            return Sides(self._load_file(), "eager", fresh, "pythonified.py", file_call)
        setup, compiled = self._compiled()
        return Sides(
            setup + self._load_file(), "torch.compile", compiled, "pythonified.py", file_call
        )

    # Note [A probe's call runs on the graphs the calls before it compiled]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # pyfy-fuzz makes a probe's fresh call (pyfy_fuzz.case.probes) on the compile the plan's
    # calls, the variant call and the sequence already ran, and Dynamo tries the newest graph
    # first: where the later call's guards also let the probe's arguments through, the probe
    # runs on the graph compiled for the later call, not on one compiled for its own arguments
    # (the 12-07 campaign's d70addddf442: a graph for shifted aliases, run on call 0's; a
    # repro compiling afresh met another error and exited 2). So where the probe did not
    # recompile after a later call, the repro makes the same calls on the same compile first,
    # each under its call's context and in its own try (a call that raised compiled nothing,
    # as in the campaign), then the probe's.
    def _replay(self, history: list[tuple[int, str, str | None]]) -> list[str]:
        """The calls before a probe's, made on `compiled` (Note above)."""
        triples = ", ".join(f"({m}, {s}, {self._during(v)})" for s, m, v in history)
        lines = [
            f"for make, seed, during in ({triples}):  # the calls pyfy-fuzz made first",
            "    try:",
            "        with during():",
            "            compiled(*make(seed))",
            "    except Exception:",
            "        pass  # as in the campaign: the probe's call follows whatever they did",
        ]
        self._need_names(lines)
        return lines

    def _warm_sides(self, fresh: str) -> Sides:
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
        return Sides(lines, "eager", fresh, "torch.compile (warm cache)", compiled)
