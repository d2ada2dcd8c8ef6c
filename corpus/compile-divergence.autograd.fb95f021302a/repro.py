"""torch.compile (aot_eager): writing into an output in place behaves differently from eager (writing into output N in place: allowed)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0):
    torch.ops.aten._print("pyfy-fuzz effect")
    v0 = a0 * 2
    v1 = v0.view((1, 1, 1))
    v1.fill_(2)
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_()
    return a0,

def observe(fn):
    out = fn(*make_inputs(1))
    return write_into(out)

def write_into(t):
    """Write into t in place, as a user would (grad mode on): None, or autograd's refusal."""
    try:
        if t.dtype == torch.bool:
            t.logical_not_()
        else:
            t.copy_(torch.where(t.detach() == 7, 8, 7).to(t.dtype))  # every element changes
    except Exception as e:
        return e
    return None

expected = observe(f)
actual = observe(torch.compile(f, backend="aot_eager"))
print(f"eager:         {expected!r:.300}")
print(f"torch.compile: {actual!r:.300}")
if not isinstance(actual, type(expected)) or (type(actual).__module__ == "torch._dynamo.exc") != (type(expected).__module__ == "torch._dynamo.exc"):
    raise SystemExit("BUG: whether autograd lets output 0 be written in place: torch.compile differs from eager")
print("same: the bug is fixed")
