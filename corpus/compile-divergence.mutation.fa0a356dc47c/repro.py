#!/usr/bin/env python
"""pyfy-fuzz repro: compile-divergence.mutation.fa0a356dc47c

compile-divergence: torch.compile differs under the mutation oracle. Needs only torch:

    python repro.py    # exit 1 while the bug is present, 0 once fixed, 2 cannot check

Run it next to pythonified.py (the generated file, if there is one). PROGRAM below is the
program (make_fn, make_inputs, drive, PLAN); the code after it is a miniature of
pyfy-fuzz's harness: it runs eager, torch.compile and the pythonified file the same way
and compares what each returned, mutated, aliased and differentiated."""

# What pyfy-fuzz reported:
#   torch.compile differs from eager:
#     - call 0: input a1 after the call: shape (3, 3) vs (1, 3)

from __future__ import annotations

import builtins
import faulthandler
import hashlib
import importlib.util
import linecache
import os
import re
import sys
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

warnings.filterwarnings("ignore", "Failed to initialize NumPy")  # the CPU wheel, without numpy

import torch  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402
from torch.utils._python_dispatch import is_traceable_wrapper_subclass  # noqa: E402

FINDING = {'signature': 'compile-divergence.mutation.fa0a356dc47c',
 'kind': 'compile-divergence',
 'oracle': 'mutation',
 'subject': 'torch.compile',
 'explanation': 'torch.compile differs from eager:\n'
                '  - call 0: input a1 after the call: shape (3, 3) vs (1, 3)',
 'wrappers': ['autograd/input_mutation',
              'autograd/training',
              'runtime/detach',
              'runtime/input_mutation/data',
              'runtime/input_mutation/metadata',
              'runtime/input_mutation/out_of_graph',
              'runtime/output/is_input']}
BACKEND = 'aot_eager'
DEVICE = 'cpu'

# The program, as pyfy-fuzz rendered it (generators.render), imported as a module below.
# The code under test is near its end: `f` (or `Program.forward`) and `make_inputs`.
PROGRAM = '''\
"""pyfy-fuzz program (family input_mutation). Needs only torch: python this_file.py"""

import torch

DEVICE = 'cpu'

def _root(g, shape, dtype, layout, grad, subclass=None, variant=None):
    """A root tensor: its own storage, the layout asked for, and its grad kind."""
    if variant == "shape":
        shape = tuple(n + 1 for n in shape)
    if variant == "dtype" and dtype == torch.float32:
        dtype = torch.float64
    n = 1
    for s in shape:
        n *= s
    if layout == "transposed":
        storage_shape = shape[:-2] + (shape[-1], shape[-2])
    elif layout == "strided":
        storage_shape = shape[:-1] + (2 * shape[-1],)
    elif layout == "expanded":
        storage_shape = (1,) + shape[1:]
    elif layout == "offset":
        storage_shape = (n + 3,)
    else:
        storage_shape = shape
    if dtype.is_floating_point:
        s = torch.randn(storage_shape, generator=g).to(dtype)
    elif dtype == torch.bool:
        s = torch.randint(0, 2, storage_shape, generator=g).bool()
    else:
        s = torch.randint(-4, 5, storage_shape, generator=g).to(dtype)
    s = s.to(DEVICE)  # the storage moves, before autograd and views are layered on it
    if grad == "nonleaf":
        s = s.requires_grad_().clone()
    if layout == "transposed":
        t = s.transpose(-1, -2)
    elif layout == "strided":
        t = s[..., ::2]
    elif layout == "expanded":
        t = s.expand(shape)
    elif layout == "offset":
        t = s[3:].view(shape)
    else:
        t = s
    if grad != "nonleaf":
        t = t.detach()
    if subclass == "two_tensor":
        t = TwoTensor(t, t * 2)
    elif subclass == "mirror":
        t = MirrorTensor(t, "m")
    if grad == "leaf":
        t.requires_grad_()
    return t


def _set_shared(root, size, stride, offset):
    """A tensor over root's storage made with set_: shares memory, has no _base."""
    t = torch.empty(0, dtype=root.dtype, device=root.device)
    t.set_(root.untyped_storage(), offset, size, stride)
    return t


def _leaves(fn, args):
    """Tensors whose .grad a backward fills: leaf arguments requiring grad, then parameters."""
    found = []
    params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
    for t in [*torch.utils._pytree.tree_leaves(args), *params]:
        if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf:
            if not any(t is f for f in found):
                found.append(t)
    return found


def drive(call, args, seed=0, module=None):
    """One call as PLAN says: seed, call, then backward through the outputs requiring grad.

    `module` is the nn.Module whose parameters count as leaves (defaults to `call`). Returns
    {"out", "grad_enabled_after", "grads", "second"}: grads of the leaves after the first
    backward (None without one); after the second backward, its grads or the exception it
    raised. Errors in the call or the first backward propagate; grad mode is restored.
    """
    leaves = _leaves(call if module is None else module, args)
    for leaf in leaves:
        leaf.grad = None
    if PLAN["saved_tensor_hooks"]:
        with torch.autograd.graph.saved_tensors_hooks(_pack, _unpack):
            return _drive(call, args, seed, leaves)
    return _drive(call, args, seed, leaves)


def _drive(call, args, seed, leaves):
    torch.manual_seed(seed)
    try:
        out = call(*args)
        result = {"out": out, "grad_enabled_after": torch.is_grad_enabled(), "grads": None, "second": None}
    finally:
        torch.set_grad_enabled(True)
    diff = [o for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not (PLAN["backward"] and diff):
        return result
    g = torch.Generator().manual_seed(1000 + seed)
    terms = []
    for o in diff:
        if PLAN["tangents"] == "ones":
            t = torch.ones(o.shape, dtype=o.dtype, device=o.device)
        else:
            t = torch.randn(o.shape, generator=g).to(o.device, o.dtype)
        terms.append((o * t).sum())
    loss = sum(terms)
    loss.backward(retain_graph=PLAN["second_backward"] == "retain")
    result["grads"] = [None if leaf.grad is None else leaf.grad.clone() for leaf in leaves]
    if PLAN["second_backward"]:
        try:
            loss.backward()
            result["second"] = [None if leaf.grad is None else leaf.grad.clone() for leaf in leaves]
        except RuntimeError as exc:
            result["second"] = exc
    return result


def _unalias(t):
    """A copy with the same values and autograd role, sharing nothing."""
    c = t.detach().clone()
    return c.requires_grad_() if t.requires_grad else c



def _double_grad(grad):
    return grad * 2


def _pack(t):
    return t * 1


def _unpack(t):
    return t


def _module_hook(module, grad_input, grad_output):
    return None


def f(a0, a1, a2):
    a1.squeeze_(2)
    a2.fill_(2)
    v0 = a0.tanh()
    return (a2, v0)


def make_fn():
    return f


def make_inputs(seed=0, variant=None):
    """The arguments for one call; `variant` ("shape", "dtype", "aliasing") changes them."""
    g = torch.Generator().manual_seed(seed)
    r0 = _root(g, (), torch.float32, 'contiguous', 'leaf', None, variant)
    r1 = _root(g, (3, 3, 1), torch.float64, 'contiguous', 'nonleaf', None, variant)
    r2 = _root(g, (1, 3), torch.float32, 'contiguous', 'none', None, variant)
    a0 = r0
    a1 = r1
    a2 = r2
    args = (a0, a1, a2)
    if variant == "aliasing":
        args = tuple(args[0] if i == 2 else a for i, a in enumerate(args))
    return args

PLAN = {'calls': 1, 'variant': None, 'backward': True, 'tangents': 'randn', 'second_backward': None, 'dynamic': False, 'frontend': 'aot', 'mode': None, 'saved_tensor_hooks': False}
SPEC = '{"body": [{"args": ["a1", 2], "ctx": null, "op": "squeeze_", "outs": []}, {"args": ["a2", 2], "ctx": null, "op": "fill_", "outs": []}, {"args": ["a0"], "ctx": null, "op": "tanh", "outs": ["v0"]}], "family": "input_mutation", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}, {"kind": "root", "of": 0, "root": 1, "value": 0, "views": []}, {"kind": "root", "of": 0, "root": 2, "value": 0, "views": []}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "a2", "value": 0}, {"items": [], "kind": "ref", "ref": "v0", "value": 0}], "plan": {"backward": true, "calls": 1, "dynamic": false, "frontend": "aot", "mode": null, "saved_tensor_hooks": false, "second_backward": null, "tangents": "randn", "variant": null}, "roots": [{"dtype": "float32", "grad": "leaf", "layout": "contiguous", "shape": [], "subclass": null}, {"dtype": "float64", "grad": "nonleaf", "layout": "contiguous", "shape": [3, 3, 1], "subclass": null}, {"dtype": "float32", "grad": "none", "layout": "contiguous", "shape": [1, 3], "subclass": null}], "version": 1}'


if __name__ == "__main__":
    fn = make_fn()
    for seed in range(PLAN["calls"]):
        result = drive(fn, make_inputs(seed), seed)
        print(f"call {seed}: out={result['out']!r}")
        print(f"call {seed}: grads={result['grads']!r}")
'''


