"""seq_nr: the forward-to-backward node mapping (seeds/004).

1. The pythonified file's SEQ_NR and GRADIENT_ACC_NODES tables equal the seq_nr metadata of the
   graphs torch.compile handed to its backend (pythonify-divergence if not).
2. torch's graphs keep the invariants of seeds/004 (compile-divergence if not): every backward
   node carries a seq_nr, and names a forward node -- one in the forward graph or a forward node
   the partitioner recomputes in the backward graph -- except gradient-accumulation nodes, which
   must be marked `is_gradient_acc`.
3. Against eager's autograd graph: sorted by sequence number, eager's backward nodes name the
   forward ops in the order they ran (SinBackward0, MulBackward0); the compiled backward's
   seq_nr groups, sorted and mapped to their forward nodes, must name the same ops in the same
   order -- under aot_eager (inductor decomposes first), whenever both have as many and
   eager's are plain aten nodes (extra wrapper nodes,
   CopySlices or custom Functions make the comparison meaningless; then only 1 and 2 apply).
"""

from __future__ import annotations

import re
from typing import Any

from pyfy_fuzz.schema.difference import CallRef, Difference

from ._base import finding
from .evidence import Evidence
from .finding import Finding

__all__ = [
    "ATTRIBUTABLE",
    "NAME",
    "POSITION",
    "check",
    "file_vs_compile",
    "invariants",
    "order_vs_eager",
    "unmapped_class",
]

NAME = "seq_nr"
# Where check_all runs it (Note [The oracle registry] in oracles/__init__.py).
POSITION = 7
# False: it judges the file on its own terms (its tables against torch's graphs), never
# by comparing it with eager (Note [Whose bug] in __init__).
ATTRIBUTABLE = False


def _table(nodes: tuple[Any, ...]) -> dict[str, int]:
    return {n.name: n.seq_nr for n in nodes if n.seq_nr is not None}


def _diff(subject: str, prop: str, note: str, kind_detail: str = "", **kw: Any) -> Difference:
    """A seq_nr difference: `prop` is the mapping kind it breaks, `note` the nodes in words."""
    return Difference(
        NAME, subject, CallRef("plan", 0), "seq_nr", prop, kind_detail=kind_detail, note=note, **kw
    )


def file_vs_compile(ev: Evidence) -> list[Difference]:
    if ev.file_seq_nr is None or ev.fx_meta is None:
        return []
    diffs = []
    torch_graphs = set(ev.fx_meta)
    file_graphs = set(ev.file_seq_nr)
    if torch_graphs != file_graphs:
        note = f"graphs with seq_nr: torch {sorted(torch_graphs)} vs file {sorted(file_graphs)}"
        diffs.append(
            _diff(
                "pythonify",
                "graphs",
                note,
                expected=sorted(torch_graphs),
                actual=sorted(file_graphs),
            )
        )
    for g in sorted(torch_graphs & file_graphs):
        want, have = _table(ev.fx_meta[g]), ev.file_seq_nr[g]
        wrong = [n for n in want if have.get(n) != want[n]] + [n for n in have if n not in want]
        if wrong:
            n = wrong[0]
            note = (
                f"{g} graph: node {n} has seq_nr {have.get(n)} in the file, "
                f"{want.get(n)} in torch's graph"
                + (f" ({len(wrong)} nodes differ)" if len(wrong) > 1 else "")
            )
            diffs.append(
                _diff("pythonify", "file_seq_nr", note, expected=want.get(n), actual=have.get(n))
            )
        acc_want = sorted(x.name for x in ev.fx_meta[g] if x.is_gradient_acc)
        acc_have = sorted((ev.file_grad_acc or {}).get(g, []))
        if acc_want != acc_have:
            note = (
                f"{g} graph: gradient-accumulation nodes {acc_have} in the file, "
                f"{acc_want} in torch's"
            )
            diffs.append(
                _diff("pythonify", "file_grad_acc", note, expected=acc_want, actual=acc_have)
            )
    return diffs


