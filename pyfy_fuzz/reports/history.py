"""reports/history.json: one entry per nightly run, for trends across nights.

    {"format": 1, "entries": [{"format": 1, "finished_at", "summary", "cases", "new_findings",
                               "paths_reached", "paths_total", "coverage_percent",
                               "branch_percent", "torch", "device",
                               "torch_coverage", "steering"}]}

`torch_coverage` (runs with --coverage): torch's branches reached by cases, in all and per
file ({short name: [reached, total]}), and the files no case reached (reports/coverage_data.py);
`steering`: the summary's steering counts (Note [Steering] in campaign/steering.py).

Written atomically. A history that is not JSON, or not this shape, is an error the caller
reports (never overwritten: it holds nights of results); an entry of another format is skipped
with a warning, never fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyfy_fuzz.reports.coverage_data import short_name
from pyfy_fuzz.schema.atomic import atomic_write
from pyfy_fuzz.schema.paths import ALL_PATHS

__all__ = [
    "FORMAT",
    "History",
    "HistoryError",
    "entry_for",
]

FORMAT = 1


class HistoryError(Exception):
    """history.json exists but cannot be read as a history."""


@dataclass
class History:
    path: Path
    entries: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # entries of other formats
    warnings: list[str] = field(default_factory=list)

    @staticmethod
    def load(path: Path) -> History:
        h = History(Path(path))
        if not h.path.exists():
            return h
        try:
            data = json.loads(h.path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise HistoryError(f"history {path} is unreadable ({e}); fix or move it") from None
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            raise HistoryError(f"history {path} is not a pyfy-fuzz history (no 'entries' list)")
        for i, entry in enumerate(data["entries"]):
            if isinstance(entry, dict) and entry.get("format") == FORMAT:
                h.entries.append(entry)
            else:
                fmt = entry.get("format") if isinstance(entry, dict) else type(entry).__name__
                h.skipped.append(entry)
                h.warnings.append(f"history entry {i} has format {fmt!r}; skipped")
        return h

    def append(self, entry: dict[str, Any]) -> None:
        """Add `entry` and write the file atomically; skipped entries are kept as they were."""
        self.entries.append({"format": FORMAT, **entry})
        data = {"format": FORMAT, "entries": [*self.skipped, *self.entries]}
        atomic_write(self.path, json.dumps(data, indent=1) + "\n")


def entry_for(summary: dict[str, Any], summary_path: Path) -> dict[str, Any]:
    """The numbers a trend needs from one run's --json summary."""
    cov = summary.get("coverage") or {}
    return {
        "finished_at": summary.get("finished_at"),
        "summary": str(summary_path),
        "cases": summary["cases"],
        "new_findings": len(summary["findings"]),
        "paths_reached": len(summary["wrapper_hits"]),
        "paths_total": len(set(ALL_PATHS) | set(summary["wrapper_hits"])),
        "coverage_percent": cov.get("percent"),
        "branch_percent": cov.get("branch_percent"),
        "torch": summary.get("torch"),
        "device": (summary.get("config") or {}).get("device"),
        "torch_coverage": _torch_coverage(cov),
        "steering": summary.get("steering"),
    }


def _torch_coverage(cov: dict[str, Any]) -> dict[str, Any] | None:
    """torch's branches reached by cases, per file by short name, and the never-reached."""
    t = cov.get("torch")
    if not t:
        return None
    return {
        "branches_reached": t["branches_reached"],
        "branches_total": t["branches_total"],
        "branch_percent": t["branch_percent"],
        "never_reached": [short_name(n) for n in t["never_reached"]],
        "files": {
            short_name(n): [v["branches_reached"], v["branches_total"]]
            for n, v in (cov.get("files") or {}).items()
            if v.get("torch") and "branches_total" in v
        },
    }
