"""broker_config: RocketMQ defaults and strict key/type checks for user-set keys."""

import pytest

from rmqemu.emulator.roles.common.broker_config import (
    BrokerConfig,
    ConfigError,
    MessageStoreConfig,
    NamesrvConfig,
    broker_configs_from_dict,
    config_from_dict,
    namesrv_configs_from_dict,
    parse_delay_levels,
)


def test_defaults_are_rocketmq_49():
    b = BrokerConfig()
    assert (b.registerNameServerPeriod, b.forceRegister, b.registerBrokerTimeoutMills) == (30000, True, 6000)
    assert (b.autoCreateTopicEnable, b.defaultTopicQueueNums, b.brokerPermission) == (True, 8, 6)
    assert b.brokerClusterName == "DefaultCluster" and b.slaveReadEnable is False
    s = MessageStoreConfig()
    assert (s.brokerRole, s.maxMessageSize) == ("ASYNC_MASTER", 4 * 1024 * 1024)
    assert NamesrvConfig().orderMessageEnable is False


def test_user_keys_override():
    b = config_from_dict(BrokerConfig, {"autoCreateTopicEnable": False, "defaultTopicQueueNums": 4})
    assert b.autoCreateTopicEnable is False and b.defaultTopicQueueNums == 4


def test_unknown_key_named():
    with pytest.raises(ValueError, match="nosuchKey") as exc:
        config_from_dict(BrokerConfig, {"nosuchKey": 1})
    assert exc.value.key == "nosuchKey"


@pytest.mark.parametrize("key,value", [("defaultTopicQueueNums", "8"), ("defaultTopicQueueNums", True),
                                       ("autoCreateTopicEnable", 1), ("brokerClusterName", 3)])
def test_wrong_type_named(key, value):
    with pytest.raises(ConfigError, match=key):
        config_from_dict(BrokerConfig, {key: value})


def test_mixed_broker_dict_routes_keys():
    c = broker_configs_from_dict({"brokerRole": "SLAVE", "autoCreateTopicEnable": False})
    assert c.store.brokerRole == "SLAVE" and c.broker.autoCreateTopicEnable is False
    assert c.netty.listenPort == 10911
    with pytest.raises(ConfigError, match="brokerRole"):
        broker_configs_from_dict({"brokerRole": "BOSS"})
    with pytest.raises(ConfigError, match="bogus"):
        broker_configs_from_dict({"bogus": 1})
    assert namesrv_configs_from_dict({}).netty.listenPort == 9876


def test_ha_keys_have_rocketmq_49_defaults_and_route_to_the_store_config():
    s = MessageStoreConfig()
    assert (s.haSendHeartbeatInterval, s.haHousekeepingInterval, s.haTransferBatchSize) == (5000, 20000, 32 * 1024)
    assert (s.haSlaveFallbehindMax, s.syncFlushTimeout, s.haListenPort) == (256 * 1024 * 1024, 5000, 10912)
    c = broker_configs_from_dict({"brokerRole": "SYNC_MASTER", "syncFlushTimeout": 3000, "haTransferBatchSize": 1024})
    assert (c.store.brokerRole, c.store.syncFlushTimeout, c.store.haTransferBatchSize) == ("SYNC_MASTER", 3000, 1024)
    with pytest.raises(ConfigError, match="haSendHeartbeatInterval"):
        broker_configs_from_dict({"haSendHeartbeatInterval": "5s"})


def test_message_delay_level_is_parsed_as_parse_delay_level_does():
    """docs/rocketmq-model.md §2.9: single spaces, a Long.parseLong number, one unit of s/m/h/d; anything
    else would keep the broker from starting, so it is a configuration error naming the key."""
    assert parse_delay_levels("1s 2m +3h 1d -1s") == [1000, 120000, 3 * 3600000, 86400000, -1000]
    assert len(parse_delay_levels(MessageStoreConfig().messageDelayLevel)) == 18
    assert broker_configs_from_dict({"messageDelayLevel": "2s 4s"}).store.messageDelayLevel == "2s 4s"
    for bad in ("", "1s  2s", " 1s", "1x", "1.5s", "s", "1S", "99999999999999999s"):
        with pytest.raises(ConfigError, match="messageDelayLevel: item") as exc:
            broker_configs_from_dict({"messageDelayLevel": bad})
        assert exc.value.key == "messageDelayLevel"
    assert MessageStoreConfig().flushDelayOffsetInterval == 10000
