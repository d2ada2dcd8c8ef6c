"""torch.compile (aot_eager): raises RuntimeError where eager runs: expand: the requested shape has too few dimensions!
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch
from functorch.compile import min_cut_rematerialization_partition, nop
from torch._functorch.aot_autograd import aot_function

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
f(*make_inputs())  # eager runs
try:
    compiled(*make_inputs())
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
