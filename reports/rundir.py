"""The files of a run directory (docs/design.md §1): which event logs a report reads."""
from __future__ import annotations

import os

from rmqemu.errors import RunInputError


def event_paths(run_dir: str) -> list[str]:
    """The JSONL files of a local run: ``events/*.jsonl`` then ``faults.jsonl`` if present.
    Raises :class:`RunInputError` naming the file when there is none or one cannot be read."""
    root = run_dir[len("file://"):] if run_dir.startswith("file://") else run_dir
    events_dir = os.path.join(root, "events")
    files = sorted(
        os.path.join(events_dir, name)
        for name in (os.listdir(events_dir) if os.path.isdir(events_dir) else [])
        if name.endswith(".jsonl")
    )
    if not files:
        raise RunInputError(f"{events_dir}: no *.jsonl event files")
    faults = os.path.join(root, "faults.jsonl")
    if os.path.exists(faults):
        files.append(faults)
    for path in files:  # Spark's own error for an unreadable file is a page of JVM trace
        try:
            with open(path, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            raise RunInputError(f"{path}: cannot read ({exc.strerror})") from None
    return files
