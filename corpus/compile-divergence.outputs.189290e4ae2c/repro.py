"""torch.compile (aot_eager): output values differ from eager (output N: values differ)
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True  # eager's random numbers

def f(a0):
    v0 = torch.rand_like(a0)
    v3 = torch.randn_like(a0)
    v5 = a0.expand((2, 4, 3))
    return v5, v3

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2, 4, 1), generator=g).requires_grad_()
    return a0,

def observe(fn):
    torch.manual_seed(0)
    out = fn(*make_inputs())
    return out[1]

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
try:
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
except AssertionError as e:
    raise SystemExit(f"BUG: output 1: values differ: torch.compile differs from eager\n{e}") from None
print("same values: the bug is fixed")