def invariants(fx_meta: dict[str, tuple[Any, ...]]) -> list[Difference]:
    fw, bw = fx_meta.get("forward"), fx_meta.get("backward")
    if fw is None or bw is None:
        return []
    forward_seq = {n.seq_nr for n in fw if n.seq_nr is not None}
    forward_seq |= {n.seq_nr for n in bw if not n.autograd_backward and n.seq_nr is not None}
    diffs = []
    for n in fw:
        # Note [Backward work in the forward graph]: the min-cut partitioner may compute a
        # gradient that needs no tangent in the forward and save it (torch's Note
        # [tangents_closure vs required_bw_nodes] in partitioners.py); such a node is backward
        # work (tagged autograd_backward), and its accumulation rightly says so. A forward op
        # of the user's marked as an accumulation is the broken mapping.
        if n.is_gradient_acc and not n.autograd_backward:
            note = f"forward node {n.name} ({n.target}) is marked as gradient accumulation"
            diffs.append(_diff("torch.compile", "forward_grad_acc", note))
    unmapped = []
    for n in bw:
        if n.is_gradient_acc or not n.autograd_backward:
            continue
        if n.seq_nr is None or n.seq_nr < 0:
            note = f"backward node {n.name} ({n.target}) has no seq_nr ({n.seq_nr})"
            diffs.append(_diff("torch.compile", "no_seq_nr", note))
        elif n.seq_nr not in forward_seq:
            unmapped.append(n)
    if unmapped:
        seqs = sorted({n.seq_nr for n in unmapped})
        names = ", ".join(f"{n.name} ({n.target})" for n in unmapped[:4])
        in_fn = sum(n.custom_function for n in unmapped)
        note = (
            f"{len(unmapped)} backward nodes name no forward node: {names}"
            f"{', ...' if len(unmapped) > 4 else ''}; seq_nr {seqs} is in neither the forward "
            "graph nor the recomputed nodes, and they are not marked is_gradient_acc"
            + (f"; {in_fn} of them traced from {_IN_FUNCTION}" if in_fn else "")
        )
        targets = [str(n.target) for n in unmapped[:4]]
        kind = unmapped_class(targets, bool(in_fn))
        diffs.append(_diff("torch.compile", "unmapped", note, kind, actual=len(unmapped)))
    return diffs


_EAGER_NAME = re.compile(r"^([A-Z][A-Za-z0-9]*?)Backward\d+$")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _op_name(target: str) -> str:
    """aten._to_copy.default -> tocopy; with_effects -> witheffects."""
    parts = target.split(".")
    return _norm(parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[0])


