"""torch.compile (aot_eager): the backward's seq_nr mapping differs from eager (seq_nr: unmapped (view replay))
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys

import torch
import torch._functorch.config
from torch._dynamo.backends.debugging import aot_eager, boxed_nop
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

torch._functorch.config.force_non_lazy_backward_lowering = True  # as pyfy-fuzz

def f(a0, a1):
    a1.fill_(2)
    v0 = a0.cos()
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    r0 = torch.randn((1, 1, 4), generator=g).requires_grad_().clone()  # a non-leaf
    a0 = r0.view((4,))
    a1 = r0.transpose(2, 2).as_strided((1,), (1,), 3)
    return a0, a1

def aot_eager_backend(gm, example_inputs):
    """aot_eager, keeping the call_function nodes of the graphs AOTAutograd compiles."""
    def keep(name):
        def compiler(gm, example_inputs):
            graphs[name] = [n for n in gm.graph.nodes if n.op == "call_function"]
            return boxed_nop(gm, example_inputs)
        return compiler
    return aot_eager(gm, example_inputs, fw_compiler=keep("forward"), bw_compiler=keep("backward"))

def unmapped(graphs):
    """Backward nodes whose seq_nr names no forward node -- one in the forward graph, or one the
    partitioner recomputes in backward -- gradient accumulations (is_gradient_acc) and nodes
    with no seq_nr at all (another mapping kind: no_seq_nr) aside."""
    fw, bw = graphs["forward"], graphs.get("backward", [])
    forward = {n.meta.get("seq_nr") for n in fw + bw if not n.meta.get("autograd_backward")}
    autograd = [n for n in bw if n.meta.get("autograd_backward")]  # not forward ops recomputed
    unmapped = [n for n in autograd if n.meta.get("seq_nr") not in forward | {None}]
    return [n for n in unmapped if n.meta["seq_nr"] >= 0 and not n.meta.get("is_gradient_acc")]

graphs = {}  # forward, backward: their call_function nodes, with torch's meta
torch.compile(f, backend=aot_eager_backend, dynamic=True)(*make_inputs())
print({g: {n.name: n.meta.get("seq_nr") for n in ns} for g, ns in graphs.items()})
bad = [n.name for n in unmapped(graphs)]
if bad:
    raise SystemExit(f"BUG: backward nodes whose seq_nr names no forward: {bad}")
print("every backward node names a forward node: the bug is fixed")
