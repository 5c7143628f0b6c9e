"""What a namesrv or broker sees of a real client, written as that client's events.

A real client (on the remoting port) writes no log of its own, so the nodes it talks to write
its lines, under its name (``client@<pid>``), from the wire: a route answered to it is its
``client.route`` (its view is the last route it was answered), a send answered is a ``send``
with the answer's outcome, a pull answered a ``pull`` and the messages it delivered a ``consume``
(the listener is out of sight: delivered counts as consumed; a message is named by its UNIQ_KEY, else
by the id its send was acked with; with the queue offsets, so that an orderly client is judged per
queue), a heartbeat a ``client.heartbeat``. What
never reached a node (a send lost in a partition, a timeout on the client's side) is not seen;
docs/real-clients.md says so.

A role calls :meth:`WireLog.request` for each inbound request and passes every action list it
returns through :meth:`WireLog.observe`, which pairs responses with their requests by channel and
opaque (a held pull or a SYNC_MASTER send is answered later, from a timer).
"""

from __future__ import annotations

import dataclasses
import random
from collections import OrderedDict
from typing import Any, Callable

from rmqemu.emulator.protocol import BadFrame, Frame, RequestCode, is_remoting, message_ext
from rmqemu.emulator.roles.client import route_cache
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Reply, ReplyHandler, Request
from rmqemu.emulator.roles.common.server_dispatch import parse_properties

SENDS = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
WATCHED = frozenset((*SENDS, RequestCode.PULL_MESSAGE, RequestCode.HEART_BEAT, RequestCode.GET_ROUTEINFO_BY_TOPIC))
MAX_PENDING = 4096  # requests awaiting their answer (held pulls): the oldest are forgotten beyond
MAX_ATTEMPTS_KEPT = 65536  # msg ids whose attempts are counted
_NO_RNG = random.Random(0)  # to_publish_info's queue index, unused by a view


