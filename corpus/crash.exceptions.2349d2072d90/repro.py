"""torch.compile (aot_eager, reduce-overhead): raises BackendCompilerFailed(RuntimeError) where eager runs: one of the variables needed for gradient computation has been modified by an inplace operation
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch

def f(a0):
    v0 = a0.sigmoid()
    with torch.no_grad():
        v0.fill_(2)
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2, 1), generator=g).requires_grad_().clone()  # a non-leaf
    return a0,

f(*make_inputs())  # eager runs
try:
    torch.compile(f, backend="aot_eager", mode="reduce-overhead")(*make_inputs())
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
