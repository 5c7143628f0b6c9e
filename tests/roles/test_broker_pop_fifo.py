"""A FIFO consumer group (``order=true``, docs/rocketmq-model.md §10.3): a queue's next messages wait
until the popped ones are acked or their time runs out; then the same offsets come again, in order,
with ``orderCountInfo`` counting the attempts. Also a slave's answers and restarts of a master."""

from __future__ import annotations

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.pop.order_info import ORDER_INFO_JSON
from rmqemu.emulator.roles.broker.pop.records import CheckPoint
from rmqemu.emulator.roles.common import pop_keys as keys
from rmqemu.emulator.roles.common.topic_config import TopicConfig
from tests.roles.broker_helpers import broker
from tests.roles.fakes import FakeStore, FakeTime
from tests.roles.pop_helpers import (
    GROUP,
    RETRY,
    REVIVE,
    TOPIC,
    ack,
    change_invisible,
    create_topic,
    pop,
    pop_frame,
    put,
    renewed,
    uniq,
)

REVIVE_LAG = keys.ACK_TIME_INTERVAL + keys.SECOND + 1000


def fifo_broker():
    d = broker()
    create_topic(d, queues=2)
    for i in range(3):
        put(d, f"a{i}", queue_id=0)
    put(d, "b0", queue_id=1)
    return d


def test_a_fifo_pop_blocks_the_queue_until_acked_and_then_goes_on_in_order():
    d = fifo_broker()
    resp, msgs = pop(d, queue_id=0, max_nums=2, order=True, invisible=10000)
    assert [uniq(m) for m in msgs] == ["a0", "a1"]
    assert resp.fields["reviveQid"] == keys.POP_ORDER_REVIVE_QUEUE and resp.fields["orderCountInfo"] == "0 0 0"
    assert all(m["properties"][keys.POP_CK].split()[3] == "999" for m in msgs)
    assert (REVIVE, 0) not in d.role.store.queues  # no checkpoint for FIFO
    assert pop(d, queue_id=0, order=True)[1] == []  # blocked: a2 waits
    assert [uniq(m) for m in pop(d, queue_id=1, order=True)[1]] == ["b0"]  # another queue is free
    assert ack(d, msgs[0]).code == R.SUCCESS
    assert pop(d, queue_id=0, order=True)[1] == []  # a1 still out
    assert d.role.offsets.query_offset(GROUP, TOPIC, 0) == 1
    assert ack(d, msgs[1]).code == R.SUCCESS
    assert [uniq(m) for m in pop(d, queue_id=0, order=True)[1]] == ["a2"]


def test_a_fifo_lease_that_runs_out_gives_the_same_offsets_again_with_the_count_raised():
    d = fifo_broker()
    _, first = pop(d, queue_id=0, max_nums=2, order=True, invisible=5000)
    assert ack(d, first[0]).code == R.SUCCESS
    d.advance(5001)
    resp, again = pop(d, queue_id=0, max_nums=2, order=True, invisible=5000)
    assert [uniq(m) for m in again] == ["a1", "a2"]  # from the first un-acked, in order
    assert [m["reconsumeTimes"] for m in again] == [1, 0]
    assert resp.fields["orderCountInfo"] == "0 qo0%1 1;0 0 0"
    assert [e["attempt"] for e in d.events("pop.lease")[-2:]] == [2, 1]
    (revive,) = d.events("pop.revive")
    assert revive["fifo"] and revive["msg_id"] == "a1" and revive["result"] == "redelivered"
    assert not d.role.store.queues.get((RETRY, 0))  # FIFO never goes through the retry topic
    d.advance(5001)
    _, third = pop(d, queue_id=0, max_nums=2, order=True, invisible=5000)
    assert [m["reconsumeTimes"] for m in third] == [2, 1]


def test_the_same_attempt_id_is_never_blocked_and_keeps_the_count():
    d = fifo_broker()
    _, first = pop(d, queue_id=0, order=True, attempt_id="x1")
    _, retried = pop(d, queue_id=0, order=True, attempt_id="x1")
    assert [uniq(m) for m in retried] == [uniq(m) for m in first]
    assert all(m["reconsumeTimes"] == 0 for m in retried)
    assert pop(d, queue_id=0, order=True, attempt_id="x2")[1] == []


def test_a_fifo_renewal_keeps_the_queue_blocked_longer():
    d = fifo_broker()
    _, (m,) = pop(d, queue_id=0, max_nums=1, order=True, invisible=5000)
    resp = change_invisible(d, m, 20000)
    assert resp.code == R.SUCCESS and resp.fields["reviveQid"] == 999
    assert resp.fields["popTime"] == int(m["properties"][keys.POP_CK].split()[1])
    assert resp.fields["invisibleTime"] == 20000
    d.advance(10000)
    assert pop(d, queue_id=0, order=True)[1] == []
    assert ack(d, renewed(m, resp)).code == R.SUCCESS
    assert [uniq(x) for x in pop(d, queue_id=0, max_nums=1, order=True)[1]] == ["a1"]


def test_a_fifo_ack_of_an_offset_not_handed_out_is_illegal_and_a_stale_one_is_ignored():
    d = fifo_broker()
    _, (m,) = pop(d, queue_id=0, max_nums=1, order=True)
    ck = m["properties"][keys.POP_CK].split()
    ck[7] = "2"
    forged = {**m, "properties": {**m["properties"], keys.POP_CK: " ".join(ck)}}
    assert ack(d, forged).code == R.MESSAGE_ILLEGAL
    assert ack(d, m).code == R.SUCCESS
    assert ack(d, m).code == R.SUCCESS
    assert [e["result"] for e in d.events("pop.ack")] == ["not_out", "ok", "stale"]


