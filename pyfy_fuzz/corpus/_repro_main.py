"""The main block of repro.py: the reference's run, the subject's, both printed, and the one
comparison, exiting 1 while they differ (Note [A repro's exit codes] in _repro_head). For the
seq_nr checks, the compile that keeps the graphs AOTAutograd hands its compilers. Built on the
sides (_repro_sides); repro.render_repro's script is this, with its parts put in order.

torch-free, like the rest of what writes a corpus entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from generators import rounds
from oracles.identity import identity_type, normalise_message, strip_type_prefix
from pyfy_fuzz.corpus import _repro_helpers as H
from pyfy_fuzz.corpus._repro_sides import ScriptSides, Sides
from pyfy_fuzz.schema.config import aot_options
from pyfy_fuzz.schema.observation import CUDAGRAPH_RUNNERS as RUNNERS

__all__ = ["ScriptMain"]

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
    H.received,
)
# A fact helper -> the helpers it needs before it (or its Check.before line calls).
_NEEDS: dict[Callable[..., Any], tuple[Callable[..., Any], ...]] = {
    H.seen_by_write: (H.write_into,),
    H.moved: (H.versions,),
    H.backward_saved: (H.save_products,),
}


class ScriptMain(ScriptSides):
    """The whole script's parts: the main block last, which decides what the others need."""

    def _main(self) -> list[str]:
        """The repro's main block, in the order the script reads: the reference side, the
        compiled side, the one comparison (one method per kind of comparison)."""
        check = self.check
        if check.compare == "seq_nr":
            return self._main_seq_nr()
        for helper in _FACT_HELPERS:
            if helper.__name__ + "(" in check.fact + check.before:
                needed: list[Callable[..., Any]] = [*_NEEDS.get(helper, ()), helper]
                self.helpers += [h for h in needed if h not in self.helpers]
        if check.compare == "canary":
            return self._main_canary()
        sides = self._sides()
        if check.compare == "runs":
            return self._main_runs(sides)
        if check.compare == "guard":
            return self._main_guard(sides)
        if check.compare == "skips":
            return self._main_skips(sides)
        if self._crash_form():
            return self._main_crash(sides)
        return self._main_compare(sides)

    def _main_runs(self, sides: Sides) -> list[str]:
        """The interpreter dies (or hangs) in the calls: the script only makes them."""
        setup, _, ref, got_label, got = sides
        _, gl = sides.padded()
        target = ref if self.subject == "eager" else got
        dies = "hangs (it exits 1 after 120 s)" if self.check.label == "hang" else "dies"
        return [
            *setup,
            f"# While the bug is present, the interpreter {dies} in this call.",
            f"result = outcome({target})",
            f'print(f"{gl}{{result!r:.300}}")',
            f'print("{got_label} ran through: the bug is fixed")',
        ]

    def _main_guard(self, sides: Sides) -> list[str]:
        """The file accepts inputs torch.compile's guards reject: it must refuse them too."""
        setup, _, ref, got_label, got = sides
        rl, gl = sides.padded()
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

    def _main_crash(self, sides: Sides) -> list[str]:
        """The subject raises where the reference runs: exit 1 only for the finding's own
        exception, its type and the words of its message (Note [A repro's exit codes])."""
        setup, ref_label, ref, got_label, got = sides
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

    def _main_compare(self, sides: Sides) -> list[str]:
        """Both sides observed, printed, and compared: values, what raised, presence, or any
        other fact by equality."""
        check = self.check
        setup, ref_label, ref, got_label, got = sides
        rl, gl = sides.padded()
        run = "outcome" if check.compare == "raises" and not check.fact else "observe"
        lines = [*setup, f"expected = {run}({ref})", f"actual = {run}({got})"]
        if check.compare == "later":
            return lines + self._verdict_later(sides)
        fmt = "!r:.300" if check.compare == "raises" else ""
        lines += [f'print(f"{rl}{{expected{fmt}}}")', f'print(f"{gl}{{actual{fmt}}}")']
        what = f"{check.label}: {got_label} differs from {ref_label}"
        if check.compare == "values":
            # decomposition-rounding: a composite op of torch's vocabulary may round otherwise
            exact = self.subject == "pythonify" or (
                self.backend == "aot_eager" and not rounds(self.spec)
            )
            tol = ", rtol=0, atol=0" if exact else ""
            return lines + [
                "try:",
                f"    torch.testing.assert_close(actual, expected{tol}, equal_nan=True)",
                "except AssertionError as e:",
                f'    raise SystemExit(f"BUG: {what}\\n{{e}}") from None',
                'print("same values: the bug is fixed")',
            ]
        if check.compare == "raises":
            # As the oracle judges (ExcObs.is_a): an exception of Dynamo's own is not eager's
            # error by its type (InternalTorchDynamoError subclasses RuntimeError); what a
            # BackendCompilerFailed wraps was unwrapped by outcome() above.
            differs = (
                "not isinstance(actual, type(expected)) or "
                '(type(actual).__module__ == "torch._dynamo.exc") '
                '!= (type(expected).__module__ == "torch._dynamo.exc")'
            )
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

    def _main_skips(self, sides: Sides) -> list[str]:
        """Note [Where the file replays, torch replays]: torch counts the graphs its
        cudagraph trees ran without CUDA graphs; the file's runners say why they skipped."""
        setup, _, ref, _, got = sides
        rl, gl = sides.padded()
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

    def _verdict_later(self, sides: Sides) -> list[str]:
        """An output as returned, and after the later calls: kept by the reference, changed
        by the subject (a replay overwrote it)."""
        rl, gl = sides.padded()
        ref_label, got_label = sides.ref_label, sides.got_label
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
