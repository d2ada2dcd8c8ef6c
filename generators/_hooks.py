"""The hooks a program registers (the hooks family's statements, the module's backward hooks,
the plan's grad_fn_hooks knob), and the log they -- and its custom Functions' forward,
setup_context and backward (generators/_render_function.py) -- write through `_log_call`.

Real functions, emitted with `inspect.getsource` (`hooks_source`; Note [The emitted source is
the imported source] in pyfy_fuzz/schema/sourcepin.py): every rendered program defines them,
and a repro.py copies the ones its program registers (`generators.source.HOOKS`). pyfy-fuzz
compares the log between subjects: which user code ran, how often, in which order, and what
torch handed it (oracles/user_code.py).

Note [What user code receives]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each entry of HOOK_LOG is `(callee, *received)`: the callee ("a", "node pre", "module",
"Fn0.backward", ...) and, for every tensor-or-None argument torch passed it, None or
`(shape, dtype, requires_grad, _version)` (`_version` None for an inference tensor, which has
no counter). A hook runs as Python in every subject: eager's autograd engine, torch.compile's
(a hook on an input is replayed after the graph; a logging hook is never drawn where Dynamo
would trace it into the graph) and the pythonified file's.

A custom Function's forward, setup_context and backward are different: where Dynamo compiles
the Function into its graph, they run once, while traced, and the graph runs their ops from
then on -- no Python of theirs runs per call. A log written there cannot be kept without
changing what is compiled: Dynamo refuses a side effect inside the Function's subgraph ("HOP:
Unsafe side effect", gb0067) and then runs the whole Function eagerly; an effectful custom op
or a leaf function would put a node in the graph (effect tokens, another partition). So
`_log_call` writes nothing while torch traces: under Dynamo
`torch.compiler.is_dynamo_compiling()` is a constant True and the call folds away (the
graphs are the ones compiled without it: tests/oracles/test_user_code.py), and the AOT
front-end, which runs the Python on fake tensors, is seen by them. (`is_compiling()` would
not do: it stays True while a compiled frame runs, so a Function applied eagerly between two
graphs would log nothing either.)

Note [Hook frames run as Python]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A backward run inside the compiled function (`Tensor.backward()` or `torch.autograd.grad`
where Dynamo breaks the graph) calls the hooks while the compiled frame is still running, and
Dynamo compiles every frame it sees then: the hook's own, and `_log_call`'s, in which
`is_dynamo_compiling()` is a constant True -- so a hook that ran logged nothing, and the
oracle reported a hook that "did not run" (a false alarm of issue 36's run G, ead0). The
program keeps Dynamo off these functions' own frames (`_run_as_python`: torch's
`eval_frame.skip_code`, which leaves the functions they call and Dynamo's inlining of them
as they were), so a hook runs as Python and logs, as in eager; one Dynamo inlines into a
graph is traced as before.

Where Dynamo graph-breaks at the apply (a tensor passed twice: `Fn.apply(x, x)`), the
Function runs outside the graph, but Dynamo still compiles its forward frame on its own, so
forward and setup_context log nothing; its backward runs in autograd's engine and logs. So
under torch.compile a method's entries are absent from the log wherever Dynamo traced it, by
design (oracles/by_design.py, `custom-function-compiled`, excused only where the method has
no entry at all in that call); a method that runs is compared run by run, like a hook. The
pythonified file runs the graphs of the compile it models, and is compared exactly.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import emitted_source

if TYPE_CHECKING:  # the program imports torch; here the hooks are source, never called
    import torch

__all__ = ["HOOK_FUNCTIONS", "HOOK_LOG", "RUNTIME", "hooks_source", "run_as_python_lines"]

# The hooks that ran, in order (the program's own list; this one stays empty).
HOOK_LOG: list[tuple[object, ...]] = []


def _log_call(callee, *received):
    """Log what torch handed user code (Note [What user code receives]); not while traced."""
    if torch.compiler.is_dynamo_compiling():
        return
    fake = torch._subclasses.fake_tensor.is_fake  # the AOT front-end traces on fake tensors
    if any(isinstance(v, torch.Tensor) and fake(v) for v in received):
        return
    HOOK_LOG.append((callee, *(None if v is None else _tensor_seen(v) for v in received)))


def _tensor_seen(t):
    version = None if t.is_inference() else t._version  # an inference tensor has no counter
    return (tuple(t.shape), str(t.dtype), t.requires_grad, version)


# register_hook's second argument (an index; none: 0) -> the hook: one that changes the
# gradient, two that only log (their order is observed).
HOOK_FUNCTIONS = ("_double_grad", "_log_grad_a", "_log_grad_b")


def _double_grad(grad):
    return grad * 2


def _log_grad_a(grad):
    _log_call("a", grad)


def _log_grad_b(grad):
    _log_call("b", grad)


def _log_accumulated(param):
    _log_call("accumulated", param, param.grad)


def _log_node_pre(grad_outputs):
    _log_call("node pre", *grad_outputs)


def _log_node(grad_inputs, grad_outputs):
    _log_call("node", *grad_inputs, *grad_outputs)


def _hook_grad_fns(args):
    # a logging hook and pre-hook on the grad_fn of each non-leaf tensor argument
    for a in torch.utils._pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor) and a.grad_fn is not None:
            a.grad_fn.register_prehook(_log_node_pre)
            a.grad_fn.register_hook(_log_node)


def _module_hook(module, grad_input, grad_output):
    _log_call("module", *grad_input, *grad_output)
    return tuple(None if g is None else g * 3 for g in grad_input)


def _module_pre_hook(module, grad_output):
    _log_call("module pre", *grad_output)
    return None


def _run_as_python(*fns):
    """Dynamo never compiles these functions' own frames (Note [Hook frames run as Python])."""
    skip = getattr(torch._dynamo.eval_frame, "skip_code", None)
    if skip is None:
        raise RuntimeError(
            "torch._dynamo.eval_frame has no skip_code on this torch: the hook log cannot "
            "keep Dynamo off the hooks' own frames (Note [Hook frames run as Python])"
        )
    for fn in fns:
        skip(fn.__code__)


# The hooks, in the order the program defines them (names: a helper may call another).
RUNTIME = (
    "_log_call",
    "_tensor_seen",
    "_double_grad",
    "_log_grad_a",
    "_log_grad_b",
    "_log_accumulated",
    "_log_node_pre",
    "_log_node",
    "_hook_grad_fns",
    "_module_hook",
    "_module_pre_hook",
    "_run_as_python",
)
# What autograd or the log may call while a compiled frame runs: Dynamo keeps off their frames.
_AS_PYTHON = tuple(n for n in RUNTIME if n not in ("_hook_grad_fns", "_run_as_python"))


def run_as_python_lines(names: list[str] | tuple[str, ...] = _AS_PYTHON) -> list[str]:
    """`_run_as_python`'s definition and its call on `names` (Note [Hook frames run as
    Python]), for a script that defines only some of the hooks."""
    return [*emitted_source(_run_as_python).splitlines(), "", _as_python_call(names)]


def _as_python_call(names: list[str] | tuple[str, ...]) -> str:
    return f"_run_as_python({', '.join(names)})"


def hooks_source() -> str:
    """The log and the hooks, as the rendered program defines them after its helpers."""
    log = "HOOK_LOG = []  # the hooks that ran, in order: pyfy-fuzz compares it between subjects"
    hooks = emitted_source(*(globals()[name] for name in RUNTIME))
    return f"\n\n{log}\n\n\n{hooks}\n\n\n{_as_python_call(_AS_PYTHON)}"


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
