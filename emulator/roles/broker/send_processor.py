"""SendMessageProcessor: SEND_MESSAGE (10) / SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320)
and CONSUMER_SEND_MSG_BACK (36) (docs/rocketmq-model.md §2.3, §2.4, §2.5, §4.7).

Header fields (RocketMQ names, V2 uses the same here): producerGroup, topic, defaultTopic,
defaultTopicQueueNums, queueId, sysFlag, bornTimestamp, flag, properties (a dict, or RocketMQ's
``k\\u0001v\\u0002`` string), reconsumeTimes, unitMode, batch, maxReconsumeTimes. Body: the message
body, bytes kept as sent; for a batch a JSON list of ``{"body": str or "body64": base64,
"properties": {...}}`` from rmqemu's producers, RocketMQ's packed binary from a real client. Response fields: msgId
(the broker's offsetMsgId; comma-joined for a batch), queueId, queueOffset (the first for a batch).

CONSUMER_SEND_MSG_BACK and the ``%RETRY%`` send path's retry/DLQ decision: emulator/roles/broker/send_back.py.
Every put goes through the delay levels (emulator/roles/broker/schedule.py): a message with ``DELAY`` > 0
is stored in SCHEDULE_TOPIC_XXXX first (docs/rocketmq-model.md §2.9); a batch carrying one is
MESSAGE_ILLEGAL, a ``DELAY`` that is no Java int SYSTEM_ERROR (the store's NumberFormatException).

Replication (emulator/roles/broker/ha.py): every put wakes the HA transfers held for slaves. On a
SYNC_MASTER the answer waits for the slave (``submitReplicaRequest``): SEND_MESSAGE answers
SLAVE_NOT_AVAILABLE (11) or FLUSH_SLAVE_TIMEOUT (12) **with** the stored message's header (sendOK
in ``handlePutMessageResult``: the message is kept); CONSUMER_SEND_MSG_BACK answers anything but
PUT_OK as SYSTEM_ERROR with the status name as remark.

Size limit (4.9.4 store, docs/rocketmq-model.md §2.4): a single message's body alone may not exceed
the broker's ``maxMessageSize`` (checked last, after the properties and the delay level), a batch's
whole packed body (checked first); both answer MESSAGE_ILLEGAL (13).

Properties limit (4.9.4 store): the properties string as stored (header properties plus the broker's
CLUSTER; for a delayed message also REAL_TOPIC and REAL_QID, and WAIT, which the rewrite puts back)
may not exceed Short.MAX_VALUE UTF-8 bytes: a single send answers MESSAGE_ILLEGAL (13), a batch whose
own header properties exceed it SYSTEM_ERROR (the encoder's RuntimeException).

A timed message (5.x ``TIMER_DELIVER_MS``, ``TIMER_DELAY_SEC``, ``TIMER_DELAY_MS``) is held in
rmq_sys_wheel_timer (emulator/roles/broker/timer/); beyond ``timerMaxDelaySec`` it is MESSAGE_ILLEGAL,
with ``timerWheelEnable`` off SYSTEM_ERROR.

A single send whose ``TRAN_MSG`` is true is a half (docs/rocketmq-model.md §9.2): NO_PERMISSION when
the broker has ``rejectTransactionMessage``, else stored in the half queue (emulator/roles/broker/transaction/),
answered with the queue id asked for and the half queue's offset, and written as ``tx.half``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import Perm, is_remoting, message_ext
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.dledger_commit_log import OS_PAGECACHE_BUSY, SERVICE_NOT_AVAILABLE, UNKNOWN_ERROR
from rmqemu.emulator.roles.broker.ha import FLUSH_SLAVE_TIMEOUT, PUT_OK, SLAVE_NOT_AVAILABLE, wait_store_msg_ok
from rmqemu.emulator.roles.broker.schedule import DelayLevelError, delay_level_of, delayable
from rmqemu.emulator.roles.broker.timer import hook as timer_hook
from rmqemu.emulator.roles.broker.transaction.bridge import HALF_TOPIC, is_half
from rmqemu.emulator.roles.common.base import Action, Inbound, Now, Reply
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.server_dispatch import h_bool, h_int, h_str, parse_properties
from rmqemu.emulator.roles.common.topic_config import (
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    TopicConfig,
    topic_not_exist_remark,
    validate_topic,
)

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

RW = Perm.READ | Perm.WRITE
DISK_UTIL = "CL:  0.00 CQ:  0.00 INDEX:  0.00"  # diskUtil(): "CL: %5.2f CQ: %5.2f INDEX: %5.2f"
SERVICE_NOT_AVAILABLE_REMARK = (
    "service not available now. It may be caused by one of the following reasons: "
    f"the broker's disk is full [{DISK_UTIL}], messages are put to the slave, message store has been shut down, etc."
)
PUT_STATUS_CODES = {PUT_OK: R.SUCCESS, FLUSH_SLAVE_TIMEOUT: R.FLUSH_SLAVE_TIMEOUT,
                    SLAVE_NOT_AVAILABLE: R.SLAVE_NOT_AVAILABLE}
# handlePutMessageResult's answers to the statuses a DLedger commit log gives
PUT_STATUS_ANSWERS = {
    PUT_OK: (R.SUCCESS, None),
    OS_PAGECACHE_BUSY: (R.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
    SERVICE_NOT_AVAILABLE: (R.SERVICE_NOT_AVAILABLE, SERVICE_NOT_AVAILABLE_REMARK),
    UNKNOWN_ERROR: (R.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}
PROPERTIES_MAX_LENGTH = 32767  # Short.MAX_VALUE: the commit log stores the properties' length as a short
# A batch's own properties over the limit: CommitLog.MessageExtEncoder.encode(MessageExtBatch) throws, and
# NettyRemotingAbstract.processRequestCommand answers SYSTEM_ERROR with RemotingHelper.exceptionSimpleDesc(e)
BATCH_PROPERTIES_EXCEEDED_REMARK = ("java.lang.RuntimeException: Properties size of messageExtBatch exceeded!, "
                                    "org.apache.rocketmq.store.CommitLog$MessageExtEncoder.encode(CommitLog.java:1587)")


def message_illegal_remark(max_message_size: int) -> str:
    """``handlePutMessageResult``'s MESSAGE_ILLEGAL / PROPERTIES_SIZE_EXCEEDED remark in 4.9.4
    (``String.format`` with ``getMaxMessageSize()``); before 4.9.4 it was the fixed
    "... msg body length limit 128k, msg properties length limit 32k."."""
    return ("the message is illegal, maybe msg body or properties length not matched. "
            f"msg body length limit {max_message_size}B, msg properties length limit 32KB.")


def properties_length(props: dict[str, str]) -> int:
    """Byte length of ``MessageDecoder.messageProperties2String(props)`` (4.9.4: ``name\\u0001value`` pairs
    joined by ``\\u0002``, the trailing separator deleted) in UTF-8, as ``MessageExtEncoder.encode`` measures
    it; never less than the ``String.length()`` that ``DefaultMessageStore.checkMessage`` checks first."""
    text = "\u0002".join(f"{k}\u0001{v}" for k, v in props.items())
    return len(text.encode("utf-8", errors="replace"))  # getBytes: an unpaired surrogate becomes "?"


def batch_messages(msg: Inbound) -> list[tuple[bytes, dict[str, str]]]:
    """SEND_BATCH_MESSAGE's messages: RocketMQ's packed binary from a real client (MessageDecoder's
    encodeMessages), a JSON list of ``{"body", "properties"}`` from rmqemu's own producers."""
    if is_remoting(msg.channel):
        return [(body, props) for _flag, body, props in message_ext.decode_batch(msg.frame.body)]
    items = msg.frame.json_body() or []
    if not isinstance(items, list):
        return []
    return [(body_bytes(m), parse_properties(m.get("properties"))) for m in items]


