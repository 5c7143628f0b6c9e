"""The emulated RocketMQ 5 producer (the Java client's ``ProducerImpl``; docs/rocketmq-model.md §10.6).

The workload's ticks send one message each, sequentially like the 4.x sync producer (a tick that
finds a send in flight is skipped and counted). A send takes its topic's route (queried first if
the client has none), then its **candidates**: a FIFO message the one queue of its group
(``sipHash24(group) mod n``, :mod:`.siphash`), any other up to ``maxAttempts`` queues on distinct
brokers from a round-robin index (``PublishingLoadBalancer.takeMessageQueues``; the isolation of
failed endpoints changes nothing in cluster mode, where every queue names the same endpoints).
Attempt ``k`` goes to candidate ``(k - 1) mod len``. A failed attempt (no answer within
``requestTimeout``, or any status but OK) is retried at once, or after the backoff
``min(10 ms x 2^(k-1), 1 s)`` when the status was TOO_MANY_REQUESTS (``ProducerImpl.send0``; the
Python client stops there instead), until ``maxAttempts``.

Each attempt is a ``send`` line (``mode`` ``grpc``, ``proxy`` the proxy it went to, ``broker`` and
``queue_id`` where the proxy sent it: the 5.x proxy picks the queue itself, and its answer on
rmqemu's wire names it; the candidate's, the client's belief, when no answer came),
a message given up a ``send.fail``; both as the 4.x producer writes them, so the report's sends,
misroute and loss metrics read them alike.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from rmqemu.emulator.roles.client.workload import MIN_TICK_MS, MessageFactory, OutgoingMessage, Pacer, ProducerWorkload
from rmqemu.emulator.roles.client5.base import Client5, Client5Config, Code, v2
from rmqemu.emulator.roles.client5.siphash import group_index
from rmqemu.emulator.roles.client5.workload import V5, producer_workload
from rmqemu.emulator.roles.common.base import Action, After, Emit, Every, Now
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb

TYPES = {"NORMAL": pb.NORMAL, "FIFO": pb.FIFO, "DELAY": pb.DELAY}
TIMEOUT_CODES = (Code.PROXY_TIMEOUT,)


@dataclass
class Send5:
    msg: OutgoingMessage
    message_type: str
    message_group: str | None
    deliver_ms: float | None
    candidates: list[pb.MessageQueue]
    attempt: int = 0


def take_queues(queues: list[pb.MessageQueue], count: int, start: int) -> list[pb.MessageQueue]:
    """Up to ``count`` queues on distinct brokers, walking the list from ``start``."""
    out: list[pb.MessageQueue] = []
    seen: set[str] = set()
    for i in range(len(queues)):
        q = queues[(start + i) % len(queues)]
        if q.broker.name not in seen:
            seen.add(q.broker.name)
            out.append(q)
        if len(out) >= count:
            break
    return out


class Producer5(Client5):
    role = "producer"
    client_type = pb.PRODUCER

    def __init__(self, name: str, addr: str, *, group: str, seed: int, v5: V5, workload: ProducerWorkload,
                 cfg: Client5Config | None = None) -> None:
        super().__init__(name, addr, group=group, endpoints=v5.endpoints, cfg=cfg or Client5Config.from_dict(v5.config))
        self.v5 = v5
        self.workload = workload
        self.rng = random.Random(f"{seed}:{name}")
        self.factory = MessageFactory(name, workload, self.rng, random.Random(f"{seed}:{name}:body"))
        self.index = self.rng.randrange(2**31)  # PublishingLoadBalancer's round-robin index starts at random
        self.pacer: Pacer | None = None
        self.in_flight: Send5 | None = None
        self.sends = {"sent": 0, "ok": 0, "failed": 0, "skipped_ticks": 0}

    @classmethod
    def from_spec(cls, spec: NodeSpec, addr: str, read_store: Callable[[str], str | None]) -> "Producer5":
        v5, workload = producer_workload(dict(spec.workload))
        return cls(spec.name, addr, group=spec.group or spec.name, seed=spec.seed, v5=v5, workload=workload)

    def topics(self) -> list[str]:
        return list(self.workload.topics)

    def begin(self, now: Now) -> list[Action]:
        self.factory.set_incarnation(now.wall_ms)
        period = self.workload.period_ms()
        if period is None:
            return []
        self.pacer = Pacer(now.mono_ms + period, period, self.workload.count)
        return [Every("workload", period, period, min_period_wall_ms=MIN_TICK_MS)]

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == "workload":
            return self._tick(now)
        if name == "retry" and self.in_flight is not None:
            return self._attempt(self.in_flight, now)
        return super().on_timer(name, now)

    def _tick(self, now: Now) -> list[Action]:
        if self.pacer is None:
            return []
        actions: list[Action] = []
        for _ in range(self.pacer.due(now.mono_ms)):
            self.pacer.issued += 1
            if self.in_flight is not None:
                self.sends["skipped_ticks"] += 1
                continue
            actions += self.send(self.factory.next_message(), now)
        return actions

    # ------------------------------------------------------------------ sending

    def send(self, msg: OutgoingMessage, now: Now) -> list[Action]:
        """``producer.send(message)``: the route, the candidates, the attempts."""
        mtype = self.v5.message_type
        group = f"{self.name}:g{self.rng.randrange(self.v5.message_groups)}" if mtype == "FIFO" else None
        deliver = now.wall_ms + self.v5.delay_ms if mtype == "DELAY" else None
        job = Send5(msg, mtype, group, deliver, [])
        self.in_flight = job
        self.sends["sent"] += 1
        return self.route(msg.topic, now, lambda queues, n: self._with_route(job, n))

    def _with_route(self, job: Send5, now: Now) -> list[Action]:
        queues = self.publish_queues(job.msg.topic)
        if not queues:
            text = f"no writable queue of topic {job.msg.topic} in the route"
            return [self._line(job, None, 1, "no_route", None, None, None, text)] + self._give_up(job, None, text, 0)
        if job.message_group is not None:
            job.candidates = [queues[group_index(job.message_group, len(queues))]]
        else:
            self.index = (self.index + 1) % 2**31
            job.candidates = take_queues(queues, self.cfg.maxAttempts, self.index)
        return self._attempt(job, now)

    def _request(self, job: Send5, now: Now) -> pb.SendMessageRequest:
        m = pb.Message(body=job.msg.body)
        m.topic.name = job.msg.topic
        sp = m.system_properties
        sp.message_id = job.msg.msg_id
        sp.message_type = TYPES[job.message_type]
        sp.body_encoding = pb.IDENTITY
        sp.born_host = self.addr
        v2.set_timestamp(sp.born_timestamp, now.wall_ms)
        if job.msg.properties.get("KEYS"):
            sp.keys.append(job.msg.properties["KEYS"])
        if job.message_group is not None:
            sp.message_group = job.message_group
        if job.deliver_ms is not None:
            v2.set_timestamp(sp.delivery_timestamp, job.deliver_ms)
        sp.queue_id = job.candidates[(job.attempt - 1) % len(job.candidates)].id
        return pb.SendMessageRequest(messages=[m])

    def _attempt(self, job: Send5, now: Now) -> list[Action]:
        job.attempt += 1
        attempt, mq = job.attempt, job.candidates[(job.attempt - 1) % len(job.candidates)]
        sent = now.host_mono_ms
        where: dict[str, Any] = {}  # the queue the proxy chose, from its answer

        def answered(resp: Any, addr: str | None, rnow: Now) -> list[Action]:
            latency = None if resp is None else round(rnow.host_mono_ms - sent, 3)
            actual = mq if not where else _queue(str(where["broker"]), int(where.get("queue_id", -1)))
            entry = resp.entries[0] if resp is not None and len(resp.entries) == 1 else None
            status = entry.status if entry is not None and resp.status.code == Code.OK else (
                resp.status if resp is not None else None)
            if status is not None and status.code == Code.OK:
                line = self._line(job, actual, attempt, "ok", Code.OK, latency, addr)
                return [line] + self._finish(job, True)
            code = status.code if status is not None else None
            outcome = "timeout" if code is None or code in TIMEOUT_CODES else "error"
            text = status.message if status is not None else (
                "no endpoint" if addr is None else f"no answer from {self.proxy_name(addr)} within the request timeout")
            line = self._line(job, actual, attempt, outcome, code, latency, addr, text)
            if attempt >= self.cfg.maxAttempts:
                return [line] + self._give_up(job, code, f"failed after {attempt} attempts: {text}", attempt)
            if code == Code.TOO_MANY_REQUESTS:  # throttled: back off before the next attempt
                delay = min(self.cfg.initialBackoff * self.cfg.backoffMultiplier ** attempt, self.cfg.maxBackoff)
                return [line, After("retry", delay)]
            return [line] + self._attempt(job, rnow)

        return self.call("SendMessage", self._request(job, now), now, answered, where=where)

    def _line(self, job: Send5, mq: pb.MessageQueue | None, attempt: int, outcome: str, code: int | None,
              latency: float | None, addr: str | None, error: str | None = None) -> Emit:
        fields: dict[str, Any] = {
            "msg_id": job.msg.msg_id, "topic": job.msg.topic, "group": self.group,
            "broker": mq.broker.name if mq is not None else None, "broker_id": 0 if mq is not None else None,
            "broker_addr": None, "queue_id": mq.id if mq is not None else None, "attempt": attempt,
            "outcome": outcome, "code": code, "latency_ms": latency, "mode": "grpc",
            "message_type": job.message_type}
        if addr is not None:
            fields["proxy"] = self.proxy_name(addr)
        if error is not None:
            fields["error"] = error
        if job.message_group is not None:
            fields["sharding_key"] = job.message_group
        if job.deliver_ms is not None:
            fields["deliver_ms"] = float(job.deliver_ms)
        return Emit("send", fields)

    def _give_up(self, job: Send5, code: int | None, text: str, attempts: int) -> list[Action]:
        fields: dict[str, Any] = {"msg_id": job.msg.msg_id, "topic": job.msg.topic, "group": self.group,
                                  "mode": "grpc", "attempts": attempts, "code": code, "error": text}
        if job.message_group is not None:
            fields["sharding_key"] = job.message_group
        return [Emit("send.fail", fields)] + self._finish(job, False)

    def _finish(self, job: Send5, ok: bool) -> list[Action]:
        self.sends["ok" if ok else "failed"] += 1
        if self.in_flight is job:
            self.in_flight = None
        return []

    def state(self) -> dict[str, Any]:
        return {**self.base_state(), **self.sends, "in_flight": self.in_flight is not None}


def _queue(broker: str, queue_id: int) -> pb.MessageQueue:
    mq = pb.MessageQueue(id=queue_id)
    mq.broker.name = broker
    return mq
