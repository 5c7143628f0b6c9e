"""The server side of the interactive fault verbs, inside an ``rmqemu up`` supervisor.

``rmqemu kill|stop|pause|resume|partition|link|skew|heal|faults`` each become one supervisor RPC
(``emulator.cli.supervisor.call(run_dir, verb, args)``). They share **one** :class:`Injector` for the
supervisor's lifetime, so a fault started by one CLI call is still known to the next: a second
pause of a paused node is refused naming the first, ``resume`` finds the pause, ``heal`` ends
everything.

Everything runs in the supervisor's single thread, the one that owns the :class:`Cluster` and its
ZeroMQ sockets (they must not be shared between threads). So a fault with a ``--duration`` or a
``--restart-after`` is not a sleeping thread: its stop is queued and :meth:`VerbServer.tick`,
called by the supervisor loop between RPCs, runs it when due. :meth:`VerbServer.close` heals
everything before the cluster stops, so ``faults.jsonl`` ends every fault it started.
"""

from __future__ import annotations

import random
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from rmqemu.emulator.node.clock import mono_ms
from rmqemu.errors import FaultError, PlanError
from rmqemu.faults.clients import ConnectedClients, check_not_clients, client_names
from rmqemu.faults.firing import start_step
from rmqemu.faults.injector import Injector
from rmqemu.faults.kinds import Fault
from rmqemu.faults.ops import ClusterOps
from rmqemu.faults.verbs import one_fault_plan, spec_from_args

Handler = Callable[[dict[str, Any]], dict[str, Any]]
VERBS = ("kill", "stop", "pause", "partition", "link", "skew")


@dataclass(order=True)
class _Due:
    """A queued stop: at ``due_ms`` (monotonic), end ``fault_id`` (restarting a kill/stop)."""

    due_ms: float
    fault_id: str = field(compare=False)


def connected_clients(ops: ClusterOps) -> ConnectedClients:
    """The real clients connected to the run's remoting ports now."""
    found = ops.real_clients()
    return ConnectedClients(found or {}, remoting=found is not None)


def fault_summary(fault: Fault) -> dict[str, Any]:
    """What the CLI prints about a fault: id, kind, targets, params, when it took effect."""
    return {"fault_id": fault.fault_id, "fault": fault.kind, "targets": list(fault.targets),
            "params": {**fault.params(), **fault.notes}, "started_ms": fault.started_ms}


