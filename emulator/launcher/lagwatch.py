"""The launcher's live timing-health check (docs/design.md §9): warn while the run is going wrong.

Nodes write ``node.lag`` summaries to their own event files; this reads those files incrementally
(only the bytes added since the last look, and only lines naming ``node.lag`` are parsed), so the
control plane stays untouched and a slow host is not asked to do more work to report that it is
slow. Windows overlapping a pause of the node (``faults.jsonl``; an open pause counts to infinity)
are skipped: a SIGSTOPped node is late because of the fault, not the host; so are windows that
began before the cluster was up (``since_ms``): spawning dozens of Python processes loads a small
host by itself (a 56-node cluster at 0.05, healthy once up, had consumers 0.7 s late while the
others were still being spawned).

It prints one line when a node's lateness (:func:`rmqemu.timing.run_lateness`: its second-worst
window, so the transient of a process start alone does not warn) first exceeds the threshold of
:mod:`rmqemu.timing`,
and another only if the worst lateness at least doubles since, so an overloaded host gets a
couple of lines, not one per second.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rmqemu import jsonlines, timing

CHECK_EVERY_MS = 1000.0  # node.lag comes at most once per wall second per node


class TailReader:
    """New complete lines of a growing file (a torn last line waits for its newline)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def lines(self, *needles: str) -> list[dict[str, Any]]:
        """The new complete lines that hold one of ``needles``, parsed (only those are)."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        end = jsonlines.complete_length(data)
        self.offset += end
        return jsonlines.parse(data[:end], *(n.encode() for n in needles)).records


class LagWatch:
    """Reads ``node.lag`` lines as they come; :meth:`poll` returns a warning line or None."""

    def __init__(self, run_dir: Path, scale: float, configs: Iterable[Mapping[str, Any]],
                 stopped: Callable[[], set[str]] = set, mono: Callable[[], float] = lambda: time.monotonic() * 1000,
                 since_ms: float = float("-inf")) -> None:
        self.run_dir = run_dir
        self.scale = scale
        self.shortest_ms = timing.shortest_period_ms(configs)
        self.threshold_ms = timing.threshold_ms(scale, self.shortest_ms)
        self.stopped = stopped
        self.since_ms = since_ms  # host wall ms the cluster was up: windows before it are spawning
        self.mono = mono
        self.readers: dict[Path, TailReader] = {}
        self.faults = TailReader(run_dir / "faults.jsonl")
        self.pauses: dict[str, list[tuple[float, float]]] = {}
        self.last_check = float("-inf")
        self.warned_ms = 0.0
        self.windows: dict[str, list[float]] = {}  # node -> p99 of each window outside its pauses
        self.worst: tuple[float, str] = (0.0, "")

    def poll(self) -> str | None:
        """Check at most every :data:`CHECK_EVERY_MS`; a warning line when one is due."""
        now = self.mono()
        if now - self.last_check < CHECK_EVERY_MS:
            return None
        self.last_check = now
        self._read_pauses()
        for path in sorted((self.run_dir / "events").glob("*.jsonl")):
            reader = self.readers.setdefault(path, TailReader(path))
            for e in reader.lines('"node.lag"'):
                if e.get("kind") == "node.lag":
                    self._consider(e)
        lateness, node = self.worst
        if lateness <= self.threshold_ms or lateness < 2 * self.warned_ms:
            return None
        self.warned_ms = lateness
        return self.message(node, lateness)

    def message(self, node: str, lateness_ms: float) -> str:
        scale = timing.suggested_scale(self.scale, lateness_ms, self.threshold_ms)
        return (f"warning: the host is falling behind: {node}'s timers ran {lateness_ms:.1f} wall ms late (p99 of its "
                f"second-worst window; healthy is below {self.threshold_ms:.2f} ms, "
                f"5 % of the {self.shortest_ms / 1000:g} s "
                f"period at scale {self.scale:g}), so this run measures the host, not RocketMQ; "
                f"timing.scale {scale:g} keeps up even at this lateness (an upper bound: an overloaded host "
                f"falls less behind at a larger scale, so a smaller step may do)")

    def _consider(self, e: dict[str, Any]) -> None:
        node, ts = str(e.get("node")), float(e.get("ts", 0.0))
        start = ts - float(e.get("window_ms", 0.0))
        if start < self.since_ms or node in self.stopped() or in_pause(e, self.pauses.get(node, [])):
            return
        windows = self.windows.setdefault(node, [])
        windows.append(float(e.get("p99_ms", 0.0)))
        lateness = timing.run_lateness(windows) or 0.0
        if lateness > self.worst[0]:
            self.worst = (lateness, node)

    def _read_pauses(self) -> None:
        add_pauses(self.pauses, self.faults.lines('"fault.'))


def add_pauses(spans: dict[str, list[tuple[float, float]]], fault_lines: Iterable[Mapping[str, Any]]) -> None:
    """Pause intervals per node from ``faults.jsonl`` lines, in order: a pause's ``fault.start``
    opens one (to infinity while open), its ``fault.end`` or a ``resume`` fault closes it (as in the
    report's ``reports.core.truth.pauses``)."""
    for e in fault_lines:
        kind, fault = e.get("kind"), e.get("fault")
        for node in e.get("targets") or []:
            mine = spans.setdefault(node, [])
            if fault == "pause" and kind == "fault.start":
                mine.append((float(e["ts"]), float("inf")))
            elif ((fault == "pause" and kind == "fault.end") or (fault == "resume" and kind == "fault.start")) \
                    and mine and mine[-1][1] == float("inf"):
                mine[-1] = (mine[-1][0], float(e["ts"]))


def in_pause(lag: Mapping[str, Any], spans: Iterable[tuple[float, float]]) -> bool:
    """Whether a ``node.lag`` window ``[ts - window_ms, ts]`` overlaps one of its node's pauses."""
    ts = float(lag.get("ts", 0.0))
    start = ts - float(lag.get("window_ms", 0.0))
    return any(s < ts and start < end for s, end in spans)
