"""The hooks a program registers (the hooks family's statements, the module's backward hooks,
the plan's grad_fn_hooks knob), and the log they write.

Real functions, emitted with `inspect.getsource` (`hooks_source`; Note [The emitted source is
the imported source] in pyfy_fuzz/schema/sourcepin.py): every rendered program defines them,
and a repro.py copies the ones its program registers (`generators.source.HOOKS`). pyfy-fuzz
compares the log between subjects: which hooks ran, in which order, on what.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import emitted_source

if TYPE_CHECKING:  # the program imports torch; here the hooks are source, never called
    import torch

__all__ = ["HOOK_FUNCTIONS", "HOOK_LOG", "RUNTIME", "hooks_source"]

# The hooks that ran, in order (the program's own list; this one stays empty).
HOOK_LOG: list[tuple[object, ...]] = []

# register_hook's second argument (an index; none: 0) -> the hook: one that changes the
# gradient, two that only log (their order is observed).
HOOK_FUNCTIONS = ("_double_grad", "_log_grad_a", "_log_grad_b")


def _double_grad(grad):
    return grad * 2


def _log_grad_a(grad):
    HOOK_LOG.append(("a", tuple(grad.shape)))


def _log_grad_b(grad):
    HOOK_LOG.append(("b", tuple(grad.shape)))


def _log_accumulated(param):
    HOOK_LOG.append(("accumulated", tuple(param.grad.shape)))


def _log_node_pre(grad_outputs):
    HOOK_LOG.append(("node pre", len(grad_outputs)))


def _log_node(grad_inputs, grad_outputs):
    HOOK_LOG.append(("node", len(grad_inputs), len(grad_outputs)))


def _hook_grad_fns(args):
    # a logging hook and pre-hook on the grad_fn of each non-leaf tensor argument
    for a in torch.utils._pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor) and a.grad_fn is not None:
            a.grad_fn.register_prehook(_log_node_pre)
            a.grad_fn.register_hook(_log_node)


def _module_hook(module, grad_input, grad_output):
    HOOK_LOG.append(("module", len(grad_input), len(grad_output)))
    return tuple(None if g is None else g * 3 for g in grad_input)


def _module_pre_hook(module, grad_output):
    HOOK_LOG.append(("module pre", len(grad_output)))
    return None


# The hooks, in the order the program defines them (names: a helper may call another).
RUNTIME = (
    "_double_grad",
    "_log_grad_a",
    "_log_grad_b",
    "_log_accumulated",
    "_log_node_pre",
    "_log_node",
    "_hook_grad_fns",
    "_module_hook",
    "_module_pre_hook",
)


def hooks_source() -> str:
    """The log and the hooks, as the rendered program defines them after its helpers."""
    log = "HOOK_LOG = []  # the hooks that ran, in order: pyfy-fuzz compares it between subjects"
    hooks = emitted_source(*(globals()[name] for name in RUNTIME))
    return f"\n\n{log}\n\n\n{hooks}"


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
