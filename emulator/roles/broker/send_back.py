"""Where a consumer's failed message goes next (docs/rocketmq-model.md §4.7), as 4.9.4's
``SendMessageProcessor`` decides it on two paths:

- CONSUMER_SEND_MSG_BACK (36), ``asyncConsumerSendMsgBack``: the stored message is looked up by
  its commit-log offset and put again, to ``%RETRY%<group>`` with delay level ``3 +
  reconsumeTimes`` (or the request's level, when above 0), or to ``%DLQ%<group>`` once its stored
  reconsumeTimes reaches the maximum (or for a negative level). ``ORIGIN_MESSAGE_ID`` is the stored
  message's own when not blank, else its offsetMsgId (the header's ``originMsgId`` only feeds a
  consume hook), so the first copy's id survives every retry; ``RETRY_TOPIC`` is set only when
  absent; ``WAIT`` becomes ``false`` (a SYNC_MASTER does not wait for its slave).
- a client's own send to ``%RETRY%<group>`` (the Java client's and ali-ons's fallback when the
  send-back failed), ``handleRetryAndDLQ``: to ``%DLQ%<group>`` once the header's reconsumeTimes
  reaches the maximum. The message keeps the client's properties, so one carrying ``DELAY``
  waits in SCHEDULE_TOPIC_XXXX first even on its way to the DLQ.

The maximum is the group's ``retryMaxTimes``, or the request's ``maxReconsumeTimes`` when the
sender's version is V3_4_9 or later (ali-ons sends exactly V3_4_9, a 4.9.4 client V4_9_4, rmqemu's
own clients count as 4.9.4). Every message taken back is a ``retry.back`` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import FAQ_SUFFIX, V3_4_9, Frame, Perm
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.schedule import DelayLevelError, delay_level_of
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.server_dispatch import h_bool, h_int, h_str
from rmqemu.emulator.roles.common.topic_config import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

RW = Perm.READ | Perm.WRITE
DLQ_NUMS_PER_GROUP = 1


def max_reconsume_times(frame: Frame, group_max: int) -> int:
    """``retryMaxTimes``, or the request's ``maxReconsumeTimes`` from a V3_4_9-or-later sender."""
    asked = h_int(frame, "maxReconsumeTimes") if frame.sender_version >= V3_4_9 else None
    return group_max if asked is None else asked


def group_not_exist(msg: Inbound, group: str, actions: list[Action]) -> list[Action]:
    return [*actions, Reply(msg.channel, msg.frame.response(R.SUBSCRIPTION_GROUP_NOT_EXIST,
                                                            f"subscription group not exist, {group}{FAQ_SUFFIX}"))]


