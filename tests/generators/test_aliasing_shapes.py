"""Issue 17's argument shapes: n-D windows that partially overlap, one storage read as two
dtypes, unfold views, an offset view returned after a write, a view of a non-leaf written
under no_grad or inference_mode. Each is generated (its spec path says so), runs in eager,
has the aliasing it claims, and a subject that gets that aliasing wrong is caught."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, settings

import oracles
from generators import ProgramSpec, materialize, programs
from oracles import Evidence
from pyfy_fuzz.case.observe import Target, observe_subject
from pyfy_fuzz.schema.paths import SPEC_PATHS, spec_paths

SETTINGS = settings(
    database=None,
    max_examples=4000,
    derandomize=True,
    phases=[Phase.generate],  # the first example found: shrinking it costs more than it tells
    suppress_health_check=list(HealthCheck),
)
FAMILY = {
    "inputs/nd_windows": "input_mutation",
    "inputs/dtype_aliases": "input_mutation",
    "inputs/view/unfold": "synthetic_base",
    "inputs/offset_view_after_write": "output_aliasing",
    "inputs/nonleaf_view_written/no_grad": "input_mutation",
    "inputs/nonleaf_view_written/inference_mode": "input_mutation",
}


@functools.cache
def _example(path: str) -> ProgramSpec:
    """A program of the shape's family that reaches it (found once per session)."""
    return find(
        programs([FAMILY[path]]), lambda s: path in spec_paths(s) and _runs(s), settings=SETTINGS
    )


def _runs(spec: ProgramSpec) -> bool:
    """Eager runs the program's first call (most programs do: the generator's validity)."""
    program = materialize(spec)
    try:
        program.module.drive(program.make_fn(), program.make_inputs(0))
    except RuntimeError:
        return False
    finally:
        torch.set_grad_enabled(True)
    return True


def _storage(t: torch.Tensor) -> int:
    return int(t.untyped_storage().data_ptr())


def _elements(t: torch.Tensor) -> set[int]:
    """Byte offsets of every element in its storage."""
    index = torch.zeros(t.shape, dtype=torch.int64)
    for d, (n, st) in enumerate(zip(t.shape, t.stride(), strict=True)):
        shape = [1] * t.dim()
        shape[d] = n
        index = index + (torch.arange(n) * st).view(shape)
    return {int(i) * t.element_size() for i in (index + t.storage_offset()).flatten()}


@pytest.mark.parametrize("path", sorted(FAMILY))
def test_each_shape_is_generated_and_runs_in_eager(path: str) -> None:
    assert path in SPEC_PATHS
    spec = _example(path)  # found among programs eager runs
    assert path in spec_paths(spec) and spec.family == FAMILY[path]


def test_windows_overlap_partially_with_equal_strides() -> None:
    args = materialize(_example("inputs/nd_windows")).make_inputs(0)
    a, b = _pair(args, lambda a, b: a.dim() >= 2 and a.stride() == b.stride())
    common = _elements(a) & _elements(b)
    assert common and common != _elements(a)


def _pair(args: tuple[Any, ...], also: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """The two arguments that share a storage and satisfy `also`."""
    tensors = [a for a in args if type(a) is torch.Tensor]
    pairs = [
        (a, b)
        for k, a in enumerate(tensors)
        for b in tensors[k + 1 :]
        if _storage(a) == _storage(b) and also(a, b)
    ]
    assert pairs, args
    return pairs[0]


def test_dtype_aliases_read_one_storage_as_two_dtypes() -> None:
    args = materialize(_example("inputs/dtype_aliases")).make_inputs(0)
    a, b = _pair(args, lambda a, b: a.dtype != b.dtype)
    assert a.element_size() == b.element_size()


def test_offset_view_after_write_is_a_view_with_an_offset() -> None:
    spec = _example("inputs/offset_view_after_write")
    program = materialize(spec)
    args = program.make_inputs(0)
    out = program.make_fn()(*args)
    outs = out if isinstance(out, tuple) else (out,)
    views = [o for o in outs if isinstance(o, torch.Tensor) and o._base is not None]
    assert any(o.storage_offset() > 0 for o in views)


def _on_copies(fn: Any) -> Any:
    """A subject blind to aliasing: it runs on copies of its arguments, then writes each
    argument's new value back one by one (the later write wins where they overlap)."""

    def call(*args: Any) -> Any:
        copies = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
        out = fn(*copies)
        with torch.no_grad():
            for a, c in zip(args, copies, strict=True):
                if isinstance(a, torch.Tensor) and a.shape == c.shape and not torch.equal(a, c):
                    a.copy_(c)
        return out

    return call


@pytest.mark.parametrize("path", ["inputs/nd_windows", "inputs/dtype_aliases"])
def test_a_subject_blind_to_the_aliasing_is_caught(path: str) -> None:
    spec = _example(path)
    program = materialize(spec)

    def observed(name: str, wrap: Any) -> Any:
        fn = program.make_fn()
        return observe_subject(program, Target(name, wrap(fn) if wrap else fn))

    ev = Evidence(
        eager=observed("eager", None),
        compiled=observed("torch.compile", _on_copies),
        pythonified=None,
    )
    found = oracles.check_all(ev)
    assert found, spec
    assert {f.oracle for f in found} & {"mutation", "outputs", "versions", "grads"}, found
