"""torch.compile (aot_eager): raises RuntimeError where eager runs: expand: the requested shape has too few dimensions!
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
from functorch.compile import min_cut_rematerialization_partition, nop
from torch._functorch.aot_autograd import aot_function
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0):
    a0.unsqueeze_(0)
    with torch.inference_mode():
        a0.zero_()
    return a0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g)
    return a0,

compiled = aot_function(  # the AOT front-end, without Dynamo
    f, fw_compiler=nop, bw_compiler=nop, keep_inference_input_mutations=True,
    partition_fn=min_cut_rematerialization_partition,
)
expected = f(*make_inputs())  # eager runs
try:
    compiled(*make_inputs())
except Exception as e:
    e = getattr(e, "inner_exception", None) or e  # what the compiler raised
    if not (type(e).__name__ == 'RuntimeError' and 'expand: the requested shape has too few dimensions!' in str(e)):
        print(f"another error, not this bug: {e!r:.300}")
        raise SystemExit(2) from None
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
