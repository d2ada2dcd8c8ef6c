"""torch.compile (aot_eager, reduce-overhead): raises BackendCompilerFailed(RuntimeError) where eager runs: one of the variables needed for gradient computation has been modified by an inplace operation
python repro.py  # exit 1 while the bug is present, 0 once fixed
"""

import torch
import torch._functorch.config

torch._functorch.config.force_non_lazy_backward_lowering = True  # as pyfy-fuzz

def f(a0):
    v0 = a0.sigmoid()
    with torch.no_grad():
        v0.fill_(2)
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2, 1), generator=g).requires_grad_().clone()  # a non-leaf
    return a0,

def outcome(fn):  # None, or what the calls raise
    try:
        fn(*make_inputs())
    except Exception as e:  # a compiler crash: what the compiler raised
        return getattr(e, "inner_exception", None) or e
    return None

expected = outcome(f)
actual = outcome(torch.compile(f, backend="aot_eager", mode="reduce-overhead"))
print(f"eager:         {expected!r:.300}")
print(f"torch.compile: {actual!r:.300}")
if not isinstance(actual, type(expected)):
    raise SystemExit("BUG: torch.compile raises differently from eager")
print("same: the bug is fixed")
