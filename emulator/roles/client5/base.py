"""What the emulated RocketMQ 5 producer and SimpleConsumer share: the 5.x ``ClientImpl``
(docs/rocketmq-model.md §10.6). Settings in cluster ms, scaled by the runtime like every interval.

- **Endpoints.** The topology names the proxies a client uses (its access point, in order); their
  addresses come with the launcher's peer table (``Role.on_peers``), and calls go where
  :class:`.wire.PickFirst` says.
- **Routes.** ``QueryRoute`` for each topic at start, then every ``routeRefreshInterval`` (30 s,
  ``ClientImpl.updateRouteCache``); a failed query keeps the route the client has, so it goes
  stale like a 4.x client's. The view is a ``client.route`` line whenever it changes, ``source``
  the proxy that answered; its publish view is the writable queues of broker id 0 (the 5.x
  ``PublishingLoadBalancer``), its subscribe view the readable ones (``SubscriptionLoadBalancer``).
- **Heartbeat** every ``heartbeatInterval`` (10 s) to the endpoints; the answer changes nothing.
- No Telemetry stream: the emulated client keeps its own settings (3 attempts, 10 ms..1 s x2),
  which are what a 5.x proxy would hand it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

from rmqemu.emulator.protocol import ChannelEvent
from rmqemu.emulator.roles.client5 import wire
from rmqemu.emulator.roles.common.base import Action, Emit, Every, Now, Role
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2

Code = pb.Code
WRITABLE, READABLE = (pb.WRITE, pb.READ_WRITE), (pb.READ, pb.READ_WRITE)
RouteWaiter = Callable[["list[pb.MessageQueue] | None", Now], list[Action]]


@dataclass
class Client5Config:
    """The 5.x ``ClientConfiguration`` and client constants the emulation honours (cluster ms)."""

    requestTimeout: int = 3000
    routeRefreshInterval: int = 30_000
    heartbeatInterval: int = 10_000
    maxAttempts: int = 3  # the producer's ExponentialBackoffRetryPolicy
    initialBackoff: int = 10
    maxBackoff: int = 1000
    backoffMultiplier: float = 2.0
    receiveBatch: int = 16  # SimpleConsumer.receive(maxMessageNum, ...)
    invisibleDuration: int = 20_000
    awaitDuration: int = 20_000  # the receive's long polling
    receiveRetryDelay: int = 1000  # what the application waits after a failed receive

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Client5Config":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"{unknown[0]}: not a RocketMQ 5 client setting (known: {', '.join(sorted(known))})")
        return cls(**raw)


def queue_dict(q: pb.MessageQueue) -> dict[str, Any]:
    return {"broker": q.broker.name, "queue_id": q.id}


class Client5(Role):
    """The shared client: endpoints, routes, heartbeats. Subclasses say which topics they route
    (:meth:`topics`), what they are (:attr:`client_type`) and what starts once endpoints are known
    (:meth:`begin`)."""

    client_type = pb.CLIENT_TYPE_UNSPECIFIED

    def __init__(self, name: str, addr: str, *, group: str, endpoints: list[str], cfg: Client5Config) -> None:
        super().__init__(name, addr)
        self.group = group
        self.cfg = cfg
        self.client_id = name  # 5.x: host@pid@index@nanotime; the node name keeps lines readable
        self.endpoint_names = list(endpoints)
        self.selector = wire.PickFirst()
        self.proxy_of: dict[str, str] = {}  # address -> proxy node name
        self.routes: dict[str, list[pb.MessageQueue]] = {}
        self.views: dict[str, tuple[Any, Any]] = {}
        self.waiters: dict[str, list[RouteWaiter]] = {}
        self.begun = False
        self.counts: dict[str, int] = {"route_queries": 0, "route_failures": 0, "heartbeats": 0}

    def topics(self) -> list[str]:
        return []

    def begin(self, now: Now) -> list[Action]:
        return []

    # ------------------------------------------------------------------ lifecycle

    def start(self, now: Now) -> list[Action]:
        actions: list[Action] = [Every("updateRoutes", self.cfg.routeRefreshInterval, self.cfg.routeRefreshInterval),
                                 Every("heartbeat", self.cfg.heartbeatInterval, self.cfg.heartbeatInterval)]
        return actions + (self._begin(now) if self.selector.addrs else [])

    def on_peers(self, peers: dict[str, str], now: Now) -> list[Action]:
        addrs = [peers[n] for n in self.endpoint_names if n in peers]
        self.proxy_of = {peers[n]: n for n in self.endpoint_names if n in peers}
        self.selector.update(addrs)
        return self._begin(now) if addrs and not self.begun else []

    def _begin(self, now: Now) -> list[Action]:
        self.begun = True
        actions: list[Action] = []
        for topic in self.topics():  # ClientImpl.startUp fetches its topics' routes first
            actions += self.route(topic, now, lambda r, n: [])
        return actions + self.begin(now)

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        if event.addr is not None:
            self.selector.on_channel(event.kind, event.addr)
        return []

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == "updateRoutes" and self.begun:
            return [a for t in self.topics() for a in self._query(t, now)]
        if name == "heartbeat" and self.begun:
            return self.heartbeat(now)
        return []

    # ------------------------------------------------------------------ calls

    def call(self, method: str, request: Any, now: Now, then: wire.Answer, extra_ms: float = 0,
             where: dict[str, Any] | None = None) -> list[Action]:
        """``request`` to the endpoint in use; ``then(None, None, now)`` at once when none is known."""
        addr = self.selector.choose()
        if addr is None:
            return then(None, None, now)
        return [wire.call(addr, method, request, self.client_id, self.cfg.requestTimeout + extra_ms, then, where)]

    def proxy_name(self, addr: str | None) -> str:
        return self.proxy_of.get(addr or "", addr or "")

    def heartbeat(self, now: Now) -> list[Action]:
        req = pb.HeartbeatRequest(client_type=self.client_type)
        req.group.name = self.group
        self.counts["heartbeats"] += 1
        return self.call("Heartbeat", req, now, lambda resp, addr, n: [])

    # ------------------------------------------------------------------ routes

    def route(self, topic: str, now: Now, then: RouteWaiter) -> list[Action]:
        """``then(queues, now)`` with the topic's route: the cached one, else after a query (None
        when it failed)."""
        if topic in self.routes:
            return then(self.routes[topic], now)
        self.waiters.setdefault(topic, []).append(then)
        return self._query(topic, now) if len(self.waiters[topic]) == 1 else []

    def _query(self, topic: str, now: Now) -> list[Action]:
        req = pb.QueryRouteRequest()
        req.topic.name = topic
        req.endpoints.scheme = pb.IPv4
        for a in self.selector.addrs:
            host, _, port = a.rpartition(":")
            req.endpoints.addresses.add(host=host, port=int(port) if port.isdigit() else 0)
        self.counts["route_queries"] += 1

        def answered(resp: Any, addr: str | None, rnow: Now) -> list[Action]:
            actions: list[Action] = []
            if resp is not None and resp.status.code == Code.OK:
                self.routes[topic] = list(resp.message_queues)
                actions += self._route_line(topic, self.proxy_name(addr))
            else:  # the old route stays (the scheduled update only logs the failure)
                self.counts["route_failures"] += 1
            for waiter in self.waiters.pop(topic, []):
                actions += waiter(self.routes.get(topic), rnow)
            return actions

        return self.call("QueryRoute", req, now, answered)

    def publish_queues(self, topic: str) -> list[pb.MessageQueue]:
        return [q for q in self.routes.get(topic, []) if q.permission in WRITABLE and q.broker.id == 0]

    def subscribe_queues(self, topic: str) -> list[pb.MessageQueue]:
        return [q for q in self.routes.get(topic, []) if q.permission in READABLE and q.broker.id == 0]

    def _route_line(self, topic: str, source: str) -> list[Action]:
        publish = [queue_dict(q) for q in self.publish_queues(topic)]
        subscribe = [queue_dict(q) for q in self.subscribe_queues(topic)]
        old = self.views.get(topic)
        if old == (publish, subscribe):
            return []
        self.views[topic] = (publish, subscribe)
        return [Emit("client.route", {"topic": topic, "source": source, "publish_queues": publish,
                                      "subscribe_queues": subscribe, "changed": old is None or old[0] != publish,
                                      "group": self.group, "view": "publish"})]

    def base_state(self) -> dict[str, Any]:
        return {"group": self.group, "client_id": self.client_id, "endpoint": self.proxy_name(self.selector.chosen),
                "endpoint_moves": self.selector.moves, **self.counts,
                "routes": {t: [queue_dict(q) for q in self.publish_queues(t)] for t in self.routes}}


__all__ = ["Client5", "Client5Config", "Code", "queue_dict", "v2"]
