"""What a campaign shows while it runs: a live rich panel on a terminal, log lines otherwise.

Both read the campaign's `Stats` (duck-typed here to keep this module free of the campaign).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol

from pyfy_fuzz.campaign.budget import format_duration

__all__ = [
    "Progress",
    "make_progress",
    "status_line",
]


class Progress(Protocol):
    def start(self) -> None: ...
    def update(self) -> None: ...
    def stop(self) -> None: ...


def make_progress(mode: str, stats: Any, stream: Any = None) -> Progress:
    """mode: auto (rich on a terminal, else plain), rich, plain, quiet."""
    stream = stream or sys.stdout
    if mode == "auto":
        mode = "rich" if stream.isatty() else "plain"
    if mode == "rich":
        return _Rich(stats, stream)
    if mode == "plain":
        return _Plain(stats, stream)
    return _Quiet()


def status_line(stats: Any) -> str:
    kinds = stats.new_by_kind()
    new = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
    return (
        f"[{format_duration(stats.elapsed)} / {format_duration(stats.budget_s)}] "
        f"cases {stats.cases} ({stats.per_min:.0f}/min, {stats.shrink_cases} shrinking) | "
        f"new findings {len(stats.new)}: {new} | known seen {sum(stats.known_seen.values())} | "
        f"wrapper paths {len(stats.wrapper_hits)}"
        + (f" | worker deaths {sum(stats.deaths.values())}" if stats.deaths else "")
    )


class _Quiet:
    def start(self) -> None:
        pass

    def update(self) -> None:
        pass

    def stop(self) -> None:
        pass


class _Plain:
    """One line every `every` seconds: readable in CI logs and `tee`d files."""

    def __init__(self, stats: Any, stream: Any, every: float = 15.0) -> None:
        self.stats, self.stream, self.every = stats, stream, every
        self.last = 0.0

    def start(self) -> None:
        self.last = time.monotonic()

    def update(self) -> None:
        if time.monotonic() - self.last >= self.every:
            self.last = time.monotonic()
            print(status_line(self.stats), file=self.stream, flush=True)

    def stop(self) -> None:
        print(status_line(self.stats), file=self.stream, flush=True)


class _Rich:
    def __init__(self, stats: Any, stream: Any) -> None:
        from rich.console import Console
        from rich.live import Live

        self.stats = stats
        self.console = Console(file=stream)
        self.live = Live(console=self.console, refresh_per_second=2, transient=False)
        self.last = 0.0

    def start(self) -> None:
        self.live.start()
        self.live.update(self._render())

    def update(self) -> None:
        if time.monotonic() - self.last >= 0.5:
            self.last = time.monotonic()
            self.live.update(self._render())

    def stop(self) -> None:
        self.live.update(self._render())
        self.live.stop()

    def _render(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        st = self.stats
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        frac = min(1.0, st.elapsed / max(st.budget_s, 1e-9))
        t.add_row(
            "elapsed",
            f"{format_duration(st.elapsed)} / {format_duration(st.budget_s)}",
        )
        t.add_row("", ProgressBar(total=1.0, completed=frac, width=40))
        t.add_row("cases", f"{st.cases}  ({st.per_min:.0f}/min, {st.shrink_cases} shrinking)")
        kinds = st.new_by_kind()
        t.add_row(
            "new findings",
            ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())) or "none",
        )
        t.add_row("known seen", str(sum(st.known_seen.values())))
        top = ", ".join(f"{p} {n}" for p, n in st.wrapper_hits.most_common(6))
        t.add_row("wrapper paths", f"{len(st.wrapper_hits)} reached" + (f": {top}" if top else ""))
        if st.deaths:
            t.add_row("worker deaths", ", ".join(f"{k} {n}" for k, n in st.deaths.items()))
        return t