KIND, ORACLE, SUBJECT = FINDING["kind"], FINDING["oracle"], FINDING["subject"]
HERE = Path(__file__).resolve().parent
FILE = HERE / "pythonified.py"
GUARD_ERROR = "PythonifyGuardError"  # matched by name: the file may define its own fallback
MODELLED = ("exceptions", "outputs", "mutation", "aliasing", "autograd", "grads", "cudagraph",
            "guards", "seq_nr")
HANG_TIMEOUT_S = float(os.environ.get("REPRO_HANG_TIMEOUT_S", "300"))


def say(*parts: Any) -> None:
    """Print and flush: if the interpreter dies, the last line says what it was doing."""
    print(*parts, flush=True)


def load_program() -> Any:
    """Import PROGRAM under the module name pyfy-fuzz gave it (a hash of the source), so the
    classes the pythonified file imports by name (tensor subclasses) resolve."""
    name = "pyfy_program_" + hashlib.sha1(PROGRAM.encode()).hexdigest()[:16]
    mod = types.ModuleType(name)
    mod.__file__ = f"<{name}>"
    linecache.cache[mod.__file__] = (len(PROGRAM), None, PROGRAM.splitlines(True), mod.__file__)
    sys.modules[name] = mod
    exec(compile(PROGRAM, mod.__file__, "exec"), mod.__dict__)
    return mod


faulthandler.enable()  # if the interpreter dies, it prints where
P = load_program()
PLAN = P.PLAN
EXACT = BACKEND == "aot_eager"  # eager's kernels: any difference is real; inductor: tolerance


def configure() -> None:
    """The settings pyfy-fuzz compiles under, so that this compile is the one it tested."""
    import torch._functorch.config as fconfig

    settings = {"force_non_lazy_backward_lowering": True, "enable_autograd_cache": False}
    if PLAN["second_backward"] == "retain":
        settings["donated_buffer"] = False  # by design, donated buffers refuse retain_graph
    for key, value in settings.items():
        if hasattr(fconfig, key):
            setattr(fconfig, key, value)
    if BACKEND == "inductor":
        import torch._inductor.config as iconfig

        iconfig.fallback_random = True  # eager's random numbers, so that values compare
        iconfig.fx_graph_cache = False


