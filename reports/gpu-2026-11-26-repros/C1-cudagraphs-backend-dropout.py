"""torch.compile (aot_eager, reduce-overhead): raises BackendCompilerFailed(AssertionError) where eager runs: Expected native_dropout to be a tensor
python repro.py: exit 1 while the bug is present, 0 once fixed."""

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True  # eager's random numbers

def f(a0):
    v0 = torch.nn.functional.dropout(a0, 0.5, training=True)
    v1 = a0.cos()
    return v1

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a0 = torch.randn((), generator=g).to("cuda").requires_grad_()
    return a0,

def run(fn):
    torch.manual_seed(0)
    fn(*make_inputs())

run(f)  # eager runs
try:
    run(torch.compile(f, backend="cudagraphs"))
except Exception as e:  # what the compiler raised
    raise SystemExit(f"BUG: torch.compile raises where eager runs: {e!r:.300}") from None
print("torch.compile runs too: the bug is fixed")
