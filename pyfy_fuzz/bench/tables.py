"""`pyfy-fuzz bench`'s tables: the numbers run_bench measured, as text for the terminal and
BENCHMARKS.md. Rendering only; measuring is measure.py (with overhead.py and memory.py)."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from pyfy_fuzz.bench.measure import CLOCK, INDUCTOR_CACHE

__all__ = ["overhead_table", "render"]


def _fmt(v: Any, spec: str = "") -> str:
    return "-" if v is None else format(v, spec)


def overhead_table(o: dict[str, Any]) -> str:
    """(b) as a table: the means, the ratio, and run_case's own breakdown."""
    if o.get("ratio") is None:
        return f"no pythonifiable program among {o['drawn']}: no ratio"
    rows = [
        ["bare torch work", o["bare_ms"]],
        ["run_case", o["run_case_ms"]],
        ["ratio run_case / bare", f"{o['ratio']:.2f}x"],
        ["harness cost", o["harness_ms"]],
    ] + [[f"  run_case: {k}", v] for k, v in o["breakdown_ms"].items()]
    head = f"overhead ({o['backend']}, {o['cases']} of {o['drawn']} programs pythonifiable)"
    return head + "\n" + tabulate(rows, headers=["per case", "ms"], tablefmt="simple")


def render(r: dict[str, Any]) -> str:
    """Every table of a bench result, in the order they print: mix, throughput, validity,
    overhead, memory, targets, then the notes."""
    m = r["mix"]
    parts = [
        f"pyfy-fuzz bench: torch {r['torch']}, {r['machine']['cores']} cores "
        f"({r['machine']['cpu_model']}), {r['config']['workers']} workers, "
        f"seed {r['config']['seed']}",
        f"program mix: {m['programs']} programs ({len(m['families'])} families), mean "
        f"{m['mean_ops']} ops, {m['mean_inputs']} inputs",
    ]
    parts += _throughput_table(r.get("throughput", {}))
    parts += _validity_table(r.get("validity"))
    parts += ["", overhead_table(r["overhead"])]
    parts += _memory_table(r.get("rss"))
    parts += ["", _targets_table(r["targets"])]
    parts += [f"note: {n}" for n in r["notes"]]
    return "\n".join(parts) + "\n"


def _throughput_table(t: dict[str, Any]) -> list[str]:
    """(a): cases/min per family and overall, a column per backend."""
    if not t:
        return []
    backends = list(t)
    rows = [
        [f] + [_fmt(t[b]["per_family"].get(f, {}).get("cases_per_min"), ".0f") for b in backends]
        for f in sorted({f for b in backends for f in t[b]["per_family"]})
    ]
    rows.append(["all (wall clock)"] + [_fmt(t[b]["cases_per_min"], ".0f") for b in backends])
    rows.append(["cases / wall s"] + [f"{t[b]['cases']} / {t[b]['wall_s']}" for b in backends])
    parts = [
        "",
        f"cases/min: {CLOCK};",
        "per family: workers x 60 / mean case latency",
        tabulate(rows, headers=["family", *backends], tablefmt="simple"),
    ]
    if "inductor" in t:
        parts.append(f"inductor caches: {INDUCTOR_CACHE}")
    return parts


def _validity_table(validity: dict[str, Any] | None) -> list[str]:
    """Eager validity per family (issue 17)."""
    if not validity:
        return []
    rows = [
        [f, v["programs"], _fmt(v["valid_share"], ".0%"), v["unbuilt_calls"]]
        for f, v in validity.items()
    ]
    return [
        "",
        "eager validity: programs whose whole plan eager runs (issue 17: >= 85% a family)",
        tabulate(
            rows,
            headers=["family", "programs", "valid", "later calls not built"],
            tablefmt="simple",
        ),
    ]


def _memory_table(rss: dict[str, Any] | None) -> list[str]:
    """(c): the growth figures of a campaign's memory, and the campaign's own numbers."""
    if rss is None:
        return []
    c, recycled = rss["campaign"], rss["worker_rss_at_recycle_mib"]
    rows = [
        ["rss_growth (envelope, last / first window after warm-up - 1)", _fmt(rss["rss_growth"])],
        ["plain growth of total worker RSS", _fmt(rss["plain_growth"])],
        ["total worker RSS, first / last window (MiB)", _windows(rss["workers_rss_mib"])],
        ["peak worker RSS (MiB)", rss["worker_rss_peak_mib"]],
        ["worker RSS at recycle (MiB)", ", ".join(map(str, recycled)) or "none recycled"],
        ["worker growth within a life (median)", _fmt(rss["worker_life_growth"])],
        ["campaign process RSS, first / last window (MiB)", _windows(rss["campaign_rss_mib"])],
        ["fork server RSS, first / last window (MiB)", _windows(rss["fork_server_rss_mib"])],
        [
            "campaign: cases, cases/min, recycled",
            f"{c['cases']}, {c['cases_per_min']}, {c['recycled']}",
        ],
    ]
    return [
        "",
        f"memory over a {rss['budget_s']} s campaign (workers ran {rss['span_s']} s, "
        f"{rss['samples']} samples)",
        tabulate(rows, tablefmt="simple"),
    ]


def _targets_table(targets: dict[str, Any]) -> str:
    """Each target, its goal, what was measured, and whether it was measured as stated."""
    rows = [
        [
            k,
            v["target"],
            _fmt(v["value"]),
            {True: "yes", False: "NO", None: "-"}[v["met"]],
            ("" if v["as_stated"] else "not as stated: ") + v["stated_for"],
        ]
        for k, v in targets.items()
    ]
    headers = ["target", "goal", "measured", "met", "stated for"]
    return tabulate(rows, headers=headers, tablefmt="simple")


def _windows(w: dict[str, Any]) -> str:
    return f"{_fmt(w['first_window'])} / {_fmt(w['last_window'])}"
