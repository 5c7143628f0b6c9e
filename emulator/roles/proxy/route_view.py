"""The proxy's topic route cache and the queue views built from it (docs/rocketmq-model.md §10.1).

5.x's ``TopicRouteService`` caches each topic's route from the namesrvs: an entry older than
``topicRouteServiceCacheRefreshSeconds`` (20 s) is reloaded in the background when it is next read,
the old view served meanwhile; a failed reload keeps the old view, but a TOPIC_NOT_EXIST answer
replaces it with an empty one; an entry not read for ``topicRouteServiceCacheExpiredSeconds``
(300 s) is dropped, and beyond ``topicRouteServiceCacheMaxNum`` (20,000) entries the least recently read
one is. So the proxy's view is only as fresh as its clients' traffic makes it, and it
goes stale like a client's: that is what the report measures (a ``client.route`` line per change,
written under the proxy's name).

A view's write queues are the writable queues of brokers with a master (or the order conf), its
read queues the readable ones of brokers with an address, each sorted by (broker, queue id), as
``MessageQueueSelector`` builds them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from rmqemu.emulator.protocol import MASTER_ID, Perm, RequestCode, ResponseCode, request
from rmqemu.emulator.roles.client.client_instance import NamesrvSelector
from rmqemu.emulator.roles.client.route_cache import MessageQueue, Route, normalize_route
from rmqemu.emulator.roles.common.base import Action, Emit, Now, Request

ROUTE_TIMEOUT_MS = 3000  # getTopicRouteInfoFromNameServer(topic, 3 s)
Waiter = Callable[["QueueView | None", Now], list[Action]]


@dataclass
class QueueView:
    """One topic's route as the proxy uses it; ``empty`` for a topic the namesrv does not know."""

    topic: str
    route: Route | None
    write: list[MessageQueue] = field(default_factory=list)
    read: list[MessageQueue] = field(default_factory=list)
    masters: dict[str, str] = field(default_factory=dict)  # broker name -> master address
    addrs: dict[str, dict[int, str]] = field(default_factory=dict)
    perms: dict[str, int] = field(default_factory=dict)  # broker name -> the QueueData's perm
    queue_index: int = 0

    @classmethod
    def build(cls, topic: str, route: Route | None, rng: random.Random) -> "QueueView":
        view = cls(topic, route, queue_index=rng.randrange(2**31))
        if route is None:
            return view
        for bd in route["brokerDatas"]:
            view.addrs[bd["brokerName"]] = dict(bd["brokerAddrs"])
            if MASTER_ID in bd["brokerAddrs"]:
                view.masters[bd["brokerName"]] = bd["brokerAddrs"][MASTER_ID]
        conf = route.get("orderTopicConf")
        for qd in route["queueDatas"]:
            name = qd["brokerName"]
            view.perms[name] = qd["perm"]
            if Perm.readable(qd["perm"]) and view.addrs.get(name):
                view.read += [MessageQueue(topic, name, i) for i in range(qd["readQueueNums"])]
            if not conf and Perm.writable(qd["perm"]) and name in view.masters:
                view.write += [MessageQueue(topic, name, i) for i in range(qd["writeQueueNums"])]
        if conf:
            for item in conf.split(";"):
                name, _, nums = item.partition(":")
                if name in view.masters and nums.isdigit():
                    view.write += [MessageQueue(topic, name, i) for i in range(int(nums))]
        view.read.sort()
        view.write.sort()
        return view

    @property
    def empty(self) -> bool:
        return self.route is None

    def read_addr(self, broker: str) -> str | None:
        """``getMasterAddrPrefer``: the master, else any address of the broker."""
        addrs = self.addrs.get(broker) or {}
        return addrs.get(MASTER_ID) or next(iter(sorted(addrs.items())), (None, None))[1]

    def next_write(self) -> MessageQueue | None:
        """``selectOne(false)``: round robin over the write queues."""
        if not self.write:
            return None
        self.queue_index = (self.queue_index + 1) % 2**31
        return self.write[self.queue_index % len(self.write)]


@dataclass
class _Entry:
    view: QueueView
    written_ms: float
    read_ms: float
    loading: bool = False


