"""by_design: dead-code-error. torch.compile removes statements whose results nothing uses
(Dynamo's and AOTAutograd's dead-code elimination), and with them the errors only running them
would raise; eager raises there. Where eager raised and torch.compile returned, the runner runs
eager on the program without its dead statements, and that run is torch.compile's reference
when it returns where torch.compile did (`dead_code_errors`).
"""

from __future__ import annotations

from dataclasses import replace

from generators import INPLACE, Program, ProgramSpec, Stmt, aten_class, materialize, pure_aten
from pyfy_fuzz.case.ground_truth import observe_eager
from pyfy_fuzz.schema.observation import CallObs, SubjectObs
from pyfy_fuzz.schema.spec import RANDOM_OPS, OutSpec

__all__ = ["FRESH_OPS", "PURE_OPS", "dead_code_errors", "dead_statements", "dead_writes"]


# Statements torch.compile may drop when nothing uses their results: functional aten ops, which
# Dynamo's and AOTAutograd's dead-code elimination remove. Random ops are kept (fallback_random,
# see runner._rng_config); in-place and metadata mutations, effects, hooks, grad-mode changes,
# custom Functions and BatchNorm (running stats) are never dead here.
PURE_OPS = frozenset(
    {
        *("sin", "cos", "tanh", "sigmoid", "relu", "neg", "abs", "mul2", "add1"),
        *("logical_not", "detach", "gram", "add", "sub", "mul", "maximum", "and", "or"),
        *("sum", "to", "view", "probe", "func"),
    }
)


def _refs(out: OutSpec) -> set[str]:
    if out.kind == "tuple":
        return set().union(*(_refs(o) for o in out.items)) if out.items else set()
    return {out.ref} if out.ref else set()


# Pure ops whose result is a new tensor, never a view of an argument ("view", "detach" and
# "to" may return one): writing into such a result in place touches nothing else.
FRESH_OPS = PURE_OPS - {"view", "detach", "to"}


def _fresh(stmt: Stmt) -> bool:
    """The statement makes a new tensor, never a view of another: a FRESH_OPS statement, an
    aten op of the functional or view-inverse class (`unfold_copy`, `slice_scatter`: issue
    36's run G's 7ed1), or a random op that draws a new tensor (dropout may return its
    input)."""
    return (
        stmt.op in FRESH_OPS
        or aten_class(stmt) in ("functional", "view_inverse")
        or stmt.op in RANDOM_OPS
        and stmt.op != "dropout"
    )


def _writes_into(stmt: Stmt, v: str) -> bool:
    """The statement writes into `v` in place and binds nothing: generators' INPLACE (v first),
    or an aten op of the inplace class (v its first tensor argument)."""
    if stmt.outs:
        return False
    if stmt.op in INPLACE:
        return stmt.args[:1] == (v,)
    return aten_class(stmt) == "inplace" and stmt.args[1:2] == (v,)


def dead_writes(spec: ProgramSpec) -> set[int]:
    """In-place writes into a value nothing else reads: made by a fresh statement (`_fresh`),
    no output, and every statement that names it writes into it in place (`_writes_into`).
    They are dead code as much as a pure statement is (the 1-hour campaign's
    compile-divergence.IndexError.ad598f021f8d: `v2 = a0.neg(); v2.index_put_(...)` with an
    index eager rejects, a write torch.compile removed with v2; issue 36's fifth run's
    7ed1713fac56: `v0 = a0.bernoulli(); torch.ops.aten.index_add_.default(v0, ...)`)."""
    outputs = set().union(*(_refs(o) for o in spec.outputs)) if spec.outputs else set()
    dead: set[int] = set()
    for stmt in spec.body:
        if not _fresh(stmt):
            continue
        for v in set(stmt.outs) - outputs:
            uses = [j for j, s in enumerate(spec.body) if v in s.args]
            writes = [j for j in uses if _writes_into(spec.body[j], v)]
            if uses and writes == uses:
                dead.update(writes)
    return dead


def dead_statements(spec: ProgramSpec) -> list[int]:
    """Indices of the body's statements whose results nothing uses: pure (PURE_OPS, or an aten
    op of a pure class: `generators.pure_aten`) and none
    of the values they bind reaches an output or a statement that is not itself dead, and the
    in-place writes into such values (`dead_writes`)."""
    live: set[str] = set().union(*(_refs(o) for o in spec.outputs)) if spec.outputs else set()
    writes = dead_writes(spec)
    dead = []
    for i in reversed(range(len(spec.body))):
        stmt = spec.body[i]
        pure = stmt.op in PURE_OPS or pure_aten(stmt)
        if i in writes or (pure and not live.intersection(stmt.outs)):
            dead.append(i)
            continue
        live.update(a for a in stmt.args if isinstance(a, str))
    return sorted(dead)


def _slots(obs: SubjectObs) -> list[CallObs | None]:
    return [*obs.calls, obs.variant, *obs.sequence]


def dead_code_errors(
    spec: ProgramSpec, device: str, eager: SubjectObs, compiled: SubjectObs
) -> tuple[Program, SubjectObs] | None:
    """by_design: dead-code-error. Where eager raised in a call and torch.compile returned,
    was the error raised by a statement whose result is dead? Eager runs the program without
    its dead statements: calls that then return raised in dead code. If torch.compile returned
    at every such call (it eliminated the dead code), that run -- the same program as far as
    anything observable goes -- is torch.compile's reference: (program, observation). A raising
    statement whose result is used still raises there, and stays a finding."""
    if compiled.setup_error is not None:
        return None
    pairs = list(zip(_slots(eager), _slots(compiled), strict=False))
    if not any(_raised_in_call(e) and c is not None and c.raised is None for e, c in pairs):
        return None
    dead = set(dead_statements(spec))
    if not dead:
        return None
    body = tuple(s for i, s in enumerate(spec.body) if i not in dead)
    program = materialize(replace(spec, body=body), device=device)
    live = observe_eager(program)
    dead_errors = 0
    for (e, c), lv in zip(pairs, _slots(live), strict=False):
        if not _raised_in_call(e) or _raised_in_call(lv):
            continue
        if c is not None and c.raised is not None:
            return None  # torch.compile kept this dead code: eager is its reference as it is
        dead_errors += 1
    return (program, live) if dead_errors else None


def _raised_in_call(call: CallObs | None) -> bool:
    return call is not None and call.raised is not None and call.raised.phase == "call"
