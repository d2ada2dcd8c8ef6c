"""Time budgets as people write them (``90s``, ``10m``, ``1h``, ``1h30m``, ``2h5m10s``), and
a running campaign's `Deadline`.

A bare number means seconds. The parser is strict (units in decreasing order, each at most
once, no spaces) so that a typo such as ``1m30h`` is an error rather than a surprise.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

__all__ = [
    "FINISH_S",
    "Deadline",
    "format_duration",
    "parse_budget",
]

FINISH_S = 3.0  # the end of the grace kept for the books (Note [Ending on time] in campaign.py)


@dataclass
class Deadline:
    """When a running campaign stops exploring, and when what it started must be gone (Note
    [Ending on time] in campaign.py). One object, shared by the campaign's parts: the threads
    beside the workers (reductions, repro checks) read it as the campaign moves it."""

    at: float  # time.monotonic() when workers stop exploring; stop_on_subject brings it forward
    grace_s: float  # seconds past `at` the whole run may take to end

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def until(self) -> float:
        """When workers and repro checks must be gone: the end of the grace, less FINISH_S."""
        return self.at + self.grace_s - FINISH_S

    def left(self) -> float:
        """Seconds until `until()`, never negative."""
        return max(0.0, self.until() - time.monotonic())


_UNITS = {"h": 3600, "m": 60, "s": 1}
_BUDGET = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def parse_budget(text: str) -> float:
    """Seconds in `text`; raises ValueError with a message fit for a command line."""
    t = text.strip().lower()
    if t.isdigit():
        seconds = int(t)
    else:
        m = _BUDGET.fullmatch(t)
        if not t or m is None or not any(m.groups()):
            raise ValueError(
                f"budget {text!r} is not a duration: use e.g. 90s, 10m, 1h, 1h30m "
                "(hours, minutes, seconds in that order)"
            )
        seconds = sum(int(v) * _UNITS[u] for v, u in zip(m.groups(), "hms", strict=True) if v)
    if seconds <= 0:
        raise ValueError(f"budget {text!r} must be longer than 0 s")
    return float(seconds)


def format_duration(seconds: float) -> str:
    """The inverse, for display: 5400 -> '1h30m', 75 -> '1m15s', 9.4 -> '9s'."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{sec}s" if sec or not (h or m) else ""]
    return "".join(parts)