class WireLog:
    """``node``: the role's own node name (a route's ``source``); ``broker`` / ``broker_id`` /
    ``broker_addr`` for a broker, and ``lookup``, its store's look-up by commit-log offset (the id a
    delivered delayed message was acked with, ``parkedMsgId``)."""

    def __init__(self, node: str, broker: str | None = None, broker_id: int | None = None,
                 lookup: Callable[[int], dict[str, Any] | None] = lambda offset: None,
                 broker_addr: str | None = None) -> None:
        self.node = node
        self.broker = broker
        self.broker_id = broker_id
        self.broker_addr = broker_addr
        self.lookup = lookup
        self.pending: OrderedDict[tuple[str, int], tuple[str, Frame]] = OrderedDict()
        self.attempts: OrderedDict[str, int] = OrderedDict()
        self.views: dict[tuple[str, str], list[list[Any]]] = {}  # (client, topic) -> last publish view

    def request(self, msg: Inbound) -> None:
        if is_remoting(msg.channel) and msg.frame.code in WATCHED and not msg.frame.is_oneway:
            self.pending[(msg.channel, msg.frame.opaque)] = (msg.peer, msg.frame)
            if len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)

    def drop_channel(self, channel: str) -> None:
        for key in [k for k in self.pending if k[0] == channel]:
            del self.pending[key]

    def observe(self, actions: list[Action]) -> list[Action]:
        """``actions`` plus the events of the real clients' requests they answer. An answer may
        also come later, from the callback of a request these actions make (a DLedger master
        answers a send when a follower's reply completes the quorum): those are observed too."""
        events: list[Action] = []
        out = actions
        for i, a in enumerate(actions):
            if isinstance(a, Request):
                if out is actions:
                    out = list(actions)
                out[i] = dataclasses.replace(a, on_reply=self._observed(a.on_reply))
            elif isinstance(a, Reply) and a.frame.is_response and is_remoting(a.channel):
                asked = self.pending.pop((a.channel, a.frame.opaque), None)
                if asked is not None:
                    events += self._events(asked[0], asked[1], a.frame)
        return [*out, *events] if events else out

    def _observed(self, on_reply: ReplyHandler) -> ReplyHandler:
        return lambda resp, now: self.observe(on_reply(resp, now))

    def _events(self, client: str, req: Frame, resp: Frame) -> list[Action]:
        if req.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return self._route(client, req, resp)
        if req.code == RequestCode.PULL_MESSAGE:
            return self._pull(client, req, resp)
        if req.code == RequestCode.HEART_BEAT:
            try:
                data = req.json_body() or {}
                groups = {k: [str(g.get("groupName")) for g in data.get(k) or []]
                          for k in ("producerDataSet", "consumerDataSet")}
            except (ValueError, AttributeError, TypeError):
                return []
            return [Emit("client.heartbeat", {"client_id": str(data.get("clientID", "")),
                                              "producer_groups": groups["producerDataSet"],
                                              "consumer_groups": groups["consumerDataSet"], "code": resp.code},
                         node=client)]
        return self._send(client, req, resp)

    def _pull(self, client: str, req: Frame, resp: Frame) -> list[Action]:
        """A pull answered, and the messages it delivered as the client's ``consume``: the broker
        cannot see the client's listener, so for a real client consumed means delivered."""
        f = req.fields
        where = {"group": str(f.get("consumerGroup", "")), "topic": str(f.get("topic", "")),
                 "broker": self.broker or "", "queue_id": _int(f.get("queueId"))}
        msgs: list[dict[str, Any]] = []
        if resp.code == 0:
            try:
                msgs = message_ext.decode_messages(resp.body)
            except BadFrame:  # our own encoding: cannot happen, but a report line is not worth a failed pull
                msgs = []
        ids = [m["properties"].get("UNIQ_KEY") or self._acked_id(m) for m in msgs]
        out: list[Action] = [Emit("pull", {**where, "code": resp.code, "count": len(ids),
                                           "offset": _int(f.get("queueOffset")), "broker_id": self.broker_id},
                                  node=client)]
        if ids:
            out.append(Emit("consume", {**where, "msg_ids": ids, "offsets": [int(m["queueOffset"]) for m in msgs]},
                            node=client))
        return out

    def _acked_id(self, m: dict[str, Any]) -> str:
        """A message without UNIQ_KEY (ali-ons sets none) by the id its send was acked with: its
        offsetMsgId, or for a copy delivered from SCHEDULE_TOPIC_XXXX the parked copy's."""
        record = self.lookup(int(m["commitLogOffset"]))
        return str((record or {}).get("parkedMsgId") or m["msgId"])

    def _route(self, client: str, req: Frame, resp: Frame) -> list[Action]:
        topic = str(req.fields.get("topic", ""))
        publish: list[dict[str, Any]] = []
        subscribe: list[dict[str, Any]] = []
        if resp.code == 0:
            try:
                route = route_cache.normalize_route(resp.json_body() or {})
            except (ValueError, KeyError, TypeError, AttributeError):
                return []
            publish = [mq.queue() for mq in route_cache.to_publish_info(topic, route, _NO_RNG).message_queues]
            subscribe = [mq.queue() for mq in route_cache.to_subscribe_info(topic, route)]
        old = self.views.get((client, topic))
        self.views[(client, topic)] = publish
        return [Emit("client.route", {"topic": topic, "source": self.node, "publish_queues": publish,
                                      "subscribe_queues": subscribe, "changed": old != publish, "group": ""},
                     node=client)]

    def _send(self, client: str, req: Frame, resp: Frame) -> list[Action]:
        f = req.fields
        props = parse_properties(f.get("properties")) if req.code != RequestCode.SEND_BATCH_MESSAGE else {}
        msg_id = props.get("UNIQ_KEY") or str(resp.fields.get("msgId", "")).split(",")[0]
        self.attempts[msg_id] = attempt = self.attempts.pop(msg_id, 0) + 1
        if len(self.attempts) > MAX_ATTEMPTS_KEPT:
            self.attempts.popitem(last=False)
        fields: dict[str, Any] = {
            "msg_id": msg_id, "topic": str(f.get("topic", "")), "broker": self.broker,
            "queue_id": _int(resp.fields.get("queueId", f.get("queueId"))), "attempt": attempt,
            "outcome": "ok" if resp.code == 0 else "error", "code": resp.code, "latency_ms": None,
            "broker_id": self.broker_id, "broker_addr": self.broker_addr, "group": str(f.get("producerGroup", "")),
            "mode": "wire"}
        if resp.code != 0:
            fields["error"] = resp.remark or ""
        level = _int(props.get("DELAY"))
        if level is not None and level > 0:
            fields["delay_level"] = level
        if props.get("TRAN_MSG", "").lower() == "true":  # Boolean.parseBoolean, as the broker reads it
            fields["transaction"] = "half"
        return [Emit("send", fields, node=client)]


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