# ------------------------------------------------------------------ what one call did


@dataclass
class Exc:
    """An exception a subject raised, as data (its type judged by name: `is_a`)."""

    name: str
    bases: tuple  # qualified names of the type's MRO
    message: str
    phase: str
    inner: tuple = ()  # BackendCompilerFailed: the bases of what the compiler raised

    @staticmethod
    def of(exc: BaseException, phase: str) -> Exc:
        # Dynamo re-raises the program's own error found while tracing; compare the original.
        if type(exc).__name__ in ("TorchRuntimeError", "UncapturedHigherOrderOpError"):
            exc = exc.__cause__ or exc
        inner = getattr(exc, "inner_exception", None)
        text = f"{type(inner).__name__}: {inner}" if isinstance(inner, BaseException) else str(exc)
        inner_names = _names(inner) if isinstance(inner, BaseException) else ()
        if type(exc).__name__ == "TorchRuntimeError":
            # raised *from None* when running a node on fake tensors fails: the program's own
            # error survives only in the message ("... got RuntimeError(...)")
            m = re.search(r"\bgot (\w+)\(", str(exc))
            cls = getattr(builtins, m.group(1), None) if m else None
            if isinstance(cls, type) and issubclass(cls, BaseException):
                inner_names = _names(cls())
        return Exc(_names(exc)[0], _names(exc), (text.strip().splitlines() or [""])[0][:300],
                   phase, inner_names)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def is_a(self, ref: Exc) -> bool:
        """An instance of ref's type; a Dynamo crash counts by what the compiler raised."""
        dynamo = "torch._dynamo.exc."
        if self.name.startswith(dynamo) and not ref.name.startswith(dynamo):
            return ref.name in self.inner
        return ref.name in self.bases

    def __str__(self) -> str:
        text = f"{self.short} in {self.phase}: {self.message}"
        return text if len(text) < 160 else text[:157] + "..."


def _names(exc: Any) -> tuple:
    return tuple(f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__)


@dataclass
class TensorRec:
    """One tensor right after the call: geometry, a copy of its values, autograd facts."""

    type_name: str
    dtype: str
    shape: tuple
    stride: tuple | None
    offset: int | None
    values: torch.Tensor | None  # None for wrapper subclasses: see `inner`
    inner: tuple = ()  # (attribute, TensorRec) of a wrapper subclass
    requires_grad: bool = False
    is_leaf: bool = True
    grad_fn: str | None = None
    is_inference: bool = False

    def flat_values(self) -> list:
        return [self.values] if self.values is not None else [
            v for _, t in self.inner for v in t.flat_values()]


def record(t: Any) -> Any:
    """A TensorRec of a tensor, repr() of anything else."""
    if not isinstance(t, torch.Tensor):
        return repr(t)
    sub = is_traceable_wrapper_subclass(t)
    inner = tuple((a, record(getattr(t, a))) for a in t.__tensor_flatten__()[0]) if sub else ()
    try:
        is_leaf, grad_fn = t.is_leaf, t.grad_fn
        grad_fn = None if grad_fn is None else type(grad_fn).__name__
    except RuntimeError as exc:  # a no_grad view of a since-mutated base: autograd refuses
        is_leaf, grad_fn = False, f"<refused: {type(exc).__name__}>"
    with torch.no_grad():
        values = None if sub else t.detach().clone()
    plain = not sub and type(t) in (torch.Tensor, torch.nn.Parameter)
    return TensorRec(
        "torch.Tensor" if plain else f"{type(t).__module__}.{type(t).__qualname__}",
        str(t.dtype), tuple(t.shape), _maybe(lambda: tuple(t.stride())),
        _maybe(t.storage_offset), values, inner, t.requires_grad, is_leaf, grad_fn,
        t.is_inference())


def _maybe(get: Any) -> Any:
    try:
        return get()
    except (RuntimeError, NotImplementedError):  # wrapper subclasses may have no geometry
        return None


@dataclass
class Alias:
    """How one tensor output relates to the arguments (by name) and to the other outputs."""

    is_input: tuple
    base: str  # none | input:<name> | base_of:<name> | output:<k> | other (an intermediate)
    inputs: tuple  # names of the tensors it shares storage with
    outputs: tuple  # indices of the other outputs it shares storage with


@dataclass
class CallRec:
    raised: Exc | None = None
    structure: str = ""
    outputs: list = field(default_factory=list)  # TensorRec, or repr() of a non-tensor
    inputs_after: list = field(default_factory=list)  # (name, TensorRec)
    aliasing: list = field(default_factory=list)  # Alias per tensor output
    grad_enabled_after: bool = True
    leaves: tuple = ()  # names of the tensors whose .grad backward fills
    grads: list | None = None
    second: Any = None  # grads after the second backward, or the Exc it raised
    later: list | None = None  # the outputs re-read after all calls


def named_inputs(args: tuple, module: Any) -> list:
    """Every tensor the caller sees after the call: arguments, their _base, module state."""
    named = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            named.append((f"a{i}", a))
            if a._base is not None:
                named.append((f"a{i}._base", a._base))
    if isinstance(module, torch.nn.Module):
        named += [(f"self.{n}", p) for n, p in module.named_parameters()]
        named += [(f"self.{n}", b) for n, b in module.named_buffers()]
    return named


