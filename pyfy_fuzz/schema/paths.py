"""The wrapper-path vocabulary: the names of what a compile exercised, torch-free.

A wrapper path is "<family>/<variant>", e.g. ``synthetic_base/nd`` or
``runtime/output/alias_of_intermediate``. Generators aim at them (``hypothesis.event``),
findings carry them, and the coverage report counts them, so all of them use these names. The
bundled generator *reads* them off its IR (`pyfy_fuzz.pythonify.paths.wrapper_paths`); every
other stage only names them, so the vocabulary lives here, below the generator under test: a
finding's identity does not depend on the module it tests. Which paths a generator family
aims at is declared with the family (`generators.FAMILY_TARGETS`).
"""

from __future__ import annotations

from pyfy_fuzz.schema.spec import CALL_RELATIONS as _RELATIONS
from pyfy_fuzz.schema.spec import THROUGH as _THROUGH
from pyfy_fuzz.schema.spec import ProgramSpec, variant_tokens

__all__ = [
    "ALL_PATHS",
    "CUDA_ONLY",
    "OUTPUT_ALIAS_KINDS",
    "REFINEMENTS",
    "SPEC_PATHS",
    "signature_paths",
    "spec_paths",
]

# AOTAutograd's OutputType names other than non_alias (schemas.py), as runtime paths name them.
OUTPUT_ALIAS_KINDS = (
    "alias_of_input",
    "is_input",
    "alias_of_intermediate_save_as_output",
    "alias_of_intermediate",
    "alias_of_intermediate_base_is_user_output",
    "unsafe_view_alias",
    "custom_function_view",
)

# How a later call aliases arguments (Note [Call relationships]): "aliasing" of arguments
# call 0 kept apart passes one tensor twice.
_LATER_ALIASING = ("same_tensor", "overlap", "share", "shift")

_INPUT_VIEWS = ("unfold", "view_dtype", "diagonal", "expand", "transpose", "as_strided")

# Paths a case's spec reaches, read off the spec (`spec_paths`), not off a compile: the
# relationships its later calls have to call 0 (Note [Call relationships]) and whether it
# runs a sequence of them. The report counts them with the wrapper paths; finding
# signatures leave them out (`signature_paths`): they say what was tried, and a finding's
# identity is what went wrong and where in the wrappers.
SPEC_PATHS: tuple[str, ...] = (
    *(f"plan/relation/{t}" for t in _RELATIONS),
    "plan/sequence",
    # what calls the function: torch.utils.checkpoint, either form (Note [The front-end
    # axis] in schema/spec.py)
    *(f"plan/through/{t}" for t in _THROUGH),
    # a later call aliases arguments call 0 kept apart (or aliases them otherwise), and the
    # body writes one argument and reads another: where stale reads live (issue 28)
    *(f"plan/aliased_later/{kind}" for kind in _LATER_ALIASING),
    "plan/aliased_later/mutate_read",
    # the arguments' aliasing: views of the kinds issue 17 asked for, two partially
    # overlapping n-D windows of one storage, a storage read as two dtypes
    *(f"inputs/view/{op}" for op in _INPUT_VIEWS),
    "inputs/nd_windows",
    "inputs/dtype_aliases",
    # what the body does to them: a view with a storage offset returned after a write; a
    # view of a non-leaf written where autograd does not record
    "inputs/offset_view_after_write",
    "inputs/nonleaf_view_written/no_grad",
    "inputs/nonleaf_view_written/inference_mode",
)
_SPEC_PREFIXES = ("plan/", "inputs/")

