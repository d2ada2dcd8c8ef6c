"""The calls of repro.py: observe(fn) (or outcome(fn), or run(fn) for a crash), which makes
every call as pyfy-fuzz's drive made it -- inputs, hooks, marks, call site, backward, the reads
between two backwards -- and returns the fact the check compares (Note [One check] in
_repro_check). Built on the script's head (_repro_head); the sides (_repro_sides) build on it.

torch-free, like the rest of what writes a corpus entry.
"""

from __future__ import annotations

import re

from generators.source import variant_context
from pyfy_fuzz.corpus._repro_check import first_difference, leaf, retains_grads
from pyfy_fuzz.corpus._repro_head import ScriptHead
from pyfy_fuzz.schema.config import call_context, graph_hooks_form
from pyfy_fuzz.schema.spec import draws_random, variant_tokens

__all__ = ["ScriptCalls"]

# An "again" call's inputs: the very arguments of the call before (the loop's last `args`).
_AGAIN = "(lambda seed: args)"
# A call line whose output may go unread: `out = fn(...)`, or through a checkpoint.
_CALL = re.compile(r"^(\s*)out = (fn\(|torch\.utils\.checkpoint\.checkpoint\(fn, )")


def _make(name: str, variant: str | None) -> str:
    """The inputs function of a later call: its own, or the call before's arguments."""
    return _AGAIN if "again" in variant_tokens(variant) else name


class ScriptCalls(ScriptHead):
    """The script with its calls: what each call runs, in the order the drive ran it."""

    # -- observe(fn): the calls, and what they show ----------------------------------------
    def _observe(self) -> list[str]:
        """observe(fn): the calls, returning the fact; for a check of what raises,
        outcome(fn): the calls in a try, returning what they raised (or None)."""
        check, fact = self.check, self.check.fact
        head, body = self._calls()
        self._need_names(head + body)
        if self._crash_form() and head:
            # Each call alone, and what the last one raises, raised: an earlier call that
            # raises on both sides, as pyfy-fuzz's drive saw it, does not make the reference
            # "raise" (issue 36's run G: crash.RuntimeError.dbbb exited 3 so).
            return [
                "def run(fn):  # each call alone; what the last one raises is raised",
                *self._each_call_alone(head, body, "e"),
                "    if raised is not None:",
                "        raise raised",
            ]
        if self._crash_form():  # run(fn), unless one line calls: then main calls inline
            return [] if self._one_call() else ["def run(fn):", *body]
        if check.compare in ("raises", "runs", "guard", "canary") and not fact and head:
            # Each call alone, as pyfy-fuzz's drive observes them: an earlier call that raises
            # on both sides does not hide the last one's difference (the GPU corpus's
            # guards.8569: eager and torch.compile both raised at the variant call first).
            return [
                "def outcome(fn):  # None, or what the last call raises (each call runs alone)",
                *self._each_call_alone(
                    head,
                    body,
                    'getattr(e, "inner_exception", None) or e',
                    "  # a compiler crash: what the compiler raised",
                ),
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

    @staticmethod
    def _each_call_alone(head: list[str], body: list[str], raised: str, why: str = "") -> list[str]:
        """The loop over the calls (`head`, one `for` line), each call's `body` in a try;
        `raised` is what the last call raised (`raised`, an expression of `e`, which `why`
        comments), or None."""
        assert len(head) == 1 and head[0].startswith("    for "), head
        return [
            *head,
            "        raised = None",
            "        try:",
            *(f"    {x}" for x in body),
            f"        except Exception as e:{why}",
            f"            raised = {raised}",
        ]

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

    def _history(self) -> list[tuple[int, str, str | None]]:
        """(seed, inputs function, variant) of the calls pyfy-fuzz made on the same compile
        before a probe's fresh call, where they decide which graph the probe's call runs
        (Note [A probe's call runs on the graphs the calls before it compiled]); else none."""
        check, plan = self.check, self.spec.plan
        if (
            check.probe_seed is None
            or self.subject != "torch.compile"
            or plan.frontend != "dynamo"
            or plan.mode is not None
            or self.spec.module is not None  # the reference would need the same history
            or plan.variant is None
            or "again" in variant_tokens(plan.variant)
            or any("again" in variant_tokens(v) for v in plan.sequence)
            or first_difference(self.finding).call.recompiled
        ):
            return []
        runs: list[tuple[int, str, str | None]] = [
            (s, "make_inputs", None) for s in range(plan.calls)
        ]
        runs.append((0, "make_variant_inputs", plan.variant))
        runs += [(0, f"make_call_{k}_inputs", v) for k, v in enumerate(plan.sequence)]
        return runs + [(s, "make_inputs", None) for s in range(plan.calls, check.probe_seed)]

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
        # A probe's fresh call is made apart from the drive (pyfy_fuzz.case.probes._fresh_call):
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
        inner = [f"out = {self._through('*args' if uses_args else f'*{make}', drive)}"]
        if site is not None and drive:
            inner = [site, f"    {inner[0]}"]
        if check.grad_mode:
            inner.append("grad_mode = torch.is_grad_enabled()")
        if self._uses("set_grad_enabled"):
            inner.append("torch.set_grad_enabled(True)  # pyfy-fuzz's drive restores it")
        inner += self._backward(backward, seed, reads)
        if graph_hooks_form(spec.plan.config) is not None and drive:  # on top of the plan's
            hooks = "with torch.autograd.graph.saved_tensors_hooks(*GRAPH_HOOKS):"
            inner = [hooks, *(f"    {x}" for x in inner)]
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
        reads_out = [b for b in body if not _CALL.match(b)] + [check.fact]
        if not any(re.search(r"\b(out|tensors)\b", b) for b in reads_out) and not check.snapshot:
            body = [_CALL.sub(r"\1\2", b) for b in body]  # nothing reads it
        if check.snapshot is not None:
            c, j = check.snapshot
            kept = f"kept, returned = {leaf(spec, j)}, {leaf(spec, j)}.detach().clone()"
            body += [kept] if len(runs) == 1 else [f"if seed == {c}:", f"    {kept}"]
        return head, [indent + b for b in body]

    def _through(self, args: str, drive: bool) -> str:
        """The call as the drive makes it (generators' `through`, Note [The front-end axis]
        in pyfy_fuzz/schema/spec.py): through torch.utils.checkpoint where the plan says so.
        A probe's fresh call is made apart from the drive, directly."""
        through = self.spec.plan.through if drive else None
        if through is None:
            return f"fn({args})"
        how = "True" if through == "checkpoint_reentrant" else "False, early_stop=False"
        return f"torch.utils.checkpoint.checkpoint(fn, {args}, use_reentrant={how})"

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
