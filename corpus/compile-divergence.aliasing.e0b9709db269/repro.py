"""torch.compile (aot_eager): an output's aliasing (_base) differs from eager (output N._base: input)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
from torch.utils._pytree import tree_leaves
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0, a1):
    a1.fill_(2)
    v0 = a0.cos()
    v4 = a1[0:1:1]
    return v0, v0, v4

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    r0 = torch.randn((1,), generator=g)
    a0 = torch.empty(0, dtype=r0.dtype).set_(r0.untyped_storage(), 0, (1,), (1,))
    a1 = torch.empty(0, dtype=r0.dtype).set_(r0.untyped_storage(), 0, (1,), (1,))
    return a0, a1

def observe(fn):
    args = make_inputs()
    out = fn(*args)
    tensors = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor)]
    return base_of(out[2], args, tensors)

def base_of(t, args, tensors):
    """What t._base is: none, input:a<i>, base_of:a<i> (an argument's own base), output:<j>,
    or other (an intermediate of the function)."""
    named = [(i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    found = [f"input:a{i}" for i, a in named if t._base is a]
    found += [f"base_of:a{i}" for i, a in named if a._base is not None and t._base is a._base]
    found += [f"output:{j}" for j, o in enumerate(tensors) if t._base is o]
    return "none" if t._base is None else (found + ["other"])[0]

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if actual != expected:
    raise SystemExit("BUG: output 2._base: torch.compile differs from eager")
print("same: the bug is fixed")
