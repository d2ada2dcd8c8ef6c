"""torch.compile (aot_eager): gradients differ from eager (grad of <arg>: None)
python repro.py  # exit 1 while the bug is present, 0 once fixed
"""

import torch
from torch.utils._pytree import tree_leaves

def f(a0):
    with torch.no_grad():
        v2 = a0.as_strided((3,), (1,), 30)
    return v2

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((4, 3, 4), generator=g).requires_grad_()
    return a0,

def observe(fn):
    args = make_inputs()
    out = fn(*args)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    loss = sum((o * torch.ones(o.shape, dtype=o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()
    return args[0].grad

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if (actual is None) != (expected is None):
    raise SystemExit("BUG: grad of a0 (None or a tensor): torch.compile differs from eager")
print("same: the bug is fixed")
