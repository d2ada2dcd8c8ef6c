"""Python scalar arguments: Dynamo's guards on them, read through torch.compile's guard filter.

Note [Scalar arguments]
-----------------------
A Python int, float, bool, None or str passed beside the tensors takes one of two paths
through Dynamo, and the file follows each:

- Specialized (`dynamic=False`; the first compile under automatic dynamic; always a bool,
  None or str): Dynamo reads the value as a constant, bakes it into the graph and guards it
  with CONSTANT_MATCH (EQUALS_MATCH for a number: the exact type and `==`, NaN matching NaN;
  the identity of True, False and None). Another value fails the guard and torch.compile
  recompiles. The graph takes no input for it, so the file saw nothing of it: a changed value
  silently returned the result for the old one.
- Unspecialized (`dynamic=True`, or the recompile after a value changed): Dynamo guards the
  exact type alone (TYPE_MATCH: a float where an int was compiled recompiles) and traces the
  value as a symbol. An int becomes a SymInt graph input, passed as it is. A float becomes a
  SymFloat that Dynamo passes to the graph as a tensor (`GraphArg.pass_arg_as_tensor`): its
  bytecode calls `torch._as_tensor_fullprec(L['s'])` at each call (a float64, or for an
  int an int64, 0-d CPU tensor), and AOTAutograd's `tensorify_python_scalars` turned its uses
  into tensor arithmetic over that input. The ShapeEnv guards every float symbol not NaN
  (`not math.isnan(L['s'])`, "NaN specialization"), and whatever the compile decided on its
  value (`s > 0` for an `if`, `floor(s) == 2` where it made a size of it).

Dynamo guards only what the frame read: an argument the function never reads has no guard,
and any value of it runs the same code. So the capture does not guess from the arguments; it
reads Dynamo's own guards through torch.compile's public `options={"guard_filter_fn": fn}`
(`GuardWatch`), which hands each guard of the frame to `fn` as a GuardFilterEntry (the guard
type, its source such as "L['n']" as `orig_guard.name`, the value it was built from) and keeps
every one (the watch answers True for all). Of those, `scalar_guards` keeps the value and type
guards on a Python scalar reached from the arguments (`L['n']`, `L['cfg']['scale']`,
`L['t'][1]`), and refuses one it cannot name as an expression the file can evaluate.

The ShapeEnv's guards are read off the ShapeEnv itself once the compile is done
(`float_guards`): each unspecialized float gets a NOT_NAN row; a guard on its value is refused,
naming it (the file has no printer for the ShapeEnv's expressions; an int symbol's guards
narrow its value range, which Note [Size symbols] checks, a float's do not).

The file checks the table before it gathers any input (`_check_scalars`): the exact type, and
under a value guard the value (under NOT_NAN, that it is not NaN), raising PythonifyGuardError
naming the source where torch.compile would recompile. A graph input passed as a tensor is
gathered through the file's `_as_tensor_fullprec`, which converts as Dynamo's bytecode does,
so a later call with another float runs the graph on that value. Each graph-break region is
its own capture and file, so its guards are those of its own frame (a resume function's, in
torch), over the region's parameters. frontend="aot" has no Dynamo and so no guards: nothing
is recorded there.

An unspecialized argument the function returns as it is (`return y, s`) is rebuilt by
Dynamo from its source, so the file would have to return the call's value, not the capture's.
But the capture cannot tell it from a constant of the same value by what it returned: CPython
keeps one object for the ints -5..256 and merges equal constants of one module, the caller's
argument among them (measured). Such a return is refused (`refuse_returned_scalar`); a number
that is not the argument's object is a constant or a value Dynamo computed, as before.

Not modelled: guards on scalars outside the arguments (a global, a closure cell, a module
attribute such as `L['self'].scale`): the file reads no such value today.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import torch

from ..errors import PythonifyUnsupported
from ..meta import SCALAR_GUARD_TYPES, ScalarGuard

__all__ = [
    "Entry",
    "GuardWatch",
    "SCALAR_TYPES",
    "float_guards",
    "refuse_returned_scalar",
    "scalar_guards",
]

# The Python scalars the file guards, by exact type.
SCALAR_TYPES = (int, float, bool, type(None), str)

# What the watch reads of each GuardFilterEntry, and of its `orig_guard`.
_ENTRY_FIELDS = ("guard_type", "has_value", "value", "orig_guard")
_GUARD_FIELDS = ("name",)

# An argument's root in a source, and a source the file evaluates as written: L['name']
# followed by subscripts of a string or an int, or attributes.
_ROOT = re.compile(r"L\['([A-Za-z_]\w*)'\]")
_SIMPLE = re.compile(r"L\['[A-Za-z_]\w*'\](?:\['[^'\\]*'\]|\[-?\d+\]|\.[A-Za-z_]\w*)*")

# One guard as the watch read it: (source, guard type, has a value, the value).
Entry = tuple[str, str, bool, Any]


class GuardWatch:
    """The `guard_filter_fn` the capture's torch.compile runs with: keeps every guard, and
    while armed records each one's source, type and value (Note [Scalar arguments])."""

    def __init__(self) -> None:
        self.armed = True  # disarmed after the capture: recompiles are not recorded
        self.calls = 0  # the guard sets Dynamo handed over while armed
        self.entries: list[Entry] = []
        self.problem: PythonifyUnsupported | None = None  # raised after the compile

    def __call__(self, entries: Sequence[Any]) -> list[bool]:
        if self.armed:
            self.calls += 1
            try:
                self.entries.extend(_read(e) for e in entries)
            except PythonifyUnsupported as exc:  # Dynamo would wrap it: raise it afterwards
                self.problem = exc
        return [True] * len(entries)

    def recorded(self) -> list[Entry]:
        """What the capture's compile guarded; refused where this torch did not say."""
        self.armed = False
        if self.problem is not None:
            raise self.problem
        if not self.calls:
            raise PythonifyUnsupported(
                f"torch {torch.__version__}",
                "torch.compile never called options['guard_filter_fn'], through which the "
                "capture reads Dynamo's guards on scalar arguments (Note [Scalar arguments])",
            )
        return self.entries


