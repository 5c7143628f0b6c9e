"""A producer or consumer entry's ``client: v5``: emulated RocketMQ 5 clients, nodes of the run that
call the topology's proxies (docs/design.md §5, docs/rocketmq-model.md §10.6).

``endpoints`` names the proxies a v5 client uses, in access-point order (default: every proxy,
``proxy-0`` first). A v5 producer takes ``message_type`` (NORMAL; FIFO with ``message_groups``
groups per instance; DELAY with ``delay`` ahead, cluster time); the 4.x send options (``mode``
other than sync, ``batch``, ``ordered``, ``transaction``, ``delay_level``) and a v5 consumer's
4.x options (``orderly``, BROADCASTING) are refused, and the entry's extra keys are the v5 client's
settings (:class:`emulator.roles.client5.base.Client5Config`), not 4.x client keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from rmqemu.emulator.roles.client5.base import Client5Config

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.topology import ConsumerEntry, ProducerEntry, Topology

ClientKind = Literal["v4", "v5"]
CLIENT_FIELD = Field("v4", description="v4: a 4.9 client over remoting (the default); v5: an emulated RocketMQ 5 "
                     "client calling the topology's proxies (needs `proxies:`)")
ENDPOINTS_FIELD = Field(None, description="v5 clients: the proxies to call, in access-point order (default: all)")
MESSAGE_TYPE_FIELD = Field(None, description="v5 producers: NORMAL (default), FIFO (message_groups groups per "
                           "instance) or DELAY (`delay` ahead)")


def check_config(extra: dict[str, Any]) -> object:
    return Client5Config.from_dict(extra)


def producer_problems(p: "ProducerEntry") -> list[str]:
    if p.client != "v5":
        v5_only = [k for k in ("endpoints", "message_type") if getattr(p, k) is not None]
        return [f"{k}: only for a RocketMQ 5 client (client: v5)" for k in v5_only]
    out = []
    for key, bad in (("mode", p.mode != "sync"), ("batch", p.batch != 1), ("ordered", p.ordered is not None),
                     ("transaction", p.transaction is not None), ("delay_level", p.delay_level not in (0, [0]))):
        if bad:
            out.append(f"{key}: not for a RocketMQ 5 producer (client: v5 sends one message per call, sync; "
                       "use message_type FIFO or DELAY)")
    return out


def consumer_problems(c: "ConsumerEntry") -> list[str]:
    if c.client != "v5":
        return ["endpoints: only for a RocketMQ 5 client (client: v5)"] if c.endpoints is not None else []
    out = []
    if c.orderly:
        out.append("orderly: not for a RocketMQ 5 SimpleConsumer (a FIFO group is the proxy's fifoGroups)")
    if c.messageModel != "CLUSTERING":
        out.append("messageModel: a RocketMQ 5 SimpleConsumer consumes as a cluster (POP)")
    return out


def topology_problems(topo: "Topology") -> list[str]:
    """A v5 client needs proxies, and its endpoints must name them."""
    out = []
    proxies = topo.proxies.names if topo.proxies is not None else []
    for section, entries in (("producers", topo.producers), ("consumers", topo.consumers)):
        for i, e in enumerate(entries):
            if e.client != "v5":
                continue
            if not proxies:
                out.append(f"{section}[{i}].client: a RocketMQ 5 client (client: v5) needs `proxies:` to call")
                continue
            for j, name in enumerate(e.endpoints or []):
                if name not in proxies:
                    out.append(f"{section}[{i}].endpoints[{j}]: {name!r} is no proxy of this topology "
                               f"(known: {', '.join(proxies)})")
    return out


def workload(entry: Any, topo: "Topology") -> dict[str, Any]:
    """The 5.x part of a v5 entry's node workload (:mod:`emulator.roles.client5.workload`)."""
    assert topo.proxies is not None
    out: dict[str, Any] = {"client": "v5", "endpoints": list(entry.endpoints or topo.proxies.names),
                           "config": dict(entry.model_extra or {})}
    if getattr(entry, "message_type", None) is not None:
        out.update(message_type=entry.message_type, message_groups=entry.message_groups,
                   delay_ms=int(entry.delay * 1000))
    return out
