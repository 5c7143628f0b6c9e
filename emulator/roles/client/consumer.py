"""The consumer node: a ``DefaultMQPushConsumer`` in its own ``MQClientInstance`` (docs/rocketmq-model.md §4).

Start: subscriptions are built (``subVersion`` = the node's wall clock; CLUSTERING adds
``%RETRY%<group>``), routes are fetched, then a heartbeat and a first rebalance run, as
``DefaultMQPushConsumerImpl.start`` does. Timers (RocketMQ's intervals, in cluster ms):
``pollNameServer`` (10 ms, pollNameServerInterval), ``heartbeat`` (1000 ms,
heartbeatBrokerInterval, after cleanOfflineBroker), ``rebalance`` (20 s after the last run,
which may be one woken at once by NOTIFY_CONSUMER_IDS_CHANGED), ``persistOffsets`` (10 s,
persistConsumerOffsetInterval) and the per-queue ``pull|...`` / ``reconsume|...`` / ``offsetMoved|...`` one-shots.
An orderly consumer (``workload.orderly``) adds ``lockAll`` and its per-queue timers
(:mod:`emulator.roles.client.orderly`, docs/rocketmq-model.md §4.9).

``client.route`` events of a consumer carry what its ``MQClientInstance`` computes from the route
for both sides (docs/rocketmq-model.md §3.6): ``publish_queues`` is the publish view (writable queue data whose
broker has a master), the same as a producer's, so docs/design.md §7's route staleness means the
same thing for every client; ``subscribe_queues`` is the subscribe view (every readable queue, no
master needed: what the consumer rebalances over, and why it keeps a broker whose master is gone
and pulls from the slave).
"""

from __future__ import annotations

import random
from typing import Any, Callable

from rmqemu.emulator.protocol import RequestCode
from rmqemu.emulator.roles.client.allocate import strategy_from_spec
from rmqemu.emulator.roles.client.client_config import ConsumerConfig, config_from_dict
from rmqemu.emulator.roles.client.client_instance import ClientInstance, client_id_for, heartbeat_body
from rmqemu.emulator.roles.client.offset_store import OffsetStore
from rmqemu.emulator.roles.client.orderly import TIMERS as ORDERLY_TIMERS
from rmqemu.emulator.roles.client.orderly import OrderlyService
from rmqemu.emulator.roles.client.pull_loop import Puller, parse_timer
from rmqemu.emulator.roles.client.rebalance import ProcessQueue, Rebalancer
from rmqemu.emulator.roles.client.route_cache import MessageQueue, Route, to_publish_info, to_subscribe_info
from rmqemu.emulator.roles.client.subscription import build_subscription_data, retry_topic
from rmqemu.emulator.roles.client.workload import ConsumerWorkload
from rmqemu.emulator.roles.common.base import Action, After, ChannelEvent, Emit, Every, Inbound, Now, Role
from rmqemu.emulator.roles.common.node_spec import NodeSpec

REBALANCE_WAIT_INTERVAL_MS = 20000  # rocketmq.client.rebalance.waitInterval
PERSIST_OFFSET_INITIAL_MS = 10000
INNER_PRODUCER_CREATE_TOPIC_KEY = "TBW102"  # CLIENT_INNER_PRODUCER polls it too (docs/rocketmq-model.md §3.1)


_NO_RNG = random.Random(0)  # to_publish_info's queue index is unused here; keep self.rng's draws


