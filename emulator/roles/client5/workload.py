"""What an emulated RocketMQ 5 client's node spec says (its ``workload``, built by
``emulator/launcher/topology_client5.py``): the 4.x workload's knobs where they fit (topics,
rate, size, keys, body for a producer; subscriptions and ``fail_rate`` for a consumer, read by
:mod:`emulator.roles.client.workload`), plus the 5.x ones: the proxies to use (``endpoints``, node
names in access-point order), a producer's ``message_type`` (NORMAL, FIFO with ``message_groups``
groups per instance, DELAY with ``delay_ms`` ahead), and ``config`` (:class:`.base.Client5Config`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rmqemu.emulator.roles.client.workload import ConsumerWorkload, ProducerWorkload

MESSAGE_TYPES = ("NORMAL", "FIFO", "DELAY")
V5_KEYS = ("client", "endpoints", "message_type", "message_groups", "delay_ms", "config")


@dataclass
class V5:
    endpoints: list[str]
    message_type: str = "NORMAL"
    message_groups: int = 8
    delay_ms: int = 10_000
    config: dict[str, Any] = field(default_factory=dict)


def split(raw: dict[str, Any]) -> tuple[V5, dict[str, Any]]:
    """(the 5.x part, the rest for the 4.x workload parser); ValueError on a bad 5.x part."""
    rest = {k: v for k, v in raw.items() if k not in V5_KEYS}
    if raw.get("client") != "v5":
        raise ValueError(f"workload.client: a RocketMQ 5 client's workload says client v5, got {raw.get('client')!r}")
    v5 = V5(endpoints=list(raw.get("endpoints") or []), message_type=raw.get("message_type", "NORMAL"),
            message_groups=raw.get("message_groups", 8), delay_ms=raw.get("delay_ms", 10_000),
            config=dict(raw.get("config") or {}))
    if not v5.endpoints or not all(isinstance(e, str) for e in v5.endpoints):
        raise ValueError("workload.endpoints: a RocketMQ 5 client needs the proxies it calls (node names)")
    if v5.message_type not in MESSAGE_TYPES:
        raise ValueError(f"workload.message_type: one of {', '.join(MESSAGE_TYPES)}, got {v5.message_type!r}")
    if not isinstance(v5.message_groups, int) or isinstance(v5.message_groups, bool) or v5.message_groups < 1:
        raise ValueError(f"workload.message_groups: an int >= 1, got {v5.message_groups!r}")
    if not isinstance(v5.delay_ms, (int, float)) or isinstance(v5.delay_ms, bool) or v5.delay_ms < 0:
        raise ValueError(f"workload.delay_ms: a number >= 0, got {v5.delay_ms!r}")
    return v5, rest


def producer_workload(raw: dict[str, Any]) -> tuple[V5, ProducerWorkload]:
    v5, rest = split(raw)
    return v5, ProducerWorkload.from_dict(rest)


def consumer_workload(raw: dict[str, Any]) -> tuple[V5, ConsumerWorkload]:
    v5, rest = split(raw)
    return v5, ConsumerWorkload.from_dict(rest)
