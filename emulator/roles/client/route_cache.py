"""What a client makes of a TopicRouteData: publish and subscribe views (docs/rocketmq-model.md §3.3, §3.6, §4.6).

Routes are kept as the JSON dicts the namesrv sends (``queueDatas``, ``brokerDatas`` ...) after
:func:`normalize_route` (broker ids as ints, lists sorted) so that equality is RocketMQ's
``topicRouteDataIsChange``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from rmqemu.emulator.protocol import MASTER_ID, Perm

Route = dict[str, Any]


@dataclass(frozen=True, order=True)
class MessageQueue:
    """``MessageQueue``; field order gives ``compareTo`` (topic, brokerName, queueId)."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:  # MessageQueue.toString(), hashed by the consistent-hash strategy
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def pair(self) -> list[Any]:
        """``[brokerName, queueId]``: how a client's ``state`` lists it."""
        return [self.broker_name, self.queue_id]

    def queue(self) -> dict[str, Any]:
        """The queue as event lines write it (docs/events.md, ``queue``)."""
        return {"broker": self.broker_name, "queue_id": self.queue_id}


class ThreadLocalIndex:
    """``ThreadLocalIndex`` (4.9): a random 32-bit start, pre-increment, ``& 0x7FFFFFFF``."""

    def __init__(self, rng: random.Random) -> None:
        self._value = rng.randrange(-(2**31), 2**31)

    def increment_and_get(self) -> int:
        self._value = ((self._value + 1 + 2**31) % 2**32) - 2**31  # Java int overflow
        return self._value & 0x7FFFFFFF


def normalize_route(raw: dict[str, Any]) -> Route:
    """A TopicRouteData with int broker ids and sorted lists (legacy ``topicSynFlag`` accepted)."""
    queue_datas = []
    for qd in raw.get("queueDatas") or []:
        queue_datas.append({
            "brokerName": qd["brokerName"],
            "readQueueNums": int(qd.get("readQueueNums", 0)),
            "writeQueueNums": int(qd.get("writeQueueNums", 0)),
            "perm": int(qd.get("perm", 0)),
            "topicSysFlag": int(qd.get("topicSysFlag", qd.get("topicSynFlag", 0)) or 0),
        })
    broker_datas = []
    for bd in raw.get("brokerDatas") or []:
        addrs = {int(k): v for k, v in (bd.get("brokerAddrs") or {}).items()}
        broker_datas.append({"cluster": bd.get("cluster"), "brokerName": bd["brokerName"],
                             "brokerAddrs": dict(sorted(addrs.items()))})
    return {
        "orderTopicConf": raw.get("orderTopicConf"),
        "queueDatas": sorted(queue_datas, key=lambda q: q["brokerName"]),
        "brokerDatas": sorted(broker_datas, key=lambda b: b["brokerName"]),
        "filterServerTable": raw.get("filterServerTable") or {},
    }


def as_default_topic_route(route: Route, default_topic_queue_nums: int) -> Route:
    """The createTopicKey route as used for a new topic (docs/rocketmq-model.md §3.2 step 2): every QueueData's
    read and write queue counts become ``min(defaultTopicQueueNums, readQueueNums)``."""
    out = {**route, "queueDatas": []}
    for qd in route["queueDatas"]:
        n = min(default_topic_queue_nums, qd["readQueueNums"])
        out["queueDatas"].append({**qd, "readQueueNums": n, "writeQueueNums": n})
    return out


def route_changed(old: Route | None, new: Route) -> bool:
    """``topicRouteDataIsChange``: no old route, or the sorted routes differ."""
    return old is None or old != new


def _broker_data(route: Route, broker_name: str) -> dict[str, Any] | None:
    return next((bd for bd in route["brokerDatas"] if bd["brokerName"] == broker_name), None)


