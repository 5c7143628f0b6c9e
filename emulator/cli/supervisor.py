"""``rmqemu up``: a detached supervisor process that keeps a cluster running between commands.

``up`` starts ``python -m rmqemu.emulator.cli.supervisor TOPOLOGY RUN_DIR`` in its own session and waits for
``supervisor.json`` to say ``up`` (or ``failed``). The supervisor owns the :class:`Launcher` (its
nodes die with it) and answers the CLI's ``status``, ``down`` and fault verbs over a token-checked
RPC socket. ``down`` stops the nodes gracefully and ends the supervisor.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import psutil

from rmqemu.emulator.cli.interrupts import finish as finish_interrupted
from rmqemu.emulator.cli.interrupts import stop_signals
from rmqemu.emulator.cli.supervisor_record import is_running, remove_record, write_record
from rmqemu.emulator.launcher.addresses import namesrv_addr, remoting_clients
from rmqemu.emulator.launcher.errorwatch import ErrorWatch
from rmqemu.emulator.launcher.launcher import Launcher
from rmqemu.emulator.launcher.run_dir import read_json, write_json
from rmqemu.emulator.launcher.topology_load import load_topology
from rmqemu.emulator.launcher.topology_proxy import endpoints as proxy_endpoints
from rmqemu.emulator.transport.control import SupervisorServer, supervisor_call
from rmqemu.errors import ControlError, LaunchError, RmqemuError
from rmqemu.faults.supervisor_verbs import register_verbs

STATE_FILE = "supervisor.json"
CALL_TIMEOUT_MS = 30_000.0


def node_status(cluster: Launcher) -> dict[str, Any]:
    out = {}
    for name, plan in cluster.plans.items():
        proc = cluster.procs.get(name)
        out[name] = {"role": plan.role, "addr": cluster.addrs.get(name),
                     "pid": proc.pid if proc else None,
                     "alive": bool(proc and proc.alive()), **(proc.exit_info() if proc else {})}
        if name in cluster.remoting_addrs:
            out[name]["remoting_addr"] = cluster.remoting_addrs[name]
        if name in cluster.grpc_addrs:
            out[name]["grpc_addr"] = cluster.grpc_addrs[name]
    return out


def cluster_status(cluster: Launcher, errors: ErrorWatch) -> dict[str, Any]:
    """``status``: the nodes, the role errors so far (``node -> count``: a bug in rmqemu), and
    with remoting on the namesrvAddr line and each node's real clients."""
    errors.poll(force=True)  # only the bytes written since the last status
    res = {"run": str(cluster.run_dir), "nodes": node_status(cluster), "died": cluster.died,
           "role_errors": dict(errors.counts)}
    if cluster.remoting_addrs:
        res.update(namesrv_addr=namesrv_addr(cluster), remoting_clients=remoting_clients(cluster))
    if cluster.grpc_addrs:
        res["endpoints"] = proxy_endpoints(cluster)
    return res


class Supervisor:
    """The serving loop; commands are plain functions of (cluster, args) -> result dict."""

    def __init__(self, cluster: Launcher) -> None:
        self.cluster = cluster
        self.running = True
        self.errors = ErrorWatch(cluster.run_dir)
        self.commands: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "status": lambda _a: cluster_status(cluster, self.errors),
            "down": self._down,
            "state": lambda a: cluster.state(a["node"]),
        }
        self.hooks = register_verbs(self.commands, cluster)  # the fault verbs, their tick/close

    def _down(self, _args: dict[str, Any]) -> dict[str, Any]:
        self.running = False
        return {"stopping": str(self.cluster.run_dir)}

    def close(self) -> None:
        """Heal every fault before the cluster stops (no node left paused or cut off)."""
        self.hooks.close()

    def serve(self, server: SupervisorServer) -> None:
        while self.running:
            self.cluster.pump(20)
            self.hooks.tick()  # timed fault ends (pause --duration, kill --restart-after)
            for reply_id, name, args in server.poll(20):
                handler = self.commands.get(name)
                try:
                    if handler is None:
                        raise ControlError(f"unknown command {name!r}; known: {', '.join(sorted(self.commands))}")
                    server.reply(reply_id, True, handler(args))
                except Exception as exc:  # noqa: BLE001 - a bad command must not take the cluster down
                    server.reply(reply_id, False, {"error": str(exc)})


