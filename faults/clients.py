"""Real clients as fault targets: pure rules for ``client@<pid>`` / ``client@<ip>`` names.

A real RocketMQ client connected to a node's remoting port (``remoting: true``), or a RocketMQ 5
client calling a proxy's gRPC port (``proxies:``), is named after
its process, ``client@<pid>`` (``client@<ip>`` from another host), as ``rmqemu status`` lists it.
It is not a process rmqemu runs, so only ``partition`` and ``link`` take it, and every rule
about it is enforced on the node side of its connections:

- a rule on ``(client, node)`` is applied by the node to what the client sends it, as it
  arrives; a rule on ``(node, client)`` by the node to what it sends the client, as it leaves;
  a partition cuts both unless ``oneway`` (then only "first group -> second group");
- a client only talks to namesrv, broker and proxy nodes: links between a client and any other node,
  or between two clients, are left out of a fault's links (the fault must keep at least one).

A name must be connected to at least one node when the fault starts (:func:`check_connected`).
Real clients are never drawn by roles or selectors (``all``, ``one:namesrv``), nor by the nemesis:
only a name picks one. A topology's ``faults:`` list cannot name them (the plan is built before
any client connects).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from rmqemu.emulator.launcher.nodes import NodeInfo
from rmqemu.errors import PartitionError, SpecError, TargetError
from rmqemu.faults.targets import resolve_targets

CLIENT_PREFIX = "client@"
CLIENT_KINDS = ("partition", "link")  # the only faults a real client takes
SERVER_ROLES = ("namesrv", "broker", "proxy")  # the nodes real clients talk to: remoting or gRPC ports
Link = tuple[str, str]


def is_client(name: str) -> bool:
    """``client@4242`` / ``client@10.1.2.3`` (also ``!client@...``: an exclusion)."""
    return name.lstrip("!").startswith(CLIENT_PREFIX)


def terms_of(expr: str | Sequence[str] | None) -> list[str]:
    """The terms of a target expression (one string, commas allowed, or a list)."""
    items = [] if expr is None else [expr] if isinstance(expr, str) else list(expr)
    return [p.strip() for item in items for p in str(item).split(",") if p.strip()]


def client_names(*exprs: str | Sequence[str] | None) -> list[str]:
    """The real-client names (not exclusions) written in these expressions, each once."""
    return list(dict.fromkeys(t for e in exprs for t in terms_of(e) if is_client(t) and not t.startswith("!")))


def not_a_process(name: str) -> str:
    return f"{name} is a real client, not a process rmqemu runs; only partition and link apply to it"


def check_not_clients(verb: str, *exprs: str | Sequence[str] | None) -> None:
    """Refuse a real client as the target of anything but partition / link (:class:`SpecError`)."""
    named = [t.lstrip("!") for e in exprs for t in terms_of(e) if is_client(t)]
    if named and verb not in CLIENT_KINDS:
        raise SpecError(f"{verb}: {not_a_process(named[0])}")


@dataclass(frozen=True)
class ConnectedClients:
    """Which real clients are connected where, as the cluster reported it just now.

    ``by_node``: node -> the client names on its remoting port (None: the node did not answer);
    ``remoting``: whether the cluster has remoting ports at all.
    """

    by_node: Mapping[str, list[str] | None] = field(default_factory=dict)
    remoting: bool = True

    @property
    def names(self) -> list[str]:
        return sorted({c for cs in self.by_node.values() for c in cs or ()})

    def missing(self, names: Iterable[str]) -> str | None:
        """Why some of ``names`` cannot be faulted now, or None if every one is connected."""
        gone = [n for n in dict.fromkeys(names) if n not in self.names]
        if not gone:
            return None
        what = f"real client{'s' if len(gone) > 1 else ''} {', '.join(gone)}"
        if not self.remoting:
            return (f"unknown {what}: this cluster has no remoting port (the topology's remoting: is off), "
                    "so no real client can connect")
        silent = sorted(n for n, cs in self.by_node.items() if cs is None)
        note = f"; {', '.join(silent)} did not answer" if silent else ""
        if not self.names:
            return f"{what} not connected: no real client is connected to any namesrv, broker or proxy now{note}"
        return (f"{what} not connected to any namesrv, broker or proxy; connected real clients: "
                f"{', '.join(self.names)} (rmqemu status lists them){note}")


def check_connected(names: Sequence[str], clients: ConnectedClients | None) -> None:
    """Refuse real-client names that are not connected now (:class:`TargetError`); ``clients``
    None means a plan built before the run (a topology's ``faults:``), where none can be."""
    if not names:
        return
    if clients is None:
        raise TargetError(f"real client {', '.join(names)}: a fault plan is built before any real client "
                          "connects; fault real clients on a running cluster (rmqemu up, then rmqemu partition "
                          "or rmqemu link; or emulator.Cluster)")
    problem = clients.missing(names)
    if problem is not None:
        raise TargetError(problem)


def split_terms(expr: str | Sequence[str] | None) -> tuple[list[str], list[str]]:
    """``(node terms, client names)`` of an expression. A client exclusion (``!client@1``) is
    dropped: real clients are only ever chosen by name. If the node terms are only exclusions
    and a client is named, the node terms are dropped too (``!x`` alone would mean "all but x")."""
    terms = terms_of(expr)
    named = client_names(terms)
    rest = [t for t in terms if not is_client(t)]
    if named and rest and all(t.startswith("!") for t in rest):
        rest = []
    return rest, named


def pick_targets(expr: str | Sequence[str] | None, nodes: Mapping[str, NodeInfo], rng: random.Random,
                 clients: ConnectedClients | None, kind: str) -> list[str]:
    """:func:`faults.targets.resolve_targets`, then the real clients named (connected ones, for
    partition and link only) after the nodes. Without a client name it is exactly resolve_targets
    (same RNG draws, same messages)."""
    check_not_clients(kind, expr)
    terms, named = split_terms(expr)
    check_connected(named, clients)
    return (resolve_targets(terms, nodes, rng) if terms or not named else []) + named


def servers(nodes: Mapping[str, NodeInfo]) -> list[str]:
    """The nodes a real client can talk to (namesrvs, brokers, proxies), in node-table order."""
    return [n for n, info in nodes.items() if info.role in SERVER_ROLES]


def restrict_links(links: Iterable[Link], nodes: Mapping[str, NodeInfo]) -> list[Link]:
    """Leave out the links of a real client with anything but a namesrv, broker or proxy (another
    client, a producer or consumer node): nothing carries them. Node-to-node links stay."""
    can = set(servers(nodes))

    def carried(a: str, b: str) -> bool:
        if is_client(a):
            return b in can
        return not is_client(b) or a in can
    return [(a, b) for a, b in links if carried(a, b)]


def partition_links(links: Sequence[Link], nodes: Mapping[str, NodeInfo]) -> list[Link]:
    """A partition's links without those no node carries; refuses a partition left with none."""
    kept = restrict_links(links, nodes)
    if links and not kept:
        raise PartitionError("partition: no link left to cut: a real client only talks to namesrv, broker and proxy "
                             "nodes (not to other clients, producers or consumers)")
    return kept


def link_fault_links(links: Sequence[Link], nodes: Mapping[str, NodeInfo]) -> list[Link]:
    """A link fault's links without the ones no node carries; refuses a fault left with none. What a
    real client sends is shaped by the node it reaches, on arrival (the client is not rmqemu's)."""
    carried = restrict_links(links, nodes)
    if links and not carried:
        raise SpecError("link: no link left to shape: a real client only talks to namesrv, broker and proxy nodes "
                        "(not to other clients, producers or consumers)")
    return carried
