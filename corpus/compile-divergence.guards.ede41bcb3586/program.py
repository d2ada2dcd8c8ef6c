"""pyfy-fuzz program (family synthetic_base). Needs only torch: python this_file.py"""

import contextlib

import torch

DEVICE = 'cpu'

def _root(g, shape, dtype, layout, grad, subclass=None, variant=None, first=True):
    """A root tensor: its own storage, the layout asked for, and its grad kind; a variant
    call's root grows ("shape"; "relation": the first root only) or changes dtype."""
    tokens = variant.split("+") if variant else []
    if "shape" in tokens or ("relation" in tokens and first):
        shape = tuple(n + 1 for n in shape)
    if "dtype" in tokens and dtype.is_floating_point:  # float32 <-> float64, halves -> float32
        dtype = torch.float64 if dtype == torch.float32 else torch.float32
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
    elif subclass == "nested_two_tensor":
        t = TwoTensor(TwoTensor(t, t * 2), TwoTensor(t * 3, t + 1))
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
    """Tensors whose .grad a backward fills: arguments requiring grad (a non-leaf one's grad is
    retained: drive calls retain_grad), then parameters."""
    found = []
    params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
    for t in [*torch.utils._pytree.tree_leaves(args), *params]:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if not any(t is f for f in found):
                found.append(t)
    return found


def _unretained(t, args):
    return any(t is args[k] for k in NO_RETAIN if k < len(args))


def _grad_of(leaf):
    """A copy of leaf.grad; None for a non-leaf whose grad was not retained (reading it would
    only warn)."""
    if not (leaf.is_leaf or leaf.retains_grad) or leaf.grad is None:
        return None
    return leaf.grad.clone()


def drive(call, args, seed=0, module=None, variant=None):
    """One call as PLAN says: seed, call, then backward through the outputs requiring grad.

    `module` is the nn.Module whose parameters count as leaves (defaults to `call`); a variant
    call's context (no_grad, inference_mode) replaces the call site's. Returns
    {"out", "grad_enabled_after", "grads", "second"}: grads of the leaves after the first
    backward (None without one); after the second backward, its grads or the exception it
    raised. Errors in the call or the first backward propagate; grad mode is restored.
    """
    leaves = _leaves(call if module is None else module, args)
    again = variant is not None and "again" in variant.split("+")
    for leaf in leaves:
        if not again:  # "again": the call before's arguments, their gradients accumulate
            leaf.grad = None
        if PLAN["backward"] and not leaf.is_leaf and not _unretained(leaf, args):
            leaf.retain_grad()  # only a backward reads the .grad kept
    mark_inputs(args)
    if PLAN["grad_fn_hooks"]:
        _hook_grad_fns(args)
    with saved_hooks():
        return _drive(call, args, seed, leaves, variant)


def mark_inputs(args):
    """The plan's mark_dynamic knob: dim 0 of each tensor argument of size >= 2 is marked
    dynamic (maybe_mark_dynamic: torch may still specialise it), before every call."""
    if "mark_dynamic" not in PLAN["config"]:
        return
    for a in torch.utils._pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor) and a.dim() and a.shape[0] >= 2:
            torch._dynamo.maybe_mark_dynamic(a, 0)


def compile_site():
    """What is active around a call when torch.compile compiles at it: the plan's saved-tensor
    hooks (drive wraps the call and its backward in them), the call site, and no_grad where a
    reentrant checkpoint's forward makes the first call. A compile made apart from the drive
    (pythonify's capture) is made inside this, so it sees what the stock compile sees at its
    first call."""
    stack = contextlib.ExitStack()
    if PLAN.get("through") == "checkpoint_reentrant":  # its forward is a Function's: no_grad
        stack.enter_context(torch.no_grad())
    stack.enter_context(saved_hooks())
    stack.enter_context(call_site())
    return stack


def saved_hooks():
    """The saved-tensor hooks around a call and its backward: the plan's logging ones, and
    inside them, on top, the configuration's GraphModule pair (GRAPH_HOOKS; Note [Saved-tensor
    hooks as graphs])."""
    stack = contextlib.ExitStack()
    if PLAN["saved_tensor_hooks"]:
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(_pack, _unpack))
    if GRAPH_HOOKS is not None:
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(*GRAPH_HOOKS))
    return stack


