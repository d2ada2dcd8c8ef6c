"""torch.compile (aot_eager): an input's values differ after the call (input mutation), unlike eager (input <arg> after the call: values)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0):
    a0.zero_()
    return a0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).to(torch.float64)
    return a0,

def observe(fn):
    args = make_inputs()
    fn(*args)
    return args[0]

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
try:
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
except AssertionError as e:
    raise SystemExit(f"BUG: input a0 after the call: values differ: torch.compile differs from eager\n{e}") from None
print("same values: the bug is fixed")
