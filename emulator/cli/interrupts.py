"""SIGINT and SIGTERM for ``rmqemu launch``: both stop the run gracefully, and the message
afterwards says what really happened (docs/design.md §8).

``timeout``, CI runners and process managers stop a process with SIGTERM, so it gets the same
treatment as Ctrl-C: the first signal raises :class:`KeyboardInterrupt` in the main thread, the
run heals its faults and stops its nodes (``run.stop``, a ``node.exit`` per node), and the
command exits 128 + the signal (130, 143). A second signal while that shutdown runs is only
acknowledged (the shutdown is bounded anyway); a third cuts it short.

Whatever was cut short, :func:`finish` then kills any node of the manifest still running as
recorded (pid and create_time checked) and writes its ``node.exit``, so the events stay complete
and the final message counts the nodes that stopped gracefully and those that were killed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Iterator

import psutil

from rmqemu import jsonlines
from rmqemu.emulator.cli.supervisor_record import attach
from rmqemu.emulator.launcher.run_dir import append_event
from rmqemu.emulator.node.clock import host_ms
from rmqemu.errors import UnsafeSignal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class Interrupt:
    """What stopped the run: the first signal's number and how many arrived."""

    signum: int = 0
    count: int = 0
    finishing: bool = False  # set while the caller cleans up after the interrupt: no more raising

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum or signal.SIGINT).name


@contextmanager
def stop_signals() -> Iterator[Interrupt]:
    """Within the block, SIGINT and SIGTERM raise KeyboardInterrupt once (see the module doc)."""
    seen = Interrupt()

    def handler(signum: int, _frame: FrameType | None) -> None:
        seen.count += 1
        if seen.finishing:
            return
        if seen.count == 1:
            seen.signum = signum
            raise KeyboardInterrupt
        if seen.count == 2:
            print(f"\n{signal.Signals(signum).name}: already stopping (healing faults, stopping nodes); "
                  "send it again to kill the nodes now", file=sys.stderr, flush=True)
            return
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield seen
    finally:
        if seen.count:
            # the command is exiting: a late signal must not kill it (exit -2 instead of 130).
            # Ignored, not handled: Python puts back the default action of a signal with a
            # Python handler while the interpreter shuts down, and a third Ctrl-C that comes
            # after a short shutdown lands there
            seen.finishing = True
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
        else:
            for sig, old in previous.items():
                signal.signal(sig, old)


def _exit_events(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every ``node.exit`` of each node, from its event file."""
    out: dict[str, list[dict[str, Any]]] = {}
    for f in (run_dir / "events").glob("*.jsonl"):
        for e in jsonlines.records(f, b'"node.exit"'):
            out.setdefault(f.stem, []).append(e)
    return out


def _kill(name: str, entry: dict[str, Any]) -> None:
    """SIGKILL the node if it still runs as recorded, and wait until it has exited."""
    proc = attach(name, entry)
    if proc is None:
        return
    try:
        proc.send(signal.SIGCONT)
        proc.send(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            proc.verify()
            time.sleep(0.02)
    except UnsafeSignal:  # gone (a zombie counts): what we wanted
        pass
    finally:
        proc.close()


def _reap(pid: int) -> dict[str, int]:
    """``{"code": n}`` / ``{"signal": n}`` of our exited child ``pid`` (a zombie keeps its pid, so
    this cannot reach another process); ``{"signal": 9}`` if it was not ours to reap."""
    try:
        for _ in range(200):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else \
                    {"code": os.WEXITSTATUS(status)}
            time.sleep(0.01)
    except ChildProcessError:  # reaped already, or not our child
        pass
    return {"signal": int(signal.SIGKILL)}


def finish(run_dir: Path) -> tuple[int, list[str]]:
    """After an interrupted run: kill every node still running as the manifest recorded it and
    write the ``node.exit`` of each node whose exit the cut-short shutdown did not record. Returns
    (nodes in the manifest, names of the nodes whose last exit is a SIGKILL)."""
    try:
        nodes = json.loads((run_dir / "manifest.json").read_text())["nodes"]
    except (OSError, ValueError, KeyError):
        return 0, []
    # Only this process's own run: nodes created after it started (``latest`` may name an older
    # run when the interrupt came before the cluster existed), and only its own children are touched.
    me = psutil.Process()
    born = me.create_time()
    nodes = {n: e for n, e in nodes.items() if e.get("pid") and float(e.get("create_time") or 0) >= born}
    children = {c.pid for c in me.children()}
    recorded = _exit_events(run_dir)
    for name, entry in nodes.items():
        if entry["pid"] not in children or any(e.get("pid") == entry["pid"] for e in recorded.get(name, [])):
            continue
        _kill(name, entry)
        event: dict[str, Any] = {"ts": host_ms(), "node": name, "kind": "node.exit", "role": entry["role"],
                                 "pid": entry["pid"], **_reap(int(entry["pid"]))}
        if entry.get("broker") is not None:  # a DLedger peer has no fixed broker_id: none is written
            event.update(broker=entry["broker"], **({"broker_id": entry["broker_id"]}
                                                    if entry.get("broker_id") is not None else {}))
        append_event(run_dir / "events" / f"{name}.jsonl", event)
    last = {n: evs[-1] for n, evs in _exit_events(run_dir).items() if evs}
    killed = sorted(n for n in nodes if last.get(n, {}).get("signal") == signal.SIGKILL)
    return len(nodes), killed
