"""User code torch calls: what every hook and custom Function method the program defines
received, how often each ran and in which order, compared call by call with the reference.

Contract: per plan call where neither side raised, the program's HOOK_LOG of the call and its
backward (`CallObs.user_calls`; Note [What user code receives] in generators/_hooks.py)
agrees with the reference's --

- each custom Function method (`Fn<k>.forward`, `.setup_context`, `.backward`) ran as often
  (how often each *hook* ran is the grads oracle's: "hooks ran");
- the runs of one callee, paired (Note [Pairing runs]), received as many arguments, each None
  or a tensor where the reference's was, with the reference's shape, dtype, requires_grad
  and version counter;
- a sequence whose order torch promises ran in that order (Note [Which order is promised
  to user code]).

A difference that changes no value (a hook handed a gradient with requires_grad set, a
backward run twice that returns the same) is a finding all the same: user code sees it.
By design (oracles/by_design.py): `custom-function-compiled`, a Function torch.compile
compiled into its graph, whose Python runs only while traced; `user-code-version`, the
amount of a version counter under torch.compile. The pythonified file runs the graphs of
the compile it models and is compared exactly, order included.
"""

from __future__ import annotations

from collections import Counter

from pyfy_fuzz.schema.difference import Difference
from pyfy_fuzz.schema.observation import (
    PROMISED_PAIRS,
    CallObs,
    Received,
    UserCall,
    function_of,
)

from ._base import per_call
from ._calls import PairContext
from .by_design import excuse
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "EVERY_CALLEE",
    "NAME",
    "POSITION",
    "check",
    "diff_user_code",
]

NAME = "user_code"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 10
# True: the file's findings compare it with the compile it models, so check_all asks whether
# it agrees with eager instead (Note [Whose bug] in __init__).
ATTRIBUTABLE = True

# The name a difference of the whole log's order has (the pythonified file's).
EVERY_CALLEE = "every callee"

# Note [Pairing runs]
# ~~~~~~~~~~~~~~~~~~~
# One callee may run several times in a call: a logging hook registered on two arguments, a
# Function applied twice, a backward run once per backward. Which run comes first across
# tensors follows the backward graph's topology, which torch.compile changes by design (Note
# [Which hook order is promised] in _calls.py), so runs are paired as a multiset: equal
# records first, then what is left in order. A difference between two runs is then one the
# reference has no run to match -- "receives None where eager passes a gradient" -- and
# never an artefact of two tensors' hooks trading places.


def check(ev: Evidence) -> list[Finding]:
    return per_call(ev, NAME, diff_user_code)


def diff_user_code(ref: CallObs, got: CallObs, ctx: PairContext) -> list[Difference]:
    """The user_code oracle's per-call comparison (the module docstring)."""
    r, g = list(ref.user_calls), list(got.user_calls)
    if not ctx.strict:
        r = _less_compiled_functions(r, g)
    r_runs, g_runs = _by_callee(r), _by_callee(g)
    out = []
    for callee in _callees(r, g):
        rs, gs = r_runs.get(callee, []), g_runs.get(callee, [])
        if len(rs) != len(gs) and function_of(callee):
            out.append(
                ctx.diff(NAME, "user_code", "runs", name=callee, expected=len(rs), actual=len(gs))
            )
        for a, b in _pairs(rs, gs, ctx.strict):
            out += _received(a, b, ctx)
    return out + _order(r, g, ctx)


def _less_compiled_functions(ref: list[UserCall], got: list[UserCall]) -> list[UserCall]:
    """The reference's log less the custom Function methods whose Python torch.compile
    traced instead of running: those of which its log has no entry at all (by design:
    custom-function-compiled)."""
    ran = {c.callee for c in got}
    traced = {c.callee for c in ref if function_of(c.callee) and c.callee not in ran}
    if traced:
        excuse("custom-function-compiled")
    return [c for c in ref if c.callee not in traced]


def _by_callee(log: list[UserCall]) -> dict[str, list[UserCall]]:
    found: dict[str, list[UserCall]] = {}
    for c in log:
        found.setdefault(c.callee, []).append(c)
    return found


