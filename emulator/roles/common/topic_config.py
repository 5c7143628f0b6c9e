"""RocketMQ's shared ``common`` types the namesrv and the broker exchange: TopicConfig, DataVersion,
the topic validator and the system topic names (docs/rocketmq-model.md §2.2, §2.4, §3.5).

These are wire types: ``to_json`` / ``from_json`` use RocketMQ's JSON field names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from rmqemu.emulator.protocol import FAQ_SUFFIX, Perm

AUTO_CREATE_TOPIC_KEY = "TBW102"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
SCHEDULE_TOPIC_QUEUE_NUM = 18
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
TIMER_TOPIC = SYSTEM_TOPIC_PREFIX + "wheel_timer"  # 5.x TimerMessageStore.TIMER_TOPIC (docs/rocketmq-model.md §10.4)
MESSAGE_TYPE_ATTRIBUTE = "message.type"  # 5.x TopicAttributes (docs/rocketmq-model.md §10.5)
TOPIC_MAX_LENGTH = 127

# TopicValidator's built-in system topics (docs/rocketmq-model.md §3.5); brokers add cluster/broker/reply names.
BUILTIN_SYSTEM_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY,
        SCHEDULE_TOPIC,
        BENCHMARK_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)

# isNotAllowedSendTopic, 4.9.4 set (docs/rocketmq-model.md §2.4 step 3).
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)

_LEGAL_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]+$")


def validate_topic(topic: str | None) -> str | None:
    """Broker-side ``TopicValidator.validateTopic``: the SYSTEM_ERROR remark, or None if valid.

    4.9.4 order (docs/rocketmq-model.md §2.4 step 2): blank, illegal characters, length.
    """
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if not _LEGAL_TOPIC.fullmatch(topic):  # Java matches() is whole-string; re "$" would allow "\n"
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def topic_not_exist_remark(topic: str) -> str:
    """The send path's TOPIC_NOT_EXIST remark (docs/rocketmq-model.md §2.4 step 4). The pull path's differs: it has
    a space before the FAQ suffix (docs/rocketmq-model.md §4.5 step 4, in pull_processor)."""
    return f"topic[{topic}] not exist, apply first please!{FAQ_SUFFIX}"


@dataclass(frozen=True)
class DataVersion:
    """``common/.../DataVersion``: equality compares timestamp and counter (docs/rocketmq-model.md §1.3 step 9)."""

    timestamp: int = 0
    counter: int = 0

    def next_version(self, wall_ms: float) -> "DataVersion":
        """``nextVersion()``: timestamp = now (the broker's wall clock), counter + 1."""
        return DataVersion(int(wall_ms), self.counter + 1)

    def to_json(self) -> dict[str, int]:
        return {"timestamp": self.timestamp, "counter": self.counter}

    @staticmethod
    def from_json(d: dict[str, Any] | None) -> "DataVersion":
        d = d or {}
        return DataVersion(int(d.get("timestamp", 0) or 0), int(d.get("counter", 0) or 0))


@dataclass(frozen=True)
class TopicConfig:
    """``common/.../TopicConfig`` with its defaults (docs/rocketmq-model.md §2.2).

    ``attributes`` is 5.x's attribute map (``message.type``, ...; docs/rocketmq-model.md §10.5) as
    sorted pairs, so the config stays hashable; the JSON carries it as an object, and only when it is
    not empty (4.9 has no such field, and its readers ignore it)."""

    topicName: str
    readQueueNums: int = 16
    writeQueueNums: int = 16
    perm: int = Perm.READ | Perm.WRITE
    topicFilterType: str = "SINGLE_TAG"
    topicSysFlag: int = 0
    order: bool = False
    attributes: tuple[tuple[str, str], ...] = ()

    @property
    def attribute_map(self) -> dict[str, str]:
        return dict(self.attributes)

    @property
    def message_type(self) -> str:
        """``getTopicMessageType``: the ``message.type`` attribute, NORMAL without one."""
        return self.attribute_map.get(MESSAGE_TYPE_ATTRIBUTE) or "NORMAL"

    def to_json(self) -> dict[str, Any]:
        return {**self.to_json_4x(), **({"attributes": self.attribute_map} if self.attributes else {})}

    def to_json_5x(self) -> dict[str, Any]:
        """5.x's TopicConfig JSON: ``attributes`` always there (GET_TOPIC_CONFIG's body)."""
        return {**self.to_json_4x(), "attributes": self.attribute_map}

    def to_json_4x(self) -> dict[str, Any]:
        return {
            "topicName": self.topicName,
            "readQueueNums": self.readQueueNums,
            "writeQueueNums": self.writeQueueNums,
            "perm": self.perm,
            "topicFilterType": self.topicFilterType,
            "topicSysFlag": self.topicSysFlag,
            "order": self.order,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> "TopicConfig":
        return TopicConfig(
            topicName=str(d["topicName"]),
            readQueueNums=int(d.get("readQueueNums", 16)),
            writeQueueNums=int(d.get("writeQueueNums", 16)),
            perm=int(d.get("perm", Perm.READ | Perm.WRITE)),
            topicFilterType=str(d.get("topicFilterType") or "SINGLE_TAG"),
            topicSysFlag=int(d.get("topicSysFlag") or 0),
            order=bool(d.get("order", False)),
            attributes=attribute_pairs(d.get("attributes")),
        )

    def with_perm(self, perm: int) -> "TopicConfig":
        return replace(self, perm=perm)

    def __str__(self) -> str:
        """``TopicConfig.toString()``, used verbatim in the queueId-illegal remark
        (docs/rocketmq-model.md §2.4 step 5)."""
        return (
            f"TopicConfig [topicName={self.topicName}, readQueueNums={self.readQueueNums}, "
            f"writeQueueNums={self.writeQueueNums}, perm={Perm.to_string(self.perm)}, "
            f"topicFilterType={self.topicFilterType}, topicSysFlag={self.topicSysFlag}, "
            f"order={'true' if self.order else 'false'}]"
        )


def attribute_pairs(attributes: Any) -> tuple[tuple[str, str], ...]:
    """A JSON ``attributes`` object as :class:`TopicConfig` keeps it (anything else is none)."""
    if not isinstance(attributes, dict):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in attributes.items()))


def wrapper_json(table: dict[str, TopicConfig], version: DataVersion) -> dict[str, Any]:
    """A ``TopicConfigSerializeWrapper``: ``{topicConfigTable, dataVersion}`` (also topics.json)."""
    return {
        "topicConfigTable": {name: tc.to_json() for name, tc in table.items()},
        "dataVersion": version.to_json(),
    }


def parse_wrapper(d: dict[str, Any] | None) -> tuple[dict[str, TopicConfig], DataVersion]:
    """Inverse of :func:`wrapper_json`; a missing wrapper is an empty table at version 0/0."""
    d = d or {}
    table = {str(k): TopicConfig.from_json({"topicName": k, **v}) for k, v in (d.get("topicConfigTable") or {}).items()}
    return table, DataVersion.from_json(d.get("dataVersion"))
