"""The topology's ``remoting:`` key: real RocketMQ clients' TCP ports on namesrvs and brokers.

``remoting: true`` gives every namesrv and broker node a free loopback port that speaks RocketMQ
4.x's own protocol (docs/real-clients.md); a mapping ``{host: IP, ports: {node: port}}`` picks the
address and fixes some nodes' ports. Absent or ``false``: off. The model, its checks against the
topology's node names, and the warnings a run with real clients deserves live here;
:mod:`emulator.launcher.topology` holds the key.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterable, Mapping

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from rmqemu.emulator.launcher.nodes import node_table

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.topology import Topology

DEFAULT_HOST = "127.0.0.1"
NETTY_IDLE_S = 120.0  # serverChannelMaxIdleTimeSeconds: a node closes a connection idle this long (cluster s)
CLIENT_HEARTBEAT_S = 30.0  # heartbeatBrokerInterval of the Java client and ali-ons: 30 s of wall time
ROLES = ("namesrv", "broker")  # the nodes that get a remoting port; rmqemu's own clients never do


class Remoting(BaseModel):
    """Where the remoting ports listen: ``host`` (an IP literal) and ``ports`` fixed per node."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(DEFAULT_HOST, description="IP address the remoting ports bind (default 127.0.0.1)")
    ports: dict[str, Annotated[int, Field(ge=1, le=65535)]] = Field(
        default_factory=dict, description="node name (namesrv-0, broker-a-0, ...) -> its port; "
                                          "the other namesrv and broker nodes get a free one")

    @field_validator("host")
    @classmethod
    def _ip_literal(cls, v: str) -> str:
        return ip_literal(v)


def ip_literal(v: str) -> str:
    """A listening host must be an IP literal (``remoting.host``, ``proxies.host``): no name is resolved."""
    try:
        return str(ipaddress.ip_address(v))
    except ValueError:
        raise ValueError(f"{v[:80]!r} is not an IP address literal such as 127.0.0.1, ::1 or 0.0.0.0 "
                         "(a host name is not resolved)") from None


def switch(model: type[BaseModel], shape: str) -> Callable[[Any], Any]:
    """The before-validator of a key that is ``true`` (the model's defaults), ``false`` or absent
    (off: None) or a mapping for ``model`` to check; ``shape`` shows the mapping in the error."""

    def coerce(v: Any) -> Any:
        if v is None or v is False:
            return None
        if v is True:
            return {}
        if isinstance(v, (dict, model)):
            return v
        raise ValueError(f"expected true, false or a mapping {shape}, got {str(v)[:40]!r}")

    return coerce


def boolean_too(schema: dict[str, Any]) -> None:
    """JSON Schema of a :func:`switch` key: ``true``/``false`` are accepted beside the mapping."""
    schema["anyOf"] = [{"type": "boolean"}, *schema.get("anyOf", [])]


#: The ``remoting:`` field's type: off (None) or a :class:`Remoting`.
RemotingKey = Annotated[Remoting | None, BeforeValidator(switch(Remoting, "{host: IP, ports: {node: port}}")), Field(
    description="real RocketMQ clients' TCP port on every namesrv and broker node (docs/real-clients.md): "
                "true (free loopback ports), false (off, the default) or {host: IP, ports: {node: port}}",
    json_schema_extra=boolean_too)]


def remoting_nodes(namesrv_count: int, broker_nodes: Iterable[str]) -> list[str]:
    """The names of the nodes that get a remoting port: the namesrvs and every broker node."""
    return [*node_table(namesrv_count), *broker_nodes]


def port_problems(ports: Mapping[str, Any], nodes: list[str]) -> list[str]:
    """``remoting.ports.<node>: ...`` for a node that is no namesrv or broker of the topology and
    for a port given to two nodes."""
    problems, owner = [], {}
    for name, port in ports.items():
        if name not in nodes:
            shown = ", ".join(nodes[:24]) + (", ..." if len(nodes) > 24 else "")
            problems.append(f"remoting.ports.{str(name)[:80]}: not a namesrv or broker node of this topology "
                            f"(valid: {shown})")
        elif isinstance(port, int) and not isinstance(port, bool):
            if port in owner:
                problems.append(f"remoting.ports.{name}: port {port} is also given to {owner[port]}")
            owner.setdefault(port, name)
    return problems


def topology_problems(topo: "Topology") -> list[str]:
    """The ports' problems of a validated topology (its cross-references check)."""
    if topo.remoting is None:
        return []
    return port_problems(topo.remoting.ports, remoting_nodes(topo.namesrv_count,
                                                             (n for b in topo.brokers for n in b.node_names)))


def raw_problems(data: Mapping[str, Any], broker_nodes: list[str] | None) -> list[str]:
    """The same on a file's raw data, for a topology that failed elsewhere (every problem in one
    pass), given the raw entries' broker node names; nothing when the namesrvs or brokers are too
    malformed to name the nodes (``broker_nodes`` None)."""
    remoting, namesrvs = data.get("remoting"), data.get("namesrvs", 1)
    ports = remoting.get("ports") if isinstance(remoting, dict) else None
    count = namesrvs.get("count", 1) if isinstance(namesrvs, dict) else namesrvs
    if not isinstance(ports, dict) or broker_nodes is None or type(count) is not int:
        return []
    return port_problems(ports, remoting_nodes(min(max(count, 0), 16), broker_nodes))


def idle_close_s(topo: "Topology") -> float:
    """Cluster seconds after which a node closes an idle connection: the smallest
    ``serverChannelMaxIdleTimeSeconds`` of the namesrvs and brokers (default 120)."""
    configs = [topo.namesrv_config, *(dict(b.model_extra or {}) for b in topo.brokers)]
    return min(float(c.get("serverChannelMaxIdleTimeSeconds", NETTY_IDLE_S)) for c in configs)


def remoting_warnings(topo: "Topology") -> list[str]:
    """What a user starting real clients against this topology must know (not errors): an idle
    close shorter than a real client's heartbeat, and ports open to other hosts."""
    if topo.remoting is None:
        return []
    out = []
    scale, idle_s = topo.timing.scale, idle_close_s(topo)
    wall_s = idle_s * scale
    if wall_s < CLIENT_HEARTBEAT_S:
        out.append(
            f"remoting: at timing.scale {scale:g} a node closes a connection idle for {idle_s:g} s x {scale:g} = "
            f"{wall_s:.3g} wall s, but real clients live in wall time and heartbeat every "
            f"{CLIENT_HEARTBEAT_S:g} wall s: their connections would be closed between heartbeats. "
            f"timing.scale 1.0 is faithful for real clients; otherwise set the client's heartbeat interval "
            f"below {wall_s * 1000:.0f} ms (Java and ali-ons: heartbeatBrokerInterval) and scale its other "
            f"intervals likewise (pollNameServerInterval, ...)")
    if not ipaddress.ip_address(topo.remoting.host).is_loopback:
        out.append(f"remoting.host {topo.remoting.host} is not a loopback address: the remoting ports accept "
                   "connections from other hosts, with no authentication")
    return out