def test_a_held_fifo_pop_of_a_queue_is_woken_by_the_ack_that_frees_it():
    d = fifo_broker()
    _, (m,) = pop(d, queue_id=0, max_nums=1, order=True)
    resp, _ = pop_frame(d, queue_id=0, max_nums=1, order=True, poll=10000, channel="other")
    assert resp is None
    mark = d.mark()
    ack(d, m)
    (answer,) = [a.frame for a in d.actions[mark:] if getattr(a, "channel", None) == "other"]
    assert answer.code == R.SUCCESS and [uniq(x) for x in answer.json_body()] == ["a1"]


# ---------------------------------------------------------------------------------------- slave


def test_a_slave_serves_a_pop_but_writes_no_lease_and_revives_nothing():
    """5.x's store refuses the slave's checkpoint put, which the pop ignores; the revive service runs
    on brokerId 0 only; a renewal's failed checkpoint answers SYSTEM_ERROR."""
    d = broker(broker_id=1)
    d.role.topics.table[TOPIC] = TopicConfig(TOPIC, 1, 1, 6)  # as the slave sync copies it
    d.role.store.put(TOPIC, 0, b"x", {"UNIQ_KEY": "s1"}, d.now().wall_ms)  # as HA replicates it
    resp, (m,) = pop(d, queue_id=0)
    assert resp.code == R.SUCCESS and uniq(m) == "s1"
    assert (REVIVE, resp.fields["reviveQid"]) not in d.role.store.queues
    assert d.role.offsets.query_offset(GROUP, TOPIC, 0) == -1  # the pop offset never moves on a slave
    assert ack(d, m).code == R.SUCCESS and d.events("pop.ack")[-1]["result"] == "slave"
    assert change_invisible(d, m, 5000).code == R.SYSTEM_ERROR
    d.advance(60000)
    assert d.events("pop.revive") == []


# -------------------------------------------------------------------------------------- restarts


def restarted(store: FakeStore, time: FakeTime, graceful: bool, d):
    if graceful:
        d.stop()
    return broker(store=store, time=time)


def test_after_a_kill_an_acked_message_stays_acked_and_an_unacked_one_is_revived():
    for graceful in (False, True):
        store, time = FakeStore(), FakeTime()
        d = broker(store=store, time=time)
        create_topic(d)
        put(d, "u1")
        put(d, "u2")
        _, msgs = pop(d, invisible=10000)
        by = {uniq(m): m for m in msgs}
        ack(d, by["u1"])
        d2 = restarted(store, time, graceful, d)
        d2.advance(10000 + REVIVE_LAG)
        assert [e["msg_id"] for e in d2.events("pop.revive")] == ["u2"]
        _, again = pop(d2, invisible=10000)
        # a kill loses the pop offset flushed every 5 s: the topic's messages come again (duplicates,
        # as in 5.x), and the revived u2 with them; nothing acked is revived and nothing is lost
        got = sorted(uniq(m) for m in again)
        assert got == (["u2"] if graceful else ["u1", "u2", "u2"]), got
        assert all(m["reconsumeTimes"] == 1 for m in again if m["properties"][keys.POP_CK].split()[4] == "1")


def test_a_revive_offset_flushed_before_a_kill_is_not_revived_twice():
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    create_topic(d)
    put(d, "u1")
    pop(d, invisible=1000)
    d.advance(1000 + REVIVE_LAG + 10000)  # revived, and the offsets flushed since
    assert len(d.events("pop.revive")) == 1
    d2 = broker(store=store, time=time)
    d2.advance(10000)
    assert d2.events("pop.revive") == []


def test_fifo_order_info_survives_a_restart():
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    create_topic(d, queues=1)
    put(d, "a0")
    put(d, "a1")
    pop(d, queue_id=0, max_nums=1, order=True, invisible=60000)
    d.stop()
    assert ORDER_INFO_JSON in store.files
    d2 = broker(store=store, time=time)
    assert pop(d2, queue_id=0, order=True)[1] == []  # still blocked
    d2.advance(60001)
    _, (m,) = pop(d2, queue_id=0, max_nums=1, order=True)
    assert uniq(m) == "a0" and m["reconsumeTimes"] == 1


def test_checkpoint_records_read_back_as_written():
    ck = CheckPoint("T", "g", 1, 5, 7, 9, "b", [0, 2], 1)
    back = CheckPoint.from_json(ck.to_json())
    assert back is not None and back.offsets() == [5, 7] and back.bits == 1 and back.revive_time == 16


def test_a_kill_before_the_order_info_flush_lets_a_later_ack_skip_the_batch_as_5x_does():
    """5.x's ``commitAndNext`` answers an ack it has no order info for with the next offset."""
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    create_topic(d, queues=1)
    put(d, "a0")
    put(d, "a1")
    _, msgs = pop(d, queue_id=0, max_nums=2, order=True, invisible=60000)
    d2 = broker(store=store, time=time)  # killed: neither the order info nor the pop offset was flushed
    assert ack(d2, msgs[1]).code == R.SUCCESS
    assert d2.events("pop.ack")[-1]["result"] == "no_order_info"
    assert d2.role.offsets.query_offset(GROUP, TOPIC, 0) == 2  # a0 is skipped, never acked
    assert pop(d2, queue_id=0, order=True)[1] == []
