"""Names and small formats POP shares with the proxy (5.x ``KeyBuilder``, ``PopAckConstants``,
``ExtraInfoUtil``; docs/rocketmq-model.md §10.2).

The ``extraInfo`` of a popped message (its ``POP_CK`` property, the heart of a receipt handle) is
eight fields separated by one space: the checkpoint's start offset, the pop time, the invisible
time, the revive queue, the topic mark (``0`` the topic, ``1`` its retry topic), the broker name,
the queue id and the message's queue offset. It comes back from clients, so :func:`split` and the
readers below take any text and raise :class:`ExtraInfoError` (5.x's NumberFormatException or
IllegalArgumentException, answered SYSTEM_ERROR) instead of guessing.
"""

from __future__ import annotations

import re

from rmqemu.emulator.roles.common.server_dispatch import HeaderError

RETRY_PREFIX = "%RETRY%"
POP_ORDER_REVIVE_QUEUE = 999  # KeyBuilder: the revive queue id a FIFO (order) pop names
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"  # owns the revive queues' offsets
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
CK_TAG, ACK_TAG = "ck", "ack"
ACK_TIME_INTERVAL = 1000  # PopAckConstants.ackTimeInterval
SECOND = 1000
POP_CK = "POP_CK"
FIRST_POP_TIME = "1ST_POP_TIME"
DELIVER_MS = "POP_DELIVER_MS"  # a revive record's delivery time (5.x's timer message deliverTimeMs)
NORMAL_MARK, RETRY_MARK = "0", "1"
INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1


_LEGAL = re.compile(r"[%|a-zA-Z0-9_-]+")  # TopicValidator's characters


def legal_name(name: str) -> bool:
    """A retry topic the store can keep: a group from a POP header is any text, and the name becomes
    a queue file's directory."""
    return bool(_LEGAL.fullmatch(name))


class ExtraInfoError(ValueError):
    """An ``extraInfo`` 5.x fails to read; the text is what the Java exception would say."""


def java_range(value: int | None, name: str, limit: int = LONG_MAX) -> int:
    """A header field Java decodes as an int or a long: out of range, the decode fails (SYSTEM_ERROR)."""
    if value is None or not -limit - 1 <= value <= limit:
        raise HeaderError(f"the custom field <{name}> is not a {'long' if limit == LONG_MAX else 'int'}: {value}")
    return value


def revive_topic(cluster: str) -> str:
    return REVIVE_TOPIC_PREFIX + cluster


def retry_topic(topic: str, group: str) -> str:
    """``KeyBuilder.buildPopRetryTopic`` with ``enableRetryTopicV2`` off (the default): ``%RETRY%<group>_<topic>``."""
    return f"{RETRY_PREFIX}{group}_{topic}"


def normal_topic(topic: str, group: str) -> str:
    """``KeyBuilder.parseNormalTopic(topic, cid)``: the topic a retry topic serves."""
    if not topic.startswith(RETRY_PREFIX):
        return topic
    return topic[len(f"{RETRY_PREFIX}{group}_"):]


def mark(topic: str) -> str:
    """``ExtraInfoUtil.getRetry``: ``1`` for a retry topic, else ``0``."""
    return RETRY_MARK if topic.startswith(RETRY_PREFIX) else NORMAL_MARK


def real_topic(topic: str, group: str, topic_mark: str) -> str:
    """The topic an ack or renewal must name: the retry topic when the handle's mark says so."""
    return retry_topic(topic, group) if topic_mark == RETRY_MARK else topic


def build(start_offset: int, pop_time: int, invisible_time: int, revive_qid: int, topic: str, broker_name: str,
          queue_id: int, queue_offset: int) -> str:
    """``ExtraInfoUtil.buildExtraInfo`` (the 8-field form)."""
    return " ".join(str(v) for v in (start_offset, pop_time, invisible_time, revive_qid, mark(topic), broker_name,
                                     queue_id, queue_offset))


def split(extra_info: str | None) -> list[str]:
    """Java's ``String.split(" ")``: empty fields kept, trailing empty ones dropped."""
    if extra_info is None:
        raise ExtraInfoError("java.lang.IllegalArgumentException: split extraInfo is null")
    parts = extra_info.split(" ")
    while parts and parts[-1] == "":
        parts.pop()
    return parts or [""]


def _field(parts: list[str], index: int, name: str) -> str:
    if len(parts) <= index:
        raise ExtraInfoError(f"java.lang.IllegalArgumentException: {name} fail, extraInfoStrs length {len(parts)}")
    return parts[index]


def _number(text: str, limit: int) -> int:
    """``Long.parseLong`` / ``Integer.parseInt``: decimal digits (Java reads any Unicode decimal digit)
    after one optional sign, in range."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or len(digits) > 30 or not digits.isdecimal() or not -limit - 1 <= int(text) <= limit:
        raise ExtraInfoError(f'java.lang.NumberFormatException: For input string: "{text[:80]}"')
    return int(text)


def ck_queue_offset(parts: list[str]) -> int:
    return _number(_field(parts, 0, "getCkQueueOffset"), LONG_MAX)


def pop_time(parts: list[str]) -> int:
    return _number(_field(parts, 1, "getPopTime"), LONG_MAX)


def invisible_time(parts: list[str]) -> int:
    return _number(_field(parts, 2, "getInvisibleTime"), LONG_MAX)


def revive_qid(parts: list[str]) -> int:
    return _number(_field(parts, 3, "getReviveQid"), INT_MAX)


def broker_name(parts: list[str]) -> str:
    return _field(parts, 5, "getBrokerName")


def offset_info(entries: list[tuple[str, int, str]]) -> str:
    """``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo``: ``<mark> <queue> <value>`` joined by ``;``."""
    return ";".join(f"{mark(topic)} {queue} {value}" for topic, queue, value in entries)
