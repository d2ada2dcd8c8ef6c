"""torch.compile (aot_eager): raises BackendCompilerFailed(RuntimeError) where eager runs: While executing unfold, functionalization encountered a tensor being mutated that has internal overlap. When usi
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch

def f(a0):
    v1 = a0.unfold(2, 4, 2)
    v1.zero_()
    return v1

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((0, 1, 4), generator=g)
    return a0,

f(*make_inputs())  # eager runs
try:
    torch.compile(f, backend="aot_eager")(*make_inputs())
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
