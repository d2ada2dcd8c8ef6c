"""torch.compile (aot_eager): differs from eager on a call that breaks its guards (variant call (aliasing): raised TorchRuntimeError; eager raised RuntimeError)
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch

def f(a0):
    v1 = a0.view((1,))
    return a0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2,), generator=g)
    return a0,

def make_variant_inputs(seed=0):  # aliasing unlike make_inputs
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2,), generator=g)
    return a0,

def outcome(fn):  # None, or what the calls raise
    try:
        for seed, make in ((0, make_inputs), (0, make_variant_inputs)):  # the last breaks the compile's guards
            fn(*make(seed))
    except Exception as e:  # a compiler crash: what the compiler raised
        return getattr(e, "inner_exception", None) or e
    return None

expected = outcome(f)
actual = outcome(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected!r:.300}")
print(f"torch.compile: {actual!r:.300}")
if not isinstance(actual, type(expected)):
    raise SystemExit("BUG: torch.compile raises differently from eager")
print("same: the bug is fixed")
