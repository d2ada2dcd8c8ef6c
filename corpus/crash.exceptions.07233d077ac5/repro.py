"""torch.compile (aot_eager, reduce-overhead): raises RuntimeError where eager runs: one of the variables needed for gradient computation has been modified by an inplace operation
python repro.py: exit 1 while the bug is present, 0 once fixed."""

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

def run(fn):
    args = make_inputs()
    retain_grads(args)
    out = fn(*args)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    g = torch.Generator().manual_seed(1000)
    loss = sum((o * torch.randn(o.shape, generator=g).to(o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()

def retain_grads(args, skip=()):
    """Non-leaf arguments requiring grad keep their .grad, as pyfy-fuzz's drive asks (but
    those in `skip`, changed in place by a metadata op: eager asserts on those)."""
    for k, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.requires_grad and not a.is_leaf and k not in skip:
            a.retain_grad()

run(f)  # eager runs
try:
    run(torch.compile(f, backend="aot_eager", dynamic=True, mode="reduce-overhead"))
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
