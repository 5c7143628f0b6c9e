"""Timer lateness accounting: how far behind its schedule a node's loop runs (docs/design.md §9).

A compressed run is only faithful while every node fires its timers close to when they are due:
at scale 0.01 the namesrv's 10 s scan is 100 wall ms, and a host that makes timers run tens of ms
late is measuring itself, not RocketMQ. The runtime knows each timer's due time and when it ran;
this module turns those pairs into one ``node.lag`` summary per window (its length:
:func:`rmqemu.timing.window_ms`, shared with the report), so the cost is one sorted list per
window and one event line per wall second, never a line per firing.

Pure accounting on the monotonic clock the runtime hands in (host ms), so tests drive it with a
fake clock. A SIGSTOPped node (a pause fault) shows a huge lateness on resume: that is recorded
as is, and the readers (the launcher's live check, the report) drop windows that overlap a pause
of the node (the window is ``[ts - window_ms, ts]`` in host wall ms).
"""

from __future__ import annotations

import math
from typing import Any


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of a non-empty sorted list: a value that occurred."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class LagMeter:
    """Lateness samples (wall ms) of one window; :meth:`due` closes the window once it is long
    enough and returns the ``node.lag`` fields (None while the window runs or had no firings:
    a node whose timers did not fire has nothing to say about lateness)."""

    def __init__(self, window_ms: float, now_ms: float) -> None:
        self.window_ms = window_ms
        self.window_start = now_ms
        self.samples: list[float] = []

    def record(self, due_ms: float, ran_ms: float) -> None:
        """A timer due at ``due_ms`` ran at ``ran_ms`` (both monotonic host ms)."""
        self.samples.append(max(0.0, ran_ms - due_ms))

    def due(self, now_ms: float) -> dict[str, Any] | None:
        """The window's summary if it has lasted ``window_ms``, else None."""
        if now_ms - self.window_start < self.window_ms:
            return None
        return self.flush(now_ms)

    def flush(self, now_ms: float) -> dict[str, Any] | None:
        """Close the window now, whatever its length (the node is stopping)."""
        samples, elapsed = sorted(self.samples), now_ms - self.window_start
        self.samples, self.window_start = [], now_ms
        if not samples:
            return None
        return {"window_ms": round(elapsed, 3), "timers": len(samples),
                "p50_ms": round(percentile(samples, 0.50), 3), "p99_ms": round(percentile(samples, 0.99), 3),
                "max_ms": round(samples[-1], 3)}
