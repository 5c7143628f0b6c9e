"""ReceiveMessage, AckMessage and ChangeInvisibleDuration: a RocketMQ 5 consumer's POP through the
proxy (docs/rocketmq-model.md §10.1, §10.2).

As 5.x's ``ReceiveMessageActivity``: the long-polling time is clamped to 5-20 s; an explicit
invisible time must lie in 10 s-12 h (``ILLEGAL_INVISIBLE_TIME``), an auto-renewed receive
(a PushConsumer) leases for 60 s; POP_MESSAGE goes to the master of the broker the client named
(else one in turn) and the stream answers a status, then the messages, then ends; messages
popped for a call the client has left go back at once (:mod:`.abandoned`). A message's
receipt handle is its ``POP_CK`` plus its commit-log offset (5.x's ``ReceiptHandle``): it names the
broker, queue, offset and the lease's end, so an ack after the lease has run out is refused here
with ``INVALID_RECEIPT_HANDLE``, as 5.x's proxy refuses it, and never reaches the broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode, is_grpc, request
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply, Request
from rmqemu.emulator.roles.common.pop_keys import real_topic
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2
from rmqemu.emulator.roles.proxy.abandoned import Abandoned, deadline_of
from rmqemu.emulator.roles.proxy.dead_letter import send_to_dlq
from rmqemu.emulator.roles.proxy.messages import Handle, to_message
from rmqemu.emulator.roles.proxy.route_view import QueueView

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

Code = v2.Code
ACK_TIMEOUT_MS = 3000
MAX_BATCH = 32  # the client asks for 32 whatever the settings say
@dataclass
class _AckBatch:
    """One AckMessage call: its entries' results as they come."""

    msg: Inbound
    topic: str
    group: str
    results: list[pb.AckMessageResultEntry | None]
    answered: bool = False

    def answer_if_done(self, receiving: "Receiving") -> list[Action]:
        if self.answered or any(r is None for r in self.results):
            return []
        self.answered = True
        done = [r for r in self.results if r is not None]
        codes = {r.status.code for r in done}
        top = done[0].status if len(codes) == 1 else v2.status(Code.MULTIPLE_RESULTS, "")
        return receiving._reply(self.msg, pb.AckMessageResponse(status=top, entries=done))


