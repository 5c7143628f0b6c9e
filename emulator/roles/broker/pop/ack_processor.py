"""ACK_MESSAGE (200051) and CHANGE_INVISIBLE_TIME (200053) (5.x ``AckMessageProcessor``,
``ChangeInvisibleTimeProcessor``; docs/rocketmq-model.md §10.2, §10.3).

Both name a leased message by ``topic`` (the retry topic for a message popped from it), ``queueId``,
``offset`` and ``extraInfo`` (the message's ``POP_CK``). Checks, in 5.x's order: the topic exists
(TOPIC_NOT_EXIST), the queue is readable (MESSAGE_ILLEGAL), the offset is in the queue (NO_MESSAGE).
Then ``extraInfo`` is read; a field that is missing or no number answers SYSTEM_ERROR with the Java
exception's text, and nothing is written.

- An ack of a non-FIFO lease appends an ack record to the revive queue the handle names and answers
  SUCCESS: whether any checkpoint matches is the revive service's business (an ack of an expired or
  forged handle is stored and ignored). A FIFO ack (revive queue 999) marks the offset done in the
  order info and moves the pop offset to the first un-acked message (MESSAGE_ILLEGAL when the
  offset is not among those handed out).
- A renewal of a non-FIFO lease writes a new checkpoint for that one message (popped now, for the
  new invisible time) and then acks the old one; the answer's ``popTime``, ``invisibleTime`` and
  ``reviveQid`` make the new handle. A FIFO renewal only moves that offset's visible time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import FAQ_SUFFIX
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.pop.records import Ack, CheckPoint
from rmqemu.emulator.roles.broker.transaction.bridge import msg_id_of
from rmqemu.emulator.roles.common import pop_keys as keys
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply
from rmqemu.emulator.roles.common.server_dispatch import h_int, h_str
from rmqemu.emulator.roles.store.message_store import LOST

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.pop.service import PopService


class Refused(Exception):
    """An answer other than SUCCESS, with the cause the event names."""

    def __init__(self, code: int, remark: str | None, cause: str, actions: list[Action] | None = None,
                 fields: dict[str, Any] | None = None) -> None:
        super().__init__(remark)
        self.code, self.remark, self.cause, self.actions = code, remark, cause, actions or []
        self.fields = fields  # a renewal's answer header, when 5.x fills one


class AckProcessor:
    def __init__(self, pop: "PopService") -> None:
        self.pop = pop
        self.broker = pop.broker

    def _header(self, msg: Inbound, renew: bool) -> tuple[str, str, int, str, int, int | None]:
        f = msg.frame
        group = h_str(f, "consumerGroup", required=True) or ""
        topic = h_str(f, "topic", required=True) or ""
        queue_id = keys.java_range(h_int(f, "queueId", required=True), "queueId", keys.INT_MAX)
        extra = h_str(f, "extraInfo", required=True) or ""
        offset = keys.java_range(h_int(f, "offset", required=True), "offset")
        invisible = keys.java_range(h_int(f, "invisibleTime", required=True), "invisibleTime") if renew else None
        return group, topic, queue_id, extra, offset, invisible

    def _check(self, msg: Inbound, topic: str, queue_id: int, offset: int, renew: bool) -> None:
        b = self.broker
        tc = b.topics.get(topic)
        if tc is None:
            raise Refused(R.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {FAQ_SUFFIX}",
                          "topic_not_exist")
        if not 0 <= queue_id < tc.readQueueNums:
            raise Refused(R.MESSAGE_ILLEGAL, f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig."
                          f"readQueueNums:[{tc.readQueueNums}] consumer:[{msg.addr or msg.peer}]", "illegal_queue")
        lo, hi = b.store.min_offset(topic, queue_id), b.store.max_offset(topic, queue_id)
        if offset < lo or (offset >= hi if renew else offset > hi):
            remark = None if renew else f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{lo}~{hi}"
            raise Refused(R.NO_MESSAGE, remark, "no_message")

    def _fields(self, group: str, topic: str, queue_id: int, offset: int, result: str, code: int,
                fifo: bool, **extra: Any) -> dict[str, Any]:
        """The fields of a ``pop.ack`` or ``pop.change_invisible`` line."""
        queue = self.broker.store.queues.get((topic, queue_id), [])
        record = queue[offset] if 0 <= offset < len(queue) and LOST not in queue[offset] else None
        return {"msg_id": msg_id_of(record) if record else None, "group": group,
                "topic": keys.normal_topic(topic, group), "broker": self.broker.cfg.brokerName,
                "queue_id": queue_id, "offset": offset, "retry": topic.startswith(keys.RETRY_PREFIX),
                "result": result, "code": int(code), "fifo": fifo, **extra}

    # ------------------------------------------------------------------ ACK_MESSAGE

    def ack_message(self, msg: Inbound, now: Now) -> list[Action]:
        group, topic, queue_id, extra, offset, _ = self._header(msg, renew=False)
        actions: list[Action] = []
        fifo = False
        try:
            self._check(msg, topic, queue_id, offset, renew=False)
            parts = keys.split(extra)
            broker_name = keys.broker_name(parts)
            rqid = keys.revive_qid(parts)
            start = keys.ck_queue_offset(parts)
            pop_time = keys.pop_time(parts)
            invisible = keys.invisible_time(parts)
            fifo = rqid == keys.POP_ORDER_REVIVE_QUEUE
            if fifo:
                actions += self._ack_orderly(msg, group, topic, queue_id, offset, pop_time, now)
                result = "ok"
            else:
                ok, acts = self.pop.revive_log.put_ack(Ack(topic, group, queue_id, start, offset, pop_time,
                                                           broker_name), invisible, rqid, now)
                actions += acts  # 5.x logs a failed put and answers SUCCESS all the same
                result = "ok" if ok else "slave" if self.broker.is_slave else "not_written"
        except keys.ExtraInfoError as exc:
            line = self._fields(group, topic, queue_id, offset, "malformed", R.SYSTEM_ERROR, fifo, error=str(exc))
            return [Emit("pop.ack", line), Reply(msg.channel, msg.frame.response(R.SYSTEM_ERROR, str(exc)))]
        except Refused as r:
            line = self._fields(group, topic, queue_id, offset, r.cause, r.code, fifo,
                                **({"error": r.remark} if r.remark else {}))
            return [*r.actions, Emit("pop.ack", line), Reply(msg.channel, msg.frame.response(r.code, r.remark))]
        line = self._fields(group, topic, queue_id, offset, result, R.SUCCESS, fifo)
        return [*actions, Emit("pop.ack", line), Reply(msg.channel, msg.frame.response(R.SUCCESS))]

    def _ack_orderly(self, msg: Inbound, group: str, topic: str, queue_id: int, offset: int, pop_time: int,
                     now: Now) -> list[Action]:
        """``ackOrderly``: an offset below the pop offset is done already; otherwise mark it and move on."""
        b = self.broker
        old = b.offsets.query_offset(group, topic, queue_id)
        if offset < old:
            raise Refused(R.SUCCESS, None, "stale")
        known = self.pop.order_info.out(topic, group, queue_id) is not None
        nxt = self.pop.order_info.commit_and_next(topic, group, queue_id, offset, pop_time)
        if nxt == -1:
            raise Refused(R.MESSAGE_ILLEGAL, f"offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, "
                          f"commit:{offset}, next:{nxt}, {msg.addr or msg.peer}", "not_out")
        if nxt == -2:
            raise Refused(R.SUCCESS, None, "stale")
        actions: list[Action] = []
        if not b.is_slave:
            b.offsets.commit_offset(group, topic, queue_id, nxt)
        info = self.pop.order_info.out(topic, group, queue_id)
        if info is None or not info.need_block(None, 0, int(now.wall_ms)):
            actions += self.pop.popper.notify_key(topic, queue_id, group, now)
        if not known:
            raise Refused(R.SUCCESS, None, "no_order_info", actions)
        return actions

    # ------------------------------------------------------------------ CHANGE_INVISIBLE_TIME

    def change_invisible_time(self, msg: Inbound, now: Now) -> list[Action]:
        group, topic, queue_id, extra, offset, invisible = self._header(msg, renew=True)
        invisible = invisible or 0
        fifo = False
        try:
            self._check(msg, topic, queue_id, offset, renew=True)
            parts = keys.split(extra)
            rqid = keys.revive_qid(parts)
            fifo = rqid == keys.POP_ORDER_REVIVE_QUEUE
            if fifo:
                fields, actions = self._renew_orderly(group, topic, queue_id, offset, invisible, parts, now)
            else:
                fields, actions = self._renew(group, topic, queue_id, offset, invisible, parts, rqid, now)
        except keys.ExtraInfoError as exc:
            line = self._fields(group, topic, queue_id, offset, "malformed", R.SYSTEM_ERROR, fifo,
                                invisible_ms=invisible, error=str(exc))
            return [Emit("pop.change_invisible", line),
                    Reply(msg.channel, msg.frame.response(R.SYSTEM_ERROR, str(exc)))]
        except Refused as r:
            zero = {"popTime": 0, "invisibleTime": 0, "reviveQid": 0}  # the header's primitive defaults
            line = self._fields(group, topic, queue_id, offset, r.cause, r.code, fifo, invisible_ms=invisible,
                                **({"error": r.remark} if r.remark else {}))
            return [Emit("pop.change_invisible", line),
                    Reply(msg.channel, msg.frame.response(r.code, r.remark, r.fields or zero))]
        line = self._fields(group, topic, queue_id, offset, "ok", R.SUCCESS, fifo, invisible_ms=invisible,
                            pop_time=int(fields["popTime"]))
        return [*actions, Emit("pop.change_invisible", line),
                Reply(msg.channel, msg.frame.response(R.SUCCESS, None, fields))]

    def _renew(self, group: str, topic: str, queue_id: int, offset: int, invisible: int, parts: list[str],
               rqid: int, now: Now) -> tuple[dict[str, Any], list[Action]]:
        """``appendCheckPointThenAckOrigin``: the new checkpoint first, then the old lease's ack."""
        broker_name = keys.broker_name(parts)
        old = Ack(topic, group, queue_id, keys.ck_queue_offset(parts), offset, keys.pop_time(parts), broker_name)
        old_invisible = keys.invisible_time(parts)
        pop_time = int(now.wall_ms)
        ck = CheckPoint(topic, group, queue_id, offset, pop_time, invisible, broker_name, [0])
        ok, actions = self.pop.revive_log.put_ck(ck, rqid, now)
        if not ok:
            raise Refused(R.SYSTEM_ERROR, None, "slave" if self.broker.is_slave else "not_written")
        _, acts = self.pop.revive_log.put_ack(old, old_invisible, rqid, now)
        return {"popTime": pop_time, "invisibleTime": invisible, "reviveQid": rqid}, actions + acts

    def _renew_orderly(self, group: str, topic: str, queue_id: int, offset: int, invisible: int, parts: list[str],
                       now: Now) -> tuple[dict[str, Any], list[Action]]:
        """``processChangeInvisibleTimeForOrder``: that offset visible again ``invisible`` ms from now."""
        pop_time = keys.pop_time(parts)
        if offset < self.broker.offsets.query_offset(group, topic, queue_id):
            raise Refused(R.SUCCESS, None, "stale")
        visible = int(now.wall_ms) + invisible
        fields = {"popTime": pop_time, "invisibleTime": visible - pop_time, "reviveQid": keys.POP_ORDER_REVIVE_QUEUE}
        if not self.pop.order_info.update_next_visible_time(topic, group, queue_id, offset, pop_time, visible):
            raise Refused(R.SUCCESS, None, "stale", fields=fields)
        return fields, []
