"""The trend plot of reports/history.json: paths reached, branch coverage and findings by night.

    png = trend_png(History.load(Path("reports/history.json")).entries)

A PNG (matplotlib's Agg backend: no display needed), three panels sharing the night axis, so
a regression shows as a step: fewer paths reached after a generator change, branch coverage
falling after a torch bump, a burst of findings. Entries that lack a number (a night without
coverage, an older entry) leave a gap in that panel instead of a fake zero.
"""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

__all__ = [
    "trend_png",
]


def _night(entry: dict[str, Any], index: int) -> str:
    when = entry.get("finished_at")
    if isinstance(when, str) and len(when) >= 10:
        try:
            return dt.datetime.fromisoformat(when.replace("Z", "+00:00")).strftime("%m-%d %H:%M")
        except ValueError:
            pass
    return f"#{index + 1}"


def _series(entries: list[dict[str, Any]], key: str) -> list[float | None]:
    out: list[float | None] = []
    for e in entries:
        v = e.get(key)
        out.append(float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None)
    return out


def trend_png(entries: list[dict[str, Any]], *, width_in: float = 9.0) -> bytes:
    """The plot as PNG bytes; `entries` in the order they were appended (oldest first)."""
    if not entries:
        raise ValueError("no history entries to plot")
    from matplotlib.figure import Figure  # not pyplot: no global state, no backend switch

    labels = [_night(e, i) for i, e in enumerate(entries)]
    xs = list(range(len(entries)))
    fig = Figure(figsize=(width_in, 6.4), dpi=100, layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    panels = [
        (
            "wrapper paths",
            [("paths_reached", "reached", "-o"), ("paths_total", "catalogue", "--x")],
        ),
        (
            "coverage %",
            [("branch_percent", "branches", "-o"), ("coverage_percent", "overall", ":s")],
        ),
        ("new findings", [("new_findings", "new", "-o")]),
    ]
    for ax, (title, lines) in zip(axes, panels, strict=True):
        for key, label, style in lines:
            ys = _series(entries, key)
            if all(y is None for y in ys):
                continue
            nan = float("nan")  # a missing number breaks the line: no invented values
            if key == "new_findings":
                ax.bar(xs, [nan if y is None else y for y in ys], width=0.6, label=label)
            else:
                ax.plot(xs, [nan if y is None else y for y in ys], style, label=label, ms=4)
        ax.set_ylabel(title)
        ax.grid(True, alpha=0.3)
        ax.margins(y=0.2)
        if len(lines) > 1 and ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize="small")
    axes[0].set_title(f"pyfy-fuzz nightly trend ({len(entries)} night(s))")
    axes[2].set_xlim(-0.7, max(len(xs), 7) - 0.3)  # a first night sits left, not full width
    axes[0].set_ylim(bottom=0)  # reached against the whole catalogue
    axes[2].set_ylim(bottom=0)
    axes[2].yaxis.get_major_locator().set_params(integer=True)
    step = max(1, len(xs) // 12)  # at most ~12 tick labels
    axes[2].set_xticks(xs[::step], labels[::step], rotation=30, ha="right", fontsize="small")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
