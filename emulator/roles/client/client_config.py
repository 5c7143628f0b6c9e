"""Client configuration objects with RocketMQ 4.9's real defaults (docs/rocketmq-model.md §3.1, §4.5, §4.7).

Field names are RocketMQ's own keys (``ClientConfig`` + ``DefaultMQProducer`` for a producer,
``ClientConfig`` + ``DefaultMQPushConsumer`` for a push consumer), so a topology file sets them by
the names a Java user knows and the topology validator can reject anything else. Values are in
RocketMQ's units (cluster ms); the roles hand them to the node runtime as they are, and the
runtime alone applies ``timing.scale``.

Type checking is the one :mod:`emulator.roles.common.broker_config` already does for broker keys (same
rules, same :class:`ConfigError`); this module adds the client enums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from rmqemu.emulator.roles.common.broker_config import ConfigError, known_keys
from rmqemu.emulator.roles.common.broker_config import config_from_dict as _typed_config_from_dict

T = TypeVar("T")

MESSAGE_MODELS = ("CLUSTERING", "BROADCASTING")
CONSUME_FROM_WHERE = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
    # deprecated in 4.x, still accepted by RocketMQ (they behave like LAST_OFFSET)
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
)
_CHOICES: dict[str, tuple[str, ...]] = {
    "messageModel": MESSAGE_MODELS,
    "consumeFromWhere": CONSUME_FROM_WHERE,
}


@dataclass
class ClientConfig:
    """``client/.../ClientConfig`` (docs/rocketmq-model.md §3.1, §3.6)."""

    namesrvAddr: str = ""  # the launcher passes ``namesrv_addrs`` instead; kept for key checks
    clientIP: str = "127.0.0.1"
    instanceName: str = "DEFAULT"
    pollNameServerInterval: int = 30000
    heartbeatBrokerInterval: int = 30000
    persistConsumerOffsetInterval: int = 5000
    mqClientApiTimeout: int = 3000
    unitMode: bool = False
    unitName: str = ""
    vipChannelEnabled: bool = False


@dataclass
class ProducerConfig(ClientConfig):
    """``DefaultMQProducer`` + ``MQFaultStrategy.sendLatencyFaultEnable`` (docs/rocketmq-model.md §3.1, §3.4)."""

    producerGroup: str = "DEFAULT_PRODUCER"
    createTopicKey: str = "TBW102"  # TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC
    defaultTopicQueueNums: int = 4
    sendMsgTimeout: int = 3000
    compressMsgBodyOverHowmuch: int = 4096
    retryTimesWhenSendFailed: int = 2
    retryTimesWhenSendAsyncFailed: int = 2
    retryAnotherBrokerWhenNotStoreOK: bool = False
    maxMessageSize: int = 1024 * 1024 * 4
    sendLatencyFaultEnable: bool = False
    # Emulator-only, in wall ms and NOT scaled: the shortest send timeout a scaled cluster uses.
    # A send's budget is max(sendMsgTimeout x scale, minSendTimeoutWallMs) wall ms: the producer
    # measures it on both clocks (send_flow.SendJob) and hands the floor to the runtime with each
    # request (Request.min_timeout_wall_ms). Why a floor: at scale 0.01 the 3000 ms timeout is 30
    # wall ms, which is within the OS scheduling delay of a loaded 2-core host (a producer and a
    # broker process each need the CPU for one round trip; a quickstart cluster alone uses ~0.85
    # of a core). Measured beside a Spark job: fault-free round trips p99 20-40 ms, max 30-100 ms,
    # one broker stall of 145 ms; at 30 ms, 0.5-7 % of fault-free sends timed out. Such a timeout
    # is a stall no fault caused, so a fault-free run must not see it. The cost: a send to a dead
    # or paused broker gives up after max(3 s, 200 ms / scale) of cluster time (20 s at scale
    # 0.01), so fewer attempts reach a hung broker. Set 0 for exact scaling on an idle host (with
    # timing.minRequestTimeoutWallMs 0 too: the node's floor for every request, sends included,
    # combines with this one by max; docs/design.md §3).
    minSendTimeoutWallMs: int = 200


@dataclass
class ConsumerConfig(ClientConfig):
    """``DefaultMQPushConsumer`` (docs/rocketmq-model.md §4.7) plus the push-impl constant of
    docs/rocketmq-model.md §4.5.

    ``pullTimeDelayMillsWhenException`` is ``DefaultMQPushConsumerImpl``'s 3000 ms retry delay
    after a failed pull (docs/rocketmq-model.md §4.5); RocketMQ does not expose it on DefaultMQPushConsumer, the
    emulator lets a topology tune it.
    """

    consumerGroup: str = "DEFAULT_CONSUMER"
    messageModel: str = "CLUSTERING"
    consumeFromWhere: str = "CONSUME_FROM_LAST_OFFSET"
    consumeTimestamp: str = ""  # RocketMQ: 30 minutes before start, yyyyMMddHHmmss
    consumeThreadMin: int = 20
    consumeThreadMax: int = 20
    consumeConcurrentlyMaxSpan: int = 2000
    pullThresholdForQueue: int = 1000
    pullThresholdSizeForQueue: int = 100
    pullInterval: int = 0
    consumeMessageBatchMaxSize: int = 1
    pullBatchSize: int = 32
    postSubscriptionWhenPull: bool = False
    maxReconsumeTimes: int = -1  # -1 means 16 (DefaultMQPushConsumerImpl.getMaxReconsumeTimes)
    suspendCurrentQueueTimeMillis: int = 1000
    consumeTimeout: int = 15  # minutes
    pullTimeDelayMillsWhenException: int = 3000


def config_from_dict(cls: type[T], d: dict[str, Any] | None) -> T:
    """An instance of ``cls`` with ``d``'s keys over RocketMQ's defaults.

    Raises :class:`ConfigError` (a ValueError) naming the first unknown key, wrong-typed value or
    value outside a RocketMQ enum (``messageModel``, ``consumeFromWhere``).
    """
    obj = _typed_config_from_dict(cls, d)
    for key, choices in _CHOICES.items():
        if d and key in d and d[key] not in choices:
            raise ConfigError(key, f"{key}: must be one of {', '.join(choices)}, got {d[key]!r}")
    return obj


def effective_max_reconsume_times(cfg: ConsumerConfig) -> int:
    """``DefaultMQPushConsumerImpl.getMaxReconsumeTimes``: -1 means 16 (docs/rocketmq-model.md §4.7)."""
    return 16 if cfg.maxReconsumeTimes == -1 else cfg.maxReconsumeTimes


__all__ = [
    "ClientConfig",
    "ConfigError",
    "ConsumerConfig",
    "ProducerConfig",
    "config_from_dict",
    "effective_max_reconsume_times",
    "known_keys",
]
