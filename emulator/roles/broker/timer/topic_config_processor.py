"""5.x's AdminBrokerProcessor for topic message types: GET_TOPIC_CONFIG (351) and the ``attributes``
of UPDATE_AND_CREATE_TOPIC (17) (docs/rocketmq-model.md §10.5).

GET_TOPIC_CONFIG: header ``topic`` (``lo`` is read and ignored: no static topic mapping here). An
unknown topic answers TOPIC_NOT_EXIST ``No topic in this broker. topic: <t>``; a known one SUCCESS
with the TopicConfig as 5.x's JSON (``attributes`` always there; ``mappingDetail`` null, so absent).

UPDATE_AND_CREATE_TOPIC's ``attributes`` header (``+message.type=FIFO``): parsed, MIXED refused with
INVALID_PARAMETER unless the broker has ``enableMixedMessageType``, then altered over the topic's
current attributes; a malformed or unsupported change answers SYSTEM_ERROR with 5.x's message.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.timer.attributes import AttributeProblem, alter, parse_to_map
from rmqemu.emulator.roles.common.base import Action, Inbound, Now, Reply
from rmqemu.emulator.roles.common.message_type import MIXED
from rmqemu.emulator.roles.common.server_dispatch import h_str
from rmqemu.emulator.roles.common.topic_config import MESSAGE_TYPE_ATTRIBUTE, TopicConfig

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker


def get_topic_config(broker: "Broker", msg: Inbound, now: Now) -> list[Action]:
    f = msg.frame
    topic = h_str(f, "topic", required=True)
    tc = broker.topics.get(topic)
    if tc is None:
        return [Reply(msg.channel, f.response(R.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {topic}"))]
    return [Reply(msg.channel, f.response(R.SUCCESS, body=tc.to_json_5x()))]


def with_attributes(broker: "Broker", tc: TopicConfig, header: str | None) -> tuple[TopicConfig | None, int, str]:
    """The config UPDATE_AND_CREATE_TOPIC stores, or None with the answer's code and remark."""
    try:
        asked = parse_to_map(header)
    except AttributeProblem as exc:
        return None, R.SYSTEM_ERROR, str(exc)
    if not broker.cfg.enableMixedMessageType and asked.get("+" + MESSAGE_TYPE_ATTRIBUTE) == MIXED:
        return None, R.INVALID_PARAMETER, "MIXED message type is not supported."
    current = broker.topics.get(tc.topicName)
    try:
        final = alter(current is None, current.attribute_map if current else {}, asked)
    except AttributeProblem as exc:
        return None, R.SYSTEM_ERROR, str(exc)
    return replace(tc, attributes=tuple(sorted(final.items()))), R.SUCCESS, ""
