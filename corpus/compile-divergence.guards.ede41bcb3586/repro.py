"""torch.compile (aot_eager): an output's values differ from eager on a call that breaks its guards (output N: values)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0, a1):
    a0.add_(1)
    v0 = a1.sin()
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((1,), generator=g)
    a1 = a0.select(0, 0)
    return a0, a1

def make_variant_inputs(seed=0):  # aliasing unlike make_inputs
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((1,), generator=g)
    a1 = a0.select(0, 0)
    a1 = a1.detach().clone()  # shares nothing now
    return a0, a1

def observe(fn):
    for seed, make in ((0, make_inputs), (0, make_variant_inputs)):  # the last breaks the compile's guards
        out = fn(*make(seed))
    return out

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager", dynamic=False))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
try:
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
except AssertionError as e:
    raise SystemExit(f"BUG: output 0: values differ: torch.compile differs from eager\n{e}") from None
print("same values: the bug is fixed")
