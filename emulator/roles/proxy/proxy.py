"""The proxy role: RocketMQ 5's gRPC access layer in cluster mode (docs/rocketmq-model.md §10.1).

It serves ``apache.rocketmq.v2.MessagingService`` to RocketMQ 5 clients on its gRPC port (each
call a channel, docs/design.md §2 "The gRPC port") and is a 4.x client of the namesrvs and
brokers behind it: routes from its own cache (:mod:`.route_view`), sends as SEND_MESSAGE_V2
(:mod:`.sending`), receives as POP (:mod:`.receiving`), settings and routes for the clients
(:mod:`.sessions`). It writes its real gRPC clients' lines as a broker writes a real client's:
``send``, ``consume``, ``client.route`` under the client's name (``client@<pid>``), and its own
route view as ``client.route`` under its own. An emulated RocketMQ 5 client (``emulator/roles/
client5/``) calls with the same frames over rmqemu's own wire and writes its own lines; its
streamed answers come as one frame (:func:`.v2.stream`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from rmqemu.emulator.protocol import ChannelEvent, EmulatorCode, RequestCode, is_grpc
from rmqemu.emulator.roles.common.base import Action, Inbound, Now, Reply, Role
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.dead_letter import forward_to_dlq
from rmqemu.emulator.roles.proxy.receiving import Receiving
from rmqemu.emulator.roles.proxy.renewal import TIMER as RENEW_TIMER
from rmqemu.emulator.roles.proxy.renewal import Renewal
from rmqemu.emulator.roles.proxy.route_view import RouteCache
from rmqemu.emulator.roles.proxy.sending import Sending
from rmqemu.emulator.roles.proxy.sessions import Sessions
from rmqemu.emulator.roles.proxy.topic_types import TopicTypes
from rmqemu.emulator.roles.proxy.transactions import TIMER as TX_HEARTBEAT
from rmqemu.emulator.roles.proxy.transactions import TransactionRelay

Code = v2.Code
Handler = Callable[[Inbound, Any, Now], list[Action]]


@dataclass
class ProxyConfig:
    """5.x's ``ProxyConfig`` keys the emulator honours, with their defaults (cluster ms)."""

    topicRouteServiceCacheRefreshSeconds: int = 20
    topicRouteServiceCacheExpiredSeconds: int = 300
    topicRouteServiceCacheMaxNum: int = 20_000
    maxMessageSize: int = 4 * 1024 * 1024
    maxDelayTimeMills: int = 24 * 3600 * 1000
    defaultInvisibleTimeMills: int = 60_000
    minInvisibleTimeMillsForRecv: int = 10_000
    maxInvisibleTimeMills: int = 12 * 3600 * 1000
    grpcClientConsumerMinLongPollingTimeoutMillis: int = 5_000
    grpcClientConsumerMaxLongPollingTimeoutMillis: int = 20_000
    enableTopicMessageTypeCheck: bool = True
    transactionHeartbeatPeriodSecond: int = 20  # the producer-group heartbeat that lets brokers' checks reach it
    consumerMaxAttempts: int = 17  # a group's retryMaxTimes (16) + 1
    fifoGroups: list[str] = field(default_factory=list)  # groups with consumeMessageOrderly (a FIFO group)
    enableProxyAutoRenew: bool = True  # a PushConsumer's leases renewed by the proxy (renewal.py)
    renewSchedulePeriodMillis: int = 5_000
    renewAheadTimeMillis: int = 10_000
    renewMaxTimeMillis: int = 3 * 3600 * 1000
    maxRenewRetryTimes: int = 3
    invisibleTimeMillisWhenClear: int = 1_000

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "ProxyConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


