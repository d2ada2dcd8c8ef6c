"""pythonify (aot_eager): crashes where torch.compile runs
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import importlib.util
import os

import torch
from functorch.compile import min_cut_rematerialization_partition, nop
from torch._functorch.aot_autograd import aot_function

def f(a0, a1):
    a1.sin_()
    v0 = a0 @ a0.mT
    a0.fill_(2)
    with torch.no_grad():
        v1 = v0 - a1
    v2 = v0.neg()
    with torch.inference_mode():
        v1.add_(1)
    return a0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2, 2, 1), generator=g).requires_grad_().clone()  # a non-leaf
    a1 = a0  # the same tensor again
    return a0, a1

def outcome(fn):  # None, or what the calls raise
    try:
        for seed in range(3):
            fn(*make_inputs(seed))
    except Exception as e:  # a compiler crash: what the compiler raised
        return getattr(e, "inner_exception", None) or e
    return None

compiled = aot_function(  # the AOT front-end, without Dynamo
    f, fw_compiler=nop, bw_compiler=nop, keep_inference_input_mutations=True,
    partition_fn=min_cut_rematerialization_partition,
)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pythonified.py")
file_spec = importlib.util.spec_from_file_location("pythonified", path)
pythonified = importlib.util.module_from_spec(file_spec)
file_spec.loader.exec_module(pythonified)
pythonified.bind(f)
expected = outcome(compiled)
actual = outcome(pythonified.call)
print(f"torch.compile:  {expected!r:.300}")
print(f"pythonified.py: {actual!r:.300}")
if not isinstance(actual, type(expected)):
    raise SystemExit("BUG: pythonified.py raises differently from torch.compile")
print("same: the bug is fixed")
