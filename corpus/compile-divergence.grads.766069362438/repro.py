"""torch.compile (aot_eager): the hooks that run differ from eager (hooks: ran)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
from torch.utils._pytree import tree_leaves
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

HOOK_LOG = []

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

def take_hook_log():
    """The hooks that ran since the last call, in order (the program's HOOK_LOG)."""
    out = list(HOOK_LOG)
    HOOK_LOG.clear()
    return out

def f(a0, a1):
    v0 = a1.tanh()
    a0.zero_()
    return v0, None

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((4, 0), generator=g).requires_grad_().clone()  # a non-leaf
    a1 = torch.randn((), generator=g).requires_grad_()
    return a0, a1

def observe(fn):
    args = make_inputs()
    _hook_grad_fns(args)  # as pyfy-fuzz's drive
    retain_grads(args)
    out = fn(*args)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    g = torch.Generator().manual_seed(1000)
    loss = sum((o * torch.randn(o.shape, generator=g).to(o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()
    return sorted(e[0] for e in take_hook_log() if "." not in e[0])

def retain_grads(args, skip=()):
    """Non-leaf arguments requiring grad keep their .grad, as pyfy-fuzz's drive asks (but
    those in `skip`, changed in place by a metadata op: eager asserts on those)."""
    for k, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.requires_grad and not a.is_leaf and k not in skip:
            a.retain_grad()

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if actual != expected:
    raise SystemExit("BUG: the hooks that ran (any order): torch.compile differs from eager")
print("same: the bug is fixed")
