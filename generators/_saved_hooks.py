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

Note [Saved-tensor hooks as graphs]
-----------------------------------
Hooks that are `torch.fx.GraphModule`s are a different feature (activation quantization and
offloading use it): torch.compile does not call them, it inlines them. AOTAutograd traces
pack into the end of the forward graph and unpack into the start of the backward graph, for
the saved tensors `functorch.config.saved_tensors_hooks_filtering_mode` selects (by default
only intermediates the backward may free), so the forward's outputs and the backward's
inputs change; Dynamo guards on the hooks' identity; and the runtime wrapper disables the
ambient hooks around the compiled call, so they do not pack what the graph already packed
(`_should_disable_saved_tensors_hooks`). Eager calls the same modules as plain hooks, on
every saved tensor. The pairs below undo themselves exactly, for every dtype (a bool mask
is saved too), so every subject's values and gradients are eager's whatever was packed, and
what the compiled graphs did wrong shows as a value, a gradient or an error. Being graphs,
they log nothing: the contract of the logging hooks above is not theirs. The
configuration's hooks knobs (`graph_saved_hooks*`, Note [Drawn configurations]) name the
pair; the drive installs it inside the plan's logging hooks, so it is the one on top.
- "clone": pack a copy, unpack it as it is (the unpack graph returns its input);
- "flat": pack a flat copy and the shape (a tuple: sizes are constants, or SymInts under
  dynamic shapes, which AOTAutograd saves apart), unpack a view of the shape.
"""

from __future__ import annotations

import sys
from typing import Any

from pyfy_fuzz.schema.sourcepin import pin

from ._emit import emitted_source

__all__ = [
    "GRAPH_HOOK_FORMS",
    "GRAPH_HOOK_FUNCTIONS",
    "SAVED_HOOK_FUNCTIONS",
    "RUNTIME",
    "SAVED_LOG",
    "graph_hooks_source",
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


def _pack_clone(t):  # type: ignore[no-untyped-def]
    return t.clone()


def _unpack_clone(t):  # type: ignore[no-untyped-def]
    return t


def _pack_flat(t):  # type: ignore[no-untyped-def]
    return t.reshape(-1).clone(), t.shape


def _unpack_flat(packed):  # type: ignore[no-untyped-def]
    return packed[0].view(packed[1])


# Each form's (pack, unpack) pair (the configuration's hooks knobs name one each).
GRAPH_HOOK_FORMS: dict[str, tuple[Any, Any]] = {
    "clone": (_pack_clone, _unpack_clone),
    "flat": (_pack_flat, _unpack_flat),
}


def graph_hooks_source(form: str | None, define: bool = False) -> str:
    """GRAPH_HOOKS as a program or a repro.py defines it: None, or the form's pair traced into
    GraphModules once, at import (Dynamo guards on their identity). With `define`, the pair's
    functions come first (a repro defines only those; a program has all of them from
    saved_hooks_source)."""
    if form is None:
        return "GRAPH_HOOKS = None"
    pack, unpack = GRAPH_HOOK_FORMS[form]
    traced = f"torch.fx.symbolic_trace({pack.__name__}), torch.fx.symbolic_trace({unpack.__name__})"
    line = f"GRAPH_HOOKS = ({traced})  # hooks torch.compile inlines into its graphs"
    return f"{emitted_source(pack, unpack).rstrip()}\n\n\n{line}" if define else line


# The functions, in the order the program defines them (names: the program's drive installs
# _pack and _unpack, generators/_prelude.py).
RUNTIME = ("_pack", "_unpack", "saved_hooks_summary")
GRAPH_HOOK_FUNCTIONS: tuple[Any, ...] = tuple(f for pair in GRAPH_HOOK_FORMS.values() for f in pair)
SAVED_HOOK_FUNCTIONS: tuple[Any, ...] = (_pack, _unpack, saved_hooks_summary, *GRAPH_HOOK_FUNCTIONS)


def saved_hooks_source() -> str:
    """The log and the functions, as the rendered program and a repro define them."""
    functions = emitted_source(*SAVED_HOOK_FUNCTIONS)
    log = "SAVED_LOG = []  # (pack, k): pack returned token k; (unpack, k): unpack got it"
    return f"{log}\n\n\n{functions}"


pin(sys.modules[__name__])  # Note [The emitted source is the imported source]
