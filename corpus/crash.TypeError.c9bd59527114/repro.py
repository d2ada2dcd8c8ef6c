"""torch.compile (aot_eager): raises TypeError where eager runs: unsupported operand type(s) for *
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
from torch.utils._pytree import tree_leaves
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

class Fn0(torch.autograd.Function):
    @staticmethod
    def forward(x):
        y = x * 3
        return y, y.detach() * 0

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx, g, g_extra):
        torch.ops.aten._print("pyfy-fuzz backward")
        if g is None:
            return None
        return g * 3

def _double_grad(grad):
    return grad * 2

def f(a0, a1):
    a1.register_hook(_double_grad)
    v0, v2 = Fn0.apply(a0)
    v3 = a1 * a1
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_()
    a1 = torch.randn((1, 1, 1), generator=g).requires_grad_()
    return a0, a1

def run(fn):
    out = fn(*make_inputs())
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    loss = sum((o * torch.ones(o.shape, dtype=o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()

expected = run(f)  # eager runs
try:
    run(torch.compile(f, backend="aot_eager"))
except Exception as e:
    e = getattr(e, "inner_exception", None) or e  # what the compiler raised
    if not (type(e).__name__ == 'TypeError' and 'unsupported operand type(s) for *' in str(e)):
        print(f"another error, not this bug: {e!r:.300}")
        raise SystemExit(2) from None
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
