"""A popped broker record as a RocketMQ 5 ``Message``, and its receipt handle
(docs/rocketmq-model.md §10.1, §10.2).

5.x's ``GrpcConverter.buildMessage`` splits a record's properties into system properties (the
``MessageConst`` set) and user properties, adds an upper-case MD5 body digest, the delivery attempt
(reconsume times + 1) and the type inferred from the properties. The receipt handle is ``POP_CK``
plus the commit-log offset (5.x's ``ReceiptHandle``): it names the broker, queue, offset and the
lease's end, which is how the proxy refuses an expired one without asking the broker.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.message_type import message_type_of
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2

#: properties a 5.x client sees as system properties, never as user properties (MessageConst's set)
SYSTEM_KEYS = frozenset((
    "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP", "MIN_OFFSET",
    "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG",
    "RECONSUME_TIME", "MSG_REGION", "TRACE_ON", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK",
    "POP_CK_OFFSET", "1ST_POP_TIME", "__SHARDINGKEY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS",
    "TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_DEL_UNIQKEY",
    "BORN_HOST", "BORN_TIMESTAMP", "CHECK_IMMUNITY_TIME_IN_SECONDS", "TRANSACTION_CHECK_TIMES",
    "__transactionId__", "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID", "INNER_MULTI_DISPATCH",
    "INNER_MULTI_QUEUE_OFFSET",
))


_DIGITS = re.compile(r"[+-]?[0-9]+")
LONG, INT = (-(2**63), 2**63 - 1), (-(2**31), 2**31 - 1)


def parse_java(text: str, bounds: tuple[int, int] = LONG) -> int | None:
    """``text`` as Java's ``Long.parseLong`` (``bounds`` INT: ``Integer.parseInt``) reads it; None
    where Java throws (no digits, spaces, ``_``, a fraction, out of range). A client may send any
    text back as a handle: a forged 2**64 once reached a broker request's header, and the proxy
    died encoding it."""
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


@dataclass(frozen=True)
class Handle:
    """5.x's ``ReceiptHandle``: ``POP_CK``'s eight fields and the commit-log offset, space-separated,
    each number parsed as Java parses it (else no handle: ``INVALID_RECEIPT_HANDLE``)."""

    start_offset: int
    retrieve_ms: int
    invisible_ms: int
    revive_qid: int
    topic_type: str
    broker: str
    queue_id: int
    offset: int
    commit_log_offset: int
    text: str

    @classmethod
    def decode(cls, text: str) -> "Handle | None":
        parts = text.split(" ")
        if len(parts) < 8:
            return None
        kinds = (LONG, LONG, LONG, INT, None, None, INT, LONG) + ((LONG,) if len(parts) > 8 else ())
        values: list[int | str] = []
        for part, bounds in zip(parts, kinds, strict=False):  # Java reads the first nine, ignores the rest
            value = part if bounds is None else parse_java(part, bounds)
            if value is None:
                return None
            values.append(value)
        if len(parts) == 8:
            values.append(-1)
        return cls(*values, text)  # type: ignore[arg-type]

    def expired(self, wall_ms: float) -> bool:
        return self.retrieve_ms + self.invisible_ms <= wall_ms

    def renewed(self, fields: dict[str, Any], invisible_ms: int) -> str:
        """The handle of the lease a CHANGE_INVISIBLE_TIME answered (its ``popTime``,
        ``invisibleTime``, ``reviveQid``): the new checkpoint starts at the message itself."""
        return " ".join(str(x) for x in (
            self.offset, int(fields.get("popTime", 0)), int(fields.get("invisibleTime", invisible_ms)),
            int(fields.get("reviveQid", self.revive_qid)), self.topic_type, self.broker, self.queue_id,
            self.offset, self.commit_log_offset))


TYPES = {"NORMAL": pb.NORMAL, "FIFO": pb.FIFO, "DELAY": pb.DELAY, "TRANSACTION": pb.TRANSACTION}


def to_message(record: dict[str, Any], topic: str) -> pb.Message:
    """A popped record as a v2 ``Message`` (``GrpcConverter.buildMessage``)."""
    props = {str(k): str(v) for k, v in (record.get("properties") or {}).items()}
    body = body_bytes(record)
    m = pb.Message(body=body)
    m.topic.name = topic
    for k, v in props.items():
        if k not in SYSTEM_KEYS:
            m.user_properties[k] = v
    sp = m.system_properties
    if "TAGS" in props:
        sp.tag = props["TAGS"]
    if props.get("KEYS"):
        sp.keys.extend(k for k in props["KEYS"].split(" ") if k)
    sp.message_id = props.get("UNIQ_KEY") or str(record.get("msgId", ""))
    sp.body_digest.type = pb.MD5
    sp.body_digest.checksum = hashlib.md5(body).hexdigest().upper()  # noqa: S324 - the wire's digest, not security
    sp.body_encoding = pb.GZIP if int(record.get("sysFlag", 0) or 0) & 1 else pb.IDENTITY
    sp.message_type = TYPES[message_type_of(props)]
    v2.set_timestamp(sp.born_timestamp, int(record.get("bornTimestamp", 0) or 0))
    sp.born_host = str(record.get("bornHost") or props.get("BORN_HOST", ""))
    v2.set_timestamp(sp.store_timestamp, int(record.get("storeTimestamp", 0) or 0))
    sp.store_host = str(record.get("storeHost", ""))
    if props.get("TIMER_DELIVER_MS", "").isdigit():
        v2.set_timestamp(sp.delivery_timestamp, int(props["TIMER_DELIVER_MS"]))
    sp.queue_id = int(record.get("queueId", 0) or 0)
    sp.queue_offset = int(record.get("queueOffset", 0) or 0)
    sp.delivery_attempt = int(record.get("reconsumeTimes", 0) or 0) + 1
    if props.get("POP_CK"):
        sp.receipt_handle = f"{props['POP_CK']} {int(record.get('commitLogOffset', -1))}"
    if props.get("__SHARDINGKEY"):
        sp.message_group = props["__SHARDINGKEY"]
    return m
