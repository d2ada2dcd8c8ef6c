"""pyfy_gen::record, the ORDERED effectful custom op a program of the effects family calls (in
its body, or in a custom Function's backward): torch threads effect tokens through the graph
for it (EffectTokensWrapper).

`_register_effect_op` is a real function, emitted with `inspect.getsource`
(`effect_op_source`; Note [The emitted source is the imported source] in
pyfy_fuzz/schema/sourcepin.py); the program calls it once, at import.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import emitted_source

if TYPE_CHECKING:  # the program imports torch; here the function is source, never called
    import torch

__all__ = ["effect_op_source"]

# The layout is the program's (ruff would add blank lines after its imports), and it looks the
# op up to see whether it is registered yet (a bare expression, B018).
# ruff: noqa: B018


# fmt: off
def _register_effect_op():
    """pyfy_gen::record, an ORDERED effectful custom op (registered once per process)."""
    import sys
    import types
    log = sys.modules.setdefault("pyfy_gen_effect_log", types.ModuleType("pyfy_gen_effect_log"))
    if not hasattr(log, "entries"):
        log.entries = []  # type: ignore[attr-defined]
    try:
        torch.ops.pyfy_gen.record
        return
    except (AttributeError, RuntimeError):
        pass

    @torch.library.custom_op("pyfy_gen::record", mutates_args=())
    def record(x: torch.Tensor) -> None:
        log.entries.append(float(x.detach().float().sum()))  # type: ignore[attr-defined]

    @record.register_fake
    def _(x):
        return None

    from torch._library.effects import EffectType
    torch.library._register_effectful_op("pyfy_gen::record", EffectType.ORDERED)
# fmt: on


def effect_op_source() -> str:
    """The registration and its call, as the rendered program defines them."""
    return f"\n\n{emitted_source(_register_effect_op)}\n\n_register_effect_op()\n"


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