# Every path `wrapper_paths` can name: the report lists those never reached first (they are
# what the next generator work should aim at). A test keeps it a superset of what is emitted.
ALL_PATHS: tuple[str, ...] = (
    *SPEC_PATHS,
    "autograd/custom_function_view",
    "autograd/input_mutation",
    "autograd/mutation_in_backward",
    "autograd/saved_symints",
    "autograd/saved_tensors",
    "autograd/training",
    "cudagraph/inference",
    "cudagraph/skip_dynamic",
    "cudagraph/skipped_input_mutation",
    "cudagraph/static_inputs",
    "cudagraph/training",
    "debug_assert/requires_grad",
    "dedupe/duplicate_args",
    "fakified_out/first_call",
    "graph/break",
    "graph/dynamic",
    "graph/grad_store",
    "module/inference",
    "module/parameters",
    "rng/functionalized",
    "runtime/detach",
    "runtime/disable_amp",
    "runtime/grad_mode_mutation",
    "runtime/input_mutation/data",
    "runtime/input_mutation/metadata",
    "runtime/input_mutation/out_of_graph",
    "runtime/input_mutation/storage",
    "runtime/intermediate_bases",
    "runtime/saved_hooks_inlined",
    *(f"runtime/output/{kind}" for kind in OUTPUT_ALIAS_KINDS),
    "subclass/backward",
    "subclass/dynamic",
    "subclass/forward",
    "subclass/nested",
    "synthetic_base/1d",
    "synthetic_base/inference",
    "synthetic_base/metadata_mutation",
    "synthetic_base/nd",
    "synthetic_base/storage",
    "synthetic_base/training",
    "synthetic_base/view_base",
    "tokens/backward",
    "tokens/forward",
)


# Paths torch takes only on a GPU: a CPU campaign never reaches them, and the report says so
# rather than listing them as a generator's gap. FunctionalizedRngRuntimeWrapper is built
# only for CUDA RNG (functionalize_rng_ops with CUDA inputs); on CPU its emitted helper is
# tested by itself (tests/pythonify/wrappers).
CUDA_ONLY: frozenset[str] = frozenset({"rng/functionalized"})

# Variants that refine a path which is itself always emitted alongside them. They are reported
# and counted like any path, but finding signatures leave them out (`signature_paths`), so
# adding a refinement never renames a known finding in a corpus.
# (autograd/saved_tensors refines autograd/training: it was never emitted before an
# open-ended slice was counted right, so entries signed before that lack it. synthetic_base/1d
# and /nd, the aliased arguments' rank, refine synthetic_base/training or /inference: every
# synthetic base has one, so no shrink can remove it and it would split one bug in two.
# runtime/input_mutation/storage, a set_ of an input, refines runtime/input_mutation/metadata:
# torch's InputAliasInfo asserts mutates_storage_metadata implies mutates_metadata.
# subclass/nested, a subclass whose inner tensors are subclasses, refines subclass/forward or
# /backward, one of which every subclass program has.)
REFINEMENTS: frozenset[str] = frozenset(
    {
        "synthetic_base/storage",
        "synthetic_base/view_base",
        "autograd/saved_tensors",
        "synthetic_base/1d",
        "synthetic_base/nd",
        "runtime/input_mutation/storage",
        "subclass/nested",
    }
)


def signature_paths(paths: tuple[str, ...] | list[str]) -> list[str]:
    """The wrapper paths a finding's signature is made of: all but the refinements and the
    spec's own paths."""
    return sorted(p for p in paths if p not in REFINEMENTS and not p.startswith(_SPEC_PREFIXES))


