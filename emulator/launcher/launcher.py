"""The launcher of a run: it spawns the node processes of a topology, supervises them and
shuts them down. :class:`Launcher` is what ``rmqemu launch``, ``rmqemu up`` and
:class:`emulator.Cluster` (the user's handle) run a cluster with. It owns the control plane's
server side; the fault injector drives it through ``faults.ops.ClusterOps``. Start order follows
RocketMQ practice: namesrvs (brokers need their addresses), brokers, admin-created topics, the
proxies, then clients; the shutdown (:mod:`emulator.launcher.shutdown`) runs backwards, with the consumers'
drain between the producers and the consumers (docs/design.md §6).
"""

from __future__ import annotations

import secrets
import signal as _signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from rmqemu.emulator.launcher import dledger as _dledger
from rmqemu.emulator.launcher import manifest as _manifest
from rmqemu.emulator.launcher import startup as _startup
from rmqemu.emulator.launcher import topology_proxy as _proxies
from rmqemu.emulator.launcher.addresses import check_free_ports, namesrv_addr, note_ready, remoting_clients
from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.emulator.launcher.overload import overloaded
from rmqemu.emulator.launcher.processes import NodeProcess, spawn_node
from rmqemu.emulator.launcher.run_dir import append_event, last_event_ms, new_run_dir, prepare_run_dir
from rmqemu.emulator.launcher.shutdown import shut_down
from rmqemu.emulator.launcher.topology import Topology
from rmqemu.emulator.launcher.topology_load import NodePlan, plan_nodes
from rmqemu.emulator.node.clock import ClockSetting, host_ms
from rmqemu.emulator.node.links import LinkRule, rules_to_wire
from rmqemu.emulator.transport.control import ControlServer, NodeGone, NodeReady
from rmqemu.errors import ClusterError, ControlError, ControlTimeout, FaultError, LaunchError, UnsafeSignal

READY_TIMEOUT_S = 30.0
ACK_TIMEOUT_MS = 5000.0  # a control command (link table, clock) not acked by then failed