def order_vs_eager(ev: Evidence) -> list[Difference]:
    """Sorted by seq_nr, eager's backward nodes name the forward ops in the order they ran;
    the compiled backward's seq_nr groups, mapped to their forward nodes, must name the same
    ops in the same order. Compared only when eager's nodes are all plain aten backward nodes
    (no CopySlices, no custom Function) and both sides have as many.
    Long: the preconditions (which nodes count, when both sides are comparable) are part of
    the rule and read best next to the comparison they guard.
    """
    eager_order = ev.eager.extra.get("autograd_order")
    meta = ev.fx_meta or {}
    fw, bw = meta.get("forward"), meta.get("backward")
    if not eager_order or fw is None or bw is None or ev.backend != "aot_eager":
        return []  # inductor decomposes before partitioning: one eager node, many aten ops
    names = []
    for node_name, seq in sorted(eager_order, key=lambda x: x[1]):
        m = _EAGER_NAME.match(node_name)
        if m is None:
            return []
        names.append((_norm(m.group(1)), node_name, seq))
    forward_ops: dict[int, set[str]] = {}
    for n in [*fw, *(n for n in bw if not n.autograd_backward)]:
        if n.seq_nr is not None:
            forward_ops.setdefault(n.seq_nr, set()).add(_op_name(n.target))
    groups = sorted(
        {
            n.seq_nr
            for n in bw
            if n.autograd_backward and not n.is_gradient_acc and n.seq_nr is not None
        }
    )
    if len(groups) != len(names) or any(g not in forward_ops for g in groups):
        return []
    eager_ops = {op for op, _, _ in names}

    def ran_in_eager(op: str) -> bool:
        return any(e in op or op in e for e in eager_ops)

    def names_group(eager_op: str, ops: set[str]) -> bool:
        return any(eager_op in op or op in eager_op for op in ops)

    # The order is judged only where the groups and eager's nodes correspond one to one by op
    # (each eager node names some group and each named group some eager node): a group of
    # recomputed forward ops, or an eager node for a view regenerated outside the graph, breaks
    # the correspondence and a positional comparison would report a false order (the 10-minute
    # campaign's seq_nr.6490641d1872, .d745e88ba6a3, .f8db92195b17).
    named = [forward_ops[g] for g in groups if any(ran_in_eager(op) for op in forward_ops[g])]
    if not all(any(names_group(e, ops) for ops in named) for e, _, _ in names) or not all(
        any(names_group(e, ops) for e, _, _ in names) for ops in named
    ):
        return []
    for k, (g, (eager_op, node_name, _)) in enumerate(zip(groups, names, strict=True)):
        ops = forward_ops[g]
        if not any(ran_in_eager(op) for op in ops):
            # Only ops the partitioner derived for backward carry this seq_nr (e.g. the cos
            # that sin_'s backward needs, computed in the forward): nothing to name the group
            # by, so its place in the order cannot be judged.
            continue
        if not any(eager_op in op or op in eager_op for op in ops):
            note = (
                f"by seq_nr, backward group {k} of the compiled graph maps to forward "
                f"{sorted(ops)}; eager's {k}-th backward node is {node_name} "
                f"(eager order: {[n for _, n, _ in names]})"
            )
            return [_diff("torch.compile", "order", note, expected=node_name, actual=sorted(ops))]
    return []


# Ops whose unmapped backward nodes come from view replay (regenerated views, synthetic
# bases, copy_slices) rather than from the function's own compute: a different cause.
_VIEW_OPS = re.compile(
    r"\b(aten\.)?(slice|select|view|as_strided|expand|transpose|t|permute|unsqueeze|squeeze|"
    r"diagonal|alias|_unsafe_view|unfold|narrow|split|chunk|new_empty_strided|\w+_scatter|"
    r"\w+_backward|\w+_copy)\b"
)
_IN_FUNCTION = "a custom autograd.Function's backward"


def unmapped_class(targets: list[str], in_function: bool) -> str:
    """Which kind of op the backward nodes that name no forward node are (UNMAPPED_CLASSES in
    schema/difference.py): the program's node names are not the bug, but the kind of node
    that lost its forward node tells causes apart. Whatever the nodes compute (effect tokens
    of a print, views, math), a custom Function's backward runs its body before its node
    exists: one cause."""
    if in_function:
        return "custom autograd.Function backward"
    if any("with_effects" in t or "token" in t for t in targets):
        return "effect tokens"
    if any(_VIEW_OPS.fullmatch(t.rsplit(".", 1)[0] if t.count(".") > 1 else t) for t in targets):
        return "view replay"
    return "compute"


def check(ev: Evidence) -> list[Finding]:
    out: list[Finding] = []
    if ev.fx_meta is None:  # e.g. --pythonify torch: no view of torch's graphs to compare with
        return out
    if ev.compiled.setup_error is None:
        diffs = invariants(ev.fx_meta) + order_vs_eager(ev)
        if diffs:
            out.append(finding(ev, NAME, "torch.compile", diffs))
    if ev.pythonified is not None and ev.pythonified.setup_error is None:
        diffs = file_vs_compile(ev)
        if diffs:
            out.append(finding(ev, NAME, "pythonify", diffs))
    return out
