"""The client-facing RPCs that carry no message: Telemetry (settings), Heartbeat,
NotifyClientTermination, QueryRoute and QueryAssignment (docs/rocketmq-model.md §10.1).

A client opens one Telemetry stream and writes its ``Settings``; the proxy answers every one with
the settings merged as 5.x's ``GrpcClientSettingsManager`` merges them (a producer's backoff and
``max_body_size``; a consumer's ``fifo``, batch size, long-polling time and retry policy), and keeps
the stream to push commands on later. Routes answer with the proxy's own endpoints in place of
every broker address (cluster mode's ``ProxyTopicRouteData``): clients never see a broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import Perm, is_grpc
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.route_view import QueueView

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

Code = v2.Code
#: a consumer group's retry schedule: 4.x's delay levels from level 3 on (the group retry policy's default)
RETRY_DELAYS_S = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
MAX_SESSIONS = 20_000  # client sessions kept: the oldest without an open Telemetry stream goes first
WRITABLE, READABLE = (pb.WRITE, pb.READ_WRITE), (pb.READ, pb.READ_WRITE)
TYPE_ACCEPTS = {"NORMAL": (pb.NORMAL,), "FIFO": (pb.FIFO,), "DELAY": (pb.DELAY,),
                "TRANSACTION": (pb.TRANSACTION,), "MIXED": (pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION)}


@dataclass
class Session:
    client_id: str
    peer: str
    channel: str | None = None  # the open Telemetry call
    settings: pb.Settings = field(default_factory=pb.Settings)


class Sessions:
    def __init__(self, proxy: "Proxy") -> None:
        self.proxy = proxy
        self.by_client: dict[str, Session] = {}
        self.views: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (client, topic) -> the queues answered

    def session(self, msg: Inbound) -> Session | None:
        client_id = msg.frame.fields.get("client_id")
        if not client_id:
            return None
        s = self.by_client.get(client_id)
        if s is None:
            s = self.by_client[client_id] = Session(str(client_id), msg.peer)
            if len(self.by_client) > MAX_SESSIONS:  # a client id per call from a hostile caller stays bounded
                oldest = next((c for c, x in self.by_client.items() if x.channel is None), next(iter(self.by_client)))
                del self.by_client[oldest]
        return s

    def fifo(self, client_id: Any, group: str) -> bool:
        return group in self.proxy.cfg.fifoGroups

    def max_attempts(self, client_id: Any) -> int:
        """The consumer's merged ``backoff_policy.max_attempts``; the group's default before it
        sent Settings (5.x's proxy fails such a receive, rocketmq#8133: the emulator serves it)."""
        s = self.by_client.get(str(client_id)) if client_id else None
        attempts = s.settings.backoff_policy.max_attempts if s is not None else 0
        return attempts or self.proxy.cfg.consumerMaxAttempts

    # ------------------------------------------------------------------ Telemetry

    def telemetry(self, msg: Inbound, cmd: pb.TelemetryCommand, now: Now) -> list[Action]:
        s = self.session(msg)
        if s is None:
            return [Reply(msg.channel, v2.answer(msg.frame, pb.TelemetryCommand(
                status=v2.status(Code.CLIENT_ID_REQUIRED, "x-mq-client-id is required")), end=True))]
        s.channel = msg.channel
        if cmd.WhichOneof("command") != "settings":
            return []  # thread stacks, verify results, transaction answers over telemetry: nothing to say
        s.settings = self.merged(cmd.settings)
        return [Reply(msg.channel, v2.answer(msg.frame, pb.TelemetryCommand(status=v2.ok(), settings=s.settings)))]

    def merged(self, given: pb.Settings) -> pb.Settings:
        cfg = self.proxy.cfg
        out = pb.Settings()
        out.CopyFrom(given)
        if given.WhichOneof("pub_sub") == "publishing":
            out.backoff_policy.max_attempts = given.backoff_policy.max_attempts or 3
            exp = out.backoff_policy.exponential_backoff
            v2.set_duration(exp.initial, 10)
            v2.set_duration(exp.max, 1000)
            exp.multiplier = 2.0
            out.publishing.max_body_size = cfg.maxMessageSize
            out.publishing.validate_message_type = cfg.enableTopicMessageTypeCheck
        elif given.WhichOneof("pub_sub") == "subscription":
            group = given.subscription.group.name
            out.subscription.fifo = self.fifo(None, group)
            out.subscription.receive_batch_size = 32
            v2.set_duration(out.subscription.long_polling_timeout, cfg.grpcClientConsumerMaxLongPollingTimeoutMillis)
            out.backoff_policy.max_attempts = cfg.consumerMaxAttempts
            out.backoff_policy.customized_backoff.ClearField("next")
            for seconds in RETRY_DELAYS_S:
                v2.set_duration(out.backoff_policy.customized_backoff.next.add(), seconds * 1000)
        return out

    def closed(self, channel: str) -> None:
        for s in self.by_client.values():
            if s.channel == channel:
                s.channel = None

    # ------------------------------------------------------------------ Heartbeat, termination

    def heartbeat(self, msg: Inbound, req: pb.HeartbeatRequest, now: Now) -> list[Action]:
        if self.session(msg) is None:
            return self._reply(msg, pb.HeartbeatResponse(status=v2.status(Code.CLIENT_ID_REQUIRED, "no client id")))
        return self._reply(msg, pb.HeartbeatResponse(status=v2.ok()))

    def notify_termination(self, msg: Inbound, req: pb.NotifyClientTerminationRequest, now: Now) -> list[Action]:
        client_id = msg.frame.fields.get("client_id")
        if client_id:
            self.by_client.pop(str(client_id), None)
        cleared = self.proxy.renewal.terminated(client_id, now) if client_id else []  # its leases go back
        return cleared + self._reply(msg, pb.NotifyClientTerminationResponse(status=v2.ok()))

    # ------------------------------------------------------------------ QueryRoute, QueryAssignment

    def query_route(self, msg: Inbound, req: pb.QueryRouteRequest, now: Now) -> list[Action]:
        topic = req.topic.name
        if not topic:
            return self._reply(msg, pb.QueryRouteResponse(status=v2.status(Code.ILLEGAL_TOPIC, "topic is empty")))
        endpoints = self.proxy.endpoints_for(req.endpoints)

        def with_type(view: QueueView | None, type_name: str, tnow: Now) -> list[Action]:
            if view is None:
                return self._reply(msg, pb.QueryRouteResponse(status=v2.status(
                    Code.INTERNAL_SERVER_ERROR, f"no namesrv answered the route of {topic}")))
            if view.empty:
                return self._reply(msg, pb.QueryRouteResponse(status=v2.status(
                    Code.TOPIC_NOT_FOUND, f"topic {topic} not found")))
            queues = route_queues(view, endpoints, TYPE_ACCEPTS.get(type_name, (pb.MESSAGE_TYPE_UNSPECIFIED,)))
            return self._route_event(msg, topic, queues) + self._reply(
                msg, pb.QueryRouteResponse(status=v2.ok(), message_queues=queues))

        return self.proxy.topic_types.with_view(topic, now, with_type)

    def _route_event(self, msg: Inbound, topic: str, queues: list[pb.MessageQueue]) -> list[Action]:
        """The client's view is the route it was answered: the broker queues behind the proxy's."""
        publish = [{"broker": q.broker.name, "queue_id": q.id} for q in queues if q.permission in WRITABLE]
        subscribe = [{"broker": q.broker.name, "queue_id": q.id} for q in queues if q.permission in READABLE]
        if not is_grpc(msg.channel):
            return []  # an emulated client writes its own view
        old = self.views.get((msg.peer, topic))
        self.views[(msg.peer, topic)] = publish
        return [Emit("client.route", {"topic": topic, "source": self.proxy.name, "publish_queues": publish,
                                      "subscribe_queues": subscribe, "changed": old != publish, "group": ""},
                     node=msg.peer)]

    def query_assignment(self, msg: Inbound, req: pb.QueryAssignmentRequest, now: Now) -> list[Action]:
        """One queue (id -1) per readable broker with a master; every queue for a FIFO group."""
        topic, group = req.topic.name, req.group.name
        endpoints = self.proxy.endpoints_for(req.endpoints)
        fifo = self.fifo(msg.frame.fields.get("client_id"), group)

        def with_view(view: QueueView | None, vnow: Now) -> list[Action]:
            if view is None or view.empty:
                return self._reply(msg, pb.QueryAssignmentResponse(status=v2.status(
                    Code.TOPIC_NOT_FOUND, f"topic {topic} not found")))
            out = []
            brokers = sorted({mq.broker_name for mq in view.read if mq.broker_name in view.masters})
            for mq in view.read:
                if fifo and mq.broker_name in view.masters:
                    out.append(pb.Assignment(message_queue=queue(topic, mq.broker_name, mq.queue_id, pb.READ_WRITE,
                                                                 endpoints, ())))
            if not fifo:
                out = [pb.Assignment(message_queue=queue(topic, b, -1, pb.READ_WRITE, endpoints, ()))
                       for b in brokers]
            return self._reply(msg, pb.QueryAssignmentResponse(status=v2.ok(), assignments=out))

        return self.proxy.routes.get(topic, now, with_view)

    def _reply(self, msg: Inbound, message: Any) -> list[Action]:
        return [Reply(msg.channel, v2.answer(msg.frame, message))]


def queue(topic: str, broker: str, qid: int, permission: int, endpoints: pb.Endpoints,
          accepts: tuple[int, ...]) -> pb.MessageQueue:
    mq = pb.MessageQueue(id=qid, permission=permission, accept_message_types=list(accepts))
    mq.topic.name = topic
    mq.broker.name = broker
    mq.broker.id = 0
    mq.broker.endpoints.CopyFrom(endpoints)
    return mq


def route_queues(view: QueueView, endpoints: pb.Endpoints, accepts: tuple[int, ...]) -> list[pb.MessageQueue]:
    """``RouteActivity.genMessageQueueFromQueueData`` for each broker with a master: the queues both
    readable and writable, then the read-only, then the write-only ones, their ids running on."""
    out: list[pb.MessageQueue] = []
    route = view.route or {}
    for qd in route.get("queueDatas", []):
        name = qd["brokerName"]
        if name not in view.masters:
            continue
        r, w, perm = qd["readQueueNums"], qd["writeQueueNums"], qd["perm"]
        both = min(r, w) if Perm.readable(perm) and Perm.writable(perm) else 0
        only_r = (r - both) if Perm.readable(perm) else 0
        only_w = (w - both) if Perm.writable(perm) else 0
        kinds = [pb.READ_WRITE] * both + [pb.READ] * only_r + [pb.WRITE] * only_w
        out += [queue(view.topic, name, i, kind, endpoints, accepts) for i, kind in enumerate(kinds)]
    return out