def storage(t: torch.Tensor) -> Any:
    if is_traceable_wrapper_subclass(t) or t.untyped_storage().nbytes() == 0:
        return None
    return t.untyped_storage().data_ptr()


def aliasing(outs: list, named: list) -> list:
    args = [(n, x) for n, x in named if not n.endswith("._base")]
    keys = [storage(o) for o in outs]
    facts = []
    for k, o in enumerate(outs):
        base = "none" if o._base is None else "other"
        if o._base is not None:
            base = next((f"output:{j}" for j, p in enumerate(outs) if o._base is p), base)
            base = next((f"base_of:{n}" for n, x in args
                         if x._base is not None and o._base is x._base), base)
            base = next((f"input:{n}" for n, x in args if o._base is x), base)
        key = keys[k]
        facts.append(Alias(
            tuple(n for n, x in args if o is x), base,
            tuple(n for n, x in named if key is not None and storage(x) == key),
            tuple(j for j, kj in enumerate(keys) if j != k and key is not None and kj == key)))
    return facts


def grads(gs: Any) -> Any:
    return None if gs is None else [None if g is None else record(g) for g in gs]


@dataclass
class Subject:
    call: Any
    module: Any  # the nn.Module whose parameters are leaves (None for a function)
    file: Any = None  # the loaded pythonified module


def observe(s: Subject, seed: int, variant: str | None = None) -> tuple:
    """One call through the program's own `drive` (seed, call, backward with the plan's
    tangents, second backward); returns the record and the live outputs."""
    rec = CallRec()
    try:
        args = tuple(P.make_inputs(seed, variant))
    except Exception as exc:  # this variant does not exist for the program
        rec.raised = Exc.of(exc, "inputs")
        return rec, []
    owner = s.module if s.module is not None else s.call
    named = named_inputs(args, s.module)
    rec.leaves = tuple(next((n for n, x in named if x is leaf), "?")
                       for leaf in P._leaves(owner, args))
    box: dict = {}

    def call(*a: Any) -> Any:
        box["out"] = s.call(*a)
        return box["out"]

    result = None
    try:
        result = P.drive(call, args, seed, module=owner)
    except Exception as exc:
        rec.raised = Exc.of(exc, "backward" if "out" in box else "call")
    torch.set_grad_enabled(True)
    outs = pytree.tree_leaves(box["out"]) if "out" in box else []
    rec.structure = " ".join(str(pytree.tree_structure(box["out"])).split()) if box else ""
    rec.outputs = [record(x) for x in outs]
    rec.inputs_after = [(n, record(x)) for n, x in named]
    rec.aliasing = aliasing([x for x in outs if isinstance(x, torch.Tensor)], named)
    if result is not None:
        rec.grad_enabled_after = bool(result["grad_enabled_after"])
        rec.grads = grads(result["grads"])
        second = result["second"]
        rec.second = (Exc.of(second, "second backward") if isinstance(second, BaseException)
                      else grads(second))
    return rec, outs


def reread(x: Any) -> Any:
    try:
        return record(x)
    except Exception as exc:
        return f"<unreadable: {type(exc).__name__}: {str(exc)[:200]}>"


def fresh_call(s: Subject, seed: int, watermark: Any = None) -> Any:
    """One more seeded call outside the plan (no backward): (args, out), or what it raised.
    `watermark` gets the first autograd sequence number the call can give a node."""
    args = tuple(P.make_inputs(seed))
    if watermark is not None:
        with torch.enable_grad():
            probe = torch.zeros((), requires_grad=True) * 1
        watermark.append(probe.grad_fn._sequence_nr() + 1)
    torch.manual_seed(seed)
    try:
        return args, s.call(*args)
    except Exception as exc:
        return Exc.of(exc, "probe call")
    finally:
        torch.set_grad_enabled(True)


def overwrite(o: torch.Tensor) -> None:
    """Write into `o` in place (grad mode on, as a user would) so that every element changes."""
    if o.dtype == torch.bool:
        o.logical_not_()
    elif is_traceable_wrapper_subclass(o):
        o.add_(1)
    else:
        with torch.no_grad():
            src = torch.where(o.detach() == 7, 8, 7).to(o.dtype)
        o.copy_(src)


def write_probe(s: Subject, seed: int) -> Any:
    """Write into each output in turn: (refusal or None, inputs that saw it, outputs that
    saw it) per output -- the aliasing a compile must keep -- or what the call raised."""
    called = fresh_call(s, seed)
    if isinstance(called, Exc):
        return called
    args, out = called
    named = named_inputs(args, s.module)
    outs = [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]

    def snap(ts: list) -> list:
        return [record(t).flat_values() for t in ts]

    before_in, before_out = snap([x for _, x in named]), snap(outs)
    probes = []
    for k, o in enumerate(outs):
        try:
            overwrite(o)
        except Exception as exc:
            probes.append((Exc.of(exc, "in-place write"), (), ()))
            continue
        now_in, now_out = snap([x for _, x in named]), snap(outs)
        probes.append((
            None,
            tuple(n for (n, _), a, b in zip(named, before_in, now_in) if not same_all(a, b)),
            tuple(j for j, (a, b) in enumerate(zip(before_out, now_out))
                  if j != k and not same_all(a, b))))
        before_in, before_out = now_in, now_out
    return probes


