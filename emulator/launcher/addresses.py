"""Where a run's nodes listen: their ZeroMQ addresses and, with ``remoting:`` on, the remoting
ports real RocketMQ clients connect to (docs/real-clients.md).

A node reports both in its ready info; both are kept so that a restarted node binds its old ports
again (brokers' routes and a real client's ``namesrvAddr`` stay valid). The ``namesrvAddr`` line
is the Java client's format: every namesrv's remoting address, ``;``-separated.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any, Mapping

from rmqemu.emulator.launcher.topology_remoting import ROLES, Remoting
from rmqemu.emulator.roles.common.node_spec import remoting_host_port
from rmqemu.errors import ControlError, TopologyError

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher

CLIENTS_TIMEOUT_MS = 2000.0  # a node that does not answer `state` this fast is shown as unknown


def note_ready(cluster: "Launcher", name: str, info: Mapping[str, Any]) -> None:
    """Record the addresses a node that said ready bound (its ready info)."""
    cluster.addrs[name] = info["addr"]
    cluster.ports[name] = int(info["addr"].rsplit(":", 1)[1])
    if info.get("remoting_addr"):
        cluster.remoting_addrs[name] = str(info["remoting_addr"])
    if info.get("grpc_addr"):
        cluster.grpc_addrs[name] = str(info["grpc_addr"])


def check_free_ports(name: str, remoting: Remoting | None) -> None:
    """:class:`TopologyError` with one ``remoting.ports.<node>: ...`` line per fixed port that
    cannot be bound now: checked before any node starts, so that it is bad input (exit 2), not a
    node that dies at start (a port taken in between still is)."""
    problems = []
    for node, port in (remoting.ports.items() if remoting is not None else ()):
        family = socket.AF_INET6 if ":" in remoting.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the node binds it
            try:
                probe.bind((remoting.host, port))
            except OSError as exc:
                problems.append(f"remoting.ports.{node}: {remoting.host}:{port} cannot be listened on: {exc.strerror}")
    if problems:
        raise TopologyError(name, problems)


def spec_remoting(cluster: "Launcher", name: str) -> str | None:
    """A node spec's ``remoting``: ``HOST:PORT`` for a namesrv or broker when remoting is on (the
    port it bound before, else the topology's ``ports``, else 0: any free one), else None."""
    remoting, plan = cluster.topo.remoting, cluster.plans[name]
    if remoting is None or plan.role not in ROLES:
        return None
    bound = remoting_host_port(cluster.remoting_addrs.get(name))
    port = bound[1] if bound is not None else remoting.ports.get(name, 0)
    return f"{remoting.host}:{port}"


def join_namesrv_addr(remoting_addrs: Mapping[str, str], namesrvs: list[str]) -> str | None:
    """``HOST:PORT;HOST:PORT`` of the namesrvs (in order) that have a remoting address; None if none."""
    found = [remoting_addrs[n] for n in namesrvs if remoting_addrs.get(n)]
    return ";".join(found) if found else None


def namesrv_addr(cluster: "Launcher") -> str | None:
    """The running cluster's ``namesrvAddr`` for real clients; None when remoting is off."""
    return join_namesrv_addr(cluster.remoting_addrs, [n for n, p in cluster.plans.items() if p.role == "namesrv"])


def manifest_namesrv_addr(manifest: Mapping[str, Any]) -> str | None:
    """The same from a run's ``manifest.json`` (its nodes' ``remoting_addr``)."""
    nodes = manifest.get("nodes") or {}
    return join_namesrv_addr({n: e.get("remoting_addr") for n, e in nodes.items()},
                             [n for n, e in nodes.items() if e.get("role") == "namesrv"])


def remoting_clients(cluster: "Launcher") -> dict[str, list[str] | None]:
    """Node -> the real clients connected to its remoting port or, a proxy, calling its gRPC port
    (sorted names, ``client@<pid>``), for every running node that has one; None for a node that
    did not answer in time. A paused node is left out (it cannot answer)."""
    out: dict[str, list[str] | None] = {}
    for name in [*cluster.remoting_addrs, *cluster.grpc_addrs]:
        proc = cluster.procs.get(name)
        if proc is None or not proc.alive() or name in cluster.stopped:
            continue
        try:
            state = cluster.state(name, CLIENTS_TIMEOUT_MS)
        except ControlError:
            out[name] = None
            continue
        transport = state.get("_runtime", {}).get("transport", {})
        clients = {**transport.get("remoting_clients", {}), **transport.get("grpc_clients", {})}
        out[name] = sorted(set(clients.values()))
    return out
