"""The node spec: everything one node process needs, written by the launcher, read by the node.

The launcher writes ``specs/<node>.json`` (mode 0600; it holds no secret: the control key goes
to the node's stdin, see ``emulator.transport._auth``) and starts
``python -m rmqemu.emulator.node RUN_DIR NODE``; the node reads the file back into a :class:`NodeSpec`
and hands it to its role's ``from_spec``. One frozen, typed record instead of a dict means a
missing or mistyped key fails once, when the node starts, with the key's name, rather than as a
``KeyError`` deep in a role; and each default lives here only.

It sits with the roles (the lowest layer) because roles read it; the launcher and the node
runtime import it from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping

RoleName = Literal["namesrv", "broker", "producer", "consumer", "proxy"]
ROLE_NAMES: tuple[str, ...] = ("namesrv", "broker", "producer", "consumer", "proxy")
DEFAULT_SCALE = 0.01  # timing.scale when a spec leaves it out (hand-made specs in tests)
# timing.minRequestTimeoutWallMs: the wall-clock floor of every request timeout (docs/design.md §3
# has the measurements behind 200; the producer's minSendTimeoutWallMs default is the same)
DEFAULT_MIN_REQUEST_TIMEOUT_WALL_MS = 200.0


def _frozen(mapping: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


def remoting_host_port(addr: object) -> tuple[str, int] | None:
    """``("127.0.0.1", 9876)`` from ``"127.0.0.1:9876"``; None if it is not HOST:PORT."""
    if not isinstance(addr, str):
        return None
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        return None
    return host, int(port)


@dataclass(frozen=True)
class NodeSpec:
    """One node: its identity, where it writes, whom it knows at start, and its RocketMQ keys.

    ``config`` holds RocketMQ configuration keys (``pollNameServerInterval``, ...), ``workload``
    what a client does (topics and rate, subscriptions); both are read-only mappings.

    ``scale``, ``anchor_ms`` and ``min_request_timeout_wall_ms`` are for the node runtime's
    ``ClusterTime`` (roles read none of them): ``anchor_ms`` is the run's start in host wall ms,
    the same for every node of a run so their cluster wall clocks agree; 0 in a hand-made spec
    (still the same for every node). ``min_request_timeout_wall_ms`` is
    ``timing.minRequestTimeoutWallMs``, the wall floor of every request's timeout.
    """

    name: str
    role: RoleName
    seed: int = 0
    scale: float = DEFAULT_SCALE
    anchor_ms: float = 0.0
    min_request_timeout_wall_ms: float = DEFAULT_MIN_REQUEST_TIMEOUT_WALL_MS
    port: int = 0  # 0: any free port; a restarted node gets its old one so routes stay valid
    remoting: str | None = None  # "HOST:PORT" of the remoting port for real clients (port 0: any); None: off
    grpc: str | None = None  # "HOST:PORT" of the gRPC port for RocketMQ 5 clients (a proxy's; port 0: any); None: off
    control: str | None = None  # the launcher's control endpoint; None in unit tests
    store_dir: str | None = None
    events: str | None = None
    namesrv_addrs: tuple[str, ...] = ()
    namesrv_names: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=_frozen)
    workload: Mapping[str, Any] = field(default_factory=_frozen)
    broker: str | None = None
    broker_id: int | None = None
    cluster: str | None = None
    group: str | None = None

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.name, str) or not self.name:
            problems.append(f"name: expected a node name, got {self.name!r}")
        if self.role not in ROLE_NAMES:
            problems.append(f"role: expected one of {', '.join(ROLE_NAMES)}, got {self.role!r}")
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float)) or not self.scale > 0:
            problems.append(f"scale: expected a number > 0, got {self.scale!r}")
        if isinstance(self.anchor_ms, bool) or not isinstance(self.anchor_ms, (int, float)) or self.anchor_ms < 0:
            problems.append(f"anchor_ms: expected a number >= 0, got {self.anchor_ms!r}")
        floor = self.min_request_timeout_wall_ms
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or floor < 0:
            problems.append(f"min_request_timeout_wall_ms: expected a number >= 0, got {floor!r}")
        for key in ("seed", "port"):
            if isinstance(getattr(self, key), bool) or not isinstance(getattr(self, key), int):
                problems.append(f"{key}: expected an integer, got {getattr(self, key)!r}")
        for key in ("remoting", "grpc"):
            if getattr(self, key) is not None and remoting_host_port(getattr(self, key)) is None:
                problems.append(f"{key}: expected HOST:PORT with a port in 0..65535, got {getattr(self, key)!r}")
        if problems:
            raise ValueError("node spec: " + "; ".join(problems))
        object.__setattr__(self, "scale", float(self.scale))
        object.__setattr__(self, "anchor_ms", float(self.anchor_ms))
        object.__setattr__(self, "min_request_timeout_wall_ms", float(self.min_request_timeout_wall_ms))
        object.__setattr__(self, "namesrv_addrs", tuple(self.namesrv_addrs))
        object.__setattr__(self, "namesrv_names", tuple(self.namesrv_names))
        object.__setattr__(self, "config", _frozen(self.config))
        object.__setattr__(self, "workload", _frozen(self.workload))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "NodeSpec":
        """Build from the JSON object; unknown keys are an error (a typo would otherwise be lost)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"node spec: expected a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"node spec: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        missing = [k for k in ("name", "role") if k not in data]
        if missing:
            raise ValueError(f"node spec: missing key(s) {', '.join(missing)}")
        return cls(**data)

    @classmethod
    def read(cls, path: Path) -> "NodeSpec":
        """Read ``specs/<node>.json``; ``OSError`` or ``ValueError`` naming the file and the key."""
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the launcher writes (keys that are None are left out)."""
        data: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        data["config"], data["workload"] = dict(self.config), dict(self.workload)
        data["namesrv_addrs"], data["namesrv_names"] = list(self.namesrv_addrs), list(self.namesrv_names)
        return {k: v for k, v in data.items() if v is not None}
