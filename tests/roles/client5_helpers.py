"""Emulated RocketMQ 5 clients (emulator/roles/client5/) under the fake runtime, their calls
served by a real proxy role (:class:`.proxy_helpers.ProxyRig`) over a non-gRPC channel, as
rmqemu's wire carries them between nodes."""

from __future__ import annotations

from typing import Any

from rmqemu.emulator.protocol import Flag, Frame
from rmqemu.emulator.roles.client.workload import ConsumerWorkload, ProducerWorkload
from rmqemu.emulator.roles.client5.consumer import SimpleConsumer5
from rmqemu.emulator.roles.client5.producer import Producer5
from rmqemu.emulator.roles.client5.workload import V5

from .fakes import Driver
from .proxy_helpers import PROXY_ADDR, ProxyRig


def producer(rig: ProxyRig, rate: float = 0, **v5: Any) -> Driver:
    d = Driver(Producer5("pg-0", "127.0.0.1:19001", group="pg", seed=1, v5=V5(endpoints=["proxy-0"], **v5),
                         workload=ProducerWorkload(topics=["T"], rate=rate, body="text", size=40)),
               time=rig.cluster.time)
    d.start()
    d.run(lambda now: d.role.on_peers({"proxy-0": PROXY_ADDR}, now))
    return d


def consumer(rig: ProxyRig, fail_rate: float = 0.0) -> Driver:
    d = Driver(SimpleConsumer5("cg-0", "127.0.0.1:19002", group="G", seed=1, v5=V5(endpoints=["proxy-0"]),
                               workload=ConsumerWorkload(subscribe=[{"topic": "T", "expression": "*"}],
                                                         fail_rate=fail_rate)), time=rig.cluster.time)
    d.start()
    d.run(lambda now: d.role.on_peers({"proxy-0": PROXY_ADDR}, now))
    return d


def serve(rig: ProxyRig, client: Driver, rounds: int = 20) -> int:
    """Deliver the client's pending calls to the proxy on channel ``c5:<client>`` and hand back
    every answer the proxy wrote; the calls answered."""
    answered, served = 0, set()
    for _ in range(rounds):
        progressed = False
        for req in list(client.pending):
            opaque = client._opaque_of(req)
            if req.addr != PROXY_ADDR:
                continue
            channel = f"c5:{client.role.name}"
            if (channel, opaque) not in served:
                served.add((channel, opaque))
                rig.proxy.deliver(Frame(code=req.frame.code, opaque=opaque, flag=Flag.REQUEST,
                                        fields=req.frame.fields, body=req.frame.body),
                                  channel=channel, peer=client.role.name)
            rig.pump()
            reply = next((r.frame for r in rig.proxy.replies(channel) if r.frame.opaque == opaque), None)
            if reply is not None:
                client.answer(req, reply)
                answered += 1
                progressed = True
        if not progressed:
            break
    return answered