def _read(e: Any) -> Entry:
    for owner, obj, fields in (
        ("GuardFilterEntry", e, _ENTRY_FIELDS),
        ("GuardFilterEntry.orig_guard", getattr(e, "orig_guard", None), _GUARD_FIELDS),
    ):
        for f in fields:
            if not hasattr(obj, f):
                raise PythonifyUnsupported(
                    f"torch {torch.__version__}",
                    f"{owner} has no field {f!r}, which the capture reads Dynamo's guards "
                    "on scalar arguments from (Note [Scalar arguments] in capture/scalars.py)",
                )
    name = e.orig_guard.name
    return (name() if callable(name) else str(name), str(e.guard_type), bool(e.has_value), e.value)


def scalar_guards(entries: list[Entry], arg_names: list[str]) -> list[ScalarGuard]:
    """The value and type guards on Python scalars reached from the arguments, in Dynamo's
    order, each once (Note [Scalar arguments])."""
    out: list[ScalarGuard] = []
    for source, guard_type, has_value, value in entries:
        root = _ROOT.search(source)
        if guard_type not in SCALAR_GUARD_TYPES or root is None or root[1] not in arg_names:
            continue
        if not has_value:
            raise PythonifyUnsupported(
                "a guard on an argument Dynamo gave no value for", f"{guard_type} on {source}"
            )
        if type(value) not in SCALAR_TYPES:
            continue  # a container's or a module's type: not a Python scalar
        if not _SIMPLE.fullmatch(source):
            raise PythonifyUnsupported(
                "a guarded Python scalar the file cannot read", f"{guard_type} on {source}"
            )
        guard = ScalarGuard(source, type(value).__name__, guard_type, value)
        if guard not in out:
            out.append(guard)
    return out


def refuse_returned_scalar(x: Any, guards: list[ScalarGuard]) -> None:
    """Refuse a returned number that is the very object of an unspecialized scalar argument
    (Note [Scalar arguments]): it may be the argument, which the file would have to return,
    or a constant that shares its object, which it must not."""
    for g in guards:
        if not g.holds_value and x is g.value:
            raise PythonifyUnsupported(
                "a returned number that is an unspecialized scalar argument or a constant",
                f"{x!r}, the object {g.source} also is",
            )


def float_guards(shape_env: Any, arg_names: list[str]) -> list[ScalarGuard]:
    """The ShapeEnv's guards on the unspecialized floats of the arguments: not NaN, each;
    refused where one constrains the value (Note [Scalar arguments])."""
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    if shape_env is None:
        return []
    # the value each symbol was traced with (var_to_val, deprecated for backed_var_to_val)
    values = getattr(shape_env, "backed_var_to_val", None)
    if values is None:
        values = shape_env.var_to_val
    out = []
    for sym, sources in shape_env.var_to_sources.items():
        if not symbol_is_type(sym, SymT.FLOAT) or not sources:
            continue
        name = sources[0].name
        source = name() if callable(name) else str(name)
        root = _ROOT.search(source)
        if root is None or root[1] not in arg_names:
            continue
        held = [str(g.expr) for g in shape_env.guards if sym in g.expr.free_symbols]
        if sym in shape_env.replacements:
            held.append(f"{sym} == {shape_env.replacements[sym]}")
        if held:
            raise PythonifyUnsupported(
                "a guard on the value of an unspecialized float", f"{source}: {held[0]}"
            )
        if not _SIMPLE.fullmatch(source):
            raise PythonifyUnsupported("a guarded Python scalar the file cannot read", source)
        out.append(ScalarGuard(source, "float", "NOT_NAN", float(values[sym])))
    return out
