"""torch.compile (aot_eager): raises BackendCompilerFailed(RuntimeError) on a call that breaks its guards where eager runs: Expected !size_bytes_is_heap_allocated_ to be true, but got false. (Could this 
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch

def f(a0, a1):
    a0.sin_()
    v0 = a1.sin()
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((1, 1), generator=g)
    a1 = torch.empty(0, dtype=a0.dtype).set_(a0.untyped_storage(), 0, (1,), (1,))
    return a0, a1

def make_variant_inputs(seed=0):  # shape unlike make_inputs
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2, 2), generator=g)
    a1 = torch.empty(0, dtype=a0.dtype).set_(a0.untyped_storage(), 0, (1,), (1,))
    return a0, a1

def run(fn):
    for seed, make in ((0, make_inputs), (0, make_variant_inputs)):  # the last breaks the compile's guards
        fn(*make(seed))

run(f)  # eager runs
try:
    run(torch.compile(f, backend="aot_eager", dynamic=True))
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
