"""The files of a run directory (docs/design.md §1): which event logs a report reads, and their
sizes. Listed, never opened: the tasks that parse them open them (:mod:`reports.engine`)."""
from __future__ import annotations

import os
from pathlib import Path

from rmqemu.errors import RunInputError


def _local(run_dir: str) -> str:
    return run_dir[len("file://"):] if run_dir.startswith("file://") else run_dir


def event_files(run_dir: str) -> list[tuple[str, int]]:
    """``(path, bytes)`` of a run's JSONL files: ``events/*.jsonl`` sorted by name, then
    ``faults.jsonl`` if present. A local run dir (a path or ``file://``) is listed with the OS,
    any other URI with pyarrow's filesystems (the path is then a URI too). Raises
    :class:`RunInputError` naming the file or directory when there is none or one cannot be read."""
    if "://" in run_dir and not run_dir.startswith("file://"):
        return _remote_files(run_dir)
    root = _local(run_dir)
    events_dir = os.path.join(root, "events")
    names = sorted(n for n in (os.listdir(events_dir) if os.path.isdir(events_dir) else []) if n.endswith(".jsonl"))
    if not names:
        raise RunInputError(f"{events_dir}: no *.jsonl event files")
    files = [os.path.join(events_dir, n) for n in names]
    faults = os.path.join(root, "faults.jsonl")
    if os.path.lexists(faults):
        files.append(faults)
    out = []
    for path in files:  # a task's error for an unreadable file would be a page of traceback
        if not os.path.isfile(path):
            raise RunInputError(f"{path}: cannot read (not a file)")
        if not os.access(path, os.R_OK):
            raise RunInputError(f"{path}: cannot read (permission denied)")
        out.append((path, os.path.getsize(path)))
    return out


def _remote_files(run_dir: str) -> list[tuple[str, int]]:
    from pyarrow import fs

    base = run_dir.rstrip("/")
    try:
        filesystem, inner = fs.FileSystem.from_uri(base)
        found = filesystem.get_file_info(fs.FileSelector(inner + "/events", allow_not_found=True))
        faults = filesystem.get_file_info(inner + "/faults.jsonl")
    except (OSError, ValueError) as exc:
        raise RunInputError(f"{base}: cannot list ({exc})") from None
    events = sorted((f for f in found if f.type == fs.FileType.File and f.base_name.endswith(".jsonl")),
                    key=lambda f: f.base_name)
    if not events:
        raise RunInputError(f"{base}/events: no *.jsonl event files")
    out = [(f"{base}/events/{f.base_name}", f.size) for f in events]
    if faults.type == fs.FileType.File:
        out.append((f"{base}/faults.jsonl", faults.size))
    return out


def default_out(run_dir: str) -> Path:
    """Where a run's report goes by default: ``RUN_DIR/report`` for a local run dir; a remote one
    needs ``--out``."""
    if "://" in run_dir and not run_dir.startswith("file://"):
        raise RunInputError(f"{run_dir}: a remote run dir needs --out DIR (a local directory for the report)")
    return Path(_local(run_dir)) / "report"


def event_paths(run_dir: str) -> list[str]:
    """The paths of :func:`event_files`."""
    return [path for path, _ in event_files(run_dir)]
