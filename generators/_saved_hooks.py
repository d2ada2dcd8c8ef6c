"""The saved-tensor hooks a program's drive installs (the plan's saved_tensor_hooks knob), as real
functions: the rendered program and a repro define them from this source.

Note [Saved-tensor hook contract]
--------------------------------
What autograd saves differs by design between eager and a compiled graph (AOTAutograd saves
the partitioner's activations, often fewer; tensors it saves without a version-counter check
bypass the hooks: `ctx._tensors_no_vc_check`), so neither how many tensors are packed nor in
which order is compared. What the hooks API promises whoever installs them is compared instead:
each object `unpack` receives is one `pack` returned, and every tensor packed during a call is
unpacked by the backward that needs it (offloading hooks rely on both). Each pack returns a
token with the copy, so the log shows which pack an unpack undid.
"""

from __future__ import annotations

import sys
from typing import Any

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import emitted_source

__all__ = [
    "SAVED_HOOK_FUNCTIONS",
    "RUNTIME",
    "SAVED_LOG",
    "saved_hooks_source",
    "saved_hooks_summary",
]

# ("pack", k) when pack returned token k (its own position in the log), ("unpack", k) when
# unpack received token k. drive's caller clears it before each call.
SAVED_LOG: list[tuple[str, int]] = []


def _pack(t):  # type: ignore[no-untyped-def]
    # a real copy, of the same dtype (torch.compile may save a bool mask), and its token
    SAVED_LOG.append(("pack", len(SAVED_LOG)))
    return len(SAVED_LOG) - 1, t.clone()


def _unpack(packed):  # type: ignore[no-untyped-def]
    token, t = packed
    SAVED_LOG.append(("unpack", token))
    return t


def saved_hooks_summary():  # type: ignore[no-untyped-def]
    """(tensors packed, packed tensors never unpacked, unpacks of objects no pack returned)."""
    packed = {k for what, k in SAVED_LOG if what == "pack"}
    unpacked = {k for what, k in SAVED_LOG if what == "unpack"}
    return len(packed), len(packed - unpacked), len(unpacked - packed)


# The functions, in the order the program defines them (names: the program's drive installs
# _pack and _unpack, generators/_prelude.py).
RUNTIME = ("_pack", "_unpack", "saved_hooks_summary")
SAVED_HOOK_FUNCTIONS: tuple[Any, ...] = (_pack, _unpack, saved_hooks_summary)


def saved_hooks_source() -> str:
    """The log and the functions, as the rendered program and a repro define them."""
    functions = emitted_source(*SAVED_HOOK_FUNCTIONS)
    log = "SAVED_LOG = []  # (pack, k): pack returned token k; (unpack, k): unpack got it"
    return f"{log}\n\n\n{functions}"


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
