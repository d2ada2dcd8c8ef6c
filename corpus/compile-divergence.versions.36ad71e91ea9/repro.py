"""torch.compile (inductor): version counters move differently from eager (input <arg>: version counter moved True)
python repro.py: exit 1: the bug is present, 0: fixed, 2: another error, 3: the reference raises."""

import os
import sys
import tempfile

import torch
# an error this script does not check exits 2; 3 while the reference runs (no bug to show)
sys.excepthook = lambda *e: (sys.__excepthook__(*e), sys.stdout.flush(), os._exit(2 if "expected" in globals() else 3))

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # cold

def f(a0, a1):
    with torch.no_grad():
        a1.sin_()
    v0 = a0.sigmoid()
    return v0, a1, v0

def make_inputs(seed=0):  # the values pyfy-fuzz drew
    g = torch.Generator().manual_seed(seed)
    a1 = torch.randn((4, 3, 4), generator=g)
    a0 = torch.empty(0, dtype=a1.dtype).set_(a1.untyped_storage(), 0, (3,), (1,))
    return a0, a1

def observe(fn):
    args = make_inputs()
    before = versions(args)
    fn(*args)
    return moved(args, before)

def versions(args):
    """Each tensor argument's version counter (and its _base's), by name."""
    found = {}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and not a.is_inference():
            found[f"a{i}"] = a._version
            if a._base is not None:
                found[f"a{i}._base"] = a._base._version
    return found

def moved(args, before):
    """The arguments whose version counter moved since `before` (what versions(args) gave)."""
    now = versions(args)
    return [n for n in before if now[n] != before[n]]

expected = observe(f)
actual = observe(torch.compile(f, backend="inductor"))
print(f"eager:         {expected}")
print(f"torch.compile: {actual}")
if actual != expected:
    raise SystemExit("BUG: which arguments' version counters the call moved: torch.compile differs from eager")
print("same: the bug is fixed")
