"""torch.compile (aot_eager): an output's aliasing (which input it is) differs from eager (output N: is input)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

class Fn0(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        y = x
        ctx.mark_dirty(x)
        return y

    @staticmethod
    def backward(ctx, g):
        return g * 3

def f(a0):
    v0 = Fn0.apply(a0)
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_().clone()  # a non-leaf
    return a0,

def observe(fn):
    args = make_inputs()
    out = fn(*args)
    return [f"a{i}" for i, a in enumerate(args) if a is out]

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if actual != expected:
    raise SystemExit("BUG: which arguments output 0 is: torch.compile differs from eager")
print("same: the bug is fixed")
