"""client_config: RocketMQ's client defaults and strict key/type/enum checks."""

import pytest

from rmqemu.emulator.roles.client.client_config import (
    ConfigError,
    ConsumerConfig,
    ProducerConfig,
    config_from_dict,
    effective_max_reconsume_times,
)


def test_producer_defaults_are_rocketmq_49():
    p = ProducerConfig()
    assert (p.createTopicKey, p.defaultTopicQueueNums, p.sendMsgTimeout) == ("TBW102", 4, 3000)
    assert (p.retryTimesWhenSendFailed, p.retryTimesWhenSendAsyncFailed) == (2, 2)
    assert p.retryAnotherBrokerWhenNotStoreOK is False and p.sendLatencyFaultEnable is False
    assert p.maxMessageSize == 4 * 1024 * 1024 and p.compressMsgBodyOverHowmuch == 4096
    assert (p.pollNameServerInterval, p.heartbeatBrokerInterval, p.mqClientApiTimeout) == (30000, 30000, 3000)


def test_consumer_defaults_are_rocketmq_49():
    c = ConsumerConfig()
    assert (c.messageModel, c.consumeFromWhere) == ("CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
    assert (c.pullBatchSize, c.consumeMessageBatchMaxSize, c.pullThresholdForQueue) == (32, 1, 1000)
    assert c.maxReconsumeTimes == -1 and effective_max_reconsume_times(c) == 16
    assert c.persistConsumerOffsetInterval == 5000 and c.pullTimeDelayMillsWhenException == 3000


def test_user_keys_override():
    p = config_from_dict(ProducerConfig, {"createTopicKey": "AUTO_CREATE_TOPIC_KEY", "sendMsgTimeout": 500})
    assert p.createTopicKey == "AUTO_CREATE_TOPIC_KEY" and p.sendMsgTimeout == 500
    c = config_from_dict(ConsumerConfig, {"messageModel": "BROADCASTING"})
    assert c.messageModel == "BROADCASTING"


def test_unknown_key_named():
    with pytest.raises(ValueError, match="bogusKey") as exc:
        config_from_dict(ProducerConfig, {"bogusKey": 1})
    assert exc.value.key == "bogusKey"
    with pytest.raises(ConfigError, match="pullBatchSize"):
        config_from_dict(ProducerConfig, {"pullBatchSize": 32})  # a consumer key


@pytest.mark.parametrize("key,value", [("sendMsgTimeout", "3000"), ("sendLatencyFaultEnable", 1),
                                       ("retryTimesWhenSendFailed", True), ("createTopicKey", 5)])
def test_wrong_type_named(key, value):
    with pytest.raises(ConfigError, match=key):
        config_from_dict(ProducerConfig, {key: value})


def test_enum_checked():
    with pytest.raises(ConfigError, match="messageModel"):
        config_from_dict(ConsumerConfig, {"messageModel": "CLUSTER"})
    with pytest.raises(ConfigError, match="consumeFromWhere"):
        config_from_dict(ConsumerConfig, {"consumeFromWhere": "LAST"})
