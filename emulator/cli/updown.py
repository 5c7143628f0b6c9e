"""``rmqemu status`` and ``rmqemu down``, including when the supervisor is dead or the run
directory is gone (docs/design.md §8, "A supervisor that died").

- Supervisor alive: ``status`` asks it; ``down`` asks it to stop and waits until it has.
- Supervisor dead (``supervisor.json`` says up, but its pid/create_time is gone): the state is
  corrected to ``dead`` at once, no RPC timeout is waited for. ``down`` kills whatever node of the
  manifest is still running as recorded (normally none: nodes die with their parent) and exits 0;
  ``status`` says so and exits 1.
- Run directory gone: ``down`` finds the supervisor by its record outside the run
  (:mod:`emulator.cli.supervisor_record`), SIGTERMs it (it stops its nodes as on Ctrl-C), then
  SIGKILLs what is left; every signal checks pid and create_time first.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from rmqemu.emulator.cli.supervisor import call, read_state
from rmqemu.emulator.cli.supervisor_record import (
    find_records,
    is_running,
    kill_leftovers,
    remove_record,
    stop_supervisor,
)
from rmqemu.emulator.launcher.run_dir import DEFAULT_ROOT, read_json, resolve_run
from rmqemu.emulator.launcher.topology_load import parse_topology
from rmqemu.errors import RmqemuError, RunDirError

DOWN_TIMEOUT_S = 60.0  # wall s for the nodes' own stops, on top of the drain's bound


def stop_wait_s(path: Path) -> float:
    """How long ``down`` waits for the supervisor: its shutdown drains the consumers for up to
    ``timing.drainTimeout`` cluster seconds before the nodes' own stops, so a long drain at a
    large scale is waited for rather than cut short by SIGTERM."""
    try:
        manifest = read_json(path / "manifest.json")
        timing = parse_topology(manifest["topology"], str(path / "manifest.json")).timing
        return DOWN_TIMEOUT_S + timing.drainTimeout * float(manifest.get("scale") or timing.scale)
    except (OSError, KeyError, ValueError, TypeError, RmqemuError):  # no readable manifest: the plain bound
        return DOWN_TIMEOUT_S


def _manifest_nodes(path: Path) -> dict[str, dict[str, Any]]:
    try:
        return {n: v for n, v in read_json(path / "manifest.json").get("nodes", {}).items() if v.get("pid")}
    except RunDirError:
        return {}


def status(run: Path | None, echo: Callable[[str], None], root: Path = DEFAULT_ROOT) -> None:
    path = resolve_run(run, root)
    state = read_state(path)
    if state.get("state") == "dead":
        left = [n for n, e in _manifest_nodes(path).items() if is_running(e)]
        still = f"{len(left)} node(s) still running: {', '.join(left)}; " if left else "no node is running; "
        raise RmqemuError(f"{path}: the cluster is dead: {state.get('error')} ({still}`rmqemu down` clears it)")
    res = call(path, "status")
    echo(res["run"])
    if res.get("namesrv_addr"):  # remoting: on
        echo(f"namesrvAddr={res['namesrv_addr']}")
    if res.get("endpoints"):  # proxies: the gRPC endpoints of RocketMQ 5 clients
        echo(f"endpoints={res['endpoints']}")
    clients = res.get("remoting_clients") or {}
    for name, n in res["nodes"].items():
        node_state = "up" if n["alive"] else f"exited {n.get('code', n.get('signal', '?'))}"
        line = f"  {name:<16} {n['role']:<9} {node_state:<10} pid {n['pid']}  {n['addr'] or ''}"
        if n.get("remoting_addr"):
            line += f"  remoting {n['remoting_addr']}{client_list(clients, name)}"
        if n.get("grpc_addr"):
            line += f"  grpc {n['grpc_addr']}"
        echo(line)
    if errors := res.get("role_errors"):
        nodes = ", ".join(f"{node} ({count})" for node, count in sorted(errors.items()))
        echo(f"role errors, a bug in rmqemu: {nodes}; tracebacks in {Path(res['run']) / 'logs'}")


def client_list(clients: dict[str, list[str] | None], node: str) -> str:
    """``  clients: client@123, client@456`` (the real clients connected to a node's remoting
    port); nothing when none is, or the node was not asked (paused, exited)."""
    if node not in clients:
        return ""
    names = clients[node]
    if names is None:
        return "  clients: ? (the node did not answer)"
    return f"  clients: {', '.join(names)}" if names else ""


def down(run: Path | None, echo: Callable[[str], None], root: Path = DEFAULT_ROOT) -> None:
    try:
        path = resolve_run(run, root)
    except RunDirError:  # the run directory is gone: is its supervisor still recorded?
        records = [r for r in find_records(run, root) if not (Path(r["run_dir"]) / "manifest.json").exists()]
        if not records:  # (a run whose directory still exists is stopped through that directory)
            raise
        for rec in records:
            stopped = stop_supervisor(rec)
            killed = kill_leftovers(rec.get("nodes") or {})
            remove_record(Path(rec["run_dir"]))
            echo(f"down: {rec['run_dir']} (run directory missing; supervisor pid {rec['pid']} "
                 f"{'stopped' if stopped else 'was not running'}"
                 f"{f', {len(killed)} node(s) killed' if killed else ''})")
        return
    state = read_state(path)
    if state.get("state") == "up":
        call(path, "down")
        deadline = time.monotonic() + stop_wait_s(path)
        while time.monotonic() < deadline:
            state = read_state(path)
            if state.get("state") != "up":
                break
            time.sleep(0.05)
        else:
            stop_supervisor(state)  # did not stop in time: SIGTERM, then SIGKILL (pid checked)
    killed = kill_leftovers(_manifest_nodes(path))
    remove_record(path)
    how = {"down": "", "dead": f" (cleaned up after a dead supervisor: {state.get('error')})"}.get(
        str(state.get("state")), f" (it was {state.get('state')})")
    echo(f"down: {path}{how}{f'; {len(killed)} leftover node(s) killed' if killed else ''}")