class VerbServer:
    """One injector, the queue of timed stops, and a handler per verb."""

    def __init__(self, ops: ClusterOps, *, scale: float, seed: int,
                 clock: Callable[[], float] = mono_ms, log: Callable[[str], None] | None = None) -> None:
        self.ops = ops
        self.scale = scale
        self.seed = seed
        self.clock = clock
        self.injector = Injector(ops, id_prefix="i")
        self.rng = random.Random(f"rmqemu-interactive-{seed}")  # selectors such as one:master
        self.pending: list[_Due] = []
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))

    def handlers(self) -> dict[str, Handler]:
        out: dict[str, Handler] = {verb: (lambda args, v=verb: self.start(v, args)) for verb in VERBS}
        out.update(resume=self.resume, heal=self.heal, faults=self.list_faults, real_clients=self.real_clients)
        return out

    # -- verbs -------------------------------------------------------------------------------

    def start(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        """Start one fault now; queue its end if it has a duration / restart_after."""
        spec = spec_from_args(verb, args)
        named = client_names(*(args.get(k) for k in ("targets", "from", "to")))
        clients = connected_clients(self.ops) if named else None  # asked only when a client is named
        fault_id = self.injector.new_fault_id()
        try:
            plan = one_fault_plan(spec, fault_id, self.ops.node_infos(), self.rng, self.scale, self.seed, clients)
        except PlanError as err:  # say "kill: unknown target 'x', ..." rather than the plan's wording
            cause = err.__context__ if isinstance(err.__context__, FaultError) else err
            raise FaultError(f"{verb}: {cause}") from None
        start, *stops = plan.steps
        fault = start_step(start, self.injector)  # a role term (leader:broker-a) is bound now
        if isinstance(fault, str):
            raise FaultError(f"{verb}: {fault}; nothing was started")
        out = fault_summary(fault)
        out["ends_in_ms"] = None
        if stops and self.injector.get(fault_id) is not None:  # a clock reset is over at once
            delay = stops[0].at_ms - start.at_ms
            self.pending.append(_Due(self.clock() + delay, fault_id))
            self.pending.sort()
            out["ends_in_ms"] = delay
        out["active"] = self.injector.get(fault_id) is not None
        return out

    def resume(self, args: dict[str, Any]) -> dict[str, Any]:
        """End the pause(s) holding these nodes (all of each pause's targets resume)."""
        nodes = [str(n) for n in args.get("targets") or []]
        if not nodes:
            raise FaultError("resume: name the paused node(s), e.g. rmqemu resume broker-a-0")
        check_not_clients("resume", nodes)
        self._check_known(nodes)
        ended = self.injector.stop_on(nodes, "pause", reason="interactive")
        return {"healed": ended}

    def heal(self, args: dict[str, Any]) -> dict[str, Any]:
        """End the given faults (or every active fault); killed nodes are restarted."""
        ids = [str(i) for i in args.get("fault_ids") or []]
        if not ids:
            return {"healed": self.injector.heal_all(restart_killed=True)}
        unknown = [i for i in ids if self.injector.get(i) is None]
        if unknown:
            active = ", ".join(f.fault_id for f in self.injector.active()) or "none"
            raise FaultError(f"heal: no active fault {', '.join(unknown)} (active: {active})")
        for fault_id in ids:
            self.injector.stop(fault_id, reason="interactive", restart=True)
        return {"healed": ids}

    def real_clients(self, _args: dict[str, Any]) -> dict[str, Any]:
        """The real clients connected now (``client@<pid>``), by node: what a partition or link
        may name (``remoting`` false: the cluster has no remoting port)."""
        clients = connected_clients(self.ops)
        return {"remoting": clients.remoting, "by_node": dict(clients.by_node), "names": clients.names}

    def list_faults(self, _args: dict[str, Any]) -> dict[str, Any]:
        now = self.clock()
        ends = {d.fault_id: max(0.0, d.due_ms - now) for d in self.pending}
        return {"active": [{**fault_summary(f), "ends_in_ms": ends.get(f.fault_id)} for f in self.injector.active()],
                "down": sorted(self.injector.down_nodes())}

    # -- loop hooks --------------------------------------------------------------------------

    def tick(self) -> None:
        """Run the queued stops that are due (called by the supervisor loop, same thread)."""
        now = self.clock()
        while self.pending and self.pending[0].due_ms <= now:
            due = self.pending.pop(0)
            if self.injector.get(due.fault_id) is None:
                continue  # resumed or healed by hand meanwhile
            try:
                self.injector.stop(due.fault_id, reason="scheduled")
            except Exception as err:  # noqa: BLE001 - recorded in fault.end; keep serving
                self.log(f"faults: ending {due.fault_id} failed: {err}\n{traceback.format_exc()}")

    def close(self) -> None:
        """Heal every fault before the cluster stops (``down``, SIGTERM of the supervisor): paused
        nodes resume, links clear, clocks reset; killed nodes stay down."""
        self.pending.clear()
        if self.injector.active():
            try:
                self.injector.heal_all(restart_killed=False)
            except Exception as err:  # noqa: BLE001 - the cluster is stopping anyway
                self.log(f"faults: healing at shutdown failed: {err}")

    def _check_known(self, nodes: list[str]) -> None:
        known = self.ops.node_infos()
        unknown = [n for n in nodes if n not in known]
        if unknown:
            raise FaultError(f"unknown node(s) {', '.join(unknown)} (nodes: {', '.join(known)})")


def register_verbs(commands: dict[str, Handler], cluster: Any) -> VerbServer:
    """Add the fault verbs to a supervisor's command table; the returned server's ``tick`` and
    ``close`` are the supervisor loop's hooks."""
    server = VerbServer(cluster, scale=cluster.scale, seed=cluster.topo.seed,
                        log=lambda msg: print(msg, flush=True))
    commands.update(server.handlers())
    return server