class RouteCache:
    """``TopicRouteService``'s cache over the namesrvs; ``node`` names the proxy in its events."""

    def __init__(self, node: str, namesrv_addrs: list[str], namesrv_names: list[str], rng: random.Random,
                 refresh_ms: float = 20_000, expire_ms: float = 300_000, max_entries: int = 20_000) -> None:
        self.node = node
        self.selector = NamesrvSelector(namesrv_addrs, rng)
        self.names = dict(zip(namesrv_addrs, namesrv_names, strict=False))
        self.rng = rng
        self.refresh_ms = refresh_ms
        self.expire_ms = expire_ms
        self.max_entries = max_entries  # topicRouteServiceCacheMaxNum: topics asked by hostile clients stay bounded
        self.entries: dict[str, _Entry] = {}
        self.waiters: dict[str, list[Waiter]] = {}
        self.loads = self.failures = 0

    def get(self, topic: str, now: Now, then: Waiter) -> list[Action]:
        """``then(view, now)`` with the topic's view: at once from the cache (a reload started in the
        background when the entry is older than the refresh time), else after a load; ``view`` is
        None when a first load failed (no namesrv answered)."""
        entry = self.entries.get(topic)
        if entry is not None and now.mono_ms - entry.read_ms > self.expire_ms:
            del self.entries[topic]  # expireAfterAccess
            entry = None
        if entry is None:
            self.waiters.setdefault(topic, []).append(then)
            return self._load(topic, now) if len(self.waiters[topic]) == 1 else []
        entry.read_ms = now.mono_ms
        actions: list[Action] = []
        if now.mono_ms - entry.written_ms >= self.refresh_ms and not entry.loading:
            entry.loading = True
            actions += self._load(topic, now)
        return actions + then(entry.view, now)

    def cached(self, topic: str) -> QueueView | None:
        entry = self.entries.get(topic)
        return entry.view if entry is not None else None

    def _load(self, topic: str, now: Now) -> list[Action]:
        addr = self.selector.choose()
        if addr is None:
            return self._loaded(topic, None, "", now)
        self.loads += 1

        def on_reply(resp, rnow: Now) -> list[Action]:  # type: ignore[no-untyped-def]
            if resp is None:
                self.selector.channel_failed(addr)
                return self._loaded(topic, None, addr, rnow)
            if resp.code == ResponseCode.TOPIC_NOT_EXIST:
                return self._loaded(topic, QueueView.build(topic, None, self.rng), addr, rnow)
            try:
                route = normalize_route(resp.json_body() or {}) if resp.code == ResponseCode.SUCCESS else None
            except (ValueError, KeyError, TypeError):
                route = None
            if route is None:
                return self._loaded(topic, None, addr, rnow)
            return self._loaded(topic, QueueView.build(topic, route, self.rng), addr, rnow)

        return [Request(addr, request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), ROUTE_TIMEOUT_MS,
                        on_reply)]

    def _loaded(self, topic: str, view: QueueView | None, addr: str, now: Now) -> list[Action]:
        entry = self.entries.get(topic)
        actions: list[Action] = []
        if view is None:
            self.failures += 1
            if entry is not None:
                entry.loading = False  # reload failed: the old view stays
        else:
            old = entry.view if entry is not None else None
            self.entries[topic] = _Entry(view, now.mono_ms, entry.read_ms if entry else now.mono_ms)
            if len(self.entries) > self.max_entries:  # maximumSize: the least recently read goes
                del self.entries[min(self.entries, key=lambda t: self.entries[t].read_ms)]
            old_queues = [mq.queue() for mq in old.write] if old is not None else None
            queues = [mq.queue() for mq in view.write]
            if old is None or old_queues != queues or old.read != view.read:
                actions.append(Emit("client.route", {
                    "topic": topic, "source": self.names.get(addr, addr), "publish_queues": queues,
                    "subscribe_queues": [mq.queue() for mq in view.read], "changed": old_queues != queues,
                    "group": "", "view": "proxy"}))
        for waiter in self.waiters.pop(topic, []):
            actions += waiter(view if view is not None else self.cached(topic), now)
        return actions
