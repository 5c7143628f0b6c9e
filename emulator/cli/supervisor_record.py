"""Where an ``rmqemu up`` supervisor is recorded outside its run directory, and how a dead or
lost supervisor is cleaned up (docs/design.md §8, "A supervisor that died").

The run directory's ``supervisor.json`` says how to reach a live supervisor. Two things can go
wrong: the supervisor dies (SIGKILL, OOM) and leaves ``state: up`` behind, or the run directory is
deleted while the supervisor and its nodes still run. For the second case each supervisor also
writes a **record** outside the run: ``$XDG_RUNTIME_DIR/rmqemu/`` when that is set (the per-user
runtime directory, gone at logout like the processes), else ``<tmp>/rmqemu-<uid>/`` (mode 0700,
refused unless owned by this user). A record is one JSON file per run, keyed by the run
directory's resolved path, holding the supervisor's and the nodes' pid and create_time.

Nothing here signals a pid whose create_time differs from the record
(:class:`~emulator.launcher.signals.SpawnedProcess`): a reused pid is left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from rmqemu.emulator.launcher.run_dir import write_json
from rmqemu.emulator.launcher.signals import SpawnedProcess
from rmqemu.errors import RunDirError, UnsafeSignal


def record_dir() -> Path:
    """The per-user directory of supervisor records (created 0700; refused if not ours)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "rmqemu" if runtime and Path(runtime).is_dir() else \
        Path(tempfile.gettempdir()) / f"rmqemu-{os.getuid()}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise RunDirError(f"{base}: not a private directory of this user (mode {oct(st.st_mode & 0o777)}, "
                          f"owner {st.st_uid}); refusing to keep supervisor records there")
    return base


def record_path(run_dir: Path) -> Path:
    resolved = str(Path(os.path.abspath(run_dir)))
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    return record_dir() / f"{Path(resolved).name[:80]}-{digest}.json"


def write_record(run_dir: Path, nodes: dict[str, tuple[int, float]] | None = None) -> None:
    """Record this process (the supervisor) and its nodes for ``run_dir``."""
    me = psutil.Process()
    write_json(record_path(run_dir), {
        "run_dir": os.path.abspath(run_dir), "pid": me.pid, "create_time": me.create_time(),
        "nodes": {n: {"pid": p, "create_time": c} for n, (p, c) in (nodes or {}).items()},
    }, private=True)


def remove_record(run_dir: Path) -> None:
    try:
        record_path(run_dir).unlink()
    except (FileNotFoundError, RunDirError):
        pass


def find_records(run: Path | None, root: Path) -> list[dict[str, Any]]:
    """Records of ``run`` (its absolute path), or of every run directly under ``root``."""
    want = os.path.abspath(run) if run else None
    found = []
    for f in sorted(record_dir().glob("*.json")):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        path = str(rec.get("run_dir", ""))
        if not is_running(rec) and not any(is_running(n) for n in (rec.get("nodes") or {}).values()):
            f.unlink(missing_ok=True)  # a supervisor that died without removing it (SIGKILL): stale
            continue
        if (want and path == want) or (not want and os.path.dirname(path) == os.path.abspath(root)):
            found.append(rec)
    return found


def attach(name: str, entry: dict[str, Any]) -> SpawnedProcess | None:
    """The recorded process if it is still the one recorded (pid and create_time), else None."""
    try:
        return SpawnedProcess.from_manifest(name, int(entry["pid"]), float(entry["create_time"]))
    except (UnsafeSignal, KeyError, TypeError, ValueError):  # gone, zombie, pid reused, no create_time
        return None


def is_running(entry: dict[str, Any]) -> bool:
    """Whether the recorded process still runs. A record without create_time (written by an
    older rmqemu) is judged by its pid alone; such a process is never signalled."""
    if "create_time" not in entry:
        try:
            return psutil.Process(int(entry["pid"])).status() != psutil.STATUS_ZOMBIE
        except (psutil.Error, KeyError, TypeError, ValueError):
            return False
    proc = attach("supervisor", entry)
    if proc is None:
        return False
    proc.close()
    return True


def kill_leftovers(nodes: dict[str, dict[str, Any]]) -> list[str]:
    """SIGKILL every recorded node still running as recorded; their names."""
    killed = []
    for name, entry in nodes.items():
        proc = attach(name, entry)
        if proc is None:
            continue
        try:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                proc.send(sig)
            killed.append(name)
        except UnsafeSignal:
            pass
        finally:
            proc.close()
    return killed


def stop_supervisor(entry: dict[str, Any], timeout_s: float = 20.0) -> bool:
    """SIGTERM a recorded supervisor (it heals faults and stops its nodes, as on Ctrl-C), SIGKILL
    it if it is still there after ``timeout_s``. False when it was not running."""
    proc = attach("supervisor", entry)
    if proc is None:
        return False
    try:
        proc.send(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                proc.verify()
            except UnsafeSignal:
                return True
            time.sleep(0.05)
        proc.send(signal.SIGKILL)
    except UnsafeSignal:
        pass
    finally:
        proc.close()
    return True
