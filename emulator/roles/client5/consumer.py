"""The emulated RocketMQ 5 SimpleConsumer (the Java client's ``SimpleConsumerImpl``, an application
looping ``receive`` then ``ack``; docs/rocketmq-model.md §10.6).

Each receive takes the next subscribed topic in turn and the next readable queue of its route
(``SubscriptionLoadBalancer``: round robin over broker id 0's readable queues) and asks for up to
``receiveBatch`` (16) messages leased for ``invisibleDuration`` (20 s), long-polling up to
``awaitDuration`` (20 s); the call waits ``requestTimeout`` more. Every message received is in a
``consume`` line (one per broker queue) with its offsets and ``delivery_attempts``, as a 4.x
consumer writes a listener's call; the workload's ``fail_rate`` leaves a message un-acked (in
``reconsume_later`` instead of ``msg_ids``): its lease runs out and the broker
hands it out again, one attempt later. The others are acked, one AckMessage each as the
application acks each ``MessageView``. The next receive starts at once; after a failed one (no
answer, an error status) the application waits ``receiveRetryDelay``. A FIFO group (the proxy's
``fifoGroups``) goes through the same calls: the broker holds a group's next message back until
the previous one is acked.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from rmqemu.emulator.roles.client.workload import ConsumerWorkload
from rmqemu.emulator.roles.client5.base import Client5, Client5Config, Code, v2
from rmqemu.emulator.roles.client5.workload import V5, consumer_workload
from rmqemu.emulator.roles.common.base import Action, After, Emit, Now
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb


def handle_broker(handle: str) -> str | None:
    """The broker a receipt handle names (its sixth field, docs/rocketmq-model.md §10.2): rmqemu's
    bookkeeping reads it; the 5.x client treats the handle as opaque."""
    parts = handle.split(" ")
    return parts[5] if len(parts) > 5 else None


class SimpleConsumer5(Client5):
    role = "consumer"
    client_type = pb.SIMPLE_CONSUMER

    def __init__(self, name: str, addr: str, *, group: str, seed: int, v5: V5, workload: ConsumerWorkload,
                 cfg: Client5Config | None = None) -> None:
        super().__init__(name, addr, group=group, endpoints=v5.endpoints, cfg=cfg or Client5Config.from_dict(v5.config))
        self.workload = workload
        self.rng = random.Random(f"{seed}:{name}")
        self.fail_rate = float(workload.fail_rate)
        self.topic_index = 0
        self.queue_index: dict[str, int] = {}
        self.receiving = False
        self.stopping = False
        self.stats = {"receives": 0, "received": 0, "acked": 0, "ack_failed": 0, "left_unacked": 0, "empty": 0,
                      "receive_failed": 0}

    @classmethod
    def from_spec(cls, spec: NodeSpec, addr: str, read_store: Callable[[str], str | None]) -> "SimpleConsumer5":
        v5, workload = consumer_workload(dict(spec.workload))
        return cls(spec.name, addr, group=spec.group or spec.name, seed=spec.seed, v5=v5, workload=workload)

    def topics(self) -> list[str]:
        return [s["topic"] for s in self.workload.subscribe]

    def begin(self, now: Now) -> list[Action]:
        return self._receive(now)

    def stop(self, now: Now) -> list[Action]:
        self.stopping = True
        return []

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == "receive":
            return self._receive(now)
        return super().on_timer(name, now)

    # ------------------------------------------------------------------ receive

    def _receive(self, now: Now) -> list[Action]:
        if self.receiving or self.stopping:
            return []
        subs = self.workload.subscribe
        sub = subs[self.topic_index % len(subs)]
        self.topic_index += 1
        self.receiving = True
        return self.route(sub["topic"], now, lambda queues, n: self._receive_from(sub, n))

    def _receive_from(self, sub: dict[str, str], now: Now) -> list[Action]:
        topic = sub["topic"]
        queues = self.subscribe_queues(topic)
        if not queues:
            return self._retry_later()
        i = self.queue_index.get(topic, self.rng.randrange(len(queues)))
        self.queue_index[topic] = i + 1
        mq = queues[i % len(queues)]
        req = pb.ReceiveMessageRequest(batch_size=self.cfg.receiveBatch, auto_renew=False)
        req.group.name = self.group
        req.message_queue.CopyFrom(mq)
        req.filter_expression.type = pb.TAG
        req.filter_expression.expression = sub.get("expression") or "*"
        v2.set_duration(req.invisible_duration, self.cfg.invisibleDuration)
        v2.set_duration(req.long_polling_timeout, self.cfg.awaitDuration)
        self.stats["receives"] += 1

        def answered(resp: Any, addr: str | None, rnow: Now) -> list[Action]:
            return self._received(topic, mq, resp, addr, rnow)

        return self.call("ReceiveMessage", req, now, answered, extra_ms=self.cfg.awaitDuration)

    def _retry_later(self) -> list[Action]:
        self.receiving = False
        self.stats["receive_failed"] += 1
        return [After("receive", self.cfg.receiveRetryDelay)]

    def _received(self, topic: str, mq: pb.MessageQueue, resp: Any, addr: str | None, now: Now) -> list[Action]:
        if resp is None:
            return self._retry_later()
        status = next((r.status for r in resp if r.WhichOneof("content") == "status"), None)
        messages = [r.message for r in resp if r.WhichOneof("content") == "message"]
        if status is None or status.code not in (Code.OK, Code.MESSAGE_NOT_FOUND):
            return self._retry_later()
        self.receiving = False
        if not messages:
            self.stats["empty"] += 1
            return [] if self.stopping else self._receive(now)
        actions = self._consume(topic, mq, messages, self.proxy_name(addr), now)
        return actions + ([] if self.stopping else self._receive(now))

    def _consume(self, topic: str, mq: pb.MessageQueue, messages: list[pb.Message], proxy: str,
                 now: Now) -> list[Action]:
        self.stats["received"] += len(messages)
        failed = {m.system_properties.message_id for m in messages if self.rng.random() < self.fail_rate}
        by_queue: dict[tuple[str, int], list[pb.Message]] = {}
        for m in messages:
            broker = handle_broker(m.system_properties.receipt_handle) or mq.broker.name
            by_queue.setdefault((broker, m.system_properties.queue_id), []).append(m)
        actions: list[Action] = []
        for (broker, qid), ms in sorted(by_queue.items()):
            ok = [m for m in ms if m.system_properties.message_id not in failed]
            fields: dict[str, Any] = {
                "group": self.group, "topic": topic, "broker": broker, "queue_id": qid,
                "msg_ids": [m.system_properties.message_id for m in ok],
                "offsets": [m.system_properties.queue_offset for m in ok],
                "delivery_attempts": [m.system_properties.delivery_attempt for m in ok], "proxy": proxy}
            if len(ok) < len(ms):  # as the 4.x consumer writes a listener's failures
                fields["reconsume_later"] = [m.system_properties.message_id for m in ms if m not in ok]
            actions.append(Emit("consume", fields))
        for m in messages:
            if m.system_properties.message_id in failed:
                self.stats["left_unacked"] += 1
            else:
                actions += self._ack(topic, m, now)
        return actions

    def _ack(self, topic: str, m: pb.Message, now: Now) -> list[Action]:
        req = pb.AckMessageRequest(entries=[pb.AckMessageEntry(message_id=m.system_properties.message_id,
                                                               receipt_handle=m.system_properties.receipt_handle)])
        req.group.name = self.group
        req.topic.name = topic

        def answered(resp: Any, addr: str | None, rnow: Now) -> list[Action]:
            ok = resp is not None and resp.status.code == Code.OK
            self.stats["acked" if ok else "ack_failed"] += 1  # a failed ack: the lease runs out, it comes back
            return []

        return self.call("AckMessage", req, now, answered)

    def state(self) -> dict[str, Any]:
        return {**self.base_state(), **self.stats, "receiving": self.receiving}
