"""Allocation strategies against hand-worked cases (docs/rocketmq-model.md §4.4)."""

import bisect
import hashlib

import pytest

from rmqemu.emulator.roles.client.allocate import (
    AllocateError,
    allocate_averagely,
    allocate_averagely_by_circle,
    make_by_config,
    make_by_machine_room,
    make_consistent_hash,
    strategy_from_spec,
)
from rmqemu.emulator.roles.client.route_cache import MessageQueue

MQS = [MessageQueue("T", "b1", i) for i in range(4)] + [MessageQueue("T", "b2", i) for i in range(4)]
CIDS = ["c0", "c1", "c2"]


def ids(mqs):
    return [(m.broker_name, m.queue_id) for m in mqs]


def test_avg_uneven_split_8_over_3():
    # n=8, c=3, mod=2: c0 -> 3 (0..2), c1 -> 3 (3..5), c2 -> 2 (6..7)
    assert ids(allocate_averagely("g", "c0", MQS, CIDS)) == [("b1", 0), ("b1", 1), ("b1", 2)]
    assert ids(allocate_averagely("g", "c1", MQS, CIDS)) == [("b1", 3), ("b2", 0), ("b2", 1)]
    assert ids(allocate_averagely("g", "c2", MQS, CIDS)) == [("b2", 2), ("b2", 3)]


def test_avg_more_consumers_than_queues():
    mqs, cids = MQS[:2], ["a", "b", "c", "d"]
    assert allocate_averagely("g", "a", mqs, cids) == [mqs[0]]
    assert allocate_averagely("g", "b", mqs, cids) == [mqs[1]]
    assert allocate_averagely("g", "c", mqs, cids) == [] and allocate_averagely("g", "d", mqs, cids) == []


def test_avg_by_circle_uneven():
    assert ids(allocate_averagely_by_circle("g", "c0", MQS, CIDS)) == [("b1", 0), ("b1", 3), ("b2", 2)]
    assert ids(allocate_averagely_by_circle("g", "c2", MQS, CIDS)) == [("b1", 2), ("b2", 1)]


@pytest.mark.parametrize("strategy", [allocate_averagely, allocate_averagely_by_circle, make_consistent_hash(),
                                      make_by_machine_room(["idc1"])])
def test_cid_not_in_list_gets_nothing(strategy):
    assert strategy("g", "ghost", MQS, CIDS) == []


@pytest.mark.parametrize("args,msg", [
    (("", MQS, CIDS), "currentCID is empty"), (("c0", [], CIDS), "mqAll is null or mqAll empty"),
    (("c0", MQS, []), "cidAll is null or cidAll empty"),
])
def test_checks(args, msg):
    with pytest.raises(AllocateError, match=msg):
        allocate_averagely("g", *args)


def _independent_consistent_hash(cids, mqs, vn=10):
    def h(s):
        return int.from_bytes(hashlib.md5(s.encode("utf-8")).digest()[:4], "big", signed=False)
    ring = {}
    for c in cids:
        for i in range(vn):
            ring[h(f"{c}-{i}")] = c
    keys = sorted(ring)
    owner = {}
    for mq in mqs:
        key = h(f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]")
        j = bisect.bisect_left(keys, key)
        owner[mq] = ring[keys[j] if j < len(keys) else keys[0]]
    return owner


def test_consistent_hash_matches_independent_computation():
    mqs = [MessageQueue("TopicA", f"broker-{b}", q) for b in "abc" for q in range(8)]
    cids = ["127.0.0.1@cg-1-0", "127.0.0.1@cg-1-1", "127.0.0.1@cg-1-2"]
    owner = _independent_consistent_hash(cids, mqs)
    strategy = make_consistent_hash(10)
    got = {c: strategy("g", c, mqs, cids) for c in cids}
    for c in cids:
        assert got[c] == [mq for mq in mqs if owner[mq] == c]
    assert sum(len(v) for v in got.values()) == len(mqs)


def test_consistent_hash_known_value():
    # MD5("a-0") = 0x2d7d4a2b..., first four bytes big-endian unsigned
    from rmqemu.emulator.roles.client.allocate import md5_hash
    assert md5_hash("a-0") == int(hashlib.md5(b"a-0").hexdigest()[:8], 16)


def test_consistent_hash_negative_vnodes():
    with pytest.raises(AllocateError, match="illegal virtual node counts :-1"):
        make_consistent_hash(-1)


def test_config_returns_fixed_list_without_checks():
    s = strategy_from_spec("CONFIG", {"messageQueueList": [["T", "b2", 3],
                                                           {"topic": "X", "brokerName": "b", "queueId": 0}]})
    assert s("g", "", [], []) == [MessageQueue("T", "b2", 3), MessageQueue("X", "b", 0)]
    assert make_by_config([])("g", "c0", MQS, CIDS) == []


def test_machine_room():
    mqs = sorted([MessageQueue("T", "idc1@b1", i) for i in range(5)]
                 + [MessageQueue("T", "idc2@b2", i) for i in range(3)]
                 + [MessageQueue("T", "plain", 0)])
    s = make_by_machine_room(["idc1"])
    # premq = 5 idc1 queues; c=2 -> mod=2, rem=1: c0 gets [0,1] + premq[0+2*2]=4; c1 gets [2,3]
    assert [m.queue_id for m in s("g", "c0", mqs, ["c0", "c1"])] == [0, 1, 4]
    assert [m.queue_id for m in s("g", "c1", mqs, ["c0", "c1"])] == [2, 3]


def test_machine_room_splits_broker_names_as_java_does():
    """String.split drops trailing empty parts: "idc1@" is one part (not kept), "idc1@b@" two."""
    mqs = sorted([MessageQueue("T", "idc1@", 0), MessageQueue("T", "idc1@b@", 0), MessageQueue("T", "idc1@b@c", 0)])
    assert make_by_machine_room(["idc1"])("g", "c0", mqs, ["c0"]) == [MessageQueue("T", "idc1@b@", 0)]


def test_unknown_strategy_named():
    with pytest.raises(ValueError, match="BOGUS"):
        strategy_from_spec("BOGUS")


@pytest.mark.parametrize("strategy", [allocate_averagely, allocate_averagely_by_circle, make_consistent_hash()])
def test_every_queue_goes_to_exactly_one_consumer(strategy):
    """With every client agreeing on mqAll and cidAll, the strategies partition the queues:
    nothing unconsumed, nothing twice (what breaks when subscriptions differ, seed 002)."""
    for n in range(1, 13):
        mqs = [MessageQueue("T", f"b{i % 3}", i) for i in range(n)]
        mqs.sort()
        for c in range(1, 6):
            cids = [f"127.0.0.1@c-{k}" for k in range(c)]
            got = [mq for cid in cids for mq in strategy("g", cid, mqs, cids)]
            assert sorted(got) == mqs, (strategy, n, c)


def test_avg_hand_worked_10_over_4():
    # n=10, c=4, mod=2: c0 -> 0..2, c1 -> 3..5, c2 -> 6..7, c3 -> 8..9
    mqs = [MessageQueue("T", "b", i) for i in range(10)]
    cids = ["c0", "c1", "c2", "c3"]
    assert [[m.queue_id for m in allocate_averagely("g", c, mqs, cids)] for c in cids] == [
        [0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert [[m.queue_id for m in allocate_averagely_by_circle("g", c, mqs, cids)] for c in cids] == [
        [0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
