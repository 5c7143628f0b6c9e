"""A fake cluster for tests of the injector, the interpreter and the launcher's callers.

:class:`FakeOps` implements :class:`faults.ops.ClusterOps` in memory on a
:class:`emulator.node.clock.FakeClock`: each change "takes" ``ack_ms`` of fake time, as a real push
waits for acks, so tests can check that ``fault.start`` is stamped after the effect.
"""

from __future__ import annotations

import signal as _signal
from typing import Any, Mapping

from rmqemu.emulator.launcher.nodes import NodeInfo, index_nodes, node_table
from rmqemu.emulator.node.clock import ClockSetting, FakeClock
from rmqemu.emulator.node.links import LinkRule
from rmqemu.errors import FaultError, ProcessGone, UnsafeSignal
from rmqemu.events import check_line

Link = tuple[str, str]


def sample_nodes() -> dict[str, NodeInfo]:
    """2 namesrvs, broker-a (master + 1 slave), broker-b (master), pg-1-0, cg-1-0, cg-1-1."""
    return node_table(namesrvs=2, brokers={"broker-a": 1, "broker-b": 0},
                      producers={"pg-1": 1}, consumers={"cg-1": 2})


def dledger_nodes(groups: Mapping[str, int] | None = None, *, classic: Mapping[str, int] | None = None
                  ) -> dict[str, NodeInfo]:
    """2 namesrvs, DLedger groups (name -> peers; default broker-a with 3, peers
    ``broker-a-n0``...), master/slave brokers (``classic``: name -> slaves), pg-1-0 and cg-1-0."""
    table = node_table(namesrvs=2, brokers=dict(classic or {}), producers={"pg-1": 1}, consumers={"cg-1": 1})
    peers = [NodeInfo(f"{g}-n{i}", "broker", g, None, peer=f"n{i}")
             for g, n in (groups if groups is not None else {"broker-a": 3}).items() for i in range(n)]
    names = list(table)
    at = next((i for i, n in enumerate(names) if table[n].role != "namesrv"), len(names))
    return index_nodes([*(table[n] for n in names[:at]), *peers, *(table[n] for n in names[at:])])


class FakeOps:
    """In-memory cluster: node states, the last pushed link table and clocks, and every call.
    ``leaders`` says which peer leads each DLedger group (``ops.leaders["broker-a"] = "broker-a-n1"``)."""

    def __init__(self, nodes: Mapping[str, NodeInfo] | None = None, clock: FakeClock | None = None,
                 *, ack_ms: float = 0.0, spawned: set[str] | None = None,
                 clients: Mapping[str, list[str] | None] | None = None) -> None:
        self.nodes = dict(nodes if nodes is not None else sample_nodes())
        self.clock = clock or FakeClock()
        self.ack_ms = ack_ms
        self.spawned = set(self.nodes) if spawned is None else set(spawned)
        self.state: dict[str, str] = {n: "running" for n in self.nodes}  # running | paused | dead
        self.links: dict[Link, LinkRule] = {}
        self.clocks: dict[str, ClockSetting] = {n: ClockSetting() for n in self.nodes}
        self.calls: list[tuple[Any, ...]] = []
        self.events: list[dict[str, Any]] = []
        self.exits: list[tuple[str, int, float]] = []
        self.fail: dict[tuple[str, str], Exception] = {}  # (method, node) -> raise once
        self.clients = None if clients is None else dict(clients)  # node -> real clients; None: remoting off
        self.leaders: dict[str, str | None] = {}  # DLedger group -> the peer a test says leads (dledger_leader)

    def _maybe_fail(self, method: str, node: str) -> None:
        err = self.fail.pop((method, node), None)
        if err is not None:
            raise err

    def node_infos(self) -> dict[str, NodeInfo]:
        return dict(self.nodes)

    def host_ms(self) -> float:
        return self.clock()

    def dledger_leader(self, broker: str) -> str | None:
        """The peer ``leaders`` names for the group, unless it has died (a dead peer leads nothing)."""
        self.calls.append(("dledger_leader", broker))
        if not any(i.broker == broker and i.peer is not None for i in self.nodes.values()):
            raise FaultError(f"fake: {broker} is not a DLedger group")
        leader = self.leaders.get(broker)
        return None if leader is None or self.state[leader] == "dead" else leader

    def real_clients(self) -> dict[str, list[str] | None] | None:
        """The real clients on the nodes' remoting ports (``clients=``; remoting off if None)."""
        self.calls.append(("real_clients",))
        return None if self.clients is None else dict(self.clients)

    def signal(self, node: str, sig: int) -> None:
        self.calls.append(("signal", node, int(sig)))
        if node not in self.spawned:
            raise UnsafeSignal(f"refusing to signal {node!r}: not a process this run spawned")
        self._maybe_fail("signal", node)
        if self.state[node] == "dead":
            raise ProcessGone(f"{node} has exited")
        if sig in (_signal.SIGKILL, _signal.SIGTERM):
            self.state[node] = "dead"
        elif sig == _signal.SIGSTOP:
            self.state[node] = "paused"
        elif sig == _signal.SIGCONT:
            self.state[node] = "running"
        self.clock.advance(self.ack_ms)

    def restart(self, node: str) -> None:
        self.calls.append(("restart", node))
        self._maybe_fail("restart", node)
        if self.state[node] != "dead":
            raise FaultError(f"fake: cannot restart {node}, it is {self.state[node]}")
        self.state[node] = "running"
        self.clocks[node] = ClockSetting()  # a new process starts with the host clock
        self.clock.advance(self.ack_ms)

    def set_links(self, rules: dict[Link, LinkRule]) -> None:
        self.calls.append(("set_links", dict(rules)))
        self._maybe_fail("set_links", "*")  # the push as a whole: some node did not ack
        self.links = {k: v for k, v in rules.items() if not v.is_noop()}
        self.clock.advance(self.ack_ms)

    def set_clock(self, node: str, setting: ClockSetting) -> None:
        self.calls.append(("set_clock", node, setting))
        if self.state[node] != "running":
            raise FaultError(f"fake: {node} is {self.state[node]} and cannot ack set_clock")
        self.clocks[node] = setting
        self.clock.advance(self.ack_ms)

    def record(self, event: dict[str, Any]) -> None:
        """Like ``Cluster.record``: an unregistered kind or field is refused (``ValueError``)."""
        line = {"ts": self.clock(), **event}
        check_line(line)
        self.events.append(line)

    def node_exited(self, node: str, signal: int) -> None:
        self.exits.append((node, signal, self.clock()))

    # helpers for assertions
    def kinds(self) -> list[tuple[str, str, str]]:
        """``[(event kind, fault_id, fault), ...]`` of the recorded events, in order."""
        return [(e["kind"], e["fault_id"], e["fault"]) for e in self.events]

    def calls_of(self, method: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == method]