def version_probe(s: Subject, seed: int) -> Any:
    """Bump every argument's version counter (values unchanged), then backward: autograd
    must refuse exactly when a bumped tensor was saved for backward."""
    called = fresh_call(s, seed)
    if isinstance(called, Exc):
        return called
    args, out = called
    diff = [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not diff:
        return None
    for x in pytree.tree_leaves(args):
        if isinstance(x, torch.Tensor) and not x.is_inference():
            torch.autograd.graph.increment_version(x)
    try:
        torch.autograd.backward(diff, [torch.ones_like(o) for o in diff])
    except Exception as exc:
        return Exc.of(exc, "backward")
    return "ok"


# ------------------------------------------------------------------ the three subjects


def module_of(fn: Any) -> Any:
    return fn if isinstance(fn, torch.nn.Module) else None


def eager_subject() -> Subject:
    fn = P.make_fn()
    return Subject(fn, module_of(fn))


def compile_subject() -> Subject:
    """torch.compile as the plan says, or aot_function for the AOT front-end."""
    fn = P.make_fn()
    if PLAN["frontend"] == "aot":
        call = aot_call(fn)  # the AOT part below
        if ORACLE == "seq_nr":
            compile_backward(call)
        return Subject(call, module_of(fn))
    backend = recording_backend if ORACLE == "seq_nr" else BACKEND  # the seq_nr part below
    mode = {"mode": PLAN["mode"]} if PLAN["mode"] else {}
    return Subject(torch.compile(fn, backend=backend, dynamic=PLAN["dynamic"], **mode),
                   module_of(fn))


def pythonify_subject() -> Subject:
    """The generated file, imported fresh and bound to its own copy of the function."""
    fn = P.make_fn()
    spec = importlib.util.spec_from_file_location("pythonified", FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.bind(fn)
    return Subject(mod.call, module_of(fn), mod)




# ------------------------------------------------------------------ the AOT front-end


def aot_call(fn: Any) -> Any:
    """The AOT front-end as pyfy-fuzz compiles it, without Dynamo (no guards): aot_function
    with no-op compilers, or inductor on an fx trace of the function; one compile per
    argument structure."""
    seq = ORACLE == "seq_nr"
    by_structure: dict = {}

    def build(leaves: list, spec: Any) -> Any:
        def flat(*ls: Any) -> Any:
            return fn(*pytree.tree_unflatten(list(ls), spec))

        if BACKEND == "inductor":
            from torch._inductor.compile_fx import compile_fx

            names = ", ".join(f"x{i}" for i in range(len(leaves)))
            ns = {"flat": flat}
            exec(f"def shim({names}):\n    return flat({names})\n", ns)  # fx wants fixed arity
            inner = {"inner_compile": inductor_inner} if seq else {}
            return compile_fx(torch.fx.symbolic_trace(ns["shim"]), list(leaves), **inner)
        from functorch.compile import min_cut_rematerialization_partition, nop
        from torch._functorch.aot_autograd import aot_function

        return aot_function(
            flat,
            fw_compiler=recorder("forward", nop) if seq else nop,
            bw_compiler=recorder("backward", nop) if seq else nop,
            inference_compiler=recorder("inference", nop) if seq else None,
            partition_fn=min_cut_rematerialization_partition,
            keep_inference_input_mutations=True,
            dynamic=PLAN["dynamic"],
        )

    def call(*args: Any) -> Any:
        leaves, spec = pytree.tree_flatten(args)
        if str(spec) not in by_structure:
            by_structure[str(spec)] = build(leaves, spec)
        return by_structure[str(spec)](*leaves)

    return call





# ------------------------------------------------------------------ running and comparing


@dataclass
class Run:
    subject: str
    setup: Exc | None = None
    calls: list = field(default_factory=list)
    variant: CallRec | None = None
    writes: Any = None  # write_probe's result
    version: Any = None  # version_probe's result
    file: Any = None
    order: list = field(default_factory=list)  # eager only: its backward nodes, as they ran


def run_subject(name: str, make: Any) -> Run:
    say(f"[{name}] setting up")
    try:
        s = make()
    except Exception as exc:
        say(f"[{name}]   raised {type(exc).__name__}: {exc}")
        return Run(name, setup=Exc.of(exc, "setup"))
    run, live = Run(name, file=s.file), []
    for i in range(PLAN["calls"]):
        say(f"[{name}] call {i}: drive(call, make_inputs(seed={i}))")
        rec, outs = observe(s, i)
        if rec.raised:
            say(f"[{name}]   raised {rec.raised}")
        run.calls.append(rec)
        live.append(outs)
    for rec, outs in zip(run.calls, live):
        rec.later = [reread(x) for x in outs]
    del live
    if PLAN["variant"] and not (name == "torch.compile" and PLAN["frontend"] == "aot"):
        say(f"[{name}] variant call: make_inputs(seed=0, variant={PLAN['variant']!r})")
        run.variant, _ = observe(s, 0, PLAN["variant"])
        if run.variant.raised:
            say(f"[{name}]   raised {run.variant.raised}")
    say(f"[{name}] in-place write probe (seed {PLAN['calls']})")
    run.writes = write_probe(s, PLAN["calls"])
    if PLAN["backward"]:
        say(f"[{name}] version-counter probe (seed {PLAN['calls'] + 1})")
        run.version = version_probe(s, PLAN["calls"] + 1)
    return run


TOL = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5),
       torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7)}


