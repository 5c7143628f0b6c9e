"""``emulator.Cluster``: a running cluster with the CLI's fault verbs as methods (docs/design.md §8).

What a user's own test needs beyond the :class:`~emulator.launcher.launcher.Launcher` that runs
the processes:

    with emulator.Cluster.from_file("topologies/quickstart.yaml", run_dir=tmp_path) as c:
        c.wait_routed("OrderTopic")
        c.kill("broker-a-0", restart_after="20s")
        with c.pause("broker-b-0"):        # healed when the block ends
            c.sleep("30s")
        m = c.metrics()                    # finishes the run; Spark computes metrics.json

The verbs take the CLI's arguments (targets are node names, roles or selectors; durations are
cluster time, ``"30s"``, ``"2m"``, or a number of cluster seconds) and go through the same
:class:`~faults.supervisor_verbs.VerbServer` as ``rmqemu up``'s verbs: one injector for the
run, so a second pause of a paused node is refused, ``resume`` finds the pause, and every fault
is healed when the run finishes. A timed fault (``duration``, ``restart_after``) ends while the
test waits in :meth:`Cluster.sleep` or :meth:`Cluster.wait_for` (one thread owns the sockets, so
nothing ends in the background). Each verb returns a :class:`FaultHandle`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from rmqemu.emulator.launcher.addresses import namesrv_addr
from rmqemu.emulator.launcher.errorwatch import role_errors
from rmqemu.emulator.launcher.fault_spec import parse_duration
from rmqemu.emulator.launcher.launcher import Launcher
from rmqemu.emulator.launcher.run_events import read_events
from rmqemu.emulator.launcher.topology import Topology
from rmqemu.emulator.launcher.topology_load import load_topology, parse_topology
from rmqemu.emulator.launcher.topology_proxy import endpoints as proxy_endpoints
from rmqemu.errors import ClusterError, SpecError
from rmqemu.faults.launch_glue import check_topology_faults
from rmqemu.faults.supervisor_verbs import VerbServer

Targets = str | Sequence[str]
PUMP_MS = 20.0  # how often a wait looks at the control plane and the timed faults (wall ms)


def _targets(targets: Targets) -> list[str]:
    return [targets] if isinstance(targets, str) else [str(t) for t in targets]


def _duration(value: str | float | int | None) -> str | None:
    """A cluster duration as the verbs take it: ``"30s"`` as is, a number as cluster seconds."""
    if value is None or isinstance(value, str):
        return value
    return f"{float(value):g}s"


class FaultHandle:
    """One fault started by a verb: its id, kind and targets; :meth:`heal` ends it, and so does
    leaving a ``with`` block over it. Healing a fault that already ended does nothing."""

    def __init__(self, cluster: "Cluster", summary: dict[str, Any]) -> None:
        self.cluster = cluster
        self.fault_id: str = summary["fault_id"]
        self.kind: str = summary["fault"]
        self.targets: list[str] = list(summary["targets"])
        self.params: dict[str, Any] = dict(summary.get("params", {}))

    @property
    def active(self) -> bool:
        return self.cluster.verbs.injector.get(self.fault_id) is not None

    def heal(self) -> None:
        if self.active:
            self.cluster.heal(self)

    def __enter__(self) -> "FaultHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.heal()

    def __repr__(self) -> str:
        return f"FaultHandle({self.fault_id} {self.kind} {', '.join(self.targets)})"


class Cluster:
    """One run of a topology with the fault verbs, waits and metrics; ``with`` starts and
    finishes it. ``launcher`` is the :class:`~emulator.launcher.launcher.Launcher` below it, for
    tests that work at the process level (its ``stop()`` shuts the whole run down, which here
    is :meth:`finish`: ``stop`` is the fault verb, as on the CLI)."""

    def __init__(self, topology: Topology | str | Path | dict[str, Any], run_dir: Path | None = None,
                 root: Path = Path("runs"), log: Callable[[str], None] | None = None) -> None:
        if isinstance(topology, (str, Path)):
            topology = load_topology(topology)
        elif isinstance(topology, dict):
            topology = parse_topology(topology, "emulator.Cluster")
        topo = check_topology_faults(topology, topology.name)
        self.launcher = Launcher(topo, run_dir=run_dir, root=root, log=log)
        self.verbs = VerbServer(self.launcher, scale=self.launcher.scale, seed=topo.seed, log=log)
        self.started = False
        self.finished = False
        self._metrics: dict[str, Any] | None = None  # the last document computed ...
        self._sections: frozenset[str] = frozenset()  # ... and the sections it holds

    @property
    def run_dir(self) -> Path:
        return self.launcher.run_dir

    @property
    def scale(self) -> float:
        return self.launcher.scale

    @property
    def addrs(self) -> dict[str, str]:
        """Node name -> its current address (a restarted node gets a new one)."""
        return self.launcher.addrs

    @property
    def namesrv_addr(self) -> str | None:
        """``HOST:PORT;HOST:PORT``: the namesrvs' remoting addresses, what a real RocketMQ client
        takes as ``namesrvAddr`` (docs/real-clients.md); None when the topology's ``remoting:`` is off
        (or before :meth:`start`). A restarted namesrv keeps its port, so the string stays valid."""
        return namesrv_addr(self.launcher)

    @property
    def endpoints(self) -> str | None:
        """``HOST:PORT;HOST:PORT``: the proxies' gRPC addresses, what a RocketMQ 5 client takes as
        its endpoints (docs/real-clients.md); None without ``proxies:``. A restarted proxy keeps its port."""
        return proxy_endpoints(self.launcher)

    @property
    def started_ms(self) -> float:
        """When the run started (host wall ms; 0 before :meth:`start`)."""
        return self.launcher.started_ms

    @property
    def died(self) -> list[str]:
        """Nodes that exited without a fault killing them (the run is broken if any)."""
        return list(self.launcher.died)

    def pid(self, node: str) -> int:
        """The process id of a node (its current process: a restarted node has a new one)."""
        return self.launcher.procs[node].pid

    def nodes(self, role: str | None = None) -> list[str]:
        """The topology's node names, of one role (``namesrv``, ``broker``, ``producer``, ``consumer``) if given."""
        return [n for n, p in self.launcher.plans.items() if role is None or p.role == role]

    def state(self, node: str) -> dict[str, Any]:
        """A node's live tables (its role's ``state()``) over the control plane."""
        return self.launcher.state(node)

    def start(self) -> "Cluster":
        if not self.started:
            self.started = True
            self.launcher.start()
        return self

    def __enter__(self) -> "Cluster":
        try:
            return self.start()
        except BaseException:
            self.finish(drain=False)
            raise

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.finish(drain=exc_type is None)  # a failing test does not wait for the consumers
        if exc_type is None:
            self.check_role_errors()

    def check_role_errors(self) -> None:
        """Raise :class:`~rmqemu.errors.ClusterError` if a node's role raised during the run (a
        ``node.error``: a bug in rmqemu, and what that node did next may be wrong)."""
        if found := role_errors(self.run_dir):
            nodes = ", ".join(f"{node} ({n})" for node, n in sorted(found.items()))
            raise ClusterError(f"role error(s), a bug in rmqemu: {nodes}; tracebacks in {self.run_dir / 'logs'}")

    # ------------------------------------------------------------------ fault verbs

    def _start(self, verb: str, **args: Any) -> FaultHandle:
        return FaultHandle(self, self.verbs.start(verb, {k: v for k, v in args.items() if v is not None}))

    def kill(self, targets: Targets, restart_after: str | float | None = None) -> FaultHandle:
        """SIGKILL; with ``restart_after`` the node is started again that much later."""
        return self._start("kill", targets=_targets(targets), restart_after=_duration(restart_after))

    def stop(self, targets: Targets, restart_after: str | float | None = None) -> FaultHandle:
        """A graceful stop (SIGTERM: a broker unregisters first), optionally restarted."""
        return self._start("stop", targets=_targets(targets), restart_after=_duration(restart_after))

    def pause(self, targets: Targets, duration: str | float | None = None) -> FaultHandle:
        """SIGSTOP until resumed, healed, or ``duration`` has passed."""
        return self._start("pause", targets=_targets(targets), duration=_duration(duration))

    def resume(self, targets: Targets) -> list[str]:
        """End the pauses holding these nodes; the ids of the faults ended."""
        return list(self.verbs.resume({"targets": _targets(targets)})["healed"])

    def partition(self, targets: Targets, from_: Targets | None = None, mode: str | None = None,
                  oneway: bool = False, duration: str | float | None = None) -> FaultHandle:
        """Cut ``targets`` off from ``from_`` (default: every other node). A real client connected
        to a remoting port is named ``client@<pid>`` (:meth:`real_clients`); alone it is cut off
        from every namesrv and broker."""
        return self._start("partition", targets=_targets(targets), mode=mode, oneway=oneway or None,
                           duration=_duration(duration), **({"from": _targets(from_)} if from_ else {}))

    def link(self, targets: Targets, to: Targets | None = None, delay: str | None = None, jitter: str | None = None,
             loss: str | None = None, duplicate: str | None = None, oneway: bool = False,
             duration: str | float | None = None) -> FaultHandle:
        """Shape the links from ``targets`` (to ``to``, default every node): delay, jitter, loss, duplicates.
        A real client (``client@<pid>``) may be named: the nodes shape both its directions."""
        return self._start("link", targets=_targets(targets), to=_targets(to) if to else None, delay=delay,
                           jitter=jitter, loss=loss, duplicate=duplicate, oneway=oneway or None,
                           duration=_duration(duration))

    def skew(self, targets: Targets, spec: str, period: str | None = None,
             duration: str | float | None = None) -> FaultHandle:
        """Move the nodes' clocks: ``"+130s"`` / ``"-2m"`` (a jump), ``"500ppm"`` (drift), ``"reset"``."""
        return self._start("skew", targets=_targets(targets), value=spec, period=period, duration=_duration(duration))

    def heal(self, fault: FaultHandle | str | None = None) -> list[str]:
        """End one fault (a handle or its id), or every active fault; killed nodes are restarted."""
        ids = [] if fault is None else [fault.fault_id if isinstance(fault, FaultHandle) else str(fault)]
        return list(self.verbs.heal({"fault_ids": ids})["healed"])

    def real_clients(self) -> list[str]:
        """The real clients connected to the remoting ports now (``client@<pid>``, sorted)."""
        return list(self.verbs.real_clients({})["names"])

    def faults(self) -> list[dict[str, Any]]:
        """The active faults, as ``rmqemu faults`` lists them."""
        return list(self.verbs.list_faults({})["active"])

    # ------------------------------------------------------------------ waiting and reading

    def sleep(self, duration: str | float) -> None:
        """Let ``duration`` of cluster time pass, ending timed faults as they come due."""
        try:
            wall_s = parse_duration(duration) * self.scale
        except ValueError as exc:
            raise SpecError(f"sleep: {exc}") from None
        deadline = time.monotonic() + wall_s
        while (left := deadline - time.monotonic()) > 0:
            self._tick(min(PUMP_MS, left * 1000))

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 60.0, what: str = "the condition") -> None:
        """Poll ``predicate`` until true (wall-clock ``timeout_s``); timed faults keep running."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not happen within {timeout_s:g} s (run directory: {self.run_dir})")
            self._tick(PUMP_MS)

    def wait_routed(self, topic: str, timeout_s: float = 60.0) -> None:
        """Until every producer and consumer has a route to ``topic`` with a queue (``client.route``)."""
        clients = set(self.nodes("producer")) | set(self.nodes("consumer"))

        def routed() -> bool:
            seen = {e["node"] for e in self.events("client.route")
                    if e.get("topic") == topic and (e.get("publish_queues") or e.get("subscribe_queues"))}
            return clients <= seen
        self.wait_for(routed, timeout_s, f"a route to {topic!r} on every client")

    def events(self, kind: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
        """The run's events so far (``faults.jsonl`` included), ordered by ``ts``."""
        return read_events(self.run_dir, kind, node)

    def _tick(self, wait_ms: float) -> None:
        self.launcher.pump(wait_ms)
        self.verbs.tick()

    # ------------------------------------------------------------------ the end

    def finish(self, drain: bool = True) -> Path:
        """Heal every fault (killed nodes stay down), stop the producers, wait (``drain``, bounded
        by ``timing.drainTimeout``) until every consumer group has consumed what the brokers
        hold, stop the rest (docs/design.md §6); the run directory. Idempotent."""
        if not self.finished:
            self.finished = True
            try:
                if self.started:
                    self.verbs.close()
            finally:
                self.launcher.stop(drain=drain and self.started)
        return self.run_dir

    def metrics(self, spark: Any = None, only: Iterable[str] | None = None) -> dict[str, Any]:
        """The run's metrics.json document (finishing the run first), computed by Spark
        (``reports.job.metrics``: nothing written): on ``spark`` when given (the pytest
        plugin's warm ``rmqemu_spark``), else on a local session built and stopped here.

        ``only``: the run's header and these sections, names or paths in them (an ``expect:``
        mapping works: its keys are paths). Only what they read is computed, so a test that
        asserts ``consumption.lost`` does not pay for the route-staleness analysis
        (docs/testing.md). A document already computed is reused when it holds them."""
        from rmqemu.reports.metrics import sections_of  # Spark loads only when asked for

        wanted = frozenset(sections_of(only))
        if self._metrics is None or not wanted <= self._sections:
            self.finish()
            from rmqemu.reports.job import metrics as run_metrics
            from rmqemu.reports.session import build_session, stop_session

            session = spark if spark is not None else build_session(small_input=True)
            try:
                self._metrics = run_metrics(session, str(self.run_dir), only=None if only is None else wanted)
                self._sections = wanted
            finally:
                if spark is None:
                    stop_session(session)
        return self._metrics
