"""Client building blocks: validators, fault-tolerance tables, route conversion, queue selection."""

import random

import pytest

from rmqemu.emulator.protocol import FAQ_SUFFIX
from rmqemu.emulator.roles.client.fault_strategy import MQFaultStrategy, compute_not_available_duration
from rmqemu.emulator.roles.client.route_cache import (
    MessageQueue,
    ThreadLocalIndex,
    TopicPublishInfo,
    as_default_topic_route,
    find_broker_address_in_subscribe,
    normalize_route,
    to_publish_info,
    to_subscribe_info,
)
from rmqemu.emulator.roles.client.send_flow import should_retry_sync
from rmqemu.emulator.roles.client.validators import (
    MQClientError,
    check_group,
    check_message,
    no_name_server_error,
    no_route_error,
)

# ---------------------------------------------------------------- validators (docs/rocketmq-model.md §3.5)


@pytest.mark.parametrize("topic,code,msg", [
    ("", -1, "The specified topic is blank"),
    ("  ", -1, "The specified topic is blank"),
    ("T" * 128, -1, "The specified topic is longer than topic max length 127."),
    ("a b", -1, "The specified topic[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ("SCHEDULE_TOPIC_XXXX", -1, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."),
])
def test_topic_checks_exact(topic, code, msg):
    with pytest.raises(MQClientError) as exc:
        check_message(topic, b"x", 100)
    assert (exc.value.code, exc.value.message) == (code, msg)


def test_long_topic_with_bad_chars_reports_length_first():  # 4.9.4 order
    with pytest.raises(MQClientError, match="longer than"):
        check_message("?" * 200, b"x", 100)


@pytest.mark.parametrize("body,msg", [
    (None, "the message body is null"), (b"", "the message body length is zero"),
    (b"x" * 101, "the message body size over max value, MAX: 100"),
])
def test_body_checks_code_13(body, msg):
    with pytest.raises(MQClientError) as exc:
        check_message("T", body, 100)
    assert (exc.value.code, exc.value.message) == (13, msg)
    assert str(exc.value) == f"CODE: 13  DESC: {msg}"


def test_valid_message_and_group():
    check_message("%RETRY%cg|x-1_A", b"x" * 100, 100)
    check_group("cg-1")
    with pytest.raises(MQClientError, match="the specified group is blank"):
        check_group("")


def test_no_route_error_text():
    e = no_route_error("T")
    assert e.code == 10005 and e.message == "No route info of this topic: T" + FAQ_SUFFIX


def test_no_route_and_no_name_server_carry_a_code_but_the_plain_message():
    """new MQClientException(msg, null) + setResponseCode: getMessage() is the text itself."""
    assert str(no_route_error("T")) == "No route info of this topic: T" + FAQ_SUFFIX
    assert str(no_name_server_error()).startswith("No name server address, please set it.")
    assert no_name_server_error().code == 10004


def test_plain_client_exception_gets_default_url():
    assert str(MQClientError(-1, "boom")).endswith("please visit the url, http://rocketmq.apache.org/docs/faq/")


# ---------------------------------------------------------------- fault tolerance (docs/rocketmq-model.md §3.4)


@pytest.mark.parametrize("latency,expected", [
    (0, 0), (49, 0), (50, 0), (549, 0), (550, 30000), (999, 30000), (1000, 60000), (2000, 120000),
    (3000, 180000), (14999, 180000), (15000, 600000), (30000, 600000),
])
def test_compute_boundaries(latency, expected):
    assert compute_not_available_duration(latency) == expected


def _info(brokers, n=2, seed=1):
    route = normalize_route({"queueDatas": [{"brokerName": b, "readQueueNums": n, "writeQueueNums": n, "perm": 6}
                                            for b in brokers],
                             "brokerDatas": [{"cluster": "C", "brokerName": b, "brokerAddrs": {"0": f"a-{b}"}}
                                             for b in brokers]})
    return to_publish_info("T", route, random.Random(seed))


def test_isolation_blacks_out_broker_until_wall_time():
    fs = MQFaultStrategy(True, random.Random(0))
    fs.update_fault_item("b1", 500, True, wall_ms=100_000)  # isolation: compute(30000) -> 600000 ms
    assert not fs.tolerance.is_available("b1", 699_999)
    assert fs.tolerance.is_available("b1", 700_000)
    info = _info(["b1", "b2"])
    for _ in range(10):
        assert fs.select_one_message_queue(info, None, 200_000).broker_name == "b2"


def test_all_blacked_out_rewrites_cached_queue_in_place():  # #7779, 4.9.4
    fs = MQFaultStrategy(True, random.Random(0))
    fs.update_fault_item("b1", 100, True, 0)
    info = _info(["b1"], n=2)
    before = list(info.message_queues)
    mq = fs.select_one_message_queue(info, None, 10)
    assert mq.broker_name == "b1" and mq in info.message_queues
    assert len(info.message_queues) == len(before)


def test_disabled_strategy_records_nothing():
    fs = MQFaultStrategy(False, random.Random(0))
    fs.update_fault_item("b1", 100000, True, 0)
    assert fs.tolerance.items == {}


# ---------------------------------------------------------------- queue selection (docs/rocketmq-model.md §3.3)


def test_thread_local_index_wraps_like_java_int():
    idx = ThreadLocalIndex(random.Random(0))
    idx._value = 2**31 - 1
    assert idx.increment_and_get() == 0  # -2^31 & 0x7FFFFFFF


