"""Programs on a device: every tensor a rendered program creates lives on its `DEVICE`.

The "meta" device exists in every torch build, so these checks run without a GPU: a tensor
left on the CPU shows up as a CPU tensor among meta ones, as a device-mismatch error when the
program runs, or as an op that mixes devices (torch accepts CPU indices and CPU 0-dim tensors
next to tensors on any device, so that alone raises nothing). Meta tensors have no data
(data_ptr is 0), so storage sharing is compared by the StorageImpl's identity
(`untyped_storage()._cdata`), as pythonify's input copier does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from hypothesis import HealthCheck, given, settings
from torch.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass

from generators import (
    CallPlan,
    InputSpec,
    ModuleSpec,
    OutSpec,
    ProgramSpec,
    RootSpec,
    Stmt,
    ViewStep,
    materialize,
    programs,
    render,
)
from pyfy_fuzz.case.fp64 import to_fp64
from pyfy_fuzz.case.runner import run_case

# What torch says when one op gets tensors on two devices (set_ and copy_ included).
_MISMATCH = ("same device", "two devices", "different device", "devices must match")

# Program files of this module go to one directory of their own (one per process).
_DIR = Path(tempfile.mkdtemp(prefix="pyfy-test-device-"))


def _plain(args: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor behind `args`: each argument, the inner tensors of subclasses, and the
    `_base` of every view, named by where it was found."""
    stack = [(f"a{i}", a) for i, a in reversed(list(enumerate(args)))]
    while stack:
        name, t = stack.pop()
        if not isinstance(t, torch.Tensor):
            continue
        yield name, t
        if is_traceable_wrapper_subclass(t):
            attrs, _ = t.__tensor_flatten__()  # type: ignore[attr-defined]
            stack += [(f"{name}.{a}", getattr(t, a)) for a in reversed(attrs)]
        elif t._base is not None:
            stack.append((f"{name}._base", t._base))


def _structure(args: Any) -> list[tuple[Any, ...]]:
    """The device-independent facts of the inputs: per tensor its name, dtype, geometry and
    autograd role, the first tensor it IS, and the first tensor sharing its storage."""
    named = list(_plain(args))
    tensors = [t for _, t in named]
    storage = [
        None if is_traceable_wrapper_subclass(t) else t.untyped_storage()._cdata for t in tensors
    ]
    facts = []
    for k, (name, t) in enumerate(named):
        geometry: tuple[Any, ...] = (tuple(t.shape),)
        if not is_traceable_wrapper_subclass(t):
            geometry += (tuple(t.stride()), t.storage_offset())
        facts.append(
            (
                name,
                type(t).__name__,
                t.dtype,
                geometry,
                t.requires_grad,
                t.is_leaf,
                next(j for j, x in enumerate(tensors) if x is t),
                None if storage[k] is None else storage.index(storage[k]),
            )
        )
    return facts


def _off_device(tensors: Any, device: str) -> list[str]:
    return [f"{name} on {t.device}" for name, t in _plain(tensors) if t.device.type != device]


class _MixedDevices(TorchDispatchMode):
    """Records every aten op whose tensor arguments and results are on more than one device.
    Moving a tensor (`.to`, `copy_`) is the one op that may; and a 0-dim CPU tensor is
    accepted by every device's kernels (torch.func.vmap turns `r * 2`'s scalar into one)."""

    MOVES = ("aten._to_copy.", "aten.copy_.", "aten.to.")

    def __init__(self) -> None:
        super().__init__()
        self.mixed: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = str(func)
        if not name.startswith(self.MOVES):
            leaves = pytree.tree_leaves((args, kwargs, out))
            devices = {
                x.device.type
                for x in leaves
                if isinstance(x, torch.Tensor) and not (x.dim() == 0 and x.device.type == "cpu")
            }
            if len(devices) > 1:
                self.mixed.append(f"{name} on {sorted(devices)}")
        return out


def _module_tensors(fn: Any) -> list[tuple[str, torch.Tensor]]:
    if not isinstance(fn, torch.nn.Module):
        return []
    return [*fn.named_parameters(), *fn.named_buffers()]


# ---------------------------------------------------------------------------- hand-built specs

