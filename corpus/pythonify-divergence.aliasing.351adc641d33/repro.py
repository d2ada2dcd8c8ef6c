"""pythonify (aot_eager): output aliasing differs from torch.compile (output N is input [...])
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import importlib.util
import os

import torch

HOOK_LOG = []

def _module_pre_hook(module, grad_output):
    HOOK_LOG.append(("module pre", len(grad_output)))
    return None

def _module_hook(module, grad_input, grad_output):
    HOOK_LOG.append(("module", len(grad_input), len(grad_output)))
    return tuple(None if g is None else g * 3 for g in grad_input)

class Program(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(1234)
        self.p0 = torch.nn.Parameter(torch.randn((4, 1, 4), generator=g))
        self.p1 = self.p0  # tied
        self.register_buffer("b0", torch.randn((4, 1, 4), generator=g))
        self.bn = torch.nn.BatchNorm1d(1)
        self.register_full_backward_pre_hook(_module_pre_hook)
        self.register_full_backward_hook(_module_hook)

    def forward(self, a0, a1):
        v0 = a0 + self.p0
        with torch.no_grad():
            self.b0.sin_()
        with torch.no_grad():
            v1 = self.p0 - self.p0
        return a0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((4, 1, 4), generator=g)
    a1 = torch.randn((), generator=g).requires_grad_().clone()  # a non-leaf
    return a0, a1

def observe(fn):
    args = make_inputs()
    retain_grads(args)
    out = fn(*args)
    return [f"a{i}" for i, a in enumerate(args) if a is out]

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
m = Program()
pythonified.bind(m)
m.forward = pythonified.call
expected = observe(torch.compile(Program(), backend="aot_eager"))
actual = observe(m)
print(f"torch.compile:  {expected}")
print(f"pythonified.py: {actual}")
if actual != expected:
    raise SystemExit("BUG: which arguments output 0 is: pythonified.py differs from torch.compile")
print("same: the bug is fixed")
