"""Role errors, said while a run goes on and counted at its end (docs/design.md §8, exit 3), and
damaged store files a broker found, said as warnings.

A role whose code raises is a bug in rmqemu, not RocketMQ behaviour: the node's runtime turns
the exception into a ``node.error`` line and a traceback in ``logs/<node>.log`` and goes on, but
what the node does from then on may be wrong (a producer's send may never complete). So the
launcher says it at once, one line per node's first error, reading the event files as the
timing watch does (only new bytes, only lines naming ``node.error``), and the run counts as
broken.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rmqemu.emulator.launcher.lagwatch import CHECK_EVERY_MS, TailReader
from rmqemu.emulator.roles.store.restore import said

ERROR, STORE = "node.error", "broker.store"


class ErrorWatch:
    """Reads ``node.error`` lines as they come, and ``broker.store`` lines (a broker found a
    damaged queue file: docs/design.md §6, "JSON-lines files"), which are said as warnings and
    do not break the run; :meth:`poll` returns the lines to print."""

    def __init__(self, run_dir: Path, mono: Callable[[], float] = lambda: time.monotonic() * 1000) -> None:
        self.run_dir = run_dir
        self.mono = mono
        self.readers: dict[Path, TailReader] = {}
        self.counts: dict[str, int] = {}
        self.last_check = float("-inf")

    def poll(self, force: bool = False) -> list[str]:
        """At most every :data:`CHECK_EVERY_MS` (``force``: now): a line for each node whose
        role raised for the first time since the last look."""
        now = self.mono()
        if not force and now - self.last_check < CHECK_EVERY_MS:
            return []
        self.last_check = now
        out = []
        for path in sorted((self.run_dir / "events").glob("*.jsonl")):
            reader = self.readers.setdefault(path, TailReader(path))
            for e in reader.lines(f'"{ERROR}"', f'"{STORE}"'):
                node = str(e.get("node"))
                if e.get("kind") == STORE:
                    problem = said(str(e.get("queue_file")), e.get("line"), str(e.get("reason")))
                    out.append(f"warning: {node}'s store: {problem} (docs/design.md §6)")
                if e.get("kind") != ERROR:
                    continue
                self.counts[node] = self.counts.get(node, 0) + 1
                if self.counts[node] == 1:
                    out.append(f"error: {node}'s role raised {e.get('error')}: a bug in rmqemu; the node goes on, "
                               f"but what it does from here may be wrong (traceback in "
                               f"{self.run_dir / 'logs' / (node + '.log')})")
        return out


def role_errors(run_dir: Path) -> dict[str, int]:
    """``node -> number of node.error lines`` in a finished run's event files."""
    watch = ErrorWatch(run_dir)
    watch.poll(force=True)
    return dict(watch.counts)