# A module with a parameter, a tied parameter, a buffer and BatchNorm, on a TwoTensor-free
# input; and a function with index_put_, a set_-shared input, a view and random tangents.
MODULE = ProgramSpec(
    family="module",
    roots=(RootSpec((4, 3), grad="leaf"),),
    inputs=(InputSpec("root"),),
    body=(
        Stmt("batchnorm", ("a0",), ("v0",)),
        Stmt("mul", ("v0", "p0"), ("v1",)),
        Stmt("add", ("v1", "b0"), ("v2",)),
    ),
    outputs=(OutSpec("ref", ref="v2"),),
    module=ModuleSpec(params=((3,),), tied=True, buffers=((3,),), batchnorm=3),
    plan=CallPlan(calls=2),
)
ALIASED = ProgramSpec(
    family="synthetic_base",
    roots=(RootSpec((3, 4)), RootSpec((2, 3), grad="leaf")),
    inputs=(
        InputSpec("root"),
        InputSpec("view", views=(ViewStep("slice", (1, 0, 4, 2)), ViewStep("transpose", (0, 1)))),
        InputSpec("set_shared", views=(ViewStep("as_strided", ((2, 2), (4, 1), 1)),)),
        InputSpec("root", root=1),
    ),
    body=(
        Stmt("index_put_", ("a0", 1)),
        Stmt("mul", ("a1", "a3"), ("v0",)),
        Stmt("sum", ("a2",), ("v1",)),
        Stmt("add", ("v0", "v1"), ("v2",)),
    ),
    outputs=(OutSpec("ref", ref="v2"),),
    plan=CallPlan(calls=2, tangents="randn"),
)
SUBCLASS = ProgramSpec(
    family="subclass",
    roots=(RootSpec((3,), grad="leaf", subclass="two_tensor"), RootSpec((3,), subclass="mirror")),
    inputs=(InputSpec("root"), InputSpec("root", root=1)),
    body=(Stmt("sin", ("a0",), ("v0",)), Stmt("mul2", ("a1",), ("v1",))),
    outputs=(OutSpec("ref", ref="v0"), OutSpec("ref", ref="v1")),
    plan=CallPlan(calls=1, tangents="ones"),
)
HAND_BUILT = [MODULE, ALIASED, SUBCLASS]


# ---------------------------------------------------------------------------- rendering


def test_device_is_a_constant_of_the_source_and_part_of_the_cache_key() -> None:
    cpu, meta = render(ALIASED), render(ALIASED, "meta")
    assert "DEVICE = 'cpu'" in cpu.splitlines()
    assert cpu.replace("DEVICE = 'cpu'", "DEVICE = 'meta'") == meta  # nothing else differs
    p_cpu, p_meta = materialize(ALIASED, _DIR), materialize(ALIASED, _DIR, device="meta")
    assert p_cpu.name != p_meta.name and p_cpu.path != p_meta.path
    assert (p_cpu.device, p_meta.device) == ("cpu", "meta")
    assert materialize(ALIASED, _DIR, device="meta").module is p_meta.module


@pytest.mark.parametrize("device", ["", "CUDA", "cuda:x", "cpu; import os", 0])
def test_render_rejects_what_is_not_a_device_string(device: Any) -> None:
    with pytest.raises(ValueError, match="device must be"):
        render(ALIASED, device)


@pytest.mark.parametrize("spec", HAND_BUILT, ids=lambda s: s.family)
def test_hand_built_programs_run_entirely_on_meta(spec: ProgramSpec) -> None:
    """Modules (params, tied, buffers, BatchNorm), index_put_, set_ and subclasses: inputs,
    module state, outputs and gradients all on meta, and the call plus backward run."""
    program = materialize(spec, _DIR, device="meta")
    args, fn = program.make_inputs(0), program.make_fn()
    assert _off_device(args, "meta") == []
    assert [n for n, t in _module_tensors(fn) if not t.is_meta] == []
    if spec.module is not None and spec.module.tied:
        assert fn.p1 is fn.p0
    with _MixedDevices() as mode:
        result = program.module.drive(fn, args, 0)
    assert mode.mixed == []
    assert _off_device(pytree.tree_leaves(result["out"]), "meta") == []
    grads = [g for g in result["grads"] or [] if g is not None]
    assert grads and all(g.is_meta for g in grads)
    for variant in ("shape", "dtype", "aliasing"):
        assert _off_device(program.make_inputs(0, variant), "meta") == []