class Consumer(Role):
    role = "consumer"

    def __init__(self, name: str, addr: str, *, group: str, cfg: ConsumerConfig, seed: int,
                 namesrv_addrs: list[str], workload: ConsumerWorkload,
                 namesrv_names: list[str] | None = None,
                 read_store: Callable[[str], str | None] | None = None) -> None:
        super().__init__(name, addr)
        self.group = group
        self.cfg = cfg
        self.rng = random.Random(f"{seed}:{name}")
        self.client_id = client_id_for(name, cfg.clientIP, cfg.instanceName, cfg.unitName)
        self.api_timeout_ms = cfg.mqClientApiTimeout
        self.exception_delay_ms = cfg.pullTimeDelayMillsWhenException
        self.instance = ClientInstance(
            client_id=self.client_id, namesrv_addrs=namesrv_addrs,
            namesrv_names=namesrv_names or list(namesrv_addrs),
            api_timeout_ms=self.api_timeout_ms, rng=self.rng, owner=self)
        self.workload = workload
        self.broadcasting = cfg.messageModel == "BROADCASTING"
        self.strategy_name = workload.allocate
        self.strategy = strategy_from_spec(workload.allocate, workload.allocate_params)
        self.fail_rate = float(workload.fail_rate)
        self.subscriptions: dict[str, dict[str, Any]] = {}
        self.subscribe_table: dict[str, list[MessageQueue]] = {}
        self.process_table: dict[MessageQueue, ProcessQueue] = {}
        self.pull_from_which_node: dict[MessageQueue, int] = {}
        self.offset_store = OffsetStore(local_file=self.broadcasting)
        if self.broadcasting and read_store is not None:
            self.offset_store.restore_local(read_store)
        if workload.orderly and self.broadcasting:
            raise ValueError("workload.orderly: needs messageModel CLUSTERING")
        self.orderly = OrderlyService(self) if workload.orderly else None
        self.rebalancer = Rebalancer(self)
        self.puller = Puller(self)
        self.stopping = False  # shutdown began: late pull answers are not processed

    @classmethod
    def from_spec(cls, spec: NodeSpec, addr: str, read_store: Callable[[str], str | None]) -> "Consumer":
        cfg = config_from_dict(ConsumerConfig, dict(spec.config))
        workload = ConsumerWorkload.from_dict(dict(spec.workload))
        if workload.messageModel:
            cfg = config_from_dict(ConsumerConfig, {**spec.config, "messageModel": workload.messageModel})
        group = spec.group or cfg.consumerGroup
        cfg.consumerGroup = group
        return cls(spec.name, addr, group=group, cfg=cfg, seed=spec.seed,
                   namesrv_addrs=list(spec.namesrv_addrs), namesrv_names=list(spec.namesrv_names) or None,
                   workload=workload, read_store=read_store)

    # ------------------------------------------------------------------ lifecycle

    def start(self, now: Now) -> list[Action]:
        for sub in self.workload.subscribe:
            self.subscriptions[sub["topic"]] = build_subscription_data(sub["topic"], sub["expression"], now.wall_ms)
        if not self.broadcasting:  # copySubscription: the retry topic
            rt = retry_topic(self.group)
            self.subscriptions[rt] = build_subscription_data(rt, "*", now.wall_ms)
        actions: list[Action] = [
            Every("pollNameServer", 10, self.cfg.pollNameServerInterval),
            Every("heartbeat", 1000, self.cfg.heartbeatBrokerInterval),
            After("rebalance", REBALANCE_WAIT_INTERVAL_MS),  # RebalanceService.run: waitForRunning first
            Every("persistOffsets", PERSIST_OFFSET_INITIAL_MS, self.cfg.persistConsumerOffsetInterval),
        ] + (self.orderly.start() if self.orderly else [])
        # updateTopicSubscribeInfoWhenSubscriptionChanged, heartbeat, rebalanceImmediately
        return actions + self.instance.poll_all(now, lambda n: self.send_heartbeat() + self.rebalance(n))

    def stop(self, now: Now) -> list[Action]:
        """``DefaultMQPushConsumerImpl.shutdown``: an orderly consumer unlocks every queue first
        (``unlockAll(false)``); persist offsets, UNREGISTER_CLIENT, then
        ``rebalanceImpl.destroy()`` drops every process queue. A long-polled pull still held by a
        broker is answered after the unregister (the group is gone: SUBSCRIPTION_NOT_EXIST); in
        RocketMQ the closed remoting client never sees that answer, so nothing is logged here."""
        actions = self.orderly.unlock_all(now) if self.orderly else []
        actions += self.puller.persist_all(now) + self.instance.unregister(None, self.group)
        self.stopping = True
        for pq in self.process_table.values():
            pq.dropped = True
        return actions

    def rebalance(self, now: Now) -> list[Action]:
        """One run of ``RebalanceService.run()``'s loop: ``doRebalance``, then
        ``waitForRunning(waitInterval)`` again. The 20 s wait starts after each run, including a
        run woken early by ``wakeup()`` (NOTIFY_CONSUMER_IDS_CHANGED, the start's
        rebalanceImmediately), so a woken run pushes the next periodic one 20 s out: a one-shot
        timer re-armed here, not a fixed-rate one. (Java's doRebalance blocks on its requests, so
        its wait starts once they are answered; here it starts when they are sent.)"""
        return self.rebalancer.do_rebalance(now) + [After("rebalance", REBALANCE_WAIT_INTERVAL_MS)]

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == "pollNameServer":
            return self.instance.poll_all(now)
        if name == "heartbeat":
            self.instance.clean_offline_brokers()
            return self.send_heartbeat()
        if name == "rebalance":
            return self.rebalance(now)
        if name == "persistOffsets":
            return self.puller.persist_all(now)
        if name == "lockAll" and self.orderly:
            return self.orderly.lock_all(now)
        parsed = parse_timer(name)
        if parsed is None:
            return []
        kind, mq = parsed
        if kind in ORDERLY_TIMERS and self.orderly:
            return self.orderly.on_timer(kind, mq, now)
        if kind == "pull":
            return self.puller.pull(mq, now)
        if kind == "reconsume":
            return self.puller.reconsume_due(mq, now)
        if kind == "offsetMoved":
            return self.puller.offset_moved(mq, now)
        return []

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        if msg.frame.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            return self.rebalance(now)  # rebalanceImmediately: wakeup()
        return []

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        self.instance.on_channel(event)
        return []

    # ------------------------------------------------------------------ heartbeat

    def consumer_data(self) -> dict[str, Any]:
        return {"groupName": self.group, "consumeType": "CONSUME_PASSIVELY", "messageModel": self.cfg.messageModel,
                "consumeFromWhere": self.cfg.consumeFromWhere,
                "subscriptionDataSet": [dict(s) for s in self.subscriptions.values()], "unitMode": self.cfg.unitMode}

    def send_heartbeat(self) -> list[Action]:
        body = heartbeat_body(self.client_id, [], [self.consumer_data()])
        return self.instance.heartbeat(body, masters_only=False)

    # ------------------------------------------------------------------ RouteOwner

    def route_topics(self) -> list[str]:
        return [*self.subscriptions, INNER_PRODUCER_CREATE_TOPIC_KEY]

    def needs_route_update(self, topic: str) -> bool:
        """``isSubscribeTopicNeedUpdate`` (no subscribe info yet), and the inner producer's
        TBW102 publish info, which never gets queues here."""
        if topic in self.subscriptions:
            return topic not in self.subscribe_table
        return topic == INNER_PRODUCER_CREATE_TOPIC_KEY

    def on_route_updated(self, topic: str, route: Route, source: str, now: Now) -> list[Action]:
        if topic not in self.subscriptions:
            return []
        old = self.subscribe_table.get(topic)
        mqs = to_subscribe_info(topic, route)
        self.subscribe_table[topic] = mqs
        queues = [mq.queue() for mq in mqs]
        changed = old is None or [mq.queue() for mq in old] != queues
        publish = [mq.queue() for mq in to_publish_info(topic, route, _NO_RNG).message_queues]
        return [Emit("client.route", {"topic": topic, "source": source, "publish_queues": publish,
                                      "subscribe_queues": queues, "changed": changed, "group": self.group})]

    def state(self) -> dict[str, Any]:
        return {
            "group": self.group, "client_id": self.client_id, "messageModel": self.cfg.messageModel,
            "namesrv": self.instance.selector.chosen, "rebalances": self.rebalancer.runs,
            "allocated": sorted([mq.topic, mq.broker_name, mq.queue_id] for mq in self.process_table),
            "locked": sorted([mq.topic, mq.broker_name, mq.queue_id] for mq, pq in self.process_table.items()
                             if pq.locked),
            "offsets": sorted([mq.topic, mq.broker_name, mq.queue_id, o] for mq, o in self.offset_store.table.items()),
            "subVersions": {t: s["subVersion"] for t, s in self.subscriptions.items()},
        }