def _callees(ref: list[UserCall], got: list[UserCall]) -> list[str]:
    """Every callee of either log, in the order it first ran (the reference's first)."""
    return list(dict.fromkeys(c.callee for c in [*ref, *got]))


def _key(c: UserCall, strict: bool) -> tuple[Received, ...]:
    """What pairs two runs: what they received, less the version counters under
    torch.compile (user-code-version)."""
    if strict:
        return c.received
    return tuple(None if x is None else (*x[:3], None) for x in c.received)


def _pairs(
    ref: list[UserCall], got: list[UserCall], strict: bool
) -> list[tuple[UserCall, UserCall]]:
    """One callee's runs paired (Note [Pairing runs]): equal ones first, then in order."""
    r_left, g_left = list(ref), list(got)
    pairs = []
    for a in list(r_left):
        same = next((b for b in g_left if _key(b, strict) == _key(a, strict)), None)
        if same is not None:
            pairs.append((a, same))
            r_left.remove(a)
            g_left.remove(same)
    return pairs + list(zip(r_left, g_left, strict=False))


def _received(ref: UserCall, got: UserCall, ctx: PairContext) -> list[Difference]:
    """What one run received against the reference's run it is paired with."""
    name = ref.callee
    if len(ref.received) != len(got.received):
        return [
            ctx.diff(
                NAME,
                "user_code",
                "arity",
                name=name,
                expected=len(ref.received),
                actual=len(got.received),
            )
        ]
    out = []
    for k, (a, b) in enumerate(zip(ref.received, got.received, strict=True)):
        if a is None or b is None:
            if (a is None) != (b is None):
                out.append(
                    ctx.diff(
                        NAME,
                        "user_code",
                        "presence",
                        name=name,
                        index=k,
                        expected="None" if a is None else "a tensor",
                        actual="None" if b is None else "a tensor",
                    )
                )
            continue
        for prop, x, y in zip(("shape", "dtype", "requires_grad", "version"), a, b, strict=True):
            if x == y:
                continue
            if prop == "version" and not ctx.strict:
                excuse("user-code-version")
                continue
            out.append(
                ctx.diff(
                    NAME, "user_code", prop, name=name, index=k, expected=_json(x), actual=_json(y)
                )
            )
    return out


def _json(x: object) -> object:
    """A received fact as a difference keeps it (JSON data: a shape is a list)."""
    return list(x) if isinstance(x, tuple) else x


# Note [Which order is promised to user code]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Against eager, torch.compile keeps the order of what one Function class runs (its forward,
# then its setup_context, its backward after them) and a module's or grad_fn's pre-hook
# before its hook: the log projected on each such group must be eager's. The interleaving
# across groups and tensors follows the backward graph, which torch.compile changes (Note
# [Which hook order is promised] in _calls.py). The pythonified file runs the graphs and the
# replayed hooks of the compile it models: its whole log runs in the reference's order.
# Order is compared only where the counts agree (a missing or extra run is its own
# difference, and shifts every position after it).


def _order(ref: list[UserCall], got: list[UserCall], ctx: PairContext) -> list[Difference]:
    """Note [Which order is promised to user code]."""
    r_names, g_names = [c.callee for c in ref], [c.callee for c in got]
    if Counter(r_names) != Counter(g_names):
        return []
    if ctx.strict:
        groups = {EVERY_CALLEE: set(r_names)}
    else:
        groups = {
            f"{fn}.*": {n for n in r_names if function_of(n) == fn} for fn in _functions(r_names)
        }
        groups.update({name: set(pair) for name, pair in PROMISED_PAIRS.items()})
    out = []
    for name, members in groups.items():
        rs, gs = [n for n in r_names if n in members], [n for n in g_names if n in members]
        if rs != gs:
            out.append(ctx.diff(NAME, "user_code", "order", name=name, expected=rs, actual=gs))
    return out


def _functions(names: list[str]) -> list[str]:
    return list(dict.fromkeys(fn for n in names if (fn := function_of(n))))