def test_aliasing_of_the_hand_built_inputs_survives_the_move() -> None:
    cpu = materialize(ALIASED, _DIR).make_inputs(0)
    meta = materialize(ALIASED, _DIR, device="meta").make_inputs(0)
    assert meta[1]._base is meta[0] and meta[2]._base is None
    assert meta[2].untyped_storage()._cdata == meta[0].untyped_storage()._cdata
    assert meta[3].untyped_storage()._cdata != meta[0].untyped_storage()._cdata
    assert _structure(cpu) == _structure(meta)


def test_fp64_reference_copies_stay_on_the_device() -> None:
    """The inductor tolerance run's float64 copies: same device, storages still shared."""
    args = materialize(ALIASED, _DIR, device="meta").make_inputs(0)
    a0, a1, a2, a3 = to_fp64(args)
    assert _off_device((a0, a1, a2, a3), "meta") == []
    assert {a.dtype for a in (a0, a1, a2, a3)} == {torch.float64}
    assert a0.untyped_storage()._cdata == a1.untyped_storage()._cdata
    assert a0.untyped_storage()._cdata == a2.untyped_storage()._cdata
    assert a3.requires_grad and a3.is_leaf


# ---------------------------------------------------------------------------- generated specs


@settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(programs())
def test_generated_programs_create_every_tensor_on_meta(spec: ProgramSpec) -> None:
    """Inputs (with bases and inner tensors) and module state on meta, aliased as on the CPU;
    and running the plan's call never mixes devices (meta's own refusals are fine)."""
    cpu, meta = materialize(spec, _DIR), materialize(spec, _DIR, device="meta")
    args = meta.make_inputs(0)
    assert _off_device(args, "meta") == []
    assert _structure(args) == _structure(cpu.make_inputs(0))
    fn = meta.make_fn()
    assert [n for n, t in _module_tensors(fn) if not t.is_meta] == []
    assert [n for n, _ in _module_tensors(fn)] == [n for n, _ in _module_tensors(cpu.make_fn())]
    mode = _MixedDevices()
    result = None
    try:
        with mode:
            result = meta.module.drive(fn, args, 0)
    except Exception as exc:  # unsupported on meta, data-dependent, or eager's own error
        assert not any(m in str(exc) for m in _MISMATCH), f"device mismatch: {exc}"
    finally:
        torch.set_grad_enabled(True)
    assert mode.mixed == []
    if result is None:
        return
    assert _off_device(pytree.tree_leaves(result["out"]), "meta") == []
    assert _off_device([g for g in result["grads"] or [] if g is not None], "meta") == []


# ---------------------------------------------------------------------------- run_case


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without a GPU")
def test_run_case_on_cuda_without_a_gpu_says_so() -> None:
    with pytest.raises(RuntimeError, match=r"needs a GPU.*torch\.cuda\.is_available\(\) is False"):
        run_case(ALIASED, device="cuda")


@pytest.mark.parametrize("device", ["tpu", "meta", "cuda:0", "CPU"])
def test_run_case_rejects_other_devices(device: str) -> None:
    with pytest.raises(ValueError, match="device must be one of"):
        run_case(ALIASED, device=device)


@pytest.mark.cuda
@pytest.mark.parametrize("spec", HAND_BUILT, ids=lambda s: s.family)
def test_run_case_on_cuda(spec: ProgramSpec, tmp_path: Path) -> None:
    """The whole case on the GPU: inputs on it with the CPU's values, and a clean comparison."""
    cpu, gpu = materialize(spec, _DIR), materialize(spec, _DIR, device="cuda")
    for (name, c), (_, g) in zip(
        _plain(cpu.make_inputs(0)), _plain(gpu.make_inputs(0)), strict=True
    ):
        assert g.is_cuda, name
        if not is_traceable_wrapper_subclass(c):
            assert torch.equal(c.detach(), g.detach().cpu()), name
    result = run_case(spec, device="cuda", workdir=tmp_path)
    assert result.status == "ok", result.reason
    explained = [f.explanation for f in result.findings]
    assert not any(m in e for e in explained for m in _MISMATCH), explained
