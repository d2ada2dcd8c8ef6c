"""pythonify (aot_eager, reduce-overhead): crashes where torch.compile runs
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import importlib.util
import os

import torch
from torch.utils._pytree import tree_leaves

def f(a0, a1, a2):
    v0 = a1.cos()
    v1 = a1.sin()
    v2 = a0.cos()
    v3 = a0.tanh()
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((1, 0), generator=g).requires_grad_()
    a1 = torch.randn((3, 3, 2), generator=g)
    a2 = torch.randn((0, 6), generator=g).to(torch.float64)[..., ::2].detach()
    return a0, a1, a2

def run(fn):
    out = fn(*make_inputs())
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    g = torch.Generator().manual_seed(1000)
    loss = sum((o * torch.randn(o.shape, generator=g).to(o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pythonified.py")
file_spec = importlib.util.spec_from_file_location("pythonified", path)
pythonified = importlib.util.module_from_spec(file_spec)
file_spec.loader.exec_module(pythonified)
pythonified.bind(f)
run(torch.compile(f, backend="aot_eager", mode="reduce-overhead"))  # torch.compile runs
try:
    run(pythonified.call)
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: pythonified.py raises where torch.compile runs: {e!r:.300}") from None
print("pythonified.py runs too: the bug is fixed")