def batch_body_length(msg: Inbound, batch: list[tuple[bytes, dict[str, str]]]) -> int:
    """SEND_BATCH_MESSAGE's body length as the store holds it against ``maxMessageSize``: a real
    client's packed messages as sent, rmqemu's JSON list as the same messages packed."""
    return len(msg.frame.body or b"") if is_remoting(msg.channel) else message_ext.batch_length(batch)


def human_ms(ms: float) -> str:
    """``UtilAll.timeMillisToHumanString2``: ``yyyy-MM-dd HH:mm:ss,SSS``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f",{int(ms % 1000):03d}"


class SendProcessor:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    def _err(self, msg: Inbound, code: int, remark: str, pre: list[Action] | None = None) -> list[Action]:
        return [*(pre or []), Reply(msg.channel, msg.frame.response(code, remark))]

    def _msg_check(self, msg: Inbound, topic: str, now: Now) -> tuple[TopicConfig | None, list[Action], str | None]:
        """preSend + msgCheck (docs/rocketmq-model.md §2.4). Returns (topic config, side actions, None) or an error
        already answered: (None, actions including the Reply, "error")."""
        b, f = self.broker, msg.frame
        if now.wall_ms < b.cfg.startAcceptSendRequestTimeStamp:
            remark = f"broker unable to service, until {human_ms(b.cfg.startAcceptSendRequestTimeStamp)}"
            return None, self._err(msg, R.SYSTEM_ERROR, remark), "error"
        existing = b.topics.get(topic)
        if not Perm.writable(b.cfg.brokerPermission) and existing is not None and existing.order:  # 1
            return None, self._err(msg, R.NO_PERMISSION,
                                   f"the broker[{b.cfg.brokerIP1}] sending message is forbidden"), "error"
        bad = validate_topic(topic)  # 2
        if bad:
            return None, self._err(msg, R.SYSTEM_ERROR, bad), "error"
        if topic in NOT_ALLOWED_SEND_TOPICS:  # 3
            return None, self._err(msg, R.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."), "error"
        actions: list[Action] = []
        tc = existing
        if tc is None:  # 4: createTopicInSendMessageMethod, then the %RETRY% fallback
            # msgCheck: unit mode gives buildSysFlag(true, false) = 1 (FLAG_UNIT), and
            # buildSysFlag(false, true) = 2 (FLAG_UNIT_SUB) for a %RETRY% topic
            sys_flag = (2 if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else 1) if h_bool(f, "unitMode") else 0
            tc, acts, created = b.topics.create_in_send_message_method(
                topic, h_str(f, "defaultTopic"), h_int(f, "defaultTopicQueueNums", 4) or 0, sys_flag, now.wall_ms)
            actions += acts
            if tc is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc, acts, created = b.topics.create_in_send_message_back_method(topic, 1, RW, sys_flag, now.wall_ms)
                actions += acts
            if tc is None:
                return None, self._err(msg, R.TOPIC_NOT_EXIST, topic_not_exist_remark(topic), actions), "error"
            if created:  # step 5: registerBrokerAll(false, oneway=true, force=true)
                actions += b.registrar.register_all(now, oneway_=True, force=True)
        queue_id = h_int(f, "queueId", 0)
        if queue_id >= max(tc.writeQueueNums, tc.readQueueNums):  # 5
            remark = f"request queueId[{queue_id}] is illegal, {tc} Producer: {msg.peer}"
            return None, self._err(msg, R.SYSTEM_ERROR, remark, actions), "error"
        return tc, actions, None

    def send_message(self, msg: Inbound, now: Now) -> list[Action]:
        b, f = self.broker, msg.frame
        topic = h_str(f, "topic", required=True)
        tc, actions, err = self._msg_check(msg, topic, now)
        if err:
            return actions
        assert tc is not None
        queue_id = h_int(f, "queueId", 0)
        if queue_id < 0:
            queue_id = self.broker.rng.randrange(1 << 31) % max(1, tc.writeQueueNums)
        reconsume = h_int(f, "reconsumeTimes", 0) or 0
        if f.code != 320:  # handleRetryAndDLQ (asyncSendBatchMessage has none)
            topic, queue_id, acts, ok = b.send_back.handle_retry_and_dlq(msg, topic, queue_id, reconsume, now)
            actions += acts
            if not ok:
                return actions
        half = f.code != 320 and is_half(parse_properties(f.fields.get("properties")))
        if half and b.cfg.rejectTransactionMessage:  # before the store's own checks
            remark = f"the broker[{b.cfg.brokerIP1}] sending transaction message is forbidden"
            return self._err(msg, R.NO_PERMISSION, remark, actions)
        if b.is_slave:  # docs/rocketmq-model.md §2.5: checkStoreStatus, after msgCheck
            return self._err(msg, R.SERVICE_NOT_AVAILABLE, SERVICE_NOT_AVAILABLE_REMARK, actions)
        batch = batch_messages(msg) if f.code == 320 else [(f.body, parse_properties(f.fields.get("properties")))]
        illegal = message_illegal_remark(b.store_cfg.maxMessageSize)
        if not batch or (f.code == 320 and batch_body_length(msg, batch) > b.store_cfg.maxMessageSize):
            return self._err(msg, R.MESSAGE_ILLEGAL, illegal, actions)  # checkMessages: the whole batch
        # the properties the store encodes: the header's plus CLUSTER (putProperty in asyncSend[Batch]Message);
        # a single send drops WAIT from its propertiesString, a batch keeps it. A batch's messages' own
        # properties are not checked by the broker (the client's MessageDecoder.encodeMessage refuses them).
        stored = {**parse_properties(f.fields.get("properties")), "CLUSTER": b.cfg.brokerClusterName}
        sys_flag = h_int(f, "sysFlag", 0) or 0
        try:
            if f.code == 320:  # CommitLog.asyncPutMessages: a delay level first, then the encoder
                if delay_level_of(stored) > 0:
                    return self._err(msg, R.MESSAGE_ILLEGAL, illegal, actions)
                if properties_length(stored) > PROPERTIES_MAX_LENGTH:
                    return self._err(msg, R.SYSTEM_ERROR, BATCH_PROPERTIES_EXCEEDED_REMARK, actions)
            # checkMessage's MESSAGE_ILLEGAL, then (after the delay rewrite) encode's PROPERTIES_SIZE_EXCEEDED
            elif properties_length({k: v for k, v in stored.items() if k != "WAIT"}) > PROPERTIES_MAX_LENGTH or \
                    properties_length(b.schedule.stored_properties(topic, queue_id, stored, sys_flag)) \
                    > PROPERTIES_MAX_LENGTH:
                return self._err(msg, R.MESSAGE_ILLEGAL, illegal, actions)
        except DelayLevelError as exc:  # getDelayTimeLevel's Integer.parseInt
            return self._err(msg, R.SYSTEM_ERROR, exc.remark, actions)
        timed_type = delayable(0 if half else sys_flag)  # a half is stored as type 0
        refused = None if f.code == 320 else timer_hook.refusal(  # 5.x's timer hook (docs/rocketmq-model.md §10.4)
            HALF_TOPIC if half else topic, stored, delay_level_of(stored) if timed_type else 0,
            timed_type, b.store_cfg, now.wall_ms)
        if refused is not None:
            return self._err(msg, *refused, actions)
        if f.code != 320 and len(f.body) > b.store_cfg.maxMessageSize:  # the encoder: the body alone
            return self._err(msg, R.MESSAGE_ILLEGAL, illegal, actions)
        records = []
        put_topic, put_queue = topic, queue_id
        for body, props in batch:
            if half:  # asyncPrepareMessage: into the half queue (docs/rocketmq-model.md §9.2)
                put_topic, put_queue, props, sys_flag = b.transactions.half_inner(topic, queue_id, props, sys_flag)
            record, acts = b.schedule.put(
                put_topic, put_queue, body, props, now, born_timestamp=h_int(f, "bornTimestamp", 0) or 0,
                reconsume_times=reconsume, flag=h_int(f, "flag", 0) or 0, sys_flag=sys_flag,
                born_host=msg.addr or msg.peer)
            actions += acts
            if record is None:  # a DLedger commit log that is not leader: OS_PAGECACHE_BUSY at once
                code, remark = PUT_STATUS_ANSWERS[OS_PAGECACHE_BUSY]
                return self._err(msg, code, remark, actions)
            records.append(record)
        first = records[0]
        actions += b.puller.notify_message_arriving(first["topic"], first["queueId"], now) + b.ha.notify_new_data(now)
        if f.code != 320:
            actions += b.send_back.sent(msg, first, reconsume)
        fields = {"msgId": ",".join(r["offsetMsgId"] for r in records), "queueId": queue_id,
                  "queueOffset": records[0]["queueOffset"]}  # 4.9.4 sets no transactionId
        stored_half = [b.transactions.half_event(first)] if half and first["topic"] == HALF_TOPIC else []
        if b.dledger is not None:  # the answer waits for DLedger's (docs/rocketmq-model.md §8.3)
            def answered(status: str, n: Now) -> list[Action]:
                code, remark = PUT_STATUS_ANSWERS[status]
                return [*(stored_half if status == PUT_OK else []),
                        Reply(msg.channel, f.response(code, remark, fields=fields if status == PUT_OK else None))]
            b.dledger.await_ack(records[-1], answered)
            return actions
        actions += stored_half
        if b.ha.sync_master and wait_store_msg_ok(records[0]["properties"]):
            def done(status: str, n: Now) -> list[Action]:
                return [Reply(msg.channel, f.response(PUT_STATUS_CODES[status], fields=fields))]
            return actions + b.ha.await_replica(msg.channel, _end_offset(records[-1]), done, now)
        return [*actions, Reply(msg.channel, f.response(R.SUCCESS, fields=fields))]


def _end_offset(record: dict[str, Any]) -> int:
    """``wroteOffset + wroteBytes``: the commit-log offset a slave must reach to hold ``record``."""
    return int(record["commitLogOffset"]) + int(record["storeSize"])
