"""A run's metrics.json document kept beside its logs, so a finished run is analysed once.

``<run>/analysis.json`` holds the document with what it was computed from: the analysis code's
version (:data:`VERSION`, a digest of the modules that define the metrics) and the run's files
(name, size and modification time of its manifest and event logs). :func:`load` gives it back
only while both are unchanged; a re-run of a finished sweep then only aggregates
(docs/design.md §9, "Sweeps").
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rmqemu import events, timing
from rmqemu.errors import RunInputError
from rmqemu.reports.rundir import event_paths

FILE = "analysis.json"

_HERE = Path(__file__).resolve().parent
#: The modules whose code decides a metrics document: the core (its reader included), the
#: document's assembly (``metrics.py`` and its sections' ``metrics_*.py``), timing health's rules
#: and the conversion of older runs' lines. Found by their modules, so an installed copy
#: (rmqemu/reports/ beside rmqemu/timing.py) finds them too.
_SOURCES = sorted([*(_HERE / "core").glob("*.py"), *_HERE.glob("metrics*.py"), _HERE / "results.py",
                   Path(timing.__file__), Path(events.__file__)])


def _version() -> str:
    digest = hashlib.sha256()
    for path in _SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


#: The analysis code's version: a document computed by other code is computed again.
VERSION = _version()


def _files(run_dir: str) -> list[list[Any]]:
    paths = [os.path.join(run_dir, "manifest.json"), *event_paths(run_dir)]
    return [[os.path.relpath(p, run_dir), st.st_size, st.st_mtime_ns] for p in paths for st in [os.stat(p)]]


def load(run_dir: str) -> dict[str, Any] | None:
    """The stored document of a local run, or None when there is none, it is unreadable, or
    the code or the run's files changed since it was stored."""
    path = Path(run_dir) / FILE
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        files = _files(run_dir)
    except (OSError, ValueError, RunInputError):
        return None
    if not isinstance(kept, dict) or kept.get("version") != VERSION or kept.get("files") != files:
        return None
    doc = kept.get("metrics")
    return doc if isinstance(doc, dict) else None


def save(run_dir: str, doc: dict[str, Any]) -> bool:
    """Keep ``doc`` as the run's analysis (atomically: a reader never sees half a file); False
    when it cannot be kept (not a local run directory with its logs, or not writable)."""
    path = Path(run_dir) / FILE
    tmp = path.with_name(FILE + ".tmp")
    try:
        tmp.write_text(json.dumps({"version": VERSION, "files": _files(run_dir), "metrics": doc}), encoding="utf-8")
        os.replace(tmp, path)
    except (OSError, RunInputError):
        return False
    return True