class Proxy(Role):
    role = "proxy"

    def __init__(self, name: str, addr: str, cfg: ProxyConfig, namesrv_addrs: list[str],
                 namesrv_names: list[str] | None = None, grpc_addr: str | None = None, seed: int = 0) -> None:
        super().__init__(name, addr)
        self.cfg = cfg
        self.grpc_addr = grpc_addr
        self.rng = random.Random(seed)
        self.routes = RouteCache(name, namesrv_addrs, namesrv_names or list(namesrv_addrs), self.rng,
                                 refresh_ms=cfg.topicRouteServiceCacheRefreshSeconds * 1000,
                                 expire_ms=cfg.topicRouteServiceCacheExpiredSeconds * 1000,
                                 max_entries=cfg.topicRouteServiceCacheMaxNum)
        self.topic_types = TopicTypes(self, refresh_ms=cfg.topicRouteServiceCacheRefreshSeconds * 1000)
        self.sessions = Sessions(self)
        self.sending = Sending(self)
        self.receiving = Receiving(self)
        self.renewal = Renewal(self)
        self.transactions = TransactionRelay(self)
        self._index = self.rng.randrange(2**31)
        self.calls = 0
        self.bad_requests = 0
        self.handlers: dict[str, Handler] = {
            "QueryRoute": self.sessions.query_route, "Heartbeat": self.sessions.heartbeat,
            "Telemetry": self.sessions.telemetry, "NotifyClientTermination": self.sessions.notify_termination,
            "QueryAssignment": self.sessions.query_assignment, "SendMessage": self.sending.send_message,
            "EndTransaction": self.sending.end_transaction, "ReceiveMessage": self.receiving.receive_message,
            "AckMessage": self.receiving.ack_message,
            "ChangeInvisibleDuration": self.receiving.change_invisible_duration,
            "ForwardMessageToDeadLetterQueue": lambda msg, req, now: forward_to_dlq(self, msg, req, now),
        }

    @classmethod
    def from_spec(cls, spec: NodeSpec, addr: str, read_store: Callable[[str], str | None]) -> "Proxy":
        return cls(spec.name, addr, ProxyConfig.from_dict(dict(spec.config)), list(spec.namesrv_addrs),
                   list(spec.namesrv_names) or None, grpc_addr=spec.grpc, seed=spec.seed)

    def next_index(self) -> int:
        self._index = (self._index + 1) % 2**31
        return self._index

    def endpoints_for(self, asked: pb.Endpoints) -> pb.Endpoints:
        """What a route names as every broker's endpoints: the address the client asked (cluster
        mode), else the proxy's own gRPC address."""
        if asked.addresses:
            return asked
        out = pb.Endpoints(scheme=pb.IPv4)
        host, _, port = (self.grpc_addr or "127.0.0.1:0").rpartition(":")
        out.addresses.add(host=host, port=int(port or 0))
        return out

    def start(self, now: Now) -> list[Action]:
        return self.transactions.start() + self.renewal.start()

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == RENEW_TIMER:
            return self.renewal.scan(now)
        return self.transactions.heartbeat(now) if name == TX_HEARTBEAT else []

    def on_message(self, msg: Inbound, now: Now) -> list[Action]:
        if msg.frame.code == RequestCode.CHECK_TRANSACTION_STATE and msg.channel.startswith("out:"):
            return self.transactions.check(msg, now)
        if msg.frame.code != EmulatorCode.GRPC or msg.channel.startswith("out:"):
            return []  # a GRPC frame on any inbound channel: a real client's call, or an emulated client's
        self.calls += 1
        self.renewal.saw(msg.frame.fields.get("client_id"), now)
        method = str(msg.frame.fields.get("method", ""))
        req = v2.decode(method, msg.frame.body)
        handler = self.handlers.get(method)
        if req is None:
            self.bad_requests += 1
            if method not in v2.RESPONSES:
                return []  # the transport answers UNIMPLEMENTED for what is not in the service
            return self._refuse(msg, method, Code.BAD_REQUEST, "the request is not a " + method)
        if handler is None:
            return self._refuse(msg, method, Code.NOT_IMPLEMENTED, f"{method} is not implemented by this proxy")
        return handler(msg, req, now)

    @staticmethod
    def _refuse(msg: Inbound, method: str, code: int, text: str) -> list[Action]:
        """A call answered with only a failed status (a stream: that element, then its end)."""
        failed = v2.failure(method, code, text)
        if method in v2.STREAMING:
            return [Reply(msg.channel, f) for f in v2.stream(is_grpc(msg.channel), msg.frame, [failed])]
        return [Reply(msg.channel, v2.answer(msg.frame, failed))]

    def on_channel(self, event: ChannelEvent, now: Now) -> list[Action]:
        if event.kind == "closed" and event.channel is not None and is_grpc(event.channel):
            self.sessions.closed(event.channel)
            self.receiving.abandoned.closed(event.channel)
        return []

    def state(self) -> dict[str, Any]:
        return {"grpc_addr": self.grpc_addr, "calls": self.calls, "bad_requests": self.bad_requests,
                "clients": sorted(self.sessions.by_client), "routes": sorted(self.routes.entries),
                "route_loads": self.routes.loads, "route_failures": self.routes.failures, **self.transactions.state()}
