"""The wrapper-path vocabulary: the names of what a compile exercised, torch-free.

A wrapper path is "<family>/<variant>", e.g. ``synthetic_base/nd`` or
``runtime/output/alias_of_intermediate``. Generators aim at them (``hypothesis.event``),
findings carry them, and the coverage report counts them, so all of them use these names. The
bundled generator *reads* them off its IR (`pyfy_fuzz.pythonify.paths.wrapper_paths`); every
other stage only names them, so the vocabulary lives here, below the generator under test: a
finding's identity does not depend on the module it tests.
"""

from __future__ import annotations

from .spec import CALL_RELATIONS, ProgramSpec, variant_tokens

__all__ = [
    "ALL_PATHS",
    "CUDA_ONLY",
    "FAMILY_TARGETS",
    "OUTPUT_ALIAS_KINDS",
    "REFINEMENTS",
    "SPEC_PATHS",
    "reached",
    "signature_paths",
    "spec_paths",
]

# Generator family -> the path prefixes any one of which means "target reached".
FAMILY_TARGETS: dict[str, tuple[str, ...]] = {
    "dedupe": ("dedupe/",),
    "synthetic_base": ("synthetic_base/",),
    "input_mutation": ("runtime/input_mutation/",),
    "output_aliasing": ("runtime/output/",),
    "subclass": ("subclass/",),
    "effects": ("tokens/",),
    "rng": ("rng/",),  # CUDA only; on CPU the family is judged by eager parity instead
    "autograd_function": ("autograd/",),
    "module": ("module/",),
    "cudagraph": ("cudagraph/",),
}


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

# Paths a case's spec reaches, read off the spec (`spec_paths`), not off a compile: the
# relationships its later calls have to call 0 (Note [Call relationships]) and whether it
# runs a sequence of them. The report counts them with the wrapper paths; finding
# signatures leave them out (`signature_paths`): they say what was tried, and a finding's
# identity is what went wrong and where in the wrappers.
SPEC_PATHS: tuple[str, ...] = (
    *(f"plan/relation/{t}" for t in CALL_RELATIONS),
    "plan/sequence",
)
_SPEC_PREFIXES = ("plan/",)

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
    "cudagraph/training",
    "debug_assert/requires_grad",
    "dedupe/duplicate_args",
    "fakified_out/first_call",
    "graph/break",
    "graph/dynamic",
    "module/inference",
    "module/parameters",
    "rng/functionalized",
    "runtime/detach",
    "runtime/disable_amp",
    "runtime/grad_mode_mutation",
    "runtime/input_mutation/data",
    "runtime/input_mutation/metadata",
    "runtime/input_mutation/out_of_graph",
    "runtime/intermediate_bases",
    *(f"runtime/output/{kind}" for kind in OUTPUT_ALIAS_KINDS),
    "subclass/backward",
    "subclass/dynamic",
    "subclass/forward",
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
# synthetic base has one, so no shrink can remove it and it would split one bug in two.)
REFINEMENTS: frozenset[str] = frozenset(
    {
        "synthetic_base/storage",
        "synthetic_base/view_base",
        "autograd/saved_tensors",
        "synthetic_base/1d",
        "synthetic_base/nd",
    }
)


def signature_paths(paths: tuple[str, ...] | list[str]) -> list[str]:
    """The wrapper paths a finding's signature is made of: all but the refinements and the
    spec's own paths."""
    return sorted(p for p in paths if p not in REFINEMENTS and not p.startswith(_SPEC_PREFIXES))


def spec_paths(spec: ProgramSpec) -> list[str]:
    """The SPEC_PATHS a spec reaches: its later calls' relationships, its sequence."""
    tokens = {t for v in (spec.plan.variant, *spec.plan.sequence) for t in variant_tokens(v)}
    found = [f"plan/relation/{t}" for t in CALL_RELATIONS if t in tokens]
    return found + (["plan/sequence"] if spec.plan.sequence else [])


def reached(paths: list[str], family: str) -> bool:
    """Whether `paths` include the target of generator `family`."""
    try:
        prefixes = FAMILY_TARGETS[family]
    except KeyError:
        known = sorted(FAMILY_TARGETS)
        raise ValueError(f"unknown family {family!r}; expected one of {known}") from None
    return any(p.startswith(prefixes) for p in paths)
