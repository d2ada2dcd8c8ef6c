"""MirrorTensor, the traceable wrapper subclass the subclass family's programs define.

It derives from torch.Tensor, and the generators import no torch (the campaign renders and
shrinks programs without it), so the class is written under `if TYPE_CHECKING:`: mypy and ruff
read it as code, and Python never defines it here. `mirror_source` copies its text out of this
module's pinned source (Note [The emitted source is the imported source] in
pyfy_fuzz/schema/sourcepin.py), as `generators._emit` copies the helpers Python does define.
"""

from __future__ import annotations

import ast
import linecache
import sys
import textwrap
from typing import TYPE_CHECKING

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import IGNORE

__all__ = ["mirror_source"]

# The program's layout: its long lines and its lambdas are the program's, kept as they are.
# ruff: noqa: E501, E731

if TYPE_CHECKING:  # the program imports torch and return_and_correct_aliasing
    import torch
    from torch.utils._python_dispatch import return_and_correct_aliasing

    # fmt: off
    class MirrorTensor(torch.Tensor):
        """A traceable wrapper subclass around one inner tensor with a constant tag."""

        @staticmethod
        def __new__(cls, inner, tag, outer_size=None, outer_stride=None):
            # the outer geometry torch asks for when it rebuilds the subclass (__tensor_unflatten__)
            return torch.Tensor._make_wrapper_subclass(
                cls, outer_size if outer_size is not None else inner.shape,
                strides=outer_stride if outer_stride is not None else inner.stride(),
                storage_offset=inner.storage_offset(),
                dtype=inner.dtype, device=inner.device, requires_grad=inner.requires_grad,
            )

        def __init__(self, inner, tag, outer_size=None, outer_stride=None):
            self.inner = inner  # type: ignore[method-assign]
            self.tag = tag

        def __repr__(self):  # type: ignore[override]
            return f"MirrorTensor({self.inner!r}, {self.tag!r})"

        def __tensor_flatten__(self):
            return ["inner"], self.tag

        @staticmethod
        def __tensor_unflatten__(inner_tensors, ctx, outer_size, outer_stride):
            return MirrorTensor(inner_tensors["inner"], ctx, outer_size, outer_stride)

        @classmethod
        def __torch_dispatch__(cls, func, types, args, kwargs=None):  # type: ignore[override]
            kwargs = kwargs or {}
            tag = next(a.tag for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, MirrorTensor))
            unwrap = lambda t: t.inner if isinstance(t, MirrorTensor) else t
            out = func(*torch.utils._pytree.tree_map(unwrap, args), **torch.utils._pytree.tree_map(unwrap, kwargs))
            wrapped = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: MirrorTensor(t, tag), out)
            return return_and_correct_aliasing(func, args, kwargs, wrapped)
    # fmt: on


def mirror_source() -> str:
    """The class as the program defines it: its text, dedented, without the checker's ignores."""
    lines = linecache.getlines(__file__)
    tree = ast.parse("".join(lines))
    (guard,) = [n for n in tree.body if isinstance(n, ast.If)]
    (cls,) = [n for n in guard.body if isinstance(n, ast.ClassDef)]
    text = textwrap.dedent("".join(lines[cls.lineno - 1 : cls.end_lineno]))
    return IGNORE.sub("", text)


pin(sys.modules[__name__])
