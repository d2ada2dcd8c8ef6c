"""torch.compile (aot_eager): raises TypeError where eager runs: unsupported operand type(s) for *
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch
from torch.utils._pytree import tree_leaves

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

run(f)  # eager runs
try:
    run(torch.compile(f, backend="aot_eager"))
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