class Launcher:
    """Spawn, supervise and shut down the processes of one run of a topology."""

    def __init__(self, topo: Topology, run_dir: Path | None = None, root: Path = Path("runs"),
                 log: Callable[[str], None] | None = None) -> None:
        self.topo = topo
        self.run_dir = prepare_run_dir(run_dir) if run_dir else new_run_dir(topo.name, root)
        self.run_dir = self.run_dir.resolve()
        self.scale = topo.timing.scale
        self.plans: dict[str, NodePlan] = {p.name: p for p in plan_nodes(topo)}
        self.token = secrets.token_hex(16)
        self.control = ControlServer(self.token)
        self.control.on_refused = lambda fields: self.record(
            {"node": "launcher", "kind": "control.refused", **fields})
        self.procs: dict[str, NodeProcess] = {}
        self.addrs: dict[str, str] = {}
        self.ports: dict[str, int] = {}
        self.remoting_addrs: dict[str, str] = {}  # real clients' ports (remoting: on); a restart rebinds them
        self.grpc_addrs: dict[str, str] = {}  # proxies' gRPC ports for RocketMQ 5 clients; a restart rebinds them
        self.links: dict[tuple[str, str], LinkRule] = {}
        self.clocks: dict[str, ClockSetting] = {}
        self.stopped: set[str] = set()  # SIGSTOPped nodes: they cannot ack control commands
        self.died: list[str] = []
        self.started_ms = 0.0
        self.log = log or (lambda _msg: None)
        self.drain_at_stop = True  # `with` ends a run that ended normally with the drain (docs/design.md §6)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "Launcher":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop(drain=self.drain_at_stop and exc_type is None)

    def start(self) -> None:
        check_free_ports(self.topo.name, self.topo.remoting)
        self.started_ms = host_ms()
        _manifest.write(self)
        order = [("namesrv",), ("broker",), ("proxy",), ("producer", "consumer")]
        for roles in order:  # proxies ready before the clients: a RocketMQ 5 client calls one at once
            group = [n for n, p in self.plans.items() if p.role in roles]
            if "proxy" in roles:
                self.wait_registered()
                _startup.create_topics(self)
            if group or "producer" in roles:
                self.spawn(group)
        _manifest.write(self)
        self.record({"node": "launcher", "kind": "run.start"})  # the measured run begins: every node is up
        addr, grpc = namesrv_addr(self), _proxies.endpoints(self)
        self.log(f"cluster up: {len(self.procs)} nodes in {self.run_dir}" + (f"; namesrvAddr={addr}" if addr else "")
                 + (f"; endpoints={grpc}" if grpc else ""))

    def spawn(self, names: list[str]) -> None:
        """Spawn nodes in parallel and wait for each to say ready."""
        namesrv_names = [n for n, p in self.plans.items() if p.role == "namesrv"]
        for name in names:
            _manifest.write_spec(self, name, namesrv_names)
            self.procs[name] = spawn_node(self.run_dir, name, self.control.enroll(name))
        pending = set(names)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while pending:
            if time.monotonic() > deadline:
                raise LaunchError(f"nodes did not say ready within {READY_TIMEOUT_S:.0f}s: "
                                  f"{', '.join(sorted(pending))} (see {self.run_dir}/logs/)")
            for name in list(pending):
                if not self.procs[name].alive():
                    log = (self.run_dir / "logs" / f"{name}.log").read_text()[-2000:]
                    raise LaunchError(f"{name} exited during start-up:\n{log}")
            for msg in self.control.poll(50):
                if isinstance(msg, NodeReady) and msg.node in pending:
                    pending.discard(msg.node)
                    note_ready(self, msg.node, msg.info)
                else:
                    self._observe(msg)
        self.push_links()
        for name in names:
            if name in self.clocks:
                self.set_clock(name, self.clocks[name])
            self.stopped.discard(name)

    def stop(self, drain: bool = False) -> None:
        """Shut the run down, faults healed by the caller: see :func:`emulator.launcher.shutdown.shut_down`."""
        shut_down(self, drain)

    def stop_role(self, live: list[NodeProcess], role: str) -> None:
        """Ask the live nodes of ``role`` to shut down and wait (bounded) until they exited."""
        group = [p for p in live if self.plans[p.name].role == role and p.alive()]
        for p in group:
            p.expected_exit = True
            try:
                p.send_signal(_signal.SIGCONT)  # a paused node must run to shut down
                self.control.command(p.name, "shutdown", {})
            except (ControlError, FaultError, OSError):
                pass
        deadline = time.monotonic() + max(3.0, 6000 * self.scale / 1000 * 2)
        while any(p.alive() for p in group) and time.monotonic() < deadline:
            self.pump(20)

    # ------------------------------------------------------------------ observing

    def pump(self, timeout_ms: float = 0) -> None:
        """Handle control-plane messages and notice node exits."""
        for msg in self.control.poll(timeout_ms):
            self._observe(msg)
        for p in self.procs.values():
            if not p.exit_seen and not p.alive():
                self.note_exit(p)

    def _observe(self, msg: Any) -> None:
        if isinstance(msg, NodeReady):  # a restarted node
            note_ready(self, msg.node, msg.info)
        elif isinstance(msg, NodeGone) and msg.node in self.procs:
            proc = self.procs[msg.node]
            try:
                proc.popen.wait(timeout=1.0)
            except subprocess.TimeoutExpired:  # gone from the control plane, still exiting
                pass
            if not proc.alive():
                self.note_exit(proc)

    def note_exit(self, proc: NodeProcess) -> None:
        """Write ``proc``'s ``node.exit`` once it has exited (once)."""
        if proc.exit_seen or proc.alive():
            return
        proc.exit_seen = True
        info = proc.exit_info()
        if not proc.expected_exit:
            self.died.append(proc.name)
            self.log(f"node {proc.name} exited unexpectedly ({info}); see {proc.log_path}")
        ts = proc.killed_ms
        if ts is not None:  # no earlier than its own last line: it may write until the signal lands
            ts = max(ts, last_event_ms(self.run_dir / "events" / f"{proc.name}.jsonl") or ts)
        self.write_exit(proc.name, info, ts)

    def write_exit(self, name: str, info: dict[str, int], ts: float | None = None) -> None:
        """Append ``name``'s ``node.exit`` stamped ``ts`` (a kill's time), else now."""
        plan = self.plans[name]
        event: dict[str, Any] = {"ts": host_ms() if ts is None else ts, "node": name, "kind": "node.exit",
                                 "role": plan.role, "pid": self.procs[name].pid, **info}
        if plan.broker is not None:  # a DLedger peer has no fixed broker_id: none is written
            event.update(broker=plan.broker, **({} if plan.broker_id is None else {"broker_id": plan.broker_id}))
        if not self.run_dir_deleted():
            append_event(self.run_dir / "events" / f"{name}.jsonl", event)

    def run_dir_deleted(self) -> bool:
        """The run directory was deleted under a live cluster (``rm -rf`` before ``down``): the
        shutdown still stops every node, but writes nothing, so no ghost of a run reappears
        (and no write error cuts the shutdown short)."""
        return not (self.run_dir / "events").is_dir()

    def check(self) -> None:
        """Raise :class:`ClusterError` if a node died that no fault killed."""
        self.pump(0)
        if self.died:
            raise ClusterError(f"node(s) died without a fault: {', '.join(self.died)}", self.died)

    def state(self, name: str, timeout_ms: float = 5000) -> dict[str, Any]:
        return self.control.call(name, "state", {}, timeout_ms)

    def real_clients(self) -> dict[str, list[str] | None] | None:
        """ClusterOps: node -> the real clients on its remoting port; None without remoting."""
        return remoting_clients(self) if self.remoting_addrs or self.grpc_addrs else None

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out after {timeout_s:.0f}s waiting for {what}")
            self.pump(20)

    def wait_registered(self, timeout_s: float = 30.0) -> None:
        """Wait until every namesrv lists every broker node (:func:`emulator.launcher.startup.wait_registered`)."""
        _startup.wait_registered(self, timeout_s)

    def dledger_leader(self, broker: str) -> str | None:
        """ClusterOps: the node of ``broker``'s DLedger leader now (the LEADER of the highest term
        among its live, running peers' ``state``), None if none leads or it is no DLedger group."""
        return _dledger.leader(self, broker)

    # ------------------------------------------------------------------ ClusterOps for faults/

    def node_infos(self) -> dict[str, NodeInfo]:
        return {n: p.node_info() for n, p in self.plans.items()}

    def host_ms(self) -> float:
        return host_ms()

    def signal(self, name: str, sig: int) -> None:
        """Signal a node and return once it took effect (exited, stopped or running again)."""
        if name not in self.procs:
            raise UnsafeSignal(f"refusing to signal {name!r}: not a process this run spawned")
        proc = self.procs[name]
        ending = sig in (_signal.SIGKILL, _signal.SIGTERM)
        was_expected = proc.expected_exit
        if ending:  # before the signal: the pump may reap the exit at once
            proc.expected_exit = True
        try:
            proc.send_signal(sig)
        except BaseException:
            proc.expected_exit = was_expected  # refused (e.g. it had died on its own): still unexpected
            raise
        if sig in (_signal.SIGKILL, _signal.SIGTERM):
            self.stopped.discard(name)
            proc.popen.wait(timeout=60)
        elif sig in (_signal.SIGSTOP, _signal.SIGCONT):
            want_stopped = sig == _signal.SIGSTOP
            self.wait_for(lambda: proc.is_stopped() == want_stopped or not proc.alive(), 30,
                          f"{name} to be {'stopped' if want_stopped else 'running'}")
            (self.stopped.add if want_stopped else self.stopped.discard)(name)

    def restart(self, name: str) -> None:
        old = self.procs.get(name)
        if old is not None:
            if old.alive():
                raise ControlError(f"{name} is still running; kill or stop it before a restart")
            self.note_exit(old)
            old.close()
        self.spawn([name])
        _manifest.write(self)  # the new pid/create_time: `rmqemu` verbs and orphan checks read it

    def set_links(self, rules: dict[tuple[str, str], LinkRule]) -> None:
        self.links = dict(rules)
        self.push_links()

    def push_links(self) -> None:
        """Send the full table to every running node (a stopped one gets it when resumed).
        Every node is tried even if one does not ack (a heal must reach all the others);
        the ones that did not are named in one ControlError at the end, or in HostOverloaded
        when their own lateness explains it (:func:`emulator.launcher.overload.overloaded`)."""
        args = {"rules": rules_to_wire(self.links), "peers": dict(self.addrs)}
        failed: list[ControlError] = []
        for name, proc in self.procs.items():
            if proc.alive() and name not in self.stopped:
                try:
                    self.control.call(name, "set_links", args, ACK_TIMEOUT_MS)
                except ControlError as exc:  # its message names the node
                    failed.append(exc)
        if failed:
            raise overloaded(self, failed) or ControlError(
                f"link table not acknowledged by {len(failed)} node(s): {'; '.join(map(str, failed))}")

    def set_clock(self, name: str, setting: ClockSetting) -> None:
        self.clocks[name] = setting
        if name in self.stopped or not self.procs[name].alive():
            return  # applied when it resumes or restarts
        try:
            self.control.call(name, "set_clock", {"setting": setting.to_dict()}, ACK_TIMEOUT_MS)
        except ControlTimeout as exc:
            raise overloaded(self, [exc]) or exc from None

    def record(self, event: dict[str, Any]) -> None:
        if not self.run_dir_deleted():
            append_event(self.run_dir / "faults.jsonl", {"ts": host_ms(), **event})

    def node_exited(self, name: str, sig: int) -> None:
        """The injector killed ``name``: its ``node.exit`` is written now, once."""
        proc = self.procs[name]
        proc.expected_exit = True
        proc.popen.wait(timeout=60)
        self.note_exit(proc)