class Receiving:
    def __init__(self, proxy: "Proxy") -> None:
        self.proxy = proxy
        self.abandoned = Abandoned(proxy)

    # ------------------------------------------------------------------ ReceiveMessage

    def receive_message(self, msg: Inbound, req: pb.ReceiveMessageRequest, now: Now) -> list[Action]:
        cfg = self.proxy.cfg
        poll = v2.duration_ms(req.long_polling_timeout) if req.HasField("long_polling_timeout") else \
            cfg.grpcClientConsumerMaxLongPollingTimeoutMillis
        poll = min(max(poll, cfg.grpcClientConsumerMinLongPollingTimeoutMillis),
                   cfg.grpcClientConsumerMaxLongPollingTimeoutMillis)
        topic, group = req.message_queue.topic.name, req.group.name
        if not topic or not group:
            return self._end(msg, now, Code.ILLEGAL_TOPIC if not topic else Code.ILLEGAL_CONSUMER_GROUP,
                             "topic and group cannot be empty")
        if req.auto_renew:
            invisible = cfg.defaultInvisibleTimeMills
        else:
            invisible = v2.duration_ms(req.invisible_duration)
            if not cfg.minInvisibleTimeMillsForRecv <= invisible <= cfg.maxInvisibleTimeMills:
                return self._end(msg, now, Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is out of range "
                                 f"[{cfg.minInvisibleTimeMillsForRecv}, {cfg.maxInvisibleTimeMills}]")
        expression = req.filter_expression.expression or "*"
        if req.filter_expression.type == pb.SQL:
            return self._end(msg, now, Code.ILLEGAL_FILTER_EXPRESSION, "SQL92 filters are not supported here")
        fifo = self.proxy.sessions.fifo(msg.frame.fields.get("client_id"), group)
        broker = req.message_queue.broker.name
        deadline = deadline_of(msg, now)

        def with_view(view: QueueView | None, vnow: Now) -> list[Action]:
            if view is None or view.empty or not view.read:
                return self._end(msg, vnow, Code.TOPIC_NOT_FOUND, f"topic {topic} has no readable queue")
            names = sorted({mq.broker_name for mq in view.read})
            name = broker if broker in names else names[self.proxy.next_index() % len(names)]
            addr = view.read_addr(name)
            if addr is None:
                return self._end(msg, vnow, Code.MESSAGE_NOT_FOUND, "no broker address")
            fields = {"consumerGroup": group, "topic": topic, "queueId": -1,
                      "maxMsgNums": min(max(req.batch_size, 1), MAX_BATCH), "invisibleTime": int(invisible),
                      "pollTime": int(poll), "bornTime": int(vnow.wall_ms), "initMode": 1, "expType": "TAG",
                      "exp": expression, "order": fifo}
            if req.HasField("attempt_id"):
                fields["attemptId"] = req.attempt_id

            def on_reply(resp, rnow: Now) -> list[Action]:  # type: ignore[no-untyped-def]
                return self._popped(msg, group, topic, name, addr, resp, rnow, req.auto_renew)

            self.abandoned.expect(msg, deadline)
            return [Request(addr, request(RC.POP_MESSAGE, fields), poll + ACK_TIMEOUT_MS, on_reply, held=True)]

        return self.proxy.routes.get(topic, now, with_view)

    def _popped(self, msg: Inbound, group: str, topic: str, broker: str, addr: str, resp: Any,
                now: Now, auto_renew: bool = False) -> list[Action]:
        gone = self.abandoned.settle(msg, now)
        if resp is None:
            return [] if gone else self._end(msg, now, Code.PROXY_TIMEOUT, f"pop from {broker} timed out")
        records: list[dict[str, Any]] = []
        if resp.code == ResponseCode.SUCCESS:
            try:
                records = [r for r in (resp.json_body() or []) if isinstance(r, dict)]
            except ValueError:
                records = []
        if not records:
            if resp.code == ResponseCode.POLLING_FULL:
                return self._end(msg, now, Code.TOO_MANY_REQUESTS, "polling full")
            if resp.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND) or resp.code >= 200:
                return self._end(msg, now, Code.MESSAGE_NOT_FOUND, "no new message")
            return self._end(msg, now, Code.INTERNAL_SERVER_ERROR, resp.remark or f"pop failed: {resp.code}")
        max_attempts = self.proxy.sessions.max_attempts(msg.frame.fields.get("client_id"))
        dead = [r for r in records if int(r.get("reconsumeTimes", 0) or 0) >= max_attempts]
        out: list[Action] = [a for r in dead for a in self._to_dlq(msg, group, topic, broker, addr, r)]
        records = [r for r in records if r not in dead]
        if gone:  # nobody to hand them to: back to the broker within a second (abandoned.py)
            return out + self.abandoned.nack(msg, group, topic, addr, records)
        if not records:
            return out + self._end(msg, now, Code.MESSAGE_NOT_FOUND, "no new message")
        messages = [to_message(r, topic) for r in records]
        if auto_renew:  # a PushConsumer's: the proxy keeps the leases alive (renewal.py)
            self.proxy.renewal.add(msg.frame.fields.get("client_id"), group, topic, messages, now)
        out += self._stream(msg, now, [pb.ReceiveMessageResponse(status=v2.ok())]
                            + [pb.ReceiveMessageResponse(message=m) for m in messages])
        if not is_grpc(msg.channel):
            return out  # an emulated client writes its own consume line
        by_queue: dict[int, list[pb.Message]] = {}
        for m in messages:
            by_queue.setdefault(m.system_properties.queue_id, []).append(m)
        for qid, ms in sorted(by_queue.items()):
            out.append(Emit("consume", {
                "group": group, "topic": topic, "broker": broker, "queue_id": qid,
                "msg_ids": [m.system_properties.message_id for m in ms],
                "offsets": [m.system_properties.queue_offset for m in ms],
                "delivery_attempts": [m.system_properties.delivery_attempt for m in ms], "proxy": self.proxy.name},
                node=msg.peer))
        return out

    def _to_dlq(self, msg: Inbound, group: str, topic: str, broker: str, addr: str,
                record: dict[str, Any]) -> list[Action]:
        """``PopMessageResultFilterImpl``'s TO_DLQ: past the client's max attempts, never delivered
        (:mod:`.dead_letter`)."""
        props = record.get("properties") or {}
        handle = Handle.decode(f"{props.get('POP_CK', '')} {int(record.get('commitLogOffset', -1))}")
        if handle is None:
            return []  # a record without a lease: nothing to send back or ack
        msg_id = str(props.get("UNIQ_KEY") or record.get("msgId", ""))
        attempt = int(record.get("reconsumeTimes", 0) or 0) + 1
        return send_to_dlq(self.proxy, msg.peer, addr, group, topic, handle, msg_id, attempt)

    def _end(self, msg: Inbound, now: Now, code: int, text: str) -> list[Action]:
        return self._stream(msg, now, [v2.failure("ReceiveMessage", code, text)])

    @staticmethod
    def _stream(msg: Inbound, now: Now, responses: list[Any]) -> list[Action]:
        """The stream's elements, then ``onComplete``'s ``delivery_timestamp`` element (the
        PushConsumer computes its receive latency from it and fails without it); one reply frame
        of them all to an emulated client (:func:`v2.stream`)."""
        last = pb.ReceiveMessageResponse()
        v2.set_timestamp(last.delivery_timestamp, now.wall_ms)
        return [Reply(msg.channel, f) for f in v2.stream(is_grpc(msg.channel), msg.frame, [*responses, last])]

    # ------------------------------------------------------------------ AckMessage, ChangeInvisibleDuration

    def ack_message(self, msg: Inbound, req: pb.AckMessageRequest, now: Now) -> list[Action]:
        """Each entry's ACK_MESSAGE; the answer once every entry has its result (one status for
        them all when they agree, else ``MULTIPLE_RESULTS``)."""
        if not req.entries:
            return self._reply(msg, pb.AckMessageResponse(status=v2.status(Code.BAD_REQUEST, "no entry")))
        batch = _AckBatch(msg, req.topic.name, req.group.name, [None] * len(req.entries))
        actions: list[Action] = []
        for i, entry in enumerate(req.entries):
            actions += self._ack_one(batch, i, entry, now)
        return actions

    def _ack_one(self, batch: "_AckBatch", i: int, entry: pb.AckMessageEntry, now: Now) -> list[Action]:
        handle = Handle.decode(self.proxy.renewal.take(batch.msg.frame.fields.get("client_id"), batch.group,
                                                       entry.message_id, entry.receipt_handle, acking=True))

        def result(code: int, text: str, cause: str) -> list[Action]:
            batch.results[i] = pb.AckMessageResultEntry(message_id=entry.message_id,
                                                        receipt_handle=entry.receipt_handle,
                                                        status=v2.status(code, text))
            emit = Emit("proxy.ack", {"group": batch.group, "topic": batch.topic, "msg_id": entry.message_id,
                                      "broker": handle.broker if handle else None, "result": cause,
                                      "proxy": self.proxy.name}, node=batch.msg.peer)
            return [emit] + batch.answer_if_done(self)

        if handle is None:
            return result(Code.INVALID_RECEIPT_HANDLE, "receipt handle is invalid", "invalid")
        if handle.expired(now.wall_ms):
            return result(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired", "expired")
        view = self.proxy.routes.cached(batch.topic)
        addr = view.masters.get(handle.broker) if view is not None else None
        if addr is None:
            return result(Code.INTERNAL_SERVER_ERROR, f"no master of {handle.broker}", "no_broker")
        fields = {"consumerGroup": batch.group, "topic": real_topic(batch.topic, batch.group, handle.topic_type),
                  "queueId": handle.queue_id, "extraInfo": handle.text, "offset": handle.offset}

        def on_reply(resp, rnow: Now) -> list[Action]:  # type: ignore[no-untyped-def]
            if resp is None:
                return result(Code.PROXY_TIMEOUT, "ack timed out", "timeout")
            if resp.code == ResponseCode.SUCCESS:
                return result(Code.OK, "OK", "ok")
            illegal = resp.code == ResponseCode.MESSAGE_ILLEGAL
            code = Code.INVALID_RECEIPT_HANDLE if illegal else Code.INTERNAL_SERVER_ERROR
            return result(code, resp.remark or "", f"code_{resp.code}")

        return [Request(addr, request(RC.ACK_MESSAGE, fields), ACK_TIMEOUT_MS, on_reply)]

    def change_invisible_duration(self, msg: Inbound, req: pb.ChangeInvisibleDurationRequest,
                                  now: Now) -> list[Action]:
        """CHANGE_INVISIBLE_TIME to the handle's broker; the answer carries the new handle, and
        always one (the client stores it before it reads the status)."""
        topic, group = req.topic.name, req.group.name
        handle = Handle.decode(self.proxy.renewal.take(msg.frame.fields.get("client_id"), group, req.message_id,
                                                       req.receipt_handle))
        invisible = v2.duration_ms(req.invisible_duration)
        cfg = self.proxy.cfg

        def fail(code: int, text: str) -> list[Action]:
            return self._reply(msg, pb.ChangeInvisibleDurationResponse(status=v2.status(code, text),
                                                                       receipt_handle=req.receipt_handle))

        if handle is None:
            return fail(Code.INVALID_RECEIPT_HANDLE, "receipt handle is invalid")
        if invisible > cfg.maxInvisibleTimeMills or invisible < 0:
            return fail(Code.ILLEGAL_INVISIBLE_TIME, "the invisibleTime is out of range")
        if handle.expired(now.wall_ms):
            return fail(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")
        view = self.proxy.routes.cached(topic)
        addr = view.masters.get(handle.broker) if view is not None else None
        if addr is None:
            return fail(Code.INTERNAL_SERVER_ERROR, f"no master of {handle.broker}")
        fields = {"consumerGroup": group, "topic": real_topic(topic, group, handle.topic_type),
                  "queueId": handle.queue_id, "extraInfo": handle.text, "offset": handle.offset,
                  "invisibleTime": int(invisible)}

        def on_reply(resp, rnow: Now) -> list[Action]:  # type: ignore[no-untyped-def]
            if resp is None:
                return fail(Code.PROXY_TIMEOUT, "change invisible time timed out")
            if resp.code != ResponseCode.SUCCESS:
                return fail(Code.INTERNAL_SERVER_ERROR, resp.remark or f"code {resp.code}")
            new = handle.renewed(resp.fields, invisible)
            emit = Emit("proxy.change_invisible", {"group": group, "topic": topic, "msg_id": req.message_id,
                                                   "broker": handle.broker, "invisible_ms": invisible,
                                                   "proxy": self.proxy.name}, node=msg.peer)
            return [emit] + self._reply(msg, pb.ChangeInvisibleDurationResponse(status=v2.ok(), receipt_handle=new))

        return [Request(addr, request(RC.CHANGE_INVISIBLE_TIME, fields), ACK_TIMEOUT_MS, on_reply)]

    def _reply(self, msg: Inbound, message: Any) -> list[Action]:
        return [Reply(msg.channel, v2.answer(msg.frame, message))]
