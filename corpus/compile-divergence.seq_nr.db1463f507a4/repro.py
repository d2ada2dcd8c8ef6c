"""torch.compile (aot_eager): the backward's seq_nr mapping differs from eager (by seq_nr, backward group N of the compiled graph maps to forward [...]; eager's N-th backward node is CloneBackward0 (e)
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch
import torch._functorch.config
from torch._dynamo.backends.debugging import aot_eager, boxed_nop
from torch.utils._pytree import tree_leaves

torch._functorch.config.force_non_lazy_backward_lowering = True  # as pyfy-fuzz

def f(a0, a1):
    a1.mul_(2)
    return a0, a0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_().clone()  # a non-leaf
    a1 = torch.randn((), generator=g).requires_grad_().clone()  # a non-leaf
    return a0, a1

def aot_eager_backend(gm, example_inputs):
    """aot_eager, keeping the call_function nodes of the graphs AOTAutograd compiles."""
    def keep(name):
        def compiler(gm, example_inputs):
            graphs[name] = [n for n in gm.graph.nodes if n.op == "call_function"]
            return boxed_nop(gm, example_inputs)
        return compiler
    return aot_eager(gm, example_inputs, fw_compiler=keep("forward"), bw_compiler=keep("backward"))

def order_differences(fn, graphs):
    """Eager's backward nodes of one call, by sequence number, against the compiled backward's
    seq_nr groups, each named by the forward ops with that seq_nr (plain aten nodes only)."""
    norm = lambda name: "".join(filter(str.isalnum, name.lower()))
    args = make_inputs()
    first = (torch.zeros((), requires_grad=True) * 1).grad_fn._sequence_nr() + 1
    todo, nodes = [o.grad_fn for o in tree_leaves(fn(*args)) if isinstance(o, torch.Tensor)], {}
    while todo:  # the nodes the call made: not a non-leaf input's clone, not AccumulateGrad
        node = todo.pop()
        if node is not None and first <= node._sequence_nr() < 2**63 - 1:
            nodes[node._sequence_nr()] = type(node).__name__
            todo += [n for n, _ in node.next_functions]
    eager = [nodes[k] for k in sorted(nodes)]
    print("eager's backward nodes:", eager)
    bw, ops = graphs.get("backward", []), {}
    for n in graphs["forward"] + [n for n in bw if not n.meta.get("autograd_backward")]:
        op = str(n.target).removeprefix("aten.").split(".")[0]
        ops.setdefault(n.meta.get("seq_nr"), set()).add(norm(op))
    backward = [n for n in bw if n.meta.get("autograd_backward")]
    groups = sorted(
        {n.meta.get("seq_nr") for n in backward if not n.meta.get("is_gradient_acc")} - {None}
    )
    names = [norm(e.rsplit("Backward", 1)[0]) for e in eager if e[-1].isdigit()]  # aten nodes
    if len(names) != len(eager) or len(groups) != len(names) or not set(groups) <= set(ops):
        return []
    return [
        f"group {k} maps to forward {sorted(ops[g])}; eager's node {k} is {eager[k]}"
        for k, (g, name) in enumerate(zip(groups, names, strict=True))
        if any(x in o or o in x for o in ops[g] for x in names)  # else: ops derived for backward
        and not any(name in o or o in name for o in ops[g])
    ]

graphs = {}  # forward, backward: their call_function nodes, with torch's meta
torch.compile(f, backend=aot_eager_backend)(*make_inputs())
print({g: {n.name: n.meta.get("seq_nr") for n in ns} for g, ns in graphs.items()})
problems = order_differences(f, graphs)
if problems:
    raise SystemExit(f"BUG: by seq_nr, not eager's backward order: {problems}")
print("the seq_nr groups follow eager's backward order: the bug is fixed")