def call_site(variant=None):
    """The call-site context a variant call names, else the plan's configuration's
    (CALL_CONTEXT: no_grad, inference_mode or autocast), around the call only: backward runs
    outside it, as a training step's would."""
    context = variant_context(variant) or CALL_CONTEXT
    if context == "no_grad":
        return torch.no_grad()
    if context == "inference_mode":
        return torch.inference_mode()
    if context == "autocast":
        return torch.autocast(torch.device(DEVICE).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _drive(call, args, seed, leaves, variant=None):
    torch.manual_seed(seed)
    try:
        with call_site(variant):
            out = through(call, args)
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
    result["grads"] = [_grad_of(leaf) for leaf in leaves]
    if PLAN["second_backward"]:
        try:
            loss.backward()
            result["second"] = [_grad_of(leaf) for leaf in leaves]
        except RuntimeError as exc:
            result["second"] = exc
    return result


def through(call, args):
    """The call as PLAN's front-end makes it (Note [The front-end axis]): directly, or
    through torch.utils.checkpoint, which runs it again in backward."""
    if PLAN.get("through") == "checkpoint":
        return torch.utils.checkpoint.checkpoint(call, *args, use_reentrant=False, early_stop=False)
    if PLAN.get("through") == "checkpoint_reentrant":
        return torch.utils.checkpoint.checkpoint(call, *args, use_reentrant=True)
    return call(*args)


def _unalias(t):
    """A copy with the same values and autograd role, sharing nothing."""
    c = t.detach().clone()
    return c.requires_grad_() if t.requires_grad else c


def to_overlapping(args):
    """overlap: two arguments that share memory with no other and need no grad become views
    of one storage, the second shifted by one element (a partial overlap), with call 0's
    values."""
    args = list(args)
    ptrs = [a.untyped_storage().data_ptr() if type(a) is torch.Tensor else 0 for a in args]
    free = [
        i
        for i, a in enumerate(args)
        if type(a) is torch.Tensor
        and not a.requires_grad
        and a.numel() >= 2
        and a._base is None
        and ptrs.count(ptrs[i]) == 1
    ]
    pairs = [(i, j) for i in free for j in free if i < j and args[i].dtype == args[j].dtype]
    if pairs:
        i, j = pairs[0]
        a, b = args[i], args[j]
        store = torch.empty(max(a.numel(), b.numel() + 1), dtype=a.dtype, device=a.device)
        store[: a.numel()].copy_(a.reshape(-1))
        store[1 : b.numel() + 1].copy_(b.reshape(-1))
        args[i] = store[: a.numel()].view(a.shape)
        args[j] = store[1 : b.numel() + 1].view(b.shape)
    return tuple(args)


def to_nonleaf(args):
    """nonleaf: leaf arguments requiring grad become clones of such a leaf."""
    return tuple(
        a.detach().requires_grad_().clone()
        if type(a) is torch.Tensor and a.requires_grad and a.is_leaf
        else a
        for a in args
    )


def to_leaf(args):
    """leaf: non-leaf arguments requiring grad become leaves requiring grad."""
    return tuple(
        a.detach().requires_grad_()
        if type(a) is torch.Tensor and a.requires_grad and not a.is_leaf
        else a
        for a in args
    )


def detached(args):
    """no_requires_grad: arguments requiring grad are detached."""
    return tuple(a.detach() if type(a) is torch.Tensor and a.requires_grad else a for a in args)


def to_strided(args):
    """strided: contiguous leaf arguments sharing memory with no other argument become leaves
    over every other element of a storage twice as long (same values, same requires_grad).
    An empty tensor's data_ptr is 0: it shares memory with nothing (`or id(a)`); a subclass
    argument (False) is never made strided."""
    ptrs = [type(a) is torch.Tensor and (a.untyped_storage().data_ptr() or id(a)) for a in args]
    out = []
    for a, ptr in zip(args, ptrs, strict=True):
        if type(a) is torch.Tensor and a.dim() and a.is_contiguous() and a.is_leaf:
            if a._base is None and ptrs.count(ptr) == 1:
                wide = a.new_zeros(a.shape[:-1] + (2 * a.shape[-1],))  # dtype, device
                b = wide[..., ::2].detach()  # a leaf of its own
                a = b.copy_(a.detach()).requires_grad_(a.requires_grad)
        out.append(a)
    return tuple(out)


def to_shared(args):
    """share: the first two plain arguments of one shape and dtype that share memory with no
    other become two views of one new storage with the first's values: distinct objects, the
    same memory, each keeping its requires_grad and leafness."""
    args = list(args)
    ptrs = [a.untyped_storage().data_ptr() if type(a) is torch.Tensor else 0 for a in args]
    free = [
        i
        for i, a in enumerate(args)
        if type(a) is torch.Tensor and a.numel() >= 1 and ptrs.count(ptrs[i]) == 1
    ]
    pairs = [
        (i, j)
        for i in free
        for j in free
        if i < j and args[i].dtype == args[j].dtype and args[i].shape == args[j].shape
    ]

    def like(view, a):  # a leaf can share memory: detach() keeps the storage
        if not a.requires_grad:
            return view
        leaf = view.detach().requires_grad_()
        return leaf if a.is_leaf else leaf.view(a.shape)

    if pairs:
        i, j = pairs[0]
        a = args[i]
        store = a.detach().clone().reshape(-1)
        args[i] = like(store.view(a.shape), a)
        args[j] = like(store.view(a.shape), args[j])
    return tuple(args)


def to_shifted(args):
    """shift: plain arguments that share memory become views of a copy of their storage one
    element longer, every one but the first of each group one element further on (another
    overlap than call 0's); a group with an argument requiring grad gets views of a leaf
    requiring grad. An empty view of a storage with elements is in its storage's group (its
    offset moves); an empty root has no memory (data_ptr 0) and no group."""
    args = list(args)
    ptrs = [a.untyped_storage().data_ptr() if type(a) is torch.Tensor else 0 for a in args]
    for ptr in sorted(set(ptrs) - {0}):
        members = [k for k, p in enumerate(ptrs) if p == ptr]
        if len(members) < 2:
            continue
        first = args[members[0]]
        old = first.untyped_storage()
        n = old.nbytes() // first.element_size()
        store = torch.zeros(n + 1, dtype=first.dtype, device=first.device)
        store[:n].copy_(torch.empty(0, dtype=first.dtype, device=first.device).set_(old))
        if any(args[k].requires_grad for k in members):
            store.requires_grad_()
        for shift, k in enumerate(members):
            a = args[k]
            offset = a.storage_offset() + min(shift, 1)
            args[k] = store.as_strided(a.shape, a.stride(), offset)
    return tuple(args)


def to_other_scalars(args):
    """scalars: each Python int argument one more, each float times two plus a quarter: values
    the compile of call 0 may have specialized on, of the same type (an int stays an int, so
    Dynamo's type guard holds and only its value guard, or its dynamic symbol, decides)."""
    return tuple(a + 1 if type(a) is int else a * 2 + 0.25 if type(a) is float else a for a in args)


def relate(args, variant):
    """Call 0's arguments (fresh ones of this call's seed) changed as `variant` says; an
    argument a relationship does not apply to stays as it is."""
    tokens = variant.split("+") if variant else []
    for token, change in (
        ("overlap", to_overlapping),
        ("nonleaf", to_nonleaf),
        ("leaf", to_leaf),
        ("no_requires_grad", detached),
        ("strided", to_strided),
        ("share", to_shared),
        ("shift", to_shifted),
        ("scalars", to_other_scalars),
    ):
        if token in tokens:
            args = change(args)
    return tuple(args)


def variant_context(variant):
    """The context a variant call runs under: "no_grad", "inference_mode", or None."""
    tokens = variant.split("+") if variant else []
    for context in ("no_grad", "inference_mode"):
        if context in tokens:
            return context
    return None


SAVED_LOG = []  # (pack, k): pack returned token k; (unpack, k): unpack got it


def _pack(t):
    # a real copy, of the same dtype (torch.compile may save a bool mask), and its token
    SAVED_LOG.append(("pack", len(SAVED_LOG)))
    return len(SAVED_LOG) - 1, t.clone()


def _unpack(packed):
    token, t = packed
    SAVED_LOG.append(("unpack", token))
    return t


def saved_hooks_summary():
    """(tensors packed, packed tensors never unpacked, unpacks of objects no pack returned)."""
    packed = {k for what, k in SAVED_LOG if what == "pack"}
    unpacked = {k for what, k in SAVED_LOG if what == "unpack"}
    return len(packed), len(packed - unpacked), len(unpacked - packed)


def _pack_clone(t):
    return t.clone()


def _unpack_clone(t):
    return t


def _pack_flat(t):
    return t.reshape(-1).clone(), t.shape


def _unpack_flat(packed):
    return packed[0].view(packed[1])




HOOK_LOG = []  # the hooks that ran, in order: pyfy-fuzz compares it between subjects


def _log_call(callee, *received):
    """Log what torch handed user code (Note [What user code receives]); not while traced."""
    if torch.compiler.is_dynamo_compiling():
        return
    fake = torch._subclasses.fake_tensor.is_fake  # the AOT front-end traces on fake tensors
    if any(isinstance(v, torch.Tensor) and fake(v) for v in received):
        return
    HOOK_LOG.append((callee, *(None if v is None else _tensor_seen(v) for v in received)))


def _tensor_seen(t):
    version = None if t.is_inference() else t._version  # an inference tensor has no counter
    return (tuple(t.shape), str(t.dtype), t.requires_grad, version)


def _double_grad(grad):
    return grad * 2


def _log_grad_a(grad):
    _log_call("a", grad)


def _log_grad_b(grad):
    _log_call("b", grad)


def _log_accumulated(param):
    _log_call("accumulated", param, param.grad)


def _log_node_pre(grad_outputs):
    _log_call("node pre", *grad_outputs)


def _log_node(grad_inputs, grad_outputs):
    _log_call("node", *grad_inputs, *grad_outputs)


def _hook_grad_fns(args):
    # a logging hook and pre-hook on the grad_fn of each non-leaf tensor argument
    for a in torch.utils._pytree.tree_leaves(args):
        if isinstance(a, torch.Tensor) and a.grad_fn is not None:
            a.grad_fn.register_prehook(_log_node_pre)
            a.grad_fn.register_hook(_log_node)


def _module_hook(module, grad_input, grad_output):
    _log_call("module", *grad_input, *grad_output)
    return tuple(None if g is None else g * 3 for g in grad_input)


def _module_pre_hook(module, grad_output):
    _log_call("module pre", *grad_output)
    return None


def _run_as_python(*fns):
    """Dynamo never compiles these functions' own frames (Note [Hook frames run as Python])."""
    skip = getattr(torch._dynamo.eval_frame, "skip_code", None)
    if skip is None:
        raise RuntimeError(
            "torch._dynamo.eval_frame has no skip_code on this torch: the hook log cannot "
            "keep Dynamo off the hooks' own frames (Note [Hook frames run as Python])"
        )
    for fn in fns:
        skip(fn.__code__)



_run_as_python(_log_call, _tensor_seen, _double_grad, _log_grad_a, _log_grad_b, _log_accumulated, _log_node_pre, _log_node, _module_hook, _module_pre_hook)

def f(a0, a1):
    a0.add_(1)
    v0 = a1.sin()
    return v0


def make_fn():
    return f


_LAST_ARGS = []


def make_inputs(seed=0, variant=None):
    """The arguments for one call; a `variant` call's relationships to call 0 differ (shape, dtype, aliasing, ...)."""
    if variant and "again" in variant.split("+") and _LAST_ARGS:
        return _LAST_ARGS[0]
    g = torch.Generator().manual_seed(seed)
    r0 = _root(g, (1,), torch.float32, 'contiguous', 'none', None, variant)
    a0 = r0
    a1 = r0.select(0, 0)
    args = (a0, a1)
    if variant and "aliasing" in variant.split("+"):
        args = tuple(_unalias(a) if i in (1,) else a for i, a in enumerate(args))
    args = relate(args, variant)
    _LAST_ARGS[:] = [args]  # what an "again" call passes once more
    return args

PLAN = {'calls': 1, 'variant': 'aliasing', 'backward': False, 'tangents': 'ones', 'second_backward': None, 'dynamic': False, 'frontend': 'dynamo', 'mode': None, 'saved_tensor_hooks': False, 'grad_fn_hooks': False, 'config': (), 'backend': None, 'sequence': (), 'through': None}
CALL_CONTEXT = None
GRAPH_HOOKS = None
NO_RETAIN = ()  # Note [Arguments whose grad is not retained]
SPEC = '{"body": [{"args": ["a0", 1], "ctx": null, "op": "add_", "outs": []}, {"args": ["a1"], "ctx": null, "op": "sin", "outs": ["v0"]}], "family": "synthetic_base", "functions": [], "inputs": [{"kind": "root", "of": 0, "root": 0, "value": 0, "views": []}, {"kind": "view", "of": 0, "root": 0, "value": 0, "views": [{"args": [0, 0], "op": "select"}]}], "module": null, "outputs": [{"items": [], "kind": "ref", "ref": "v0", "value": 0}], "plan": {"backend": null, "backward": false, "calls": 1, "config": [], "dynamic": false, "frontend": "dynamo", "grad_fn_hooks": false, "mode": null, "saved_tensor_hooks": false, "second_backward": null, "sequence": [], "tangents": "ones", "through": null, "variant": "aliasing"}, "roots": [{"dtype": "float32", "grad": "none", "layout": "contiguous", "shape": [1], "subclass": null}], "version": 1}'


if __name__ == "__main__":
    fn = make_fn()
    for seed in range(PLAN["calls"]):
        result = drive(fn, make_inputs(seed), seed)
        print(f"call {seed}: out={result['out']!r}")
        print(f"call {seed}: grads={result['grads']!r}")
