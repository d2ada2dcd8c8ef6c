"""pythonify (aot_eager): gradients differ from torch.compile (grad of <arg>: values differ)
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import importlib.util
import os

import torch
from torch.utils._pytree import tree_leaves

class Fn0(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.view_as(x)
        return y

    @staticmethod
    def backward(ctx, g):
        return g

def _double_grad(grad):
    return grad * 2

def f(a0):
    a0.register_hook(_double_grad)
    v0 = Fn0.apply(a0)
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_()
    return a0,

def observe(fn):
    args = make_inputs()
    out = fn(*args)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    g = torch.Generator().manual_seed(1000)
    loss = sum((o * torch.randn(o.shape, generator=g).to(o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()
    return args[0].grad

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pythonified.py")
file_spec = importlib.util.spec_from_file_location("pythonified", path)
pythonified = importlib.util.module_from_spec(file_spec)
file_spec.loader.exec_module(pythonified)
pythonified.bind(f)
expected = observe(torch.compile(f, backend="aot_eager"))
actual = observe(pythonified.call)
print(f"torch.compile:  {expected}")
print(f"pythonified.py: {actual}")
try:
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
except AssertionError as e:
    raise SystemExit(f"BUG: grad of a0: values differ: pythonified.py differs from torch.compile\n{e}") from None
print("same values: the bug is fixed")
