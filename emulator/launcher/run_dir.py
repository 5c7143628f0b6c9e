"""The layout of a run directory (docs/design.md §1) and its manifest.

    runs/<run-id>/
      manifest.json            topology as resolved, seed, scale, versions, node -> pid/addr/create_time
      specs/<node>.json        what each node process reads at start (no secret: its control key goes to its stdin)
      events/<node>.jsonl      one JSON object per line, flushed per line
      faults.jsonl             fault.start / fault.end, and run.stop when the shutdown begins
      plan.json                the fault plan, written before it starts
      store/<node>/            a broker's store (config/topics.json, commit log)
      logs/<node>.log          a node's stdout/stderr (tracebacks land here)
      supervisor.json          for `rmqemu up`: the supervisor's endpoint and token (mode 0600)
      report/                  what `rmqemu report` writes
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets
from pathlib import Path
from typing import Any

from rmqemu import jsonlines
from rmqemu.errors import RunDirError
from rmqemu.events import check_line

DEFAULT_ROOT = Path("runs")
LATEST = "latest"


def new_run_dir(name: str, root: Path = DEFAULT_ROOT) -> Path:
    """Create ``<root>/<name>-<UTC time>-<4 hex>`` and point ``<root>/latest`` at it.

    ``name`` is a topology's name, checked as a slug by the schema; the resolved directory is
    checked again to be directly inside ``root`` (a name must never place a run elsewhere)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    run = root / f"{name}-{stamp}-{secrets.token_hex(2)}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if run.resolve().parent != root.resolve():
            raise RunDirError(f"{name!r}: a run name must be a plain name, the run would not be directly in {root}")
        for sub in ("specs", "events", "store", "logs"):
            (run / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"{run}: cannot create the run directory ({exc.strerror or exc})") from None
    (run / "faults.jsonl").touch()
    link = root / LATEST
    try:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(run.name)
    except OSError:  # a read-only or odd filesystem: --run must then be given explicitly
        pass
    return run


def prepare_run_dir(run: Path) -> Path:
    """Use an explicit directory (tests give ``tmp_path``). It must not hold a run already (a
    ``manifest.json`` or event logs): two runs in one directory would mix their events. The
    empty skeleton of :func:`new_run_dir` and a supervisor's log are fine."""
    if (run / "manifest.json").exists() or any((run / "events").glob("*.jsonl")):
        raise RunDirError(f"{run}: already holds a run (manifest.json or events/); use a new directory")
    try:
        for sub in ("specs", "events", "store", "logs"):
            (run / sub).mkdir(parents=True, exist_ok=True)
        (run / "faults.jsonl").touch()
    except OSError as exc:
        raise RunDirError(f"{run}: cannot create the run directory ({exc.strerror or exc})") from None
    return run


def resolve_run(run: str | Path | None, root: Path = DEFAULT_ROOT) -> Path:
    """``--run DIR`` or, by default, the latest run under ``root``."""
    path = Path(run) if run else root / LATEST
    if not (path / "manifest.json").is_file():
        hint = "" if run else f" (no run under {root}/; start one with `rmqemu up FILE` or pass --run DIR)"
        raise RunDirError(f"{path}: not a run directory, manifest.json is missing{hint}")
    return path.resolve()


def write_json(path: Path, data: Any, private: bool = False) -> None:
    """Write JSON atomically (tmp + rename) so a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        if private:
            os.chmod(tmp, 0o600)
        json.dump(data, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise RunDirError(f"{path}: missing") from None
    except ValueError as exc:
        raise RunDirError(f"{path}: not valid JSON ({exc})") from None


def last_event_ms(path: Path, tail_bytes: int = 65536) -> float | None:
    """The latest ``ts`` among the last lines of a node's event file (None: no readable line).
    A killed node may still write for a moment after the signal was sent; its ``node.exit``
    must not come before its own last line (docs/design.md §7)."""
    try:
        with open(path, "rb") as f:
            start = f.seek(max(0, f.seek(0, os.SEEK_END) - tail_bytes))
            data = f.read()
    except OSError:
        return None
    if start:  # the first line is cut when the seek was not to 0
        data = data[data.find(b"\n") + 1:]
    found = [float(ts) for e in jsonlines.parse(data).records
             if isinstance(ts := e.get("ts"), (int, float)) and not isinstance(ts, bool)]
    return max(found, default=None)


def append_event(path: Path, event: dict[str, Any]) -> None:
    """Append one event line for a node that cannot write it itself (``node.exit`` of a dead node),
    or a launcher/injector line of ``faults.jsonl``; refused (``ValueError``) unless its kind and
    fields are registered (:mod:`rmqemu.events`)."""
    check_line(event)
    start = "" if jsonlines.ends_a_line(path) else "\n"  # after a dead node's torn line: a line of its own
    with open(path, "a") as f:
        f.write(start + json.dumps(event, default=str) + "\n")
        f.flush()
