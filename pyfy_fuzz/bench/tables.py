"""`pyfy-fuzz bench`'s tables: the numbers run_bench measured, as text for the terminal and
BENCHMARKS.md. Rendering only; measuring is bench.py."""

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
    """Long: the tables in the order they print (mix, throughput, overhead, memory, targets), as
    flat lists of rows."""
    m, t = r["mix"], r.get("throughput", {})
    parts = [
        f"pyfy-fuzz bench: torch {r['torch']}, {r['machine']['cores']} cores "
        f"({r['machine']['cpu_model']}), {r['config']['workers']} workers, "
        f"seed {r['config']['seed']}",
        f"program mix: {m['programs']} programs ({len(m['families'])} families), mean "
        f"{m['mean_ops']} ops, {m['mean_inputs']} inputs",
    ]
    if t:
        backends = list(t)
        rows = [
            [f]
            + [_fmt(t[b]["per_family"].get(f, {}).get("cases_per_min"), ".0f") for b in backends]
            for f in sorted({f for b in backends for f in t[b]["per_family"]})
        ]
        rows.append(["all (wall clock)"] + [_fmt(t[b]["cases_per_min"], ".0f") for b in backends])
        rows.append(["cases / wall s"] + [f"{t[b]['cases']} / {t[b]['wall_s']}" for b in backends])
        parts += [
            "",
            f"cases/min: {CLOCK};",
            "per family: workers x 60 / mean case latency",
            tabulate(rows, headers=["family", *backends], tablefmt="simple"),
        ]
        if "inductor" in t:
            parts.append(f"inductor caches: {INDUCTOR_CACHE}")
    if r.get("validity"):
        rows = [
            [f, v["programs"], _fmt(v["valid_share"], ".0%"), v["unbuilt_calls"]]
            for f, v in r["validity"].items()
        ]
        parts += [
            "",
            "eager validity: programs whose whole plan eager runs (issue 17: >= 85% a family)",
            tabulate(
                rows,
                headers=["family", "programs", "valid", "later calls not built"],
                tablefmt="simple",
            ),
        ]
    parts += ["", overhead_table(r["overhead"])]
    rss = r.get("rss")
    if rss is not None:
        c, recycled = rss["campaign"], rss["worker_rss_at_recycle_mib"]
        rows = [
            [
                "rss_growth (envelope, last / first window after warm-up - 1)",
                _fmt(rss["rss_growth"]),
            ],
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
        parts += [
            "",
            f"memory over a {rss['budget_s']} s campaign (workers ran {rss['span_s']} s, "
            f"{rss['samples']} samples)",
            tabulate(rows, tablefmt="simple"),
        ]
    rows = [
        [
            k,
            v["target"],
            _fmt(v["value"]),
            {True: "yes", False: "NO", None: "-"}[v["met"]],
            ("" if v["as_stated"] else "not as stated: ") + v["stated_for"],
        ]
        for k, v in r["targets"].items()
    ]
    headers = ["target", "goal", "measured", "met", "stated for"]
    parts += ["", tabulate(rows, headers=headers, tablefmt="simple")]
    parts += [f"note: {n}" for n in r["notes"]]
    return "\n".join(parts) + "\n"


def _windows(w: dict[str, Any]) -> str:
    return f"{_fmt(w['first_window'])} / {_fmt(w['last_window'])}"
