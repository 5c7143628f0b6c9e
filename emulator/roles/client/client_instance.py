"""What producers and consumers share: RocketMQ's ``MQClientInstance`` (docs/rocketmq-model.md §1.9, §3.6, §4.1).

One namesrv is chosen and kept while its channel is up (``NamesrvSelector``); topic routes are
polled from it one topic after the other, as RocketMQ's single scheduled thread does (#2728), so
a dead or partitioned namesrv costs one request timeout before the next topic goes elsewhere.
A TOPIC_NOT_EXIST answer keeps the old route (docs/rocketmq-model.md §3.6), which is what lets routes go stale.

The role that owns the instance (a :class:`RouteOwner`) says which topics to poll and what to
recompute when a route changes.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Protocol

from rmqemu.emulator.protocol import MASTER_ID, RequestCode, ResponseCode, request
from rmqemu.emulator.roles.client.route_cache import (
    Route,
    as_default_topic_route,
    find_broker_address_in_subscribe,
    normalize_route,
    route_changed,
    select_broker_addr,
)
from rmqemu.emulator.roles.common.base import Action, ChannelEvent, Now, Request

DoneCallback = Callable[[bool, Now], list[Action]]


class RouteOwner(Protocol):
    def route_topics(self) -> list[str]: ...

    def needs_route_update(self, topic: str) -> bool: ...

    def on_route_updated(self, topic: str, route: Route, source: str, now: Now) -> list[Action]: ...


class NamesrvSelector:
    """``NettyRemotingClient.getAndCreateNameserverChannel`` (docs/rocketmq-model.md §1.9).

    Keeps the chosen namesrv while its channel is OK; otherwise walks the (shuffled) list
    round-robin from a random index in [0, 999), skipping addresses whose channel is known down
    (a refused connect fails fast in RocketMQ too). A request timeout closes the channel
    (``clientCloseSocketIfTimeout``), so the next request chooses again.
    """

    def __init__(self, addrs: list[str], rng: random.Random) -> None:
        self.addrs = list(addrs)
        rng.shuffle(self.addrs)  # updateNameServerAddressList shuffles
        self.index = rng.randrange(999)
        self.chosen: str | None = None
        self.down: set[str] = set()

    def choose(self) -> str | None:
        if not self.addrs:
            return None
        if self.chosen is not None and self.chosen not in self.down:
            return self.chosen
        for _ in range(len(self.addrs)):
            self.index += 1
            addr = self.addrs[self.index % len(self.addrs)]
            if addr not in self.down:
                self.chosen = addr
                return addr
        self.index += 1  # every channel down: try to connect to the next one anyway
        self.chosen = self.addrs[self.index % len(self.addrs)]
        return self.chosen

    def channel_failed(self, addr: str) -> None:
        if addr == self.chosen:
            self.chosen = None

    def on_channel(self, kind: str, addr: str) -> None:
        if kind == "disconnected":
            self.down.add(addr)
            self.channel_failed(addr)
        elif kind == "connected":
            self.down.discard(addr)


class ClientInstance:
    def __init__(self, *, client_id: str, namesrv_addrs: list[str], namesrv_names: list[str],
                 api_timeout_ms: float, rng: random.Random, owner: RouteOwner) -> None:
        self.client_id = client_id
        self.selector = NamesrvSelector(namesrv_addrs, rng)
        self.namesrv_names = dict(zip(namesrv_addrs, namesrv_names, strict=False))
        self.api_timeout_ms = api_timeout_ms
        self.rng = rng
        self.owner = owner
        self.topic_route_table: dict[str, Route] = {}
        self.broker_addr_table: dict[str, dict[int, str]] = {}
        self.down_addrs: set[str] = set()  # client channels reported disconnected
        self.polling = False
        self.polls_skipped = 0
        self.route_requests = 0
        self.route_failures = 0

    # ------------------------------------------------------------------ namesrv side

    def has_namesrv(self) -> bool:
        return bool(self.selector.addrs)

    def update_route(self, topic: str, now: Now, on_done: DoneCallback | None = None,
                     default_key: str | None = None, default_queue_nums: int = 4) -> list[Action]:
        """``updateTopicRouteInfoFromNameServer(topic[, isDefault, producer])``.

        With ``default_key`` the createTopicKey's route is fetched and, with read/write queue
        counts cut to ``min(default_queue_nums, readQueueNums)``, stored as ``topic``'s route.
        """
        done: DoneCallback = on_done or (lambda ok, n: [])
        addr = self.selector.choose()
        if addr is None:
            return done(False, now)
        asked = default_key or topic
        self.route_requests += 1

        def on_reply(resp, rnow: Now) -> list[Action]:
            if resp is None:  # timeout or connect failure: the channel is closed
                self.selector.channel_failed(addr)
                self.route_failures += 1
                return done(False, rnow)
            if resp.code != ResponseCode.SUCCESS:  # TOPIC_NOT_EXIST: old route kept (docs/rocketmq-model.md §3.6)
                self.route_failures += 1
                return done(False, rnow)
            try:
                route = normalize_route(resp.json_body() or {})
            except (ValueError, KeyError, TypeError):
                self.route_failures += 1
                return done(False, rnow)
            source = self.namesrv_names.get(addr, addr)
            if default_key is not None:
                route = as_default_topic_route(route, default_queue_nums)
                source = default_key
            actions: list[Action] = []
            changed = route_changed(self.topic_route_table.get(topic), route)
            if changed or self.owner.needs_route_update(topic):
                for bd in route["brokerDatas"]:
                    self.broker_addr_table[bd["brokerName"]] = dict(bd["brokerAddrs"])
                self.topic_route_table[topic] = route
                actions += self.owner.on_route_updated(topic, route, source, rnow)
            return actions + done(True, rnow)

        frame = request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": asked})
        return [Request(addr, frame, self.api_timeout_ms, on_reply)]

    def poll_all(self, now: Now, on_done: Callable[[Now], list[Action]] | None = None) -> list[Action]:
        """The periodic route poll: every topic, one at a time. A poll still running when the
        timer fires again is not doubled (a fixed-rate task on a busy thread runs late)."""
        if self.polling:
            self.polls_skipped += 1
            return []
        topics = list(dict.fromkeys(self.owner.route_topics()))
        self.polling = True

        def step(i: int, snow: Now) -> list[Action]:
            if i >= len(topics):
                self.polling = False
                return on_done(snow) if on_done else []
            return self.update_route(topics[i], snow, lambda ok, n: step(i + 1, n))

        return step(0, now)

    # ------------------------------------------------------------------ channels and brokers

    def on_channel(self, event: ChannelEvent) -> None:
        if event.addr is None:
            return
        self.selector.on_channel(event.kind, event.addr)
        if event.kind == "disconnected":
            self.down_addrs.add(event.addr)
        elif event.kind == "connected":
            self.down_addrs.discard(event.addr)

    def clean_offline_brokers(self) -> None:
        """``cleanOfflineBroker``: drop addresses no cached route mentions any more."""
        live = {(bd["brokerName"], bid, addr)
                for route in self.topic_route_table.values()
                for bd in route["brokerDatas"] for bid, addr in bd["brokerAddrs"].items()}
        for name in list(self.broker_addr_table):
            kept = {bid: a for bid, a in self.broker_addr_table[name].items() if (name, bid, a) in live}
            if kept:
                self.broker_addr_table[name] = kept
            else:
                del self.broker_addr_table[name]

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        """The master only (docs/rocketmq-model.md §3.2 step 5)."""
        return (self.broker_addr_table.get(broker_name) or {}).get(MASTER_ID)

    def find_broker_address_in_subscribe(self, broker_name: str, broker_id: int,
                                         only_this_broker: bool) -> tuple[str, bool] | None:
        return find_broker_address_in_subscribe(self.broker_addr_table, broker_name, broker_id,
                                                only_this_broker)

    def with_offset_broker(self, topic: str, broker_name: str, now: Now,
                           then: Callable[[tuple[str, bool] | None, Now], list[Action]]) -> list[Action]:
        """The broker lookup of ``RemoteBrokerOffsetStore.updateConsumeOffsetToBroker`` and
        ``fetchConsumeOffsetFromBroker`` (4.9.3+, docs/rocketmq-model.md §4.8):
        ``findBrokerAddressInSubscribe(brokerName, MASTER_ID, true)`` (the master only); if there
        is none, ``updateTopicRouteInfoFromNameServer(topic)`` and look again with
        ``findBrokerAddressInSubscribe(brokerName, MASTER_ID, false)``, which falls back to any
        address of the broker name (a remaining slave; it accepts offsets, and SlaveSynchronize
        overwrites them once the master is back, docs/rocketmq-model.md §2.1). ``then`` gets
        ``(addr, is_slave)`` or None ("The broker[<name>] not exist").

        Java's route refresh is a blocking call and the second look sees its result; here the
        refresh is a Request, so the second look and ``then`` are *deferred* to its answer (or
        its timeout, or at once when no namesrv can be asked): the commit or query then goes
        where the refreshed route says, as in Java (to the master if it is back), and every
        lookup that misses the master costs one route request, as in Java."""
        found = self.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        if found is not None:
            return then(found, now)
        return self.update_route(topic, now, lambda ok, n: then(
            self.find_broker_address_in_subscribe(broker_name, MASTER_ID, False), n))

    def find_broker_addr_by_topic(self, topic: str) -> str | None:
        """``findBrokerAddrByTopic``: a random BrokerData of the route, its master preferred."""
        route = self.topic_route_table.get(topic)
        if not route or not route["brokerDatas"]:
            return None
        return select_broker_addr(self.rng.choice(route["brokerDatas"]), self.rng)

    def heartbeat(self, body: dict[str, Any], masters_only: bool) -> list[Action]:
        """``sendHeartbeatToAllBroker`` (docs/rocketmq-model.md §4.1): every address, or masters only when the
        instance has no consumer. Replies are not needed."""
        frame = request(RequestCode.HEART_BEAT, {}, body)
        actions: list[Action] = []
        for addrs in self.broker_addr_table.values():
            for bid, addr in sorted(addrs.items()):
                if masters_only and bid != MASTER_ID:
                    continue
                actions.append(Request(addr, frame, self.api_timeout_ms, lambda r, n: []))
        return actions

    def unregister(self, producer_group: str | None, consumer_group: str | None) -> list[Action]:
        """``unregisterClient`` on shutdown: UNREGISTER_CLIENT to every known broker address."""
        fields = {"clientID": self.client_id}
        if producer_group:
            fields["producerGroup"] = producer_group
        if consumer_group:
            fields["consumerGroup"] = consumer_group
        frame = request(RequestCode.UNREGISTER_CLIENT, fields)
        return [Request(addr, frame, self.api_timeout_ms, lambda r, n: [])
                for addrs in self.broker_addr_table.values() for addr in addrs.values()]


def heartbeat_body(client_id: str, producer_groups: list[str],
                   consumer_data: list[dict[str, Any]]) -> dict[str, Any]:
    """``prepareHeartbeatData``. Every MQClientInstance also runs the inner producer
    ``CLIENT_INNER_PRODUCER``, so it is always in ``producerDataSet``."""
    groups = list(dict.fromkeys([*producer_groups, "CLIENT_INNER_PRODUCER"]))
    return {"clientID": client_id, "producerDataSet": [{"groupName": g} for g in groups],
            "consumerDataSet": consumer_data}


def client_id_for(node_name: str, client_ip: str = "127.0.0.1", instance_name: str = "DEFAULT",
                  unit_name: str = "") -> str:
    """``buildMQClientId``: ``clientIP@instanceName[@unitName]`` (docs/rocketmq-model.md §3.1).

    ``changeInstanceNameToPID`` turns ``DEFAULT`` into ``pid#nanoTime``; the node name stands
    in for it (unique per emulated process, and readable in ``rebalance`` events). An
    instanceName set in the topology is kept as is, so two processes given the same one
    share a clientId, as in RocketMQ: the broker then lists that cid twice and the
    allocation hands both the same queues."""
    instance = node_name if instance_name == "DEFAULT" else instance_name
    return f"{client_ip}@{instance}" + (f"@{unit_name}" if unit_name else "")
