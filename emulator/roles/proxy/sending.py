"""SendMessage and EndTransaction: a RocketMQ 5 client's message becomes a 4.x SEND_MESSAGE_V2 to
the master of a queue the proxy picks (docs/rocketmq-model.md §10.1).

As 5.x's ``SendMessageActivity``: one message per request; the client's ``message_id`` is the
``UNIQ_KEY`` and the one ``SendResultEntry`` echoes it; the producer group is the topic's name;
a FIFO message's group is its ``__SHARDINGKEY`` and picks the queue by consistent hashing, any
other message takes the next write queue in turn; a DELAY message's ``delivery_timestamp`` is
``TIMER_DELIVER_MS`` (at most ``maxDelayTimeMills`` ahead); a TRANSACTION message is a half
(``TRAN_MSG``, prepared sysflag) whose (broker, offsets) the proxy keeps for its end.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import AUTO_CREATE_TOPIC_KEY, RequestCode, ResponseCode, is_grpc, oneway, request
from rmqemu.emulator.roles.client.route_cache import MessageQueue
from rmqemu.emulator.roles.client.subscription import java_string_hash
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Oneway, Reply, Request
from rmqemu.emulator.roles.common.sysflag import PREPARED_TYPE
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.route_view import QueueView

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

Code = v2.Code
SEND_TIMEOUT_MS = 3000
MAX_HALVES_KEPT = 65536  # (topic, transaction id) -> the half's place, for its end
#: 4.x send answers that are not a SEND_OK, as 5.x's ResponseBuilder turns them into v2 codes
BROKER_CODES = {ResponseCode.FLUSH_DISK_TIMEOUT: Code.MASTER_PERSISTENCE_TIMEOUT,
                ResponseCode.FLUSH_SLAVE_TIMEOUT: Code.SLAVE_PERSISTENCE_TIMEOUT,
                ResponseCode.SLAVE_NOT_AVAILABLE: Code.HA_NOT_AVAILABLE,
                ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS, ResponseCode.NO_PERMISSION: Code.FORBIDDEN,
                ResponseCode.TOPIC_NOT_EXIST: Code.TOPIC_NOT_FOUND, ResponseCode.MESSAGE_ILLEGAL: Code.BAD_REQUEST}
TYPES = {pb.NORMAL: "NORMAL", pb.FIFO: "FIFO", pb.DELAY: "DELAY", pb.TRANSACTION: "TRANSACTION"}


def consistent_hash(key: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash(long, int)``: a 64-bit LCG jumps between buckets."""
    state, candidate = key & 0xFFFFFFFFFFFFFFFF, 0
    while True:
        state = (2862933555777941757 * state + 1) & 0xFFFFFFFFFFFFFFFF
        nxt = int((candidate + 1) / ((((state >> 33) + 1) & 0xFFFFFFFF) / 2.0**31))
        if not 0 <= nxt < buckets:
            return candidate
        candidate = nxt


def pick_queue(view: QueueView, message_group: str) -> MessageQueue | None:
    """``SendMessageQueueSelector``: a FIFO group's queue by consistent hash of its hashCode, else
    the next write queue."""
    if message_group and view.write:
        return view.write[consistent_hash(java_string_hash(message_group), len(view.write))]
    return view.next_write()


