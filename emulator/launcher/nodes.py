"""The injector's view of a run's nodes: plain data the launcher builds from its manifest.

Target selection and partition maths need only names and roles, never processes, so they take a
``Mapping[str, NodeInfo]`` and stay pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Mapping

Role = Literal["namesrv", "broker", "producer", "consumer", "proxy"]
ROLES: tuple[str, ...] = ("namesrv", "broker", "producer", "consumer", "proxy")


@dataclass(frozen=True)
class NodeInfo:
    """One node of the run. ``broker``/``broker_id`` only for brokers, ``group`` only for clients.

    A peer of a DLedger group (docs/rocketmq-model.md §8) has its DLedger id in ``peer``
    (``n0``, ...) and no fixed ``broker_id``: which peer is master changes with elections, so it
    is neither ``is_master`` nor ``is_slave`` here (the injector asks the cluster when a fault fires)."""

    name: str
    role: Role
    broker: str | None = None
    broker_id: int | None = None
    group: str | None = None
    peer: str | None = None

    @property
    def is_master(self) -> bool:
        return self.role == "broker" and self.broker_id == 0 and self.peer is None

    @property
    def is_slave(self) -> bool:
        return self.role == "broker" and (self.broker_id or 0) > 0 and self.peer is None


def peer_ids(peers: int) -> list[str]:
    """DLedger's ids of a group of ``peers``: ``n0`` .. ``n{peers-1}``."""
    return [f"n{i}" for i in range(peers)]


def peer_node(broker: str, peer: str) -> str:
    """The node name of one peer of a DLedger group: ``broker-a-n0``."""
    return f"{broker}-{peer}"


def node_table(
    namesrvs: int = 0,
    brokers: Mapping[str, int] | None = None,
    producers: Mapping[str, int] | None = None,
    consumers: Mapping[str, int] | None = None,
    dledger: Mapping[str, int] | None = None,
) -> dict[str, NodeInfo]:
    """Build a node table with docs/design.md §5's names.

    ``brokers`` maps a broker name to its number of slaves, ``dledger`` the name of a DLedger
    group to its number of peers (nodes ``<name>-n0``..); ``producers``/``consumers`` map a group
    to its number of instances. Used by tests and handy for a launcher that has the same counts.
    """
    nodes: list[NodeInfo] = [NodeInfo(f"namesrv-{i}", "namesrv") for i in range(namesrvs)]
    for broker, slaves in (brokers or {}).items():
        nodes += [NodeInfo(f"{broker}-{i}", "broker", broker, i) for i in range(slaves + 1)]
    for broker, peers in (dledger or {}).items():
        nodes += [NodeInfo(peer_node(broker, p), "broker", broker, None, peer=p) for p in peer_ids(peers)]
    for role, groups in (("producer", producers), ("consumer", consumers)):
        for group, n in (groups or {}).items():
            nodes += [NodeInfo(f"{group}-{i}", role, group=group) for i in range(n)]  # type: ignore[arg-type]
    return index_nodes(nodes)


def index_nodes(nodes: Iterable[NodeInfo]) -> dict[str, NodeInfo]:
    """``{name: NodeInfo}``, refusing duplicate names (two nodes with one name cannot be faulted apart)."""
    table: dict[str, NodeInfo] = {}
    for node in nodes:
        if node.name in table:
            raise ValueError(f"duplicate node name {node.name!r}")
        table[node.name] = node
    return table
