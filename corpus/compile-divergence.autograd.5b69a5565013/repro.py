"""torch.compile (aot_eager): an output's is_leaf differs from eager (output N.is_leaf True)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0):
    with torch.no_grad():
        v0 = a0.unsqueeze(0)
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_()
    return a0,

def observe(fn):
    out = fn(*make_inputs())
    return out.is_leaf

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if actual != expected:
    raise SystemExit("BUG: output 0.is_leaf: torch.compile differs from eager")
print("same: the bug is fixed")
