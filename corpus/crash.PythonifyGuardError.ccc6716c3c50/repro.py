"""pythonify (aot_eager): raises PythonifyGuardError where torch.compile runs: L['<value>']: compiled for a non-inference tensor
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import importlib.util
import os
import re
import sys

import torch
from torch.utils._pytree import tree_leaves
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0):
    v0 = a0 * 2
    a0.mul_(2)
    torch.ops.aten._print("pyfy-fuzz effect")
    print("pyfy-fuzz graph break")
    with torch.no_grad():
        v1 = torch.maximum(a0, v0)
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((3, 1), generator=g).requires_grad_().clone().transpose(-1, -2)  # a non-leaf
    return a0,

def run(fn):
    args = make_inputs()
    retain_grads(args)
    with torch.inference_mode():  # the case's call site (configuration)
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
expected = run(torch.compile(f, backend="aot_eager"))  # torch.compile runs
try:
    run(pythonified.call)
except Exception as e:
    e = getattr(e, "inner_exception", None) or e  # what the compiler raised
    if not (type(e).__name__ == 'PythonifyGuardError' and re.search('L\\[.*?\\]: compiled for a non-inference tensor', str(e), re.S)):
        print(f"another error, not this bug: {e!r:.300}")
        raise SystemExit(2) from None
    raise SystemExit(f"BUG: pythonified.py raises where torch.compile runs: {e!r:.300}") from None
print("pythonified.py runs too: the bug is fixed")
