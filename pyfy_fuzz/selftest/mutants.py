"""Planted bugs in the bundled generator's wrapper models, one at a time.

    impl = make_impl("pyfy_fuzz.selftest.mutants:impl_copy_back_dropped")  # in a worker

Each `Mutant` is a plausible mistake in how pythonify models one AOTAutograd wrapper: either
in what the capture/IR records (an `ir` edit, applied after `build_ir`) or in the code the
generator emits (`source` edits, applied to the generated file before it is written). The
torch.compile subject is untouched: only the pythonified file carries the bug, so a campaign
that reports a pythonify finding has caught it. A mutant that finds nothing to change in a
program leaves that program's file as it was (`MutantPythonify.applied` counts the cases it
changed), so a survivor can be told apart: never activated (the generator does not reach the
wrapper) or activated and unseen (an oracle is missing).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfy_fuzz.case.subjects.impl import BundledPythonify, Produced
from pyfy_fuzz.pythonify.ir import (
    AOTDedupeWrapperNode,
    AOTDispatchSubclassWrapperNode,
    EffectTokensWrapperNode,
    PlainMeta,
    PythonifyIR,
    SubclassMeta,
)

__all__ = [
    "BY_NAME",
    "Edit",
    "MUTANTS",
    "Mutant",
    "MutantPythonify",
]


@dataclass(frozen=True)
class Edit:
    """A regex substitution on the generated file; `append` is added once when it matched."""

    pattern: str
    repl: str
    append: str = ""


@dataclass(frozen=True)
class Mutant:
    name: str
    wrapper: str  # the runtime_wrappers.py class (or runtime helper) whose model is wrong
    families: tuple[str, ...]  # generator families whose programs exercise it
    bug: str  # the mistake, as a reviewer would describe it
    ir: Callable[[PythonifyIR], bool] | None = None  # edits in place; True when it changed
    source: tuple[Edit, ...] = ()

    def mutate_ir(self, ir: PythonifyIR) -> bool:
        return bool(self.ir(ir)) if self.ir is not None else False

    def mutate_source(self, src: str) -> tuple[str, bool]:
        changed = False
        for e in self.source:
            new, n = re.subn(e.pattern, e.repl, src, flags=re.MULTILINE)
            if n:
                changed = True
                src = new + e.append
        return src, changed


# -- IR edits ---------------------------------------------------------------------------------
def _nodes(ir: PythonifyIR, cls: type) -> list[Any]:
    return [n for n in ir.wrapper_nodes() if isinstance(n, cls)]


def _dedupe_dupes_assumed_last(ir: PythonifyIR) -> bool:
    """keep_arg_mask built as if every duplicate came after the args it repeats."""
    changed = False
    for n in _nodes(ir, AOTDedupeWrapperNode):
        mask = list(n.keep_arg_mask)
        wrong = [True] * mask.count(True) + [False] * mask.count(False)
        if wrong != mask:
            n.keep_arg_mask, changed = wrong, True
    return changed


def _one_token_too_many(ir: PythonifyIR) -> bool:
    changed = False
    for n in _nodes(ir, EffectTokensWrapperNode):
        if n.token_count:
            n.token_count += 1
            changed = True
    return changed


def _subclass_inner_swapped(ir: PythonifyIR) -> bool:
    """Inner tensors of subclass inputs unwrapped in reverse attribute order."""
    changed = False
    for n in _nodes(ir, AOTDispatchSubclassWrapperNode):
        metas = []
        for m in n.inp_metas:
            if (
                isinstance(m, SubclassMeta)
                and sum(isinstance(a, PlainMeta) for _, a in m.attrs) > 1
            ):
                m = dataclasses.replace(m, attrs=tuple(reversed(m.attrs)))
                changed = True
            metas.append(m)
        n.inp_metas = metas
    return changed


def _backward_seq_nr(edit: Callable[[tuple[tuple[str, int], ...]], Any]) -> Callable[..., bool]:
    def apply(ir: PythonifyIR) -> bool:
        g = ir.graphs.get("backward")
        if g is None or not g.seq_nr:
            return False
        ir.graphs["backward"] = dataclasses.replace(g, seq_nr=tuple(edit(g.seq_nr)))
        return True

    return apply


# -- the mutants ------------------------------------------------------------------------------
MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "dedupe_dupes_assumed_last",
        "AOTDedupeWrapper",
        ("dedupe",),
        "keep_arg_mask computed as if duplicates always follow the args they repeat, so "
        "f(x, x, y) hands the graph (x, x) instead of (x, y)",
        ir=_dedupe_dupes_assumed_last,
    ),
    Mutant(
        "copy_back_dropped",
        "RuntimeWrapper",
        ("input_mutation",),
        "the epilogue forgets to copy a mutated input's new value back into the caller's tensor",
        source=(
            Edit(
                r"(orig_inputs\[\d+\](?:\.detach\(\))?)\.copy_\((updated_inputs\[\d+\])\)",
                r"None  # selftest: dropped \1.copy_(\2)",
            ),
        ),
    ),
    Mutant(
        "copy_back_skips_version_counter",
        "RuntimeWrapper",
        ("input_mutation", "synthetic_base"),
        "the epilogue writes a mutated input's new value through .data, so the values are "
        "right but autograd never sees the write (its version counter does not move)",
        source=(
            Edit(
                r"(orig_inputs\[\d+\])(?:\.detach\(\))?\.copy_\((updated_inputs\[\d+\])\)",
                r"\1.data.copy_(\2)  # selftest: bypasses the version counter",
            ),
        ),
    ),
    Mutant(
        "metadata_mutation_not_in_place",
        "RuntimeWrapper",
        ("input_mutation", "synthetic_base"),
        "a metadata mutation (t_, transpose_, as_strided_) replayed with out-of-place "
        "as_strided, so the caller's tensor keeps its old shape",
        source=(Edit(r"(orig_inputs\[\d+\])\.as_strided_\(", r"\1.as_strided("),),
    ),
    Mutant(
        "alias_regenerated_as_copy",
        "RuntimeWrapper",
        ("output_aliasing", "input_mutation"),
        "an output that aliases an input is regenerated as a fresh copy, not a view of it",
        source=(
            Edit(
                r"_gen_alias_from_base\(orig_inputs\[",
                r"_selftest_copied_alias(orig_inputs[",
                append="\n\ndef _selftest_copied_alias(*a):\n"
                "    return _gen_alias_from_base(*a).clone()\n",
            ),
        ),
    ),
    Mutant(
        "is_input_returned_as_view",
        "RuntimeWrapper",
        ("output_aliasing", "input_mutation"),
        "an output that is an input is handed back as a new view of it, not the caller's "
        "tensor object",
        source=(
            Edit(
                r"orig_inputs\[(\d+)\],  # is_input",
                r"orig_inputs[\1].view_as(orig_inputs[\1]),  # is_input",
            ),
        ),
    ),
    Mutant(
        "grad_mode_mutation_lost",
        "RuntimeWrapper",
        ("input_mutation",),  # the family whose programs set grad mode inside the function
        "the grad mode the function set inside itself is not restored after the call",
        source=(
            Edit(
                r"torch\._C\._set_grad_enabled\((?:True|False)\)  # grad mode set inside fn",
                "pass  # selftest: grad mode set inside fn dropped",
            ),
        ),
    ),
    Mutant(
        "effect_tokens_off_by_one",
        "EffectTokensWrapper",
        ("effects",),
        "one effect token too many threaded through the graph (and one output too many dropped)",
        ir=_one_token_too_many,
    ),
    Mutant(
        "subclass_inner_swapped",
        "AOTDispatchSubclassWrapper",
        ("subclass",),
        "a subclass input's inner tensors unwrapped in reverse order (b, a for a TwoTensor)",
        ir=_subclass_inner_swapped,
    ),
    Mutant(
        "synthetic_base_is_first_alias",
        "AOTSyntheticBaseWrapper",
        ("synthetic_base",),
        "the synthetic base of an alias group is the first view rather than its _base",
        source=(
            Edit(
                r"(if a\._base is not None:\n\s+)return a\._base\n",
                r"\1return a\n",
            ),
        ),
    ),
    Mutant(
        "cudagraph_static_output_handed_out",
        "CUDA-graph replay",
        ("cudagraph",),
        "replay hands the caller the graph's static output buffers, which the next replay "
        "overwrites",
        source=(
            Edit(
                r"^(\s+)input_storage: dict = \{\}  # storage key",
                r"\1return list(static_outputs)\n\1input_storage: dict = {}  # storage key",
            ),
        ),
    ),
    Mutant(
        "saved_boundary_off_by_one",
        "AOTDispatchAutograd (CompiledFunction)",
        ("autograd_function", "module", "input_mutation"),
        "the last tensor to save with a version check is kept with the unchecked ones, apart "
        "from save_for_backward: backward reads the same tensors in the same order, but "
        "saved-tensor hooks never see it (nor does the version check)",
        source=(
            Edit(
                r"ctx\.save_for_backward\((\*\[.*? for x in fw_outs\[[^\]]*\]\])\)\n"
                r"(\s+)ctx\._tensors_no_vc_check = (\[.*? for x in fw_outs\[[^\]]*\]\])",
                r"_selftest_checked, ctx._tensors_no_vc_check = _selftest_split([\1], \3)"
                r"\n\2ctx.save_for_backward(*_selftest_checked)",
                append="\n\ndef _selftest_split(checked, unchecked):\n"
                "    if not checked:\n"
                "        return checked, unchecked\n"
                "    return checked[:-1], [checked[-1], *unchecked]\n",
            ),
        ),
    ),
    Mutant(
        "seq_nr_shifted",
        "seq_nr annotations (AOTDispatchAutograd backward)",
        ("autograd_function", "module", "input_mutation"),
        "backward nodes annotated with the seq_nr of the forward op after theirs",
        ir=_backward_seq_nr(lambda t: [(name, nr + 1) for name, nr in t]),
    ),
    Mutant(
        "seq_nr_lost",
        "seq_nr annotations (AOTDispatchAutograd backward)",
        ("autograd_function", "module", "input_mutation"),
        "the backward graph's seq_nr annotations are dropped",
        ir=_backward_seq_nr(lambda t: ()),
    ),
    Mutant(
        "guard_shape_and_not_or",
        "guards",
        ("input_mutation", "output_aliasing", "module"),
        "the shape guard only fails when both the rank and a size differ",
        source=(
            Edit(
                r"if x\.dim\(\) != len\(shape\) or any\(",
                "if x.dim() != len(shape) and any(",
            ),
        ),
    ),
    Mutant(
        "guard_aliasing_missing",
        "guards",
        ("later_aliasing", "input_mutation", "output_aliasing", "synthetic_base"),
        "no guard on which inputs alias each other (the file runs a graph compiled for "
        "aliased inputs on distinct ones, and the reverse)",
        source=(Edit(r"^(\s+)_check_aliasing\(", r"\1(lambda *_: None)("),),  # both checks
    ),
    Mutant(
        "guard_dtype_missing",
        "guards",
        ("input_mutation", "output_aliasing", "module"),
        "no guard on input dtypes: a graph traced for float32 runs on float64 inputs",
        source=(
            Edit(
                r"if x\.dtype != dtype:",
                "if False:  # selftest: dtype guard dropped",
            ),
        ),
    ),
)

BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}


class MutantPythonify(BundledPythonify):
    """The bundled generator with one mutant planted, for the duration of each `produce`."""

    def __init__(self, mutant: Mutant) -> None:
        super().__init__()
        self.mutant = mutant
        self.name = f"mutant:{mutant.name}"
        self.applied = 0  # cases whose file the mutant changed

    def produce(self, fn: Any, args: tuple[Any, ...], path: Path, **kw: Any) -> Produced:
        from pyfy_fuzz.pythonify import api

        hit = [False]
        build_ir, generate = api.build_ir, api.generate

        def mutated_build_ir(cap: Any) -> PythonifyIR:
            ir = build_ir(cap)
            hit[0] |= self.mutant.mutate_ir(ir)
            return ir

        def mutated_generate(ir: PythonifyIR) -> str:
            src, changed = self.mutant.mutate_source(generate(ir))
            hit[0] |= changed
            return src

        api.build_ir, api.generate = mutated_build_ir, mutated_generate  # type: ignore[assignment]
        try:
            return super().produce(fn, args, path, **kw)
        finally:
            api.build_ir, api.generate = build_ir, generate  # type: ignore[assignment]
            self.applied += hit[0]


def __getattr__(attr: str) -> Callable[[], MutantPythonify]:
    """`impl_<mutant name>`: the factory a campaign worker calls (`make_impl("mod:impl_x")`)."""
    if attr.startswith("impl_") and attr[5:] in BY_NAME:
        mutant = BY_NAME[attr[5:]]
        return lambda: MutantPythonify(mutant)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
