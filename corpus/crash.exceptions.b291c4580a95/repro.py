"""pythonify (aot_eager): crashes where torch.compile runs
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import importlib.util
import os

import torch
from torch.utils._pytree import tree_leaves

def f(a0):
    v0 = a0.sigmoid()
    v1 = v0.select(0, 1)
    v2 = v0.expand((3, 4, 2))
    v3 = v0.as_strided((6, 1), (1, 1), 0)
    return v1, v2

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((3, 4, 1), generator=g).requires_grad_().clone()  # a non-leaf
    return a0,

def run(fn):
    args = make_inputs()
    retain_grads(args)
    out = fn(*args)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    loss = sum((o * torch.ones(o.shape, dtype=o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()

def retain_grads(args, skip=()):
    """Non-leaf arguments requiring grad keep their .grad, as pyfy-fuzz's drive asks (but
    those in `skip`, changed in place by a metadata op: eager asserts on those)."""
    for k, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.requires_grad and not a.is_leaf and k not in skip:
            a.retain_grad()

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pythonified.py")
file_spec = importlib.util.spec_from_file_location("pythonified", path)
pythonified = importlib.util.module_from_spec(file_spec)
file_spec.loader.exec_module(pythonified)
pythonified.bind(f)
run(torch.compile(f, backend="aot_eager"))  # torch.compile runs
try:
    run(pythonified.call)
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: pythonified.py raises where torch.compile runs: {e!r:.300}") from None
print("pythonified.py runs too: the bug is fixed")