def spec_paths(spec: ProgramSpec) -> list[str]:
    """The SPEC_PATHS a spec reaches: its later calls' relationships and sequence, its
    arguments' aliasing, and what its body does to them."""
    tokens = {t for v in (spec.plan.variant, *spec.plan.sequence) for t in variant_tokens(v)}
    found = [f"plan/relation/{t}" for t in _RELATIONS if t in tokens]
    found += ["plan/sequence"] if spec.plan.sequence else []
    found += [f"plan/through/{spec.plan.through}"] if spec.plan.through else []
    later = _aliased_later(spec, tokens)
    found += [f"plan/aliased_later/{kind}" for kind in _LATER_ALIASING if kind in later]
    found += ["plan/aliased_later/mutate_read"] if later and _mutate_read(spec) else []
    views = {s.op for i in spec.inputs if i.kind == "view" for s in i.views}
    # a root laid out expanded or transposed is made by that view of its storage
    layouts = {spec.roots[i.root].layout for i in spec.inputs if i.kind in ("root", "view")}
    views |= {"expand"} if "expanded" in layouts else set()
    views |= {"transpose"} if "transposed" in layouts else set()
    found += [f"inputs/view/{op}" for op in _INPUT_VIEWS if op in views]
    found += ["inputs/nd_windows"] if _windows(spec) else []
    found += ["inputs/dtype_aliases"] if _dtype_aliases(spec) else []
    found += ["inputs/offset_view_after_write"] if _offset_view_after_write(spec) else []
    for ctx in ("no_grad", "inference_mode"):
        if _nonleaf_view_written(spec, ctx):
            found.append(f"inputs/nonleaf_view_written/{ctx}")
    return found


def _aliased_later(spec: ProgramSpec, tokens: set[str]) -> set[str]:
    """How the later calls alias the arguments anew (_LATER_ALIASING)."""
    aliased = any(i.kind in ("view", "dup", "set_shared") for i in spec.inputs)
    kinds = {t for t in tokens if t in ("overlap", "share", "shift")}
    if "aliasing" in tokens and not aliased:
        kinds.add("same_tensor")
    return kinds


def _mutate_read(spec: ProgramSpec) -> bool:
    """The body writes one tensor argument in place and reads another."""
    names = {f"a{k}" for k, i in enumerate(spec.inputs) if not i.scalar}
    written = {
        str(s.args[0])
        for s in spec.body
        if s.op.endswith("_") and s.args and str(s.args[0]) in names
    }
    read = {str(a) for s in spec.body for a in s.args[int(s.op.endswith("_")) :] if a in names}
    return bool(written) and bool(read - written or len(written) >= 2 and read)


def _windows(spec: ProgramSpec) -> bool:
    """Two arguments that are n-D as_strided windows of one root with equal strides and
    different offsets."""
    wins = [
        (i.root, tuple(i.views[0].args[1]), i.views[0].args[2])
        for i in spec.inputs
        if i.kind == "view"
        and len(i.views) == 1
        and i.views[0].op == "as_strided"
        and len(i.views[0].args[0]) >= 2
    ]
    return any(a[:2] == b[:2] and a[2] != b[2] for k, a in enumerate(wins) for b in wins[k + 1 :])


def _dtype_aliases(spec: ProgramSpec) -> bool:
    """An argument reads a root's storage as another dtype, and another argument reads it too."""
    for k, i in enumerate(spec.inputs):
        if i.kind == "view" and any(s.op == "view_dtype" for s in i.views):
            if any(
                j.kind in ("root", "view", "set_shared") and j.root == i.root
                for m, j in enumerate(spec.inputs)
                if m != k
            ):
                return True
    return False


_WRITES = ("add_", "mul_", "copy_", "fill_", "zero_", "sin_", "index_put_", "setitem")


def _offset_view_after_write(spec: ProgramSpec) -> bool:
    """A returned view of an argument, sliced from index 1 on, taken after a write."""
    returned = {o.ref for o in spec.outputs if o.kind == "ref"}
    written = False
    for s in spec.body:
        written = written or s.op in _WRITES
        if s.op == "view" and written and set(s.outs) & returned and str(s.args[0])[0] == "a":
            if s.args[1] == "slice" and int(s.args[3]) >= 1:
                return True
    return False


def _nonleaf_view_written(spec: ProgramSpec, ctx: str) -> bool:
    """An argument that is a view of a non-leaf root, written in place under `ctx`."""
    names = {
        f"a{k}"
        for k, i in enumerate(spec.inputs)
        if i.kind == "view" and spec.roots[i.root].grad == "nonleaf"
    }
    return any(
        s.op in _WRITES and s.ctx == ctx and s.args and s.args[0] in names for s in spec.body
    )
