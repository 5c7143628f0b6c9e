"""The broker's TopicConfigManager (docs/rocketmq-model.md §2.2, §2.3, §2.6, §2.7).

Holds the topic table and its DataVersion. Every change bumps the version with the broker's wall
clock, persists ``config/topics.json`` (pretty ``{topicConfigTable, dataVersion}``, docs/rocketmq-model.md §2.6) and
emits ``broker.topic``. Methods return ``(result, actions)``; registering with the namesrvs after a
change is the broker's job (it knows whether to go oneway or incremental).

``broker.topic`` ``how``: ``startup`` (built-in system topics), ``restore`` (from topics.json),
``auto`` (send path / retry / DLQ), ``admin`` (UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER),
``sync`` (a slave adopting its master's table). A removed topic is reported with zero queues,
``perm`` 0 and ``deleted: true``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable

from rmqemu.emulator.protocol import Perm
from rmqemu.emulator.roles.common.base import Action, Emit, Persist
from rmqemu.emulator.roles.common.broker_config import BrokerConfig
from rmqemu.emulator.roles.common.topic_config import (
    AUTO_CREATE_TOPIC_KEY,
    BENCHMARK_TOPIC,
    BUILTIN_SYSTEM_TOPICS,
    OFFSET_MOVED_EVENT,
    SCHEDULE_TOPIC,
    SCHEDULE_TOPIC_QUEUE_NUM,
    SELF_TEST_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    TIMER_TOPIC,
    DataVersion,
    TopicConfig,
    parse_wrapper,
    wrapper_json,
)

TOPICS_JSON = "config/topics.json"
RW = Perm.READ | Perm.WRITE


def system_topics(cfg: BrokerConfig, timer_wheel: bool = False) -> list[TopicConfig]:
    """The constructor's topics, in the order of docs/rocketmq-model.md §2.2; last, as 5.x does with
    ``timerWheelEnable``, the timer store's ``rmq_sys_wheel_timer`` (1/1, docs/rocketmq-model.md §10.4)."""
    out = [TopicConfig(SELF_TEST_TOPIC, 1, 1)]
    if cfg.autoCreateTopicEnable:
        n = cfg.defaultTopicQueueNums
        out.append(TopicConfig(AUTO_CREATE_TOPIC_KEY, n, n, Perm.INHERIT | Perm.READ | Perm.WRITE))
    out.append(TopicConfig(BENCHMARK_TOPIC, 1024, 1024))
    out.append(TopicConfig(cfg.brokerClusterName, perm=Perm.INHERIT | (RW if cfg.clusterTopicEnable else 0)))
    out.append(TopicConfig(cfg.brokerName, 1, 1, Perm.INHERIT | (RW if cfg.brokerTopicEnable else 0)))
    out.append(TopicConfig(OFFSET_MOVED_EVENT, 1, 1))
    out.append(TopicConfig(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, SCHEDULE_TOPIC_QUEUE_NUM))
    if cfg.traceTopicEnable:
        out.append(TopicConfig(cfg.msgTraceTopicName, 1, 1))
    out.append(TopicConfig(f"{cfg.brokerClusterName}_REPLY_TOPIC", 1, 1))
    if timer_wheel:
        out.append(TopicConfig(TIMER_TOPIC, 1, 1))
    return out


