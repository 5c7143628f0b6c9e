"""Which class plays which role: the one place that maps a spec's ``role`` to node logic."""

from __future__ import annotations

import importlib
from typing import Callable

from rmqemu.emulator.roles.common.base import Role
from rmqemu.emulator.roles.common.node_spec import NodeSpec

ROLE_CLASSES = {
    "namesrv": "rmqemu.emulator.roles.namesrv.namesrv:NameServer",
    "broker": "rmqemu.emulator.roles.broker.broker:Broker",
    "producer": "rmqemu.emulator.roles.client.producer:Producer",
    "consumer": "rmqemu.emulator.roles.client.consumer:Consumer",
    "proxy": "rmqemu.emulator.roles.proxy.proxy:Proxy",
}
#: RocketMQ 5 clients (a producer or consumer entry's ``client: v5``): nodes of the same roles
V5_CLASSES = {
    "producer": "rmqemu.emulator.roles.client5.producer:Producer5",
    "consumer": "rmqemu.emulator.roles.client5.consumer:SimpleConsumer5",
}


def build_role(spec: NodeSpec, addr: str, read_store: Callable[[str], str | None]) -> Role:
    """Construct the role named by ``spec.role`` through its ``from_spec`` factory (a producer or
    consumer whose workload says ``client: v5`` is an emulated RocketMQ 5 client)."""
    try:
        target = ROLE_CLASSES[spec.role]
        if spec.workload.get("client") == "v5" and spec.role in V5_CLASSES:
            target = V5_CLASSES[spec.role]
    except KeyError:
        raise ValueError(f"unknown role {spec.role!r}; known: {', '.join(ROLE_CLASSES)}") from None
    module_name, cls_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls.from_spec(spec, addr, read_store)
