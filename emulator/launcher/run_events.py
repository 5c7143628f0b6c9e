"""Reading a run's event files back (``events/<node>.jsonl`` and ``faults.jsonl``).

For code that looks at a run from outside its nodes: ``emulator.Cluster``'s ``events()``, the
pytest plugin (which re-exports :func:`read_events`), tests and benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from rmqemu import jsonlines


def read_events(run_dir: Path, kind: str | None = None, node: str | None = None,
                where: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """All events of a run (``faults.jsonl`` included), ordered by ``ts``; a torn last line and bad lines are skipped
    (:mod:`rmqemu.jsonlines`)."""
    files = sorted((run_dir / "events").glob("*.jsonl")) + [run_dir / "faults.jsonl"]
    out = []
    for f in files:
        if not f.exists() or (node is not None and f.stem != node and f.name != "faults.jsonl"):
            continue
        for ev in jsonlines.records(f):
            if (kind is None or ev.get("kind") == kind) and (node is None or ev.get("node") == node) \
                    and (where is None or where(ev)):
                out.append(ev)
    return sorted(out, key=lambda e: e.get("ts", 0.0))
