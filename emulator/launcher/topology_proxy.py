"""The topology's ``proxies:`` key: RocketMQ 5 proxies, each a node serving gRPC to RocketMQ 5 clients
(docs/rocketmq-model.md §10.1, docs/real-clients.md "RocketMQ 5 clients").

``proxies: 2`` gives nodes ``proxy-0`` and ``proxy-1``, each on a free loopback gRPC port; a
mapping ``{count: N, host: IP, ports: {proxy-0: 8081}, ...ProxyConfig keys}`` picks the address,
fixes some ports and sets 5.x's ``ProxyConfig`` keys (``fifoGroups``, ``maxMessageSize``, ...).
Absent: no proxy. The ``endpoints=`` line of ``rmqemu up`` and ``status`` lists the proxies'
gRPC addresses, ``;``-separated: what a RocketMQ 5 client's endpoints setting takes.
"""

from __future__ import annotations

import ipaddress
from dataclasses import fields
from typing import TYPE_CHECKING, Annotated, Any, Mapping

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from rmqemu.emulator.launcher.topology_remoting import ip_literal
from rmqemu.emulator.roles.common.node_spec import remoting_host_port
from rmqemu.emulator.roles.proxy.proxy import ProxyConfig

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher
    from rmqemu.emulator.launcher.topology import Topology

DEFAULT_HOST = "127.0.0.1"
CONFIG_KEYS = frozenset(f.name for f in fields(ProxyConfig))


class Proxies(BaseModel):
    """How many proxies, where their gRPC ports listen, and their ProxyConfig keys."""

    model_config = ConfigDict(extra="allow")

    count: int = Field(1, ge=1, le=8, description="proxy nodes: proxy-0 .. proxy-<count-1>")
    host: str = Field(DEFAULT_HOST, description="IP address the gRPC ports bind (default 127.0.0.1)")
    ports: dict[str, Annotated[int, Field(ge=1, le=65535)]] = Field(
        default_factory=dict, description="proxy node -> its gRPC port; the others get a free one")

    @field_validator("host")
    @classmethod
    def _ip_literal(cls, v: str) -> str:
        return ip_literal(v)

    @model_validator(mode="after")
    def _known_keys(self) -> "Proxies":
        problems = []
        for key in (self.model_extra or {}):
            if key not in CONFIG_KEYS:
                known = ", ".join(["count", "host", "ports", *sorted(CONFIG_KEYS)])
                problems.append(f"{key}: not a proxy setting (known: {known})")
        names = self.names
        for node in self.ports:
            if node not in names:
                problems.append(f"ports.{node[:80]}: not a proxy of this topology (valid: {', '.join(names)})")
        if problems:
            raise ValueError("; ".join(problems))
        try:
            ProxyConfig.from_dict(self.config)
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def names(self) -> list[str]:
        return [f"proxy-{i}" for i in range(self.count)]

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _coerce(v: Any) -> Any:
    if v is None or v == 0:
        return None
    if isinstance(v, bool):
        raise ValueError("expected a count (1-8) or a mapping {count: N, host: IP, ports: {proxy-0: port}, ...}")
    if isinstance(v, int):
        return {"count": v}
    return v


#: The ``proxies:`` field's type: none (None) or :class:`Proxies`.
ProxiesKey = Annotated[Proxies | None, BeforeValidator(_coerce), Field(
    description="RocketMQ 5 proxies serving gRPC (docs/real-clients.md): a count, or {count, host, ports, "
                "ProxyConfig keys}")]


def spec_grpc(cluster: "Launcher", name: str) -> str | None:
    """A proxy spec's ``grpc``: ``HOST:PORT`` (the port it bound before, else the topology's, else 0)."""
    proxies = cluster.topo.proxies
    if proxies is None or cluster.plans[name].role != "proxy":
        return None
    bound = remoting_host_port(cluster.grpc_addrs.get(name))
    port = bound[1] if bound is not None else proxies.ports.get(name, 0)
    return f"{proxies.host}:{port}"


def join_endpoints(grpc_addrs: Mapping[str, str], proxies: list[str]) -> str | None:
    """``HOST:PORT;HOST:PORT`` of the proxies (in order) that have a gRPC address; None if none."""
    found = [grpc_addrs[n] for n in proxies if grpc_addrs.get(n)]
    return ";".join(found) if found else None


def endpoints(cluster: "Launcher") -> str | None:
    """The running cluster's endpoints for RocketMQ 5 clients; None without proxies."""
    return join_endpoints(cluster.grpc_addrs, [n for n, p in cluster.plans.items() if p.role == "proxy"])


def manifest_endpoints(manifest: Mapping[str, Any]) -> str | None:
    nodes = manifest.get("nodes") or {}
    return join_endpoints({n: e.get("grpc_addr") for n, e in nodes.items()},
                          [n for n, e in nodes.items() if e.get("role") == "proxy"])


def proxy_warnings(topo: "Topology") -> list[str]:
    """Real RocketMQ 5 clients live in wall time, as real 4.x clients do (docs/real-clients.md "Time"); an
    emulated one (``client: v5``) is a node of the run, its intervals scaled like every node's, but a
    topology with proxies may always have real clients connect, so the warning stays, saying so."""
    if topo.proxies is None:
        return []
    out = []
    if topo.timing.scale != 1.0:
        out.append(f"proxies: at timing.scale {topo.timing.scale:g} the cluster's intervals are scaled but a real "
                   "RocketMQ 5 client's are not (route refresh 30 s, heartbeat 10 s): timing.scale 1.0 is faithful "
                   "for real clients only; emulated ones (client: v5) are scaled like every node")
    if not ipaddress.ip_address(topo.proxies.host).is_loopback:
        out.append(f"proxies.host {topo.proxies.host} is not a loopback address: the gRPC ports accept connections "
                   "from other hosts, with no authentication")
    return out
