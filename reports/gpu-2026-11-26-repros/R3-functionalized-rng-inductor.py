"""torch.compile (inductor): raises BackendCompilerFailed(TypeError) where eager runs: create_functionalized_rng_ops_wrapper.<locals>.traced_joint[...] missing N required positional arguments
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import os
import tempfile

import torch
import torch._functorch.config
from torch.testing._internal.two_tensor import TwoTensor

torch._functorch.config.functionalize_rng_ops = True  # the case's configuration: functionalize_rng
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # cold

def f(a0):
    v0 = a0.neg()
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).to("cuda")
    a0 = TwoTensor(a0, a0 * 2).requires_grad_()
    return a0,

f(*make_inputs())  # eager runs
try:
    torch.compile(f, backend="inductor")(*make_inputs())
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
