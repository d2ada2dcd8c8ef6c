"""The pieces a rendered program is made of, for tools that write other scripts from a spec.

`render(spec)` writes the whole program module. pyfy-fuzz's paste-ready repro.py writes a
shorter script from the same spec (the function, its inputs written out, one check), and must
use the same pieces so that the two can never disagree about what the program is: the
function's source, how its inputs and their views are written, the dtype names, the hooks the
program installs (grad hooks, and the saved-tensor hooks that log what autograd hands them).
"""

from __future__ import annotations

from ._hooks import HOOK_FUNCTIONS, run_as_python_lines
from ._prelude import no_retain
from ._relations import RELATE_FUNCTIONS, RELATE_TOKENS, variant_context
from ._render import HOOKS, MIRROR, module_init, render, uses_effect_op
from ._render_body import DTYPE_BY_NAME, ints_literal, out_expr, stmt_lines, view_expr
from ._render_function import function_source
from ._render_inputs import aliasing_variant
from ._saved_hooks import graph_hooks_source, saved_hooks_source
from ._stmts import takes_grad
from ._variants import effective_variant, variant_changes

__all__ = [
    "DTYPE_BY_NAME",
    "HOOK_FUNCTIONS",
    "HOOKS",
    "MIRROR",
    "RELATE_FUNCTIONS",
    "RELATE_TOKENS",
    "aliasing_variant",
    "effective_variant",
    "function_source",
    "graph_hooks_source",
    "ints_literal",
    "module_init",
    "no_retain",
    "out_expr",
    "render",
    "run_as_python_lines",
    "saved_hooks_source",
    "stmt_lines",
    "takes_grad",
    "uses_effect_op",
    "variant_changes",
    "variant_context",
    "view_expr",
]