@dataclass
class TopicPublishInfo:
    """``TopicPublishInfo``: the writable master queues of a topic and the send index."""

    message_queues: list[MessageQueue]
    send_which_queue: ThreadLocalIndex
    route: Route | None = None
    order_topic: bool = False
    have_topic_router_info: bool = False
    queue_nums_by_broker: dict[str, int] = field(default_factory=dict)

    @classmethod
    def empty(cls, rng: random.Random) -> "TopicPublishInfo":
        return cls([], ThreadLocalIndex(rng))

    def ok(self) -> bool:
        return bool(self.message_queues)

    def select_index(self) -> int:
        """Index into ``message_queues`` of the plain ``selectOneMessageQueue()``."""
        return self.send_which_queue.increment_and_get() % len(self.message_queues)

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue:
        """docs/rocketmq-model.md §3.3, 4.8+ behaviour: up to ``size`` fresh draws for a queue not on
        ``last_broker_name``; otherwise the plain draw."""
        if last_broker_name is not None:
            for _ in range(len(self.message_queues)):
                mq = self.message_queues[self.select_index()]
                if mq.broker_name != last_broker_name:
                    return mq
        return self.message_queues[self.select_index()]

    def write_queue_nums(self, broker_name: str) -> int:
        """``getQueueIdByBroker``: the broker's writeQueueNums in the route, -1 if absent."""
        return self.queue_nums_by_broker.get(broker_name, -1)


def to_publish_info(topic: str, route: Route, rng: random.Random) -> TopicPublishInfo:
    """``topicRouteData2TopicPublishInfo`` (docs/rocketmq-model.md §3.6): order conf, or the writable QueueDatas
    whose BrokerData exists and has a master (id 0), queues 0..writeQueueNums-1."""
    info = TopicPublishInfo([], ThreadLocalIndex(rng), route=route)
    conf = route.get("orderTopicConf")
    if conf:
        for item in conf.split(";"):
            name, _, nums = item.partition(":")
            info.message_queues += [MessageQueue(topic, name, i) for i in range(int(nums))]
        info.order_topic = True
    else:
        for qd in route["queueDatas"]:
            if not Perm.writable(qd["perm"]):
                continue
            bd = _broker_data(route, qd["brokerName"])
            if bd is None or MASTER_ID not in bd["brokerAddrs"]:
                continue
            info.message_queues += [MessageQueue(topic, qd["brokerName"], i) for i in range(qd["writeQueueNums"])]
    info.queue_nums_by_broker = {qd["brokerName"]: qd["writeQueueNums"] for qd in route["queueDatas"]}
    return info


def to_subscribe_info(topic: str, route: Route) -> list[MessageQueue]:
    """``topicRouteData2TopicSubscribeInfo``: every readable QueueData, no master needed."""
    out: list[MessageQueue] = []
    for qd in route["queueDatas"]:
        if Perm.readable(qd["perm"]):
            out += [MessageQueue(topic, qd["brokerName"], i) for i in range(qd["readQueueNums"])]
    return out


def select_broker_addr(broker_data: dict[str, Any], rng: random.Random) -> str | None:
    """``BrokerData.selectBrokerAddr``: the master, otherwise a random address (docs/rocketmq-model.md §1.1)."""
    addrs = broker_data["brokerAddrs"]
    if MASTER_ID in addrs:
        return addrs[MASTER_ID]
    return rng.choice(list(addrs.values())) if addrs else None


def find_broker_address_in_subscribe(
    broker_addr_table: dict[str, dict[int, str]], broker_name: str, broker_id: int, only_this_broker: bool
) -> tuple[str, bool] | None:
    """``findBrokerAddressInSubscribe`` (docs/rocketmq-model.md §4.6): exact id; a missing slave id tries id+1;
    else (unless ``only_this_broker``) the first entry of the map. Returns (addr, is_slave)."""
    addrs = broker_addr_table.get(broker_name) or {}
    addr = addrs.get(broker_id)
    found_id = broker_id
    if addr is None and broker_id != MASTER_ID:
        addr, found_id = addrs.get(broker_id + 1), broker_id + 1
    if addr is None and not only_this_broker and addrs:
        found_id, addr = next(iter(sorted(addrs.items())))  # HashMap order of small Long keys
    if addr is None:
        return None
    return addr, found_id != MASTER_ID