def same(a: torch.Tensor, b: torch.Tensor, exact: bool = True) -> bool:
    """Bitwise (signs of zero too, NaN equal to NaN), or within torch.testing's tolerances."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_complex():
        return same(torch.view_as_real(a), torch.view_as_real(b), exact)
    if not a.is_floating_point():
        return torch.equal(a, b)
    if not exact:
        rtol, atol = TOL.get(a.dtype, (1.3e-6, 1e-5))
        return torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol, equal_nan=True)
    eq = (a == b) & (torch.signbit(a) == torch.signbit(b))
    return bool((eq | (a.isnan() & b.isnan())).all())


def same_all(a: list, b: list) -> bool:
    return all(same(x, y) for x, y in zip(a, b))


def brief(t: torch.Tensor) -> str:
    flat = t.flatten()
    shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in flat[:6].tolist())
    return f"[{shown}{', ...' if flat.numel() > 6 else ''}]"


@dataclass
class Pair:
    """`got` against its reference: torch.compile against eager (exact under aot_eager,
    tolerant under inductor, with torch.compile's by-design relaxations), or the pythonified
    file against torch.compile (same graphs: exact and strict)."""

    name: str
    ref_name: str
    ref: Run
    got: Run
    exact: bool
    strict: bool


def diff_tensor(r: TensorRec, g: TensorRec, exact: bool, strict: bool,
                offset: bool = False) -> str | None:
    if r.type_name != g.type_name:
        return f"type {r.type_name} vs {g.type_name}"
    if r.dtype != g.dtype or r.shape != g.shape:
        return f"dtype/shape {r.dtype}{list(r.shape)} vs {g.dtype}{list(g.shape)}"
    if strict:
        stride_differs = r.stride != g.stride
    else:  # strides of size-0/1 dims never change which element an index reads
        stride_differs = r.stride is not None and g.stride is not None and 0 not in r.shape and any(
            a != b for a, b, n in zip(r.stride, g.stride, r.shape) if n > 1)
    if stride_differs:
        return f"stride {r.stride} vs {g.stride}"
    if (offset or strict) and r.offset != g.offset:
        return f"storage offset {r.offset} vs {g.offset}"
    if r.inner or g.inner:
        if [a for a, _ in r.inner] != [a for a, _ in g.inner]:
            return f"inner tensors {[a for a, _ in r.inner]} vs {[a for a, _ in g.inner]}"
        for (a, x), (_, y) in zip(r.inner, g.inner):
            d = diff_tensor(x, y, exact, strict)
            if d:
                return f"inner tensor {a}: {d}"
        return None
    if r.values is not None and g.values is not None and not same(r.values, g.values, exact):
        return f"values differ: expected {brief(r.values)}, got {brief(g.values)}"
    return None


def raise_diff(r: Exc | None, g: Exc | None, ref_name: str) -> str | None:
    if r is None:
        return None if g is None else f"raised {g}; {ref_name} did not"
    if g is None:
        return f"returned; {ref_name} raised {r}"
    return None if g.is_a(r) else f"raised {g}; {ref_name} raised {r}"


def diff_outputs(r: CallRec, g: CallRec, p: Pair) -> list:
    if r.structure != g.structure and not (
            not p.strict and PLAN["frontend"] == "aot"  # by design: aot_function returns a list
            and r.structure.replace("TreeSpec(tuple,", "TreeSpec(list,", 1) == g.structure):
        return [f"output structure {r.structure} vs {g.structure}"]
    out, t = [], 0
    for j, (x, y) in enumerate(zip(r.outputs, g.outputs)):
        if isinstance(x, TensorRec) and isinstance(y, TensorRec):
            a = r.aliasing[t] if t < len(r.aliasing) else None
            d = diff_tensor(x, y, p.exact, p.strict, offset=bool(a and (a.is_input or a.inputs)))
            t += 1
            if d:
                out.append(f"output {j}: {d}")
        elif x != y:
            out.append(f"output {j}: {_what(x)} vs {_what(y)}")
    return out


def _what(x: Any) -> str:
    return "a tensor" if isinstance(x, TensorRec) else str(x)


def diff_inputs(r: CallRec, g: CallRec, p: Pair) -> list:
    if [n for n, _ in r.inputs_after] != [n for n, _ in g.inputs_after]:
        return [f"inputs after the call {[n for n, _ in r.inputs_after]} vs "
                f"{[n for n, _ in g.inputs_after]} (a _base appeared or vanished)"]
    return [f"input {n} after the call: {d}"
            for (n, x), (_, y) in zip(r.inputs_after, g.inputs_after)
            if (d := diff_tensor(x, y, p.exact, p.strict, offset=True))]


def diff_aliasing(r: CallRec, g: CallRec, p: Pair) -> list:
    if len(r.aliasing) != len(g.aliasing):
        return []  # the outputs comparison reports the structure
    tensors = [o for o in r.outputs if isinstance(o, TensorRec)]
    out = []
    for k, (x, y) in enumerate(zip(r.aliasing, g.aliasing)):
        if x.is_input != y.is_input:
            out.append(f"output {k} is input {list(x.is_input)} vs {list(y.is_input)}")
        # By design: AOTAutograd regenerates views of intermediates; under inductor a custom
        # Function's view output comes back without _base (storage sharing still compared).
        excused = not p.strict and (
            (x.base == "other" and y.base in ("none", "other")) or (
                y.base == "other" and x.base == "none") or (
                BACKEND == "inductor" and y.base == "none" and x.inputs == y.inputs
                and (tensors[k].grad_fn or "").endswith("Backward")))
        if x.base != y.base and not excused:
            out.append(f"output {k}._base: {x.base} vs {y.base}")
        if x.inputs != y.inputs:
            out.append(f"output {k} shares storage with inputs {list(x.inputs)} vs "
                       f"{list(y.inputs)}")
        if x.outputs != y.outputs:
            out.append(f"output {k} shares storage with outputs {list(x.outputs)} vs "
                       f"{list(y.outputs)}")
    return out


def diff_autograd(r: CallRec, g: CallRec, p: Pair) -> list:
    out = []
    if r.grad_enabled_after != g.grad_enabled_after:
        out.append(f"grad mode after the call {r.grad_enabled_after} vs {g.grad_enabled_after}")
    for j, (x, y) in enumerate(zip(r.outputs, g.outputs)):
        if not (isinstance(x, TensorRec) and isinstance(y, TensorRec)):
            continue
        for what in ("requires_grad", "is_leaf", "is_inference"):
            if getattr(x, what) != getattr(y, what):
                out.append(f"output {j}.{what} {getattr(x, what)} vs {getattr(y, what)}")
        # Only whether grad_fn exists: the compiled region is one node (by design).
        refused = any(f and f.startswith("<") for f in (x.grad_fn, y.grad_fn))
        if (x.grad_fn is None) != (y.grad_fn is None) or (refused and x.grad_fn != y.grad_fn):
            out.append(f"output {j}.grad_fn {x.grad_fn} vs {y.grad_fn}")
    return out


def _grad_list(r: Any, g: Any, leaves: tuple, p: Pair, what: str) -> list:
    if (r is None) != (g is None):
        return [f"{what}: ran {r is not None} vs {g is not None}"]
    out = []
    for name, x, y in zip(leaves, r or [], g or []):
        if (x is None) != (y is None):
            out.append(f"{what} of {name}: {_what(x)} vs {_what(y)}")
        elif x is not None and (d := diff_tensor(x, y, p.exact, p.strict)):
            out.append(f"{what} of {name}: {d}")
    return out


def diff_grads(r: CallRec, g: CallRec, p: Pair) -> list:
    if r.leaves != g.leaves:
        return [f"leaves {list(r.leaves)} vs {list(g.leaves)}"]
    out = _grad_list(r.grads, g.grads, r.leaves, p, "grad")
    if isinstance(r.second, Exc) or isinstance(g.second, Exc):
        d = raise_diff(r.second if isinstance(r.second, Exc) else None,
                       g.second if isinstance(g.second, Exc) else None, p.ref_name)
        if d:
            out.append(f"second backward: {d}")
    else:
        out += _grad_list(r.second, g.second, r.leaves, p, "grad after the second backward")
    return out


def diff_later(r: CallRec, g: CallRec, p: Pair) -> list:
    """Outputs must keep their values after later calls (a CUDA-graph replay must not
    overwrite what an earlier call handed out)."""
    def changed(c: CallRec) -> dict:
        found = {}
        for j, (now, later) in enumerate(zip(c.outputs, c.later or [])):
            if isinstance(later, str) and later.startswith("<unreadable"):
                # By design, torch.compile's CUDA graphs refuse to read an overwritten output.
                if not (c is g and not p.strict and DEVICE.startswith("cuda")
                        and PLAN["mode"] == "reduce-overhead"):
                    found[j] = later
            elif isinstance(now, TensorRec) and isinstance(later, TensorRec):
                if d := diff_tensor(now, later, True, True):
                    found[j] = d
        return found

    before = changed(r)
    return [f"output {j} changed after later calls ({d}); in {p.ref_name} it kept its values"
            for j, d in sorted(changed(g).items()) if j not in before]


PER_CALL = (("outputs", diff_outputs), ("mutation", diff_inputs), ("aliasing", diff_aliasing),
            ("autograd", diff_autograd), ("grads", diff_grads), ("cudagraph", diff_later))


def guards(p: Pair, runs: dict) -> list:
    """The variant call breaks what the compile assumed. torch.compile recompiles and must
    agree with eager; the file must raise PythonifyGuardError, or agree with eager, or do
    exactly what torch.compile did."""
    e = runs["eager"].variant
    if e is None or (e.raised and e.raised.phase == "inputs"):
        return []
    v = f"variant call ({PLAN['variant']})"
    as_compile = Pair(p.name, "eager", runs["eager"], p.got, EXACT, False)

    def all_diffs(r: CallRec, g: CallRec, q: Pair) -> list:
        return [d for fn in (diff_outputs, diff_inputs, diff_aliasing, diff_grads)
                for d in fn(r, g, q)]

    got = p.got.variant
    if got is None:
        return []
    if p.name == "torch.compile":
        d = raise_diff(e.raised, got.raised, "eager")
        if d or e.raised:
            return [f"{v}: {d}"] if d else []
        return [f"{v}: {x}" for x in all_diffs(e, got, as_compile)]
    if got.raised and got.raised.short == GUARD_ERROR:
        return []
    if got.raised:
        ok = e.raised is not None and got.raised.is_a(e.raised)
        return [] if ok else [f"{v}: raised {got.raised}; expected {GUARD_ERROR}"]
    if e.raised:
        return [f"{v}: returned; eager raised {e.raised}"]
    diffs = all_diffs(e, got, as_compile)
    c = runs["torch.compile"].variant
    if diffs and c is not None and c.raised is None and not all_diffs(c, got, p):
        return []  # the file does what torch.compile does: that divergence is torch.compile's
    return [f"{v} accepted by the file's guards: {d}" for d in diffs]


def compare(p: Pair, runs: dict) -> dict:
    """oracle -> differences of `p.got` from `p.ref`, the way pyfy-fuzz's oracles judge."""
    found: dict = {o: [] for o in MODELLED}
    ref, got, eager = p.ref, p.got, runs["eager"]
    if got.setup is not None:
        found["exceptions"].append(f"{p.name} could not be set up: {got.setup}")
        return found
    eager_raised = [c.raised for c in eager.calls] + [None] * len(ref.calls)
    for i, (r, g) in enumerate(zip(ref.calls, got.calls)):
        if p.strict and eager_raised[i] is None and r.raised is not None:
            continue  # torch.compile crashed here: its finding, not the file's
        if d := raise_diff(r.raised, g.raised, p.ref_name):
            found["exceptions"].append(f"call {i}: {d}")
            break
    if not any(c.raised for c in ref.calls):  # the probes' own calls must agree too
        for what, x, y in (("in-place probe", ref.writes, got.writes),
                           ("version probe", ref.version, got.version)):
            rx, gx = (z if isinstance(z, Exc) and z.phase == "probe call" else None
                      for z in (x, y))
            if d := raise_diff(rx, gx, p.ref_name):
                found["exceptions"].append(f"{what} call: {d}")
                break
    for i, (r, g) in enumerate(zip(ref.calls, got.calls)):
        if r.raised or g.raised or (p.strict and eager_raised[i]):
            continue
        for oracle, fn in PER_CALL:
            found[oracle] += [f"call {i}: {d}" for d in fn(r, g, p)]
    if isinstance(ref.writes, list) and isinstance(got.writes, list):
        for k, ((rx, rin, rout), (gx, gin, gout)) in enumerate(zip(ref.writes, got.writes)):
            if raise_diff(rx, gx, p.ref_name):
                found["autograd"].append(f"writing into output {k} in place: "
                                         f"{rx or 'allowed'} vs {gx or 'allowed'}")
            elif rx is None and gx is None and (rin, rout) != (gin, gout):
                found["aliasing"].append(f"writing into output {k} changed inputs {list(rin)} "
                                         f"outputs {list(rout)} vs {list(gin)} {list(gout)}")
    # Against eager, which arguments backward saves is the partitioner's choice (by design).
    rv, gv = ref.version, got.version
    if p.strict and rv is not None and gv is not None and (rv == "ok") != (gv == "ok") and not (
            isinstance(rv, Exc) and rv.phase == "probe call" or
            isinstance(gv, Exc) and gv.phase == "probe call"):
        found["mutation"].append(f"backward after bumping the arguments' version counters: "
                                 f"{rv} vs {gv}")
    found["guards"] = guards(p, runs)
    if ORACLE == "seq_nr":
        found["seq_nr"] = (torch_invariants() + order_vs_eager(eager.order)
                           if p.name == "torch.compile" else file_vs_torch(got.file))
    return found


# ------------------------------------------------------------------ main


def header() -> None:
    say(f"pyfy-fuzz repro  {FINDING['signature']}")
    say(f"  kind: {KIND}   oracle: {ORACLE}   subject: {SUBJECT}   wrappers: "
        f"{', '.join(FINDING['wrappers']) or '-'}")
    for line in FINDING["explanation"].splitlines():
        say(f"  | {line}")
    say(f"  torch {torch.__version__}   python {sys.version.split()[0]}   backend {BACKEND}   "
        f"device {DEVICE}")
    say("  plan: " + ", ".join(f"{k}={v}" for k, v in PLAN.items()))
    say("")


def verdict(found: dict) -> int:
    """Exit 1 while the finding's oracle sees a difference in the finding's pair; for an
    oracle this miniature does not model, while any difference at all remains."""
    if ORACLE in MODELLED and SUBJECT in found:
        diffs = found[SUBJECT][ORACLE]
    else:
        say(f"note: the {ORACLE!r} oracle (subject {SUBJECT}) is not modelled by this miniature,"
            f" so any difference counts; for the full check run `pyfy-fuzz replay {HERE}`")
        diffs = [d for by_oracle in found.values() for ds in by_oracle.values() for d in ds]
    if diffs:
        say(f"RESULT: BUG PRESENT ({len(diffs)} difference(s) under {ORACLE}); exit 1")
        return 1
    say(f"RESULT: not reproduced (no difference under {ORACLE}); exit 0")
    return 0


def main() -> int:
    if KIND == "hang":  # a watchdog: print every thread's stack and exit 1
        faulthandler.dump_traceback_later(HANG_TIMEOUT_S, exit=True)
    header()
    configure()
    makers = [("eager", eager_subject), ("torch.compile", compile_subject)]
    if FILE.exists():
        makers.append(("pythonify", pythonify_subject))
    elif SUBJECT == "pythonify":
        say(f"RESULT: cannot check: {FILE} is missing; exit 2")
        return 2
    else:
        say(f"(no {FILE.name} next to this file: the pythonified file is not run)")
    runs = {name: run_subject(name, make) for name, make in makers}
    if ORACLE == "seq_nr" and PLAN["backward"]:
        say("[eager] autograd order (backward nodes by sequence number)")
        runs["eager"].order = eager_order()
    pairs = [Pair("torch.compile", "eager", runs["eager"], runs["torch.compile"], EXACT, False)]
    if "pythonify" in runs:
        pairs.append(Pair("pythonify", "torch.compile", runs["torch.compile"],
                          runs["pythonify"], True, True))
    found = {}
    for p in pairs:
        say(f"\n== {p.name} vs {p.ref_name}{'  (this finding)' if p.name == SUBJECT else ''}")
        if p.ref.setup is not None:
            say(f"   not compared: {p.ref_name} could not be set up: {p.ref.setup}")
            continue
        found[p.name] = compare(p, runs)
        for oracle, diffs in found[p.name].items():
            for d in diffs:
                say(f"   {oracle}: {d}")
        if not any(found[p.name].values()):
            say("   no differences")
    say("")
    if SUBJECT in ("torch.compile", "pythonify") and SUBJECT not in found:
        say(f"RESULT: cannot check: the reference of {SUBJECT} could not be set up; exit 2")
        return 2
    return verdict(found)


if __name__ == "__main__":
    sys.exit(main())