def test_select_avoids_last_broker():
    info = _info(["b1", "b2", "b3"])
    for _ in range(50):
        assert info.select_one_message_queue("b2").broker_name != "b2"


def test_select_falls_back_when_only_last_broker():
    info = _info(["b1"])
    assert info.select_one_message_queue("b1").broker_name == "b1"


def test_plain_select_is_round_robin():
    info = _info(["b1", "b2"], n=2)
    picks = [info.select_one_message_queue() for _ in range(8)]
    assert all(picks[i] != picks[i + 1] for i in range(7))
    assert set(picks) == set(info.message_queues)


@pytest.mark.parametrize("code,retry", [(17, True), (14, True), (1, True), (16, True), (204, True), (205, True),
                                        (2, False), (13, False), (3, False), (25, False)])
def test_retry_codes(code, retry):
    assert should_retry_sync(code) is retry


# ---------------------------------------------------------------- route conversion (docs/rocketmq-model.md §3.6, §4.6)

ROUTE = normalize_route({
    "queueDatas": [
        {"brokerName": "b2", "readQueueNums": 8, "writeQueueNums": 8, "perm": 7},
        {"brokerName": "b1", "readQueueNums": 4, "writeQueueNums": 2, "perm": 6},
        {"brokerName": "b3", "readQueueNums": 2, "writeQueueNums": 2, "perm": 4},   # read only
        {"brokerName": "b4", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6},   # slave only
        {"brokerName": "b5", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6},   # orphan
    ],
    "brokerDatas": [
        {"cluster": "C", "brokerName": "b1", "brokerAddrs": {"0": "h1", "1": "h1s"}},
        {"cluster": "C", "brokerName": "b2", "brokerAddrs": {"0": "h2"}},
        {"cluster": "C", "brokerName": "b3", "brokerAddrs": {"0": "h3"}},
        {"cluster": "C", "brokerName": "b4", "brokerAddrs": {"1": "h4s"}},
    ],
})


def test_publish_info_keeps_writable_queues_with_a_master():
    info = to_publish_info("T", ROUTE, random.Random(0))
    assert [mq.pair() for mq in info.message_queues] == [["b1", 0], ["b1", 1]] + [["b2", i] for i in range(8)]
    assert info.write_queue_nums("b1") == 2 and info.write_queue_nums("zz") == -1


def test_subscribe_info_keeps_readable_queues_without_master_check():
    mqs = to_subscribe_info("T", ROUTE)
    assert [mq.broker_name for mq in mqs].count("b3") == 2
    assert ["b4", 0] in [mq.pair() for mq in mqs] and ["b5", 0] in [mq.pair() for mq in mqs]


def test_default_topic_route_uses_min_queue_nums():
    r = as_default_topic_route(ROUTE, 4)
    nums = {qd["brokerName"]: (qd["readQueueNums"], qd["writeQueueNums"]) for qd in r["queueDatas"]}
    assert nums["b2"] == (4, 4) and nums["b1"] == (4, 4) and nums["b3"] == (2, 2)


def test_order_topic_conf():
    r = dict(ROUTE, orderTopicConf="b1:2;b2:1")
    info = to_publish_info("T", r, random.Random(0))
    assert info.order_topic and [mq.pair() for mq in info.message_queues] == [["b1", 0], ["b1", 1], ["b2", 0]]


def test_find_broker_address_in_subscribe():
    table = {"b1": {0: "m", 1: "s"}, "b2": {1: "s2"}, "b3": {2: "s3"}}
    assert find_broker_address_in_subscribe(table, "b1", 0, False) == ("m", False)
    assert find_broker_address_in_subscribe(table, "b1", 1, False) == ("s", True)
    assert find_broker_address_in_subscribe(table, "b2", 0, False) == ("s2", True)  # master gone
    assert find_broker_address_in_subscribe(table, "b2", 0, True) is None
    assert find_broker_address_in_subscribe(table, "b3", 1, True) == ("s3", True)  # id+1
    assert find_broker_address_in_subscribe(table, "zz", 0, False) is None


def test_message_queue_order_and_str():
    mqs = sorted([MessageQueue("T", "b", 10), MessageQueue("T", "b", 2), MessageQueue("S", "z", 0)])
    assert [m.pair() for m in mqs] == [["z", 0], ["b", 2], ["b", 10]]
    assert str(mqs[0]) == "MessageQueue [topic=S, brokerName=z, queueId=0]"


def test_empty_publish_info_not_ok():
    assert not TopicPublishInfo.empty(random.Random(0)).ok()


def test_pick_one_at_least_sorts_without_shuffle_as_494_latency_fault_tolerance_impl():
    """LatencyFaultToleranceImpl.pickOneAtLeast (4.9.4): Collections.sort only (4.7-4.9.3
    shuffled first), so the pick depends on the rotating index alone, not on the rng."""
    picks = []
    for seed in (1, 2, 3):
        fs = MQFaultStrategy(True, random.Random(seed))
        for name, latency in (("b1", 3000), ("b2", 100), ("b3", 100), ("b4", 50)):
            fs.tolerance.update(name, latency, 60_000, wall_ms=0)  # all blacked out until 60000
        start = fs.tolerance._which_item_worst._value
        fs.tolerance._which_item_worst._value = 0  # the same rotating index for every seed
        picks.append([fs.tolerance.pick_one_at_least(10) for _ in range(4)])
        fs.tolerance._which_item_worst._value = start
    # sorted: b4 (50), b2 (100, inserted first), b3 (100), b1; the better half is [b4, b2]
    assert picks == [["b2", "b4", "b2", "b4"]] * 3
