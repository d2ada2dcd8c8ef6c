"""pythonify (aot_eager, reduce-overhead): output aliasing differs from torch.compile (output N._base: output:N)
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import importlib.util
import os

import torch
from torch.utils._pytree import tree_leaves

def f(a0):
    v0 = a0.cos()
    v2 = v0.view((2,))
    return v0, v2

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((1, 2), generator=g)
    return a0,

def observe(fn):
    for seed in range(2):
        args = make_inputs(seed)
        out = fn(*args)
    tensors = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor)]
    return base_of(out[1], args, tensors)

def base_of(t, args, tensors):
    """What t._base is: none, input:a<i>, base_of:a<i> (an argument's own base), output:<j>,
    or other (an intermediate of the function)."""
    named = [(i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    found = [f"input:a{i}" for i, a in named if t._base is a]
    found += [f"base_of:a{i}" for i, a in named if a._base is not None and t._base is a._base]
    found += [f"output:{j}" for j, o in enumerate(tensors) if t._base is o]
    return "none" if t._base is None else (found + ["other"])[0]

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pythonified.py")
file_spec = importlib.util.spec_from_file_location("pythonified", path)
pythonified = importlib.util.module_from_spec(file_spec)
file_spec.loader.exec_module(pythonified)
pythonified.bind(f)
expected = observe(torch.compile(f, backend="aot_eager", mode="reduce-overhead"))
actual = observe(pythonified.call)
print(f"torch.compile:  {expected}")
print(f"pythonified.py: {actual}")
if actual != expected:
    raise SystemExit("BUG: output 1._base: pythonified.py differs from torch.compile")
print("same: the bug is fixed")
