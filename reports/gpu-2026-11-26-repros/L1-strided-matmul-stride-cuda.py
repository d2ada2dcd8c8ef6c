"""torch.compile (inductor): output values differ from eager (output N: stride [...])
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import os
import tempfile

import torch

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # cold

def f(a0):
    v3 = a0 @ a0.mT
    return v3

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((2, 4), generator=g).to("cuda").requires_grad_().clone()[..., ::2]  # a non-leaf
    return a0,

def observe(fn):
    out = fn(*make_inputs())
    return out.stride()

expected = observe(f)
actual = observe(torch.compile(f, backend="inductor"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if actual != expected:
    raise SystemExit("BUG: output 0: stride: torch.compile differs from eager")
print("same: the bug is fixed")
