"""AdminBrokerProcessor: UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215),
GET_ALL_TOPIC_CONFIG (21) (docs/rocketmq-model.md §2.6, §2.7), GET_MAX_OFFSET (30).

UPDATE_AND_CREATE_TOPIC header: topic, readQueueNums, writeQueueNums, perm, topicFilterType,
topicSysFlag (``defaultTopic`` and ``order`` are accepted and ignored, as RocketMQ does), and 5.x's
``attributes`` (``+message.type=FIFO``: emulator/roles/broker/timer/topic_config_processor.py).
DELETE_TOPIC_IN_BROKER header: topic. GET_ALL_TOPIC_CONFIG answers the whole
TopicConfigSerializeWrapper ``{topicConfigTable, dataVersion}`` (what a slave syncs from).
GET_MAX_OFFSET header: topic, queueId; answers ``offset``, the queue's max offset
(``getMaxOffsetInQueue``: 0 for an unknown queue), which a consumer without a stored offset
asks for under CONSUME_FROM_LAST_OFFSET (docs/rocketmq-model.md §4.7). Writes on a slave are refused
as in 4.9.4 ``validateSlave`` (docs/rocketmq-model.md §2.5). GET_ALL_DELAY_OFFSET (45) answers
``ScheduleMessageService.encode()``, the table this broker loaded or keeps (docs/rocketmq-model.md §2.9).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.timer.topic_config_processor import with_attributes
from rmqemu.emulator.roles.common.base import Action, Inbound, Now, Reply
from rmqemu.emulator.roles.common.server_dispatch import h_int, h_str
from rmqemu.emulator.roles.common.topic_config import TopicConfig, validate_topic

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

VALIDATE_SLAVE_REMARK = ("Can't modify topic or subscription group from slave broker, "
                         "please execute it from master broker.")


class AdminProcessor:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    def _err(self, msg: Inbound, code: int, remark: str) -> list[Action]:
        return [Reply(msg.channel, msg.frame.response(code, remark))]

    def get_max_offset(self, msg: Inbound, now: Now) -> list[Action]:
        f = msg.frame
        offset = self.broker.store.max_offset(h_str(f, "topic", required=True), h_int(f, "queueId", required=True))
        return [Reply(msg.channel, f.response(R.SUCCESS, fields={"offset": offset}))]

    def update_and_create_topic(self, msg: Inbound, now: Now) -> list[Action]:
        b, f = self.broker, msg.frame
        if b.is_slave:  # 1
            return self._err(msg, R.SYSTEM_ERROR, VALIDATE_SLAVE_REMARK)
        topic = h_str(f, "topic", required=True)
        bad = validate_topic(topic)  # 2
        if bad:
            return self._err(msg, R.SYSTEM_ERROR, bad)
        if b.topics.is_system_topic(topic):  # 3
            return self._err(msg, R.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        tc = TopicConfig(  # 4
            topic,
            readQueueNums=h_int(f, "readQueueNums", 16),
            writeQueueNums=h_int(f, "writeQueueNums", 16),
            perm=h_int(f, "perm", 6),
            topicFilterType=h_str(f, "topicFilterType", "SINGLE_TAG") or "SINGLE_TAG",
            topicSysFlag=h_int(f, "topicSysFlag", 0) or 0,
        )
        tc_or_none, code, remark = with_attributes(b, tc, h_str(f, "attributes"))  # 5.x's attributes
        if tc_or_none is None:
            return self._err(msg, code, remark)
        tc = tc_or_none
        actions = b.topics.update_topic_config(tc, now.wall_ms)  # 5
        actions += b.registrar.register_increment(tc)  # 6
        return [*actions, Reply(msg.channel, f.response(R.SUCCESS))]

    def delete_topic_in_broker(self, msg: Inbound, now: Now) -> list[Action]:
        """Removes the config and the queues; the namesrv keeps the route (issue #288)."""
        b, f = self.broker, msg.frame
        if b.is_slave:
            return self._err(msg, R.SYSTEM_ERROR, VALIDATE_SLAVE_REMARK)
        topic = h_str(f, "topic", required=True)
        actions: list[Action] = [*b.topics.delete_topic_config(topic, now.wall_ms), *b.store.delete_topic(topic)]
        return [*actions, Reply(msg.channel, f.response(R.SUCCESS))]

    def get_all_delay_offset(self, msg: Inbound, now: Now) -> list[Action]:
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS, body=self.broker.schedule.encode()))]

    def get_timer_check_point(self, msg: Inbound, now: Now) -> list[Action]:
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS, body=self.broker.timer.checkpoint()))]

    def get_all_topic_config(self, msg: Inbound, now: Now) -> list[Action]:
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS, body=self.broker.topics.wrapper()))]