def main(argv: list[str]) -> int:
    topo_path, run_dir = Path(argv[0]), Path(argv[1])
    state_path = run_dir / STATE_FILE
    token = secrets.token_hex(16)
    me = {"pid": os.getpid(), "create_time": psutil.Process().create_time()}
    try:
        write_record(run_dir)  # before any node exists: `down` can find us even if the run dir goes
        topo = load_topology(topo_path)
        server = SupervisorServer(token)
        with stop_signals() as interrupt:  # SIGTERM/SIGINT: heal, stop the nodes (a second one is only noted)
            try:
                with Launcher(topo, run_dir=run_dir, log=lambda m: print(m, flush=True)) as cluster:
                    sup = Supervisor(cluster)
                    write_record(run_dir, {n: (p.pid, p.create_time) for n, p in cluster.procs.items()})
                    write_json(state_path, {"state": "up", **me, "endpoint": server.endpoint, "token": token},
                               private=True)
                    try:
                        sup.serve(server)  # `down` ends it: the shutdown drains the consumers
                    except KeyboardInterrupt:
                        cluster.drain_at_stop = False  # a signal: stop at once, no drain
                    finally:
                        sup.close()
            except KeyboardInterrupt:  # a third signal cut the shutdown short: record what it missed
                interrupt.finishing = True
                finish_interrupted(run_dir)
        server.close()
        if (run_dir / "events").is_dir():  # not deleted under us (see Launcher.run_dir_deleted)
            write_json(state_path, {"state": "down", **me}, private=True)
        return 0
    except BaseException as exc:  # noqa: BLE001 - whatever failed, tell `up` why, then exit 1
        try:
            write_json(state_path, {"state": "failed", **me, "error": str(exc),
                                    "traceback": traceback.format_exc()}, private=True)
        except OSError:  # the run directory was deleted under us
            pass
        return 1
    finally:
        remove_record(run_dir)


def start_detached(topo_path: Path, run_dir: Path, timeout_s: float = 60.0) -> dict[str, Any]:
    """Start the supervisor in its own session and wait until it is up (or failed)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log = open(run_dir / "supervisor.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "rmqemu.emulator.cli.supervisor", str(topo_path), str(run_dir)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    log.close()
    deadline = time.monotonic() + timeout_s
    state_path = run_dir / STATE_FILE
    while time.monotonic() < deadline:
        if state_path.exists():
            state = read_json(state_path)
            if state["state"] == "up":
                return state
            if state["state"] == "failed":
                raise LaunchError(f"cluster did not come up: {state['error']}")
            if state["state"] == "down":  # stopped by a signal while it started
                raise LaunchError("the supervisor was stopped before the cluster was up; "
                                  f"see {run_dir / 'supervisor.log'}")
        if proc.poll() is not None and not state_path.exists():
            raise LaunchError(f"supervisor exited with {proc.returncode}; see {run_dir / 'supervisor.log'}")
        time.sleep(0.05)
    proc.kill()
    raise LaunchError(f"cluster not up after {timeout_s:.0f}s; see {run_dir / 'supervisor.log'}")


def call(run_dir: Path, name: str, args: dict[str, Any] | None = None,
         timeout_ms: float = CALL_TIMEOUT_MS) -> dict[str, Any]:
    """Send one command to the supervisor of ``run_dir``; a dead supervisor is noticed at once
    (pid and create_time), marked ``dead`` and reported, instead of waiting for the RPC timeout."""
    state = read_state(run_dir)
    if state.get("state") != "up":
        raise RmqemuError(f"{run_dir}: the cluster is {state.get('state')}, not up")
    return supervisor_call(state["endpoint"], state["token"], name, args or {}, timeout_ms)


def read_state(run_dir: Path) -> dict[str, Any]:
    """``supervisor.json``, with a dead supervisor's ``up`` corrected to ``dead`` (and saved)."""
    state_path = run_dir / STATE_FILE
    if not state_path.exists():
        raise RmqemuError(f"{run_dir}: no supervisor (this run was not started with `rmqemu up`)")
    state = read_json(state_path)
    if state.get("state") == "up" and not is_running(state):
        state = {**{k: v for k, v in state.items() if k not in ("endpoint", "token")}, "state": "dead",
                 "error": f"supervisor pid {state.get('pid')} is gone"}
        write_json(state_path, state, private=True)
    return state


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
