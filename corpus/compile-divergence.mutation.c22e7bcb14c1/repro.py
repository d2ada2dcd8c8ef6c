"""torch.compile (aot_eager): an input's shape differs after the call (input mutation), unlike eager (input <arg> after the call: shape)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
from functorch.compile import min_cut_rematerialization_partition, nop
from torch._functorch.aot_autograd import aot_function
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

def f(a0, a1, a2):
    a1.squeeze_(2)
    a2.fill_(2)
    v0 = a0.tanh()
    return a2, v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_()
    a1 = torch.randn((3, 3, 1), generator=g).to(torch.float64).requires_grad_().clone()  # a non-leaf
    a2 = torch.randn((1, 3), generator=g)
    return a0, a1, a2

def observe(fn):
    args = make_inputs()
    retain_grads(args, skip=(1,))
    fn(*args)
    return tuple(args[1].shape)

def retain_grads(args, skip=()):
    """Non-leaf arguments requiring grad keep their .grad, as pyfy-fuzz's drive asks (but
    those in `skip`, changed in place by a metadata op: eager asserts on those)."""
    for k, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.requires_grad and not a.is_leaf and k not in skip:
            a.retain_grad()

compiled = aot_function(  # the AOT front-end, without Dynamo
    f, fw_compiler=nop, bw_compiler=nop, keep_inference_input_mutations=True,
    partition_fn=min_cut_rematerialization_partition,
)
expected = observe(f)
actual = observe(compiled)
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if actual != expected:
    raise SystemExit("BUG: input a1 after the call: shape: torch.compile differs from eager")
print("same: the bug is fixed")
