"""torch.compile (aot_eager): refuses the program (torch's own words): While executing unfold, functionalization encountered a tensor being mutated that has internal overlap. When using torch.compile (or
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0):
    v1 = a0.unfold(2, 4, 2)
    v1.zero_()
    return v1

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((0, 1, 4), generator=g)
    return a0,

expected = f(*make_inputs())  # eager runs
try:
    torch.compile(f, backend="aot_eager")(*make_inputs())
except Exception as e:
    e = getattr(e, "inner_exception", None) or e  # what the compiler raised
    if not (type(e).__name__ == 'RuntimeError' and 'While executing unfold, functionalization encountered a tensor being mutated that has internal overlap. When using torch.compile (or running functionalization directly), this is banned as the behavior' in str(e)):
        print(f"another error, not this bug: {e!r:.300}")
        raise SystemExit(2) from None
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
