"""torch.compile-warm (aot_eager): raises StopIteration where eager runs
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys
import tempfile

import torch
import torch._functorch.config
from torch.utils._pytree import tree_leaves
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

torch._functorch.config.force_autograd_cache = True  # the case's configuration: bundled_cache
torch._functorch.config.bundled_autograd_cache = True  # the case's configuration: bundled_cache
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # cold

EFFECTS = []
from torch._library.effects import EffectType

@torch.library.custom_op("pyfy_gen::record", mutates_args=())
def record(x: torch.Tensor) -> None:
    EFFECTS.append(float(x.detach().float().sum()))

record.register_fake(lambda x: None)
torch.library._register_effectful_op("pyfy_gen::record", EffectType.ORDERED)

def f(a0):
    torch.ops.pyfy_gen.record(a0)
    v0 = a0.neg()
    return v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).requires_grad_()
    return a0,

def run(fn):
    out = fn(*make_inputs())
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    g = torch.Generator().manual_seed(1000)
    loss = sum((o * torch.randn(o.shape, generator=g).to(o.dtype)).sum() for o in diff)
    if diff:
        loss.backward()

def fill_cache(compiled, inputs):
    """The cold compile, forward and backward: torch lowers the backward at the first backward
    and saves AOTAutograd's cache entry only once both graphs exist."""
    out = compiled(*inputs)
    diff = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if diff:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])

cold = torch.compile(f, backend="aot_eager", dynamic=True)
fill_cache(cold, make_inputs())  # compiles, then saves the cache entry
torch._dynamo.reset()  # the compile below is served from the cache
expected = run(f)  # eager runs
try:
    run(torch.compile(f, backend="aot_eager", dynamic=True))
except Exception as e:
    e = getattr(e, "inner_exception", None) or e  # what the compiler raised
    if not (type(e).__name__ == 'StopIteration'):
        print(f"another error, not this bug: {e!r:.300}")
        raise SystemExit(2) from None
    raise SystemExit(f"BUG: torch.compile (warm cache) raises where eager runs: {e!r:.300}") from None
print("torch.compile (warm cache) runs too: the bug is fixed")