class Sending:
    def __init__(self, proxy: "Proxy") -> None:
        self.proxy = proxy
        self.halves: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()

    # ------------------------------------------------------------------ SendMessage

    def send_message(self, msg: Inbound, req: pb.SendMessageRequest, now: Now) -> list[Action]:
        if len(req.messages) != 1:
            return self._fail(msg, Code.BAD_REQUEST, "a request must carry exactly one message")
        m = req.messages[0]
        problem = self._validate(m, now)
        if problem is not None:
            return self._fail(msg, *problem)
        topic = m.topic.name
        # the topic's type from its cache, loaded when missing (5.x's getTopicMessageType), as QueryRoute reads it
        return self.proxy.topic_types.with_view(topic, now, lambda view, _type, n: self._with_view(msg, m, view, n))

    def _validate(self, m: pb.Message, now: Now) -> tuple[int, str] | None:
        cfg = self.proxy.cfg
        sp = m.system_properties
        if not m.topic.name:
            return Code.ILLEGAL_TOPIC, "topic name cannot be empty"
        if not sp.message_id.strip():
            return Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty"
        if cfg.maxMessageSize > 0 and len(m.body) > cfg.maxMessageSize:
            return Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {cfg.maxMessageSize}"
        if sp.HasField("delivery_timestamp") and cfg.maxDelayTimeMills > 0:
            if v2.timestamp_ms(sp.delivery_timestamp) - now.wall_ms > cfg.maxDelayTimeMills:
                return Code.ILLEGAL_DELIVERY_TIME, f"the max delay time is too large, max is {cfg.maxDelayTimeMills}"
        if sp.message_type == pb.TRANSACTION and not sp.message_id:
            return Code.INVALID_TRANSACTION_ID, "a transactional message needs an id"
        return None

    def _with_view(self, msg: Inbound, m: pb.Message, view: QueueView | None, now: Now) -> list[Action]:
        topic = m.topic.name
        if view is None or view.empty:
            return self._fail(msg, Code.TOPIC_NOT_FOUND, f"topic {topic} not found")
        problem = self.proxy.topic_types.check(topic, m.system_properties.message_type)
        if problem is not None:
            return self._fail(msg, Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, problem)
        mq = pick_queue(view, m.system_properties.message_group)
        addr = view.masters.get(mq.broker_name) if mq is not None else None
        if mq is None or addr is None:
            return self._fail(msg, Code.TOPIC_NOT_FOUND, f"no writable queue of topic {topic}")
        props = self._properties(m, msg)
        sp = m.system_properties
        fields = {"producerGroup": topic, "topic": topic, "defaultTopic": AUTO_CREATE_TOPIC_KEY,
                  "defaultTopicQueueNums": 4, "queueId": mq.queue_id,
                  "sysFlag": PREPARED_TYPE if sp.message_type == pb.TRANSACTION else 0,
                  "bornTimestamp": v2.timestamp_ms(sp.born_timestamp) if sp.HasField("born_timestamp")
                  else int(now.wall_ms), "flag": 0, "properties": props, "reconsumeTimes": sp.delivery_attempt,
                  "unitMode": False, "batch": False}
        sent = now.host_mono_ms

        def on_reply(resp, rnow: Now) -> list[Action]:  # type: ignore[no-untyped-def]
            return self._answered(msg, m, mq, addr, resp, rnow, rnow.host_mono_ms - sent)

        frame = request(RequestCode.SEND_MESSAGE_V2, fields, bytes(m.body))
        return [Request(addr, frame, SEND_TIMEOUT_MS, on_reply)]

    def _properties(self, m: pb.Message, msg: Inbound) -> dict[str, str]:
        sp = m.system_properties
        props = dict(m.user_properties)
        if sp.HasField("tag"):
            props["TAGS"] = sp.tag
        if sp.keys:
            props["KEYS"] = " ".join(sp.keys)
        props["UNIQ_KEY"] = sp.message_id
        if sp.message_type == pb.TRANSACTION:
            props["TRAN_MSG"] = "true"
            if sp.HasField("orphaned_transaction_recovery_duration"):
                props["CHECK_IMMUNITY_TIME_IN_SECONDS"] = str(v2.duration_ms(
                    sp.orphaned_transaction_recovery_duration) // 1000)
        if sp.HasField("delivery_timestamp"):
            props["TIMER_DELIVER_MS"] = str(v2.timestamp_ms(sp.delivery_timestamp))
        props["PGROUP"] = m.topic.name
        if sp.message_group:
            props["__SHARDINGKEY"] = sp.message_group
        props["BORN_HOST"] = sp.born_host or (msg.addr or "")
        if sp.HasField("born_timestamp"):
            props["BORN_TIMESTAMP"] = str(v2.timestamp_ms(sp.born_timestamp))
        return props

    def _answered(self, msg: Inbound, m: pb.Message, mq: MessageQueue, addr: str, resp: Any, now: Now,
                  latency: float) -> list[Action]:
        sp = m.system_properties
        code = resp.code if resp is not None else None
        if resp is None:
            status = v2.status(Code.PROXY_TIMEOUT, f"send to {mq.broker_name} timed out")
        elif resp.code == ResponseCode.SUCCESS:
            status = v2.ok()
        else:
            status = v2.status(BROKER_CODES.get(resp.code, Code.INTERNAL_SERVER_ERROR), resp.remark or "")
        entry = pb.SendResultEntry(status=status, message_id=sp.message_id)
        if resp is not None and resp.code == ResponseCode.SUCCESS:
            entry.transaction_id = sp.message_id  # 5.x sets it to UNIQ_KEY
            entry.offset = int(resp.fields.get("queueOffset", 0) or 0)
            if sp.message_type == pb.TRANSACTION:
                self._keep_half(m, mq, resp)
        reply = pb.SendMessageResponse(status=status, entries=[entry])
        fields: dict[str, Any] = {
            "msg_id": sp.message_id, "topic": m.topic.name, "group": m.topic.name, "broker": mq.broker_name,
            "broker_id": 0, "broker_addr": addr, "queue_id": mq.queue_id, "attempt": max(1, sp.delivery_attempt),
            "outcome": "ok" if code == ResponseCode.SUCCESS else ("timeout" if code is None else "error"),
            "code": code, "latency_ms": None if resp is None else round(latency, 3), "mode": "grpc",
            "proxy": self.proxy.name, "message_type": TYPES.get(sp.message_type, "UNSPECIFIED")}
        if resp is not None and resp.code != ResponseCode.SUCCESS:
            fields["error"] = resp.remark or ""
        if sp.message_group:
            fields["sharding_key"] = sp.message_group
        if sp.message_type == pb.TRANSACTION:
            fields["transaction"] = "half"
        if sp.HasField("delivery_timestamp"):
            fields["deliver_ms"] = v2.timestamp_ms(sp.delivery_timestamp)
        line: list[Action] = [Emit("send", fields, node=msg.peer)] if is_grpc(msg.channel) else []
        return line + [Reply(msg.channel, v2.answer(msg.frame, reply))]  # an emulated client writes its own

    def _keep_half(self, m: pb.Message, mq: MessageQueue, resp: Any) -> None:
        """``fillTransactionData``: what the half's END_TRANSACTION must name."""
        offset_id = str(resp.fields.get("msgId") or "")  # the offsetMsgId: host, port, commit-log offset
        try:
            commit_log_offset = int(offset_id[-16:], 16) if len(offset_id) == 32 else None
        except ValueError:
            commit_log_offset = None
        self.halves[(m.topic.name, m.system_properties.message_id)] = {
            "broker": mq.broker_name, "tran_offset": int(resp.fields.get("queueOffset", 0) or 0),
            "commit_log_offset": commit_log_offset, "offset_msg_id": offset_id}
        if len(self.halves) > MAX_HALVES_KEPT:
            self.halves.popitem(last=False)

    def _fail(self, msg: Inbound, code: int, text: str) -> list[Action]:
        return [Reply(msg.channel, v2.answer(msg.frame, v2.failure("SendMessage", code, text)))]

    # ------------------------------------------------------------------ EndTransaction

    def end_transaction(self, msg: Inbound, req: pb.EndTransactionRequest, now: Now) -> list[Action]:
        """``EndTransactionActivity``: the half's place from the send (or from the check that asked),
        END_TRANSACTION oneway to its broker's master, OK at once."""
        key = (req.topic.name, req.transaction_id or req.message_id)
        half = self.halves.get(key) or self.halves.get((req.topic.name, req.message_id))
        if half is None or half.get("commit_log_offset") is None:
            return [Reply(msg.channel, v2.answer(msg.frame, v2.failure(
                "EndTransaction", Code.INVALID_TRANSACTION_ID, "transaction id is invalid")))]
        view = self.proxy.routes.cached(req.topic.name)
        addr = view.masters.get(half["broker"]) if view is not None else None
        if req.resolution == pb.COMMIT:
            state = 8  # TRANSACTION_COMMIT_TYPE
        elif req.resolution == pb.ROLLBACK:
            state = 12  # TRANSACTION_ROLLBACK_TYPE
        else:
            return [Reply(msg.channel, v2.answer(msg.frame, v2.failure(
                "EndTransaction", Code.BAD_REQUEST, "resolution must be COMMIT or ROLLBACK")))]
        actions: list[Action] = []
        if addr is not None:
            fields = {"producerGroup": req.topic.name, "tranStateTableOffset": half["tran_offset"],
                      "commitLogOffset": half["commit_log_offset"], "commitOrRollback": state,
                      "fromTransactionCheck": req.source == pb.SOURCE_SERVER_CHECK, "msgId": req.message_id,
                      "transactionId": req.transaction_id}
            actions.append(Oneway(addr, oneway(RequestCode.END_TRANSACTION, fields)))
        if req.source != pb.SOURCE_SERVER_CHECK:
            self.halves.pop(key, None)
        reply = pb.EndTransactionResponse(status=v2.ok())
        return actions + [Reply(msg.channel, v2.answer(msg.frame, reply))]
