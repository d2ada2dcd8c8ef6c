"""Parity harness: the pythonified file vs torch.compile vs eager on one program.

Each subject runs on freshly built inputs with the same aliasing structure, then the harness
compares outputs (values, dtype, shape, stride), inputs after the call (values and metadata,
and the shared base's), aliasing between outputs and inputs, autograd metadata, gradients, a
second call with fresh inputs, and (optionally) a guard-violating call.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree

from pyfy_fuzz.pythonify import PythonifyGuardError, load, pythonify


def r(*shape: int, rg: bool = False, seed: int = 0) -> torch.Tensor:
    """A deterministic random tensor; each (shape, seed) gives its own values."""
    g = torch.Generator().manual_seed(seed + 7 * sum(shape))
    return torch.randn(*shape, generator=g).requires_grad_(rg)


def _tensors(x: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def _storage(t: torch.Tensor) -> int | None:
    if type(t) is not torch.Tensor and hasattr(t, "__tensor_flatten__"):
        return None
    return t.untyped_storage()._cdata


def describe(outs: Any, inputs: Any) -> list[tuple[Any, ...]]:
    """Aliasing and autograd facts of each output tensor, in terms of input positions."""
    ins = _tensors(inputs)
    facts = []
    for o in _tensors(outs):
        is_input = [i for i, x in enumerate(ins) if o is x]
        base_is = [i for i, x in enumerate(ins) if o._base is not None and o._base is x]
        shares = [
            i for i, x in enumerate(ins) if _storage(o) is not None and _storage(o) == _storage(x)
        ]
        facts.append(
            (
                tuple(is_input),
                tuple(base_is),
                tuple(shares),
                o.requires_grad,
                o.is_leaf,
                o.grad_fn is not None,
            )
        )
    out_list = _tensors(outs)
    pairs = [
        (i, j)
        for i in range(len(out_list))
        for j in range(i + 1, len(out_list))
        if _storage(out_list[i]) is not None and _storage(out_list[i]) == _storage(out_list[j])
    ]
    facts.append(("output-storage-sharing", tuple(pairs)))
    return facts


def assert_same_tensor(a: torch.Tensor, b: torch.Tensor, what: str, exact: bool) -> None:
    assert type(a) is type(b), f"{what}: type {type(a).__name__} vs {type(b).__name__}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if type(a) is torch.Tensor:
        assert a.stride() == b.stride(), f"{what}: stride {a.stride()} vs {b.stride()}"
    if exact:
        assert torch.equal(a.detach(), b.detach()), f"{what}: values differ"
    else:
        torch.testing.assert_close(a.detach(), b.detach(), msg=lambda m: f"{what}: {m}")


def _grad_leaves(inputs: Any, fn: Any) -> list[torch.Tensor]:
    leaves = [t for t in _tensors(inputs) if t.requires_grad and t.is_leaf]
    if isinstance(fn, torch.nn.Module):
        leaves += [p for p in fn.parameters() if p.requires_grad]
    seen: list[torch.Tensor] = []
    for t in leaves:
        if not any(t is s for s in seen):
            seen.append(t)
    return seen


def run_subject(
    call: Callable[..., Any], fn: Any, inputs: tuple[Any, ...], tangent_seed: int
) -> dict[str, Any]:
    """Call, then backward through every output that requires grad with seeded tangents."""
    leaves = _grad_leaves(inputs, fn)
    for t in leaves:
        t.grad = None
    try:
        outs = call(*inputs)
    except Exception as exc:  # the exception type is part of the observation
        return {"exc": type(exc)}
    facts = describe(outs, inputs)
    grads = None
    diff = [o for o in _tensors(outs) if o.requires_grad]
    if diff:
        g = torch.Generator().manual_seed(tangent_seed)
        loss = sum(
            (o * torch.randn(o.shape, generator=g, dtype=o.dtype)).sum()
            if type(o) is torch.Tensor
            else o.sum()
            for o in diff
        )
        loss.backward()
        grads = [None if t.grad is None else t.grad.clone() for t in leaves]
    return {"outs": outs, "facts": facts, "grads": grads, "inputs": inputs}


def compare(a: dict[str, Any], b: dict[str, Any], who: str, exact: bool) -> None:
    assert ("exc" in a) == ("exc" in b), f"{who}: raised {a.get('exc')} vs {b.get('exc')}"
    if "exc" in a:
        assert a["exc"] is b["exc"], f"{who}: {a['exc']} vs {b['exc']}"
        return
    oa, ob = pytree.tree_leaves(a["outs"]), pytree.tree_leaves(b["outs"])
    assert len(oa) == len(ob), f"{who}: {len(oa)} vs {len(ob)} outputs"
    for i, (x, y) in enumerate(zip(oa, ob, strict=True)):
        if isinstance(x, torch.Tensor):
            assert_same_tensor(x, y, f"{who}: output {i}", exact)
        else:
            assert x == y, f"{who}: output {i}: {x!r} vs {y!r}"
    for i, (x, y) in enumerate(zip(_tensors(a["inputs"]), _tensors(b["inputs"]), strict=True)):
        assert_same_tensor(x, y, f"{who}: input {i} after the call", exact)
        if x._base is not None:
            assert_same_tensor(x._base, y._base, f"{who}: base of input {i}", exact)
    assert a["facts"] == b["facts"], f"{who}: aliasing/autograd facts {a['facts']} vs {b['facts']}"
    assert (a["grads"] is None) == (b["grads"] is None), f"{who}: grads present differ"
    if a["grads"] is not None:
        for i, (x, y) in enumerate(zip(a["grads"], b["grads"], strict=True)):
            assert (x is None) == (y is None), f"{who}: grad {i} presence"
            if x is not None:
                assert_same_tensor(x, y, f"{who}: grad {i}", exact)


def check_parity(
    tmp_path: Path,
    fn: Any,
    make_args: Callable[[], tuple[Any, ...]],
    *,
    expect: str | list[str] | None = None,
    backend: str = "aot_eager",
    frontend: str = "dynamo",
    dynamic: bool = False,
    bad_args: Callable[[], tuple[Any, ...]] | None = None,
    exact: bool | None = None,
    calls: int = 2,
    make_module: Callable[[], Any] | None = None,
) -> Any:
    """Pythonify fn, assert `expect` wrapper(s) active, and check parity over `calls` calls.

    With `make_module`, each subject gets its own module copy (same initial state), so buffer
    and parameter mutations are compared too.
    """
    exact = backend == "aot_eager" if exact is None else exact
    mods = [make_module() for _ in range(3)] if make_module else [fn, fn, fn]
    result = pythonify(
        mods[1],
        make_args(),
        tmp_path / "pythonified.py",
        backend=backend,
        frontend=frontend,
        dynamic=dynamic,
    )
    expected = [expect] if isinstance(expect, str) else (expect or [])
    for w in expected:
        assert w in result.active_wrappers, f"{w} not active: {result.active_wrappers}"
    mod = load(result.path, bind=mods[2])
    for k in range(calls):
        torch.manual_seed(k)
        e = run_subject(mods[0], mods[0], make_args(), k)
        torch.manual_seed(k)
        c = run_subject(result.compiled, mods[1], make_args(), k)
        torch.manual_seed(k)
        p = run_subject(mod.call, mods[2], make_args(), k)
        compare(c, p, f"call {k}: pythonify vs torch.compile", exact)
        compare(e, p, f"call {k}: pythonify vs eager", False)
    if make_module:
        for (n, a), (_, b) in zip(
            mods[1].state_dict().items(), mods[2].state_dict().items(), strict=True
        ):
            assert_same_tensor(a, b, f"module state {n}", exact)
    if bad_args is not None:
        with pytest.raises(PythonifyGuardError):
            mod.call(*bad_args())
    return result