class SendBack:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    def _event(self, msg: Inbound, group: str, props: dict[str, str], fallback_id: str, reconsume: int,
               max_times: int, outcome: str, via: str, new_id: str | None = None) -> Emit:
        level = None
        if outcome != "dropped":
            try:
                asked = delay_level_of(props)
            except DelayLevelError:
                asked = 0
            level = min(asked, self.broker.schedule.max_level) if asked > 0 else None
        return Emit("retry.back", {
            "group": group, "topic": props.get("RETRY_TOPIC", ""), "msg_id": props.get("UNIQ_KEY") or fallback_id,
            "origin_msg_id": props.get("ORIGIN_MESSAGE_ID"), "reconsume_times": reconsume,
            "max_reconsume_times": max_times, "outcome": outcome, "level": level, "via": via, "client": msg.peer,
            "offset_msg_id": new_id})

    # ------------------------------------------------------------------ the %RETRY% send path

    def handle_retry_and_dlq(self, msg: Inbound, topic: str, queue_id: int, reconsume: int,
                             now: Now) -> tuple[str, int, list[Action], bool]:
        """``handleRetryAndDLQ`` for a single send: ``(topic, queue id, actions, ok)``; not ok means the
        actions end with the error reply. A ``%RETRY%`` topic whose header reconsumeTimes reached the
        maximum goes to ``%DLQ%<group>`` queue 0."""
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return topic, queue_id, [], True
        b, group = self.broker, topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        sgc, actions = b.sub_groups.find(group)
        actions = list(actions)
        if sgc is None:
            return topic, queue_id, group_not_exist(msg, group, actions), False
        if reconsume >= max_reconsume_times(msg.frame, sgc.retryMaxTimes):
            topic, queue_id = DLQ_GROUP_TOPIC_PREFIX + group, 0
            actions += self._dlq_topic(topic, now)
        return topic, queue_id, actions, True

    def _dlq_topic(self, topic: str, now: Now) -> list[Action]:
        """``createTopicInSendMessageBackMethod`` of ``%DLQ%<group>``: one queue, READ|WRITE (4.9.2+)."""
        b = self.broker
        _, actions, created = b.topics.create_in_send_message_back_method(topic, DLQ_NUMS_PER_GROUP, RW, 0, now.wall_ms)
        return actions + (b.registrar.register_all(now, oneway_=True, force=True) if created else [])

    def sent(self, msg: Inbound, record: dict[str, Any], reconsume: int) -> list[Action]:
        """The ``retry.back`` line of a stored send to ``%RETRY%<group>`` (or the DLQ it was turned to)."""
        topic = h_str(msg.frame, "topic") or ""
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return []
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        sgc = self.broker.sub_groups.table.get(group)
        max_times = max_reconsume_times(msg.frame, sgc.retryMaxTimes if sgc else 16)
        props = record["properties"]
        if "REAL_TOPIC" in props and record["topic"] != props["REAL_TOPIC"]:  # parked: the real topic decides
            dlq = props["REAL_TOPIC"].startswith(DLQ_GROUP_TOPIC_PREFIX)
        else:
            dlq = record["topic"].startswith(DLQ_GROUP_TOPIC_PREFIX)
        return [self._event(msg, group, props, record["offsetMsgId"], reconsume, max_times,
                            "dlq" if dlq else "retry", "send", record["offsetMsgId"])]

    # ------------------------------------------------------------------ CONSUMER_SEND_MSG_BACK

    def consumer_send_msg_back(self, msg: Inbound, now: Now) -> list[Action]:
        """``asyncConsumerSendMsgBack``. Header: offset, group, delayLevel, originMsgId, originTopic,
        unitMode, maxReconsumeTimes."""
        b, f = self.broker, msg.frame
        group = h_str(f, "group", required=True) or ""
        sgc, persists = b.sub_groups.find(group)
        actions: list[Action] = list(persists)
        if sgc is None:  # 2
            return group_not_exist(msg, group, actions)
        if not Perm.writable(b.cfg.brokerPermission):  # 3
            return self._err(msg, R.NO_PERMISSION, f"the broker[{b.cfg.brokerIP1}] sending message is forbidden",
                             actions)
        offset = h_int(f, "offset", required=True)
        if sgc.retryQueueNums <= 0:  # 4: answered SUCCESS, the message is dropped
            orig = b.store.look_message_by_offset(offset or 0)  # only for the line: RocketMQ looks nothing up
            props = dict(orig["properties"]) if orig else {}
            props.setdefault("RETRY_TOPIC", orig["topic"] if orig else h_str(f, "originTopic") or "")
            reconsume = orig["reconsumeTimes"] + 1 if orig else 1
            return [*actions, self._event(msg, group, props, h_str(f, "originMsgId") or "", reconsume,
                                          max_reconsume_times(f, sgc.retryMaxTimes), "dropped", "send_back"),
                    Reply(msg.channel, f.response(R.SUCCESS))]
        topic = RETRY_GROUP_TOPIC_PREFIX + group  # 5
        queue_id = b.rng.randrange(1 << 31) % sgc.retryQueueNums
        sys_flag = 2 if h_bool(f, "unitMode") else 0  # buildSysFlag(false, true)
        tc, acts, created = b.topics.create_in_send_message_back_method(topic, sgc.retryQueueNums, RW, sys_flag,
                                                                        now.wall_ms)
        actions += acts + (b.registrar.register_all(now, oneway_=True, force=True) if created else [])
        if not Perm.writable(tc.perm):
            return self._err(msg, R.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden", actions)
        orig = b.store.look_message_by_offset(offset or 0)  # 6
        if orig is None:
            return self._err(msg, R.SYSTEM_ERROR, f"look message by offset failed, {offset}", actions)
        props = dict(orig["properties"])
        props.setdefault("RETRY_TOPIC", orig["topic"])  # 7
        props["WAIT"] = "false"  # msgExt.setWaitStoreMsgOK(false)
        max_times = max_reconsume_times(f, sgc.retryMaxTimes)  # 8
        delay = h_int(f, "delayLevel", 0) or 0
        dlq = orig["reconsumeTimes"] >= max_times or delay < 0  # 9
        if dlq:
            topic, queue_id = DLQ_GROUP_TOPIC_PREFIX + group, 0
            actions += self._dlq_topic(topic, now)
            props["DELAY"] = "0"
        else:
            props["DELAY"] = str(3 + orig["reconsumeTimes"] if delay == 0 else delay)
        origin = props.get("ORIGIN_MESSAGE_ID", "")  # 10: UtilAll.isBlank(origin) ? msgExt.getMsgId() : origin
        props["ORIGIN_MESSAGE_ID"] = origin if origin.strip() else orig["offsetMsgId"]
        if b.is_slave:
            return self._err(msg, R.SYSTEM_ERROR, "SERVICE_NOT_AVAILABLE", actions)
        reconsume = orig["reconsumeTimes"] + 1
        record, acts = b.schedule.put(topic, queue_id, body_bytes(orig), props, now,
                                      sys_flag=int(orig.get("sysFlag", 0)), born_timestamp=orig["bornTimestamp"],
                                      reconsume_times=reconsume, flag=orig.get("flag", 0),
                                      born_host=orig.get("bornHost", ""))
        if record is None:  # 11: anything but PUT_OK is SYSTEM_ERROR with the status's name
            return self._err(msg, R.SYSTEM_ERROR, "OS_PAGECACHE_BUSY", [*actions, *acts])
        actions += [*acts, *b.puller.notify_message_arriving(record["topic"], record["queueId"], now),
                    *b.ha.notify_new_data(now),
                    self._event(msg, group, props, orig.get("parkedMsgId") or orig["offsetMsgId"], reconsume,
                                max_times, "dlq" if dlq else "retry", "send_back", record["offsetMsgId"])]
        if b.dledger is not None:  # the answer waits for DLedger's
            def answered(status: str, n: Now) -> list[Action]:
                return [Reply(msg.channel, f.response(R.SUCCESS) if status == "PUT_OK"
                              else f.response(R.SYSTEM_ERROR, status))]
            b.dledger.await_ack(record, answered)
            return actions
        # 11: PUT_OK -> SUCCESS; a SYNC_MASTER never waits here (WAIT is false), so nothing else occurs
        return [*actions, Reply(msg.channel, f.response(R.SUCCESS))]

    def _err(self, msg: Inbound, code: int, remark: str, actions: list[Action]) -> list[Action]:
        return [*actions, Reply(msg.channel, msg.frame.response(code, remark))]

