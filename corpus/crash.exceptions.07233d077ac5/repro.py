"""torch.compile (aot_eager, reduce-overhead): raises RuntimeError where eager runs: one of the variables needed for gradient computation has been modified by an inplace operation
python repro.py  # exit 1 while the bug is present, 0 once fixed
"""

import torch
from torch.utils._pytree import tree_leaves

def f(a0, a1):
    v0 = a0.cos()
    a1.sin_()
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((1, 1, 2), generator=g).requires_grad_()
    torch.randn((), generator=g)  # not an argument: keeps the later values
    a1 = torch.randn((1,), generator=g).requires_grad_().clone()  # a non-leaf
    return a0, a1

def outcome(fn):  # None, or what the calls raise
    try:
        out = fn(*make_inputs())
        diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
        g = torch.Generator().manual_seed(1000)
        loss = sum((o * torch.randn(o.shape, generator=g).to(o.dtype)).sum() for o in diff)
        if diff:
            loss.backward()
    except Exception as e:  # a compiler crash: what the compiler raised
        return getattr(e, "inner_exception", None) or e
    return None

expected = outcome(f)
actual = outcome(torch.compile(f, backend="aot_eager", dynamic=True, mode="reduce-overhead"))
print(f"eager:         {expected!r:.300}")
print(f"torch.compile: {actual!r:.300}")
if not isinstance(actual, type(expected)):
    raise SystemExit("BUG: torch.compile raises differently from eager")
print("same: the bug is fixed")