class TopicConfigManager:
    def __init__(self, cfg: BrokerConfig, broker_id: int, timer_wheel: bool = False) -> None:
        self.cfg = cfg
        self.timer_wheel = timer_wheel
        self.broker_id = broker_id
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        self.system_topics: set[str] = set(BUILTIN_SYSTEM_TOPICS)
        self.origin: dict[str, str] = {}  # topic -> how it came to be (for state())

    # ------------------------------------------------------------------ construction + load

    def load(self, read_store: Callable[[str], str | None], wall_ms: float) -> list[Action]:
        """Constructor topics, then ``load()``: topics.json ``putAll`` + its DataVersion (#5055).

        A new DataVersion starts at (now, 0), as RocketMQ's field initialiser does.
        """
        self.data_version = DataVersion(int(wall_ms), 0)
        for tc in system_topics(self.cfg, self.timer_wheel):
            self.table[tc.topicName] = tc
            self.system_topics.add(tc.topicName)
            self.origin[tc.topicName] = "startup"
        # ConfigManager.load (docs/rocketmq-model.md §2.6): the file, and .bak when the file is empty, unreadable
        # (both handled by read_store) or does not decode (handled here: loadBak)
        stored, version = {}, None
        for name in (TOPICS_JSON, TOPICS_JSON + ".bak"):
            text = read_store(name)
            if not text:
                continue
            try:
                stored, version = parse_wrapper(json.loads(text))
                break
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
        self.table.update(stored)
        for name in stored:
            self.origin[name] = "restore"
        if version is not None:
            self.data_version = version
        return [self._event(tc, self.origin[name]) for name, tc in self.table.items()]

    # ------------------------------------------------------------------ helpers

    def _event(self, tc: TopicConfig, how: str, deleted: bool = False) -> Emit:
        fields: dict[str, Any] = {
            "broker": self.cfg.brokerName, "broker_id": self.broker_id, "topic": tc.topicName,
            "read_queues": 0 if deleted else tc.readQueueNums, "write_queues": 0 if deleted else tc.writeQueueNums,
            "perm": 0 if deleted else tc.perm, "how": how,
        }
        if deleted:
            fields["deleted"] = True
        return Emit("broker.topic", fields)

    def persist(self) -> Persist:
        return Persist(TOPICS_JSON, json.dumps(wrapper_json(self.table, self.data_version), indent=4))

    def _changed(self, tc: TopicConfig, how: str, wall_ms: float) -> list[Action]:
        self.table[tc.topicName] = tc
        self.origin[tc.topicName] = how
        self.data_version = self.data_version.next_version(wall_ms)
        return [self._event(tc, how), self.persist()]

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        return topic in self.system_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)

    def wrapper(self) -> dict[str, Any]:
        return wrapper_json(self.table, self.data_version)

    # ------------------------------------------------------------------ changes

    def create_in_send_message_method(
        self, topic: str, default_topic: str | None, client_queue_nums: int, sys_flag: int, wall_ms: float
    ) -> tuple[TopicConfig | None, list[Action], bool]:
        """docs/rocketmq-model.md §2.3. Returns (config or None, actions, created) -- created means register oneway."""
        existing = self.table.get(topic)
        if existing is not None:  # step 1
            return existing, [], False
        default = self.table.get(default_topic or "")
        if default is None:  # step 2: "the default topic[..] not exist"
            return None, [], False
        actions: list[Action] = []
        if default_topic == AUTO_CREATE_TOPIC_KEY and not self.cfg.autoCreateTopicEnable and default.perm != RW:
            # step 3: TBW102 (e.g. restored from topics.json, #5055) loses INHERIT in place --
            # no nextVersion and no persist in RocketMQ, but the table did change: report it
            default = replace(default, perm=RW)
            self.table[AUTO_CREATE_TOPIC_KEY] = default
            actions.append(self._event(default, "auto"))
        if not Perm.inherited(default.perm):  # step 4: "has no perm"
            return None, actions, False
        n = max(0, min(client_queue_nums, default.writeQueueNums))
        tc = TopicConfig(topic, n, n, default.perm & ~Perm.INHERIT, default.topicFilterType, sys_flag)
        return tc, actions + self._changed(tc, "auto", wall_ms), True  # step 5: nextVersion, persist, register

    def create_in_send_message_back_method(
        self, topic: str, queue_nums: int, perm: int, sys_flag: int, wall_ms: float
    ) -> tuple[TopicConfig, list[Action], bool]:
        """``createTopicInSendMessageBackMethod`` (retry/DLQ topics, no default topic)."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing, [], False
        tc = TopicConfig(topic, queue_nums, queue_nums, perm, topicSysFlag=sys_flag)
        return tc, self._changed(tc, "auto", wall_ms), True

    def update_topic_config(self, tc: TopicConfig, wall_ms: float) -> list[Action]:
        """UPDATE_AND_CREATE_TOPIC's ``updateTopicConfig`` (docs/rocketmq-model.md §2.7 step 5)."""
        return self._changed(tc, "admin", wall_ms)

    def delete_topic_config(self, topic: str, wall_ms: float) -> list[Action]:
        old = self.table.pop(topic, None)
        if old is None:
            return []
        self.origin.pop(topic, None)
        self.data_version = self.data_version.next_version(wall_ms)
        return [self._event(old, "admin", deleted=True), self.persist()]

    def adopt(self, table: dict[str, TopicConfig], version: DataVersion) -> list[Action]:
        """Slave sync (``SlaveSynchronize.syncTopicConfig``): when the master's DataVersion differs,
        take its version and replace the whole table, then persist."""
        if version == self.data_version:
            return []
        actions: list[Action] = []
        for name, old in list(self.table.items()):
            if name not in table:
                actions.append(self._event(old, "sync", deleted=True))
        for name, tc in table.items():
            if self.table.get(name) != tc:
                actions.append(self._event(tc, "sync"))
                self.origin[name] = "sync"
        self.table = dict(table)
        self.data_version = version
        return [*actions, self.persist()]

    def snapshot(self) -> dict[str, Any]:
        return self.wrapper()
