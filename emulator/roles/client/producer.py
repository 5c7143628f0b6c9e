"""The producer node: a ``DefaultMQProducer`` in its own ``MQClientInstance`` (docs/rocketmq-model.md §3).

Timers (RocketMQ's intervals, in cluster ms): ``pollNameServer`` (initial 10 ms, every
pollNameServerInterval), ``heartbeat`` (initial 1000 ms, every heartbeatBrokerInterval; runs
cleanOfflineBroker first) and ``workload`` (see :mod:`emulator.roles.client.workload`).

Sync sends are sequential, like one application thread calling ``send()``: a workload tick that
finds a sync send in flight skips its message and counts it (``skipped_ticks`` in ``state()``).
Ordered sends (``workload.ordered``, docs/rocketmq-model.md §3.7) are sequential per sharding key,
like an application with one thread per key: a tick whose key has a send in flight skips its
message (``skipped_ticks``), while other keys go on.

A transactional producer (``workload.transaction``, docs/rocketmq-model.md §9.1) sends every message
with ``sendMessageInTransaction`` (:mod:`.transaction`): the call lasts through the local
transaction, so ticks are skipped while one runs, and it answers CHECK_TRANSACTION_STATE.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from rmqemu.emulator.protocol import RequestCode
from rmqemu.emulator.roles.client.client_config import ProducerConfig, config_from_dict
from rmqemu.emulator.roles.client.client_instance import ClientInstance, client_id_for, heartbeat_body
from rmqemu.emulator.roles.client.fault_strategy import MQFaultStrategy
from rmqemu.emulator.roles.client.route_cache import Route, TopicPublishInfo, to_publish_info
from rmqemu.emulator.roles.client.send_flow import SendJob
from rmqemu.emulator.roles.client.send_select import SelectSendFlow
from rmqemu.emulator.roles.client.transaction import CHECK_TIMER, LOCAL_TIMER, TransactionFlow
from rmqemu.emulator.roles.client.workload import (
    MIN_TICK_MS,
    KeyPicker,
    MessageFactory,
    OutgoingMessage,
    Pacer,
    ProducerWorkload,
)
from rmqemu.emulator.roles.common.base import Action, ChannelEvent, Emit, Every, Inbound, Log, Now, Role
from rmqemu.emulator.roles.common.node_spec import NodeSpec


class Producer(Role):
    role = "producer"

    def __init__(self, name: str, addr: str, *, group: str, cfg: ProducerConfig, seed: int,
                 namesrv_addrs: list[str], namesrv_names: list[str] | None = None,
                 workload: ProducerWorkload | None = None) -> None:
        super().__init__(name, addr)
        self.group = group
        self.cfg = cfg
        self.rng = random.Random(f"{seed}:{name}")
        self.client_id = client_id_for(name, cfg.clientIP, cfg.instanceName, cfg.unitName)
        self.instance = ClientInstance(
            client_id=self.client_id, namesrv_addrs=namesrv_addrs,
            namesrv_names=namesrv_names or list(namesrv_addrs),
            api_timeout_ms=cfg.mqClientApiTimeout, rng=self.rng, owner=self)
        self.fault = MQFaultStrategy(cfg.sendLatencyFaultEnable, self.rng)
        self.publish_table: dict[str, TopicPublishInfo] = {}
        self.flow = SelectSendFlow(self)
        self.workload = workload
        self.factory = (MessageFactory(name, workload, self.rng, random.Random(f"{seed}:{name}:body"))
                        if workload else None)
        self.keys = (KeyPicker(name, workload.ordered, random.Random(f"{seed}:{name}:keys"))
                     if workload and workload.ordered else None)
        self.tx = (TransactionFlow(group, self.instance, workload.transaction, seed, name)
                   if workload and workload.transaction else None)
        self.checks_ignored = 0  # CHECK_TRANSACTION_STATE to a producer that is not transactional
        self.pacer: Pacer | None = None
        self.sync_in_flight = False
        self.keys_in_flight: set[str] = set()  # ordered sends: one per key at a time
        self.counts = {"sent": 0, "ok": 0, "failed": 0, "skipped_ticks": 0}

    @classmethod
    def from_spec(cls, spec: NodeSpec, addr: str, read_store: Callable[[str], str | None]) -> "Producer":
        cfg = config_from_dict(ProducerConfig, dict(spec.config))
        group = spec.group or cfg.producerGroup
        cfg.producerGroup = group
        workload = ProducerWorkload.from_dict(dict(spec.workload)) if spec.workload else None
        return cls(spec.name, addr, group=group, cfg=cfg, seed=spec.seed,
                   namesrv_addrs=list(spec.namesrv_addrs), namesrv_names=list(spec.namesrv_names) or None,
                   workload=workload)

    # ------------------------------------------------------------------ lifecycle

    def start(self, now: Now) -> list[Action]:
        # DefaultMQProducerImpl.start: an empty TopicPublishInfo for createTopicKey (docs/rocketmq-model.md §3.1)
        self.publish_table[self.cfg.createTopicKey] = TopicPublishInfo.empty(self.rng)
        actions: list[Action] = [
            Every("pollNameServer", 10, self.cfg.pollNameServerInterval),
            Every("heartbeat", 1000, self.cfg.heartbeatBrokerInterval),
        ]
        if self.workload and self.factory:
            self.factory.set_incarnation(now.wall_ms)
            period = self.workload.period_ms()
            if period is not None:  # message 0 one period from now, when the timer first fires
                self.pacer = Pacer(now.mono_ms + period, period, self.workload.count)
                actions.append(Every("workload", period, period, min_period_wall_ms=MIN_TICK_MS))
        return actions

    def stop(self, now: Now) -> list[Action]:
        return self.instance.unregister(self.group, None)

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == "pollNameServer":
            return self.instance.poll_all(now)
        if name == "heartbeat":
            self.instance.clean_offline_brokers()
            return self.instance.heartbeat(heartbeat_body(self.client_id, [self.group], []), masters_only=True)
        if name == "workload":
            return self._workload_tick(now)
        if self.tx is not None and (name == CHECK_TIMER or name.startswith(LOCAL_TIMER)):
            return self.tx.on_timer(name)
        return []

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        """CHECK_TRANSACTION_STATE, pushed by a broker on this client's channel (docs/rocketmq-model.md §9.1)."""
        if msg.frame.code != RequestCode.CHECK_TRANSACTION_STATE:
            return []
        if self.tx is None:  # a DefaultMQProducer has no check executor: the check fails in the client
            self.checks_ignored += 1
            return [Log(f"checkTransactionState from {msg.peer}: producer group {self.group} is not transactional; "
                        "not answered (later ones are only counted)")] if self.checks_ignored == 1 else []
        return self.tx.on_check(msg)

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        self.instance.on_channel(event)
        return []

    # ------------------------------------------------------------------ sending

    def send(self, msgs: OutgoingMessage | list[OutgoingMessage], mode: str, now: Now,
             sharding_key: str | None = None,
             then: Callable[[SendJob, bool], list[Action]] | None = None) -> list[Action]:
        """``send(msg)`` / ``send(msg, callback)`` / ``sendOneway(msg)``; a list is a batch. With a
        ``sharding_key``: ``send(msg, new SelectMessageQueueByHash(), key)``, sync, one attempt.
        ``then(job, ok)``: what follows the outcome (a transactional send's local transaction)."""
        batch = msgs if isinstance(msgs, list) else [msgs]
        total = 1 + self.cfg.retryTimesWhenSendFailed if mode == "sync" and sharding_key is None else 1
        job = SendJob(batch, mode, now, self.cfg.sendMsgTimeout, float(self.cfg.minSendTimeoutWallMs), total,
                      sharding_key=sharding_key)
        if sharding_key is not None:
            self.keys_in_flight.add(sharding_key)
        elif mode == "sync":
            self.sync_in_flight = True
        job.on_done = lambda ok: self._finished(job, ok, then)
        self.counts["sent"] += len(batch)
        return self.flow.send(job, now)

    def send_in_transaction(self, msg: OutgoingMessage, now: Now) -> list[Action]:
        """``sendMessageInTransaction(msg, arg)``: ``msg`` as a half, sync with the usual retries;
        its local transaction and END_TRANSACTION follow the outcome (docs/rocketmq-model.md §9.1)."""
        assert self.tx is not None
        tx = self.tx
        half, state = tx.half(msg)
        return self.send(half, "sync", now, then=lambda job, ok: tx.after_send(job, ok, state))

    def _finished(self, job: SendJob, ok: bool,
                  then: Callable[[SendJob, bool], list[Action]] | None) -> list[Action]:
        if job.sharding_key is not None:
            self.keys_in_flight.discard(job.sharding_key)
        elif job.mode == "sync":
            self.sync_in_flight = False
        self.counts["ok" if ok else "failed"] += len(job.msgs)
        return then(job, ok) if then is not None else []

    def _workload_tick(self, now: Now) -> list[Action]:
        if self.pacer is None or self.factory is None or self.workload is None:
            return []
        actions: list[Action] = []
        for _ in range(self.pacer.due(now.mono_ms)):
            self.pacer.issued += 1
            if self.keys is not None:
                actions += self._ordered_tick(now)
                continue
            if self.workload.mode == "sync" and (self.sync_in_flight or (self.tx is not None and self.tx.busy)):
                self.counts["skipped_ticks"] += 1
                continue
            if self.tx is not None:
                actions += self.send_in_transaction(self.factory.next_message(), now)
                continue
            msgs = [self.factory.next_message() for _ in range(self.workload.batch)]
            if self.workload.batch > 1:  # a batch needs one topic: use the first message's
                msgs = [OutgoingMessage(msgs[0].topic, m.body, m.properties) for m in msgs]
            actions += self.send(msgs if self.workload.batch > 1 else msgs[0], self.workload.mode, now)
        return actions

    def _ordered_tick(self, now: Now) -> list[Action]:
        assert self.keys is not None and self.factory is not None
        index, key = self.keys.next_key()
        if key in self.keys_in_flight:  # the key's previous send has no outcome yet
            self.counts["skipped_ticks"] += 1
            return []
        return self.send(self.factory.next_message((index, key)), "sync", now, sharding_key=key)

    # ------------------------------------------------------------------ RouteOwner

    def route_topics(self) -> list[str]:
        return list(self.publish_table)

    def needs_route_update(self, topic: str) -> bool:
        """``isPublishTopicNeedUpdate``: no publish info or none with a queue."""
        info = self.publish_table.get(topic)
        return info is None or not info.ok()

    def on_route_updated(self, topic: str, route: Route, source: str, now: Now) -> list[Action]:
        old = self.publish_table.get(topic)
        info = to_publish_info(topic, route, self.rng)
        info.have_topic_router_info = True
        self.publish_table[topic] = info
        queues = [mq.queue() for mq in info.message_queues]
        changed = old is None or [mq.queue() for mq in old.message_queues] != queues
        return [Emit("client.route", {"topic": topic, "source": source, "publish_queues": queues,
                                      "changed": changed, "view": "publish", "group": self.group})]

    def state(self) -> dict[str, Any]:
        return {
            "group": self.group, "client_id": self.client_id, **self.counts, **(self.tx.counts if self.tx else {}),
            "tx_checks_dropped": dict(self.tx.dropped) if self.tx else {"not_transactional": self.checks_ignored},
            "sync_in_flight": self.sync_in_flight, "keys_in_flight": sorted(self.keys_in_flight),
            "namesrv": self.instance.selector.chosen,
            "polls_skipped": self.instance.polls_skipped,
            "topics": {t: [mq.pair() for mq in i.message_queues] for t, i in self.publish_table.items()},
            "broker_addrs": {b: {str(k): v for k, v in a.items()} for b, a in self.instance.broker_addr_table.items()},
        }
