"""The check service of a master (docs/rocketmq-model.md §9.4,
emulator/roles/broker/transaction/check_service.py) through the real runtime over the fake clock:
when a half is first checked, the copies and counts, which channel is asked, a check's answer,
the discard after the maximum, young halves holding back the queue, a restart, a late first-hand
commit that 4.9.4 commits twice."""

from __future__ import annotations

import json
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import message_ext
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.broker_helpers import broker
from tests.roles.fakes import FakeStore, FakeTime
from tests.roles.tx_helpers import COMMIT, HALF, OP, ROLLBACK, UNKNOWN, checks, end, half, producer_heartbeat, stored
from tests.strategies import bodies

FAST = {"transactionCheckInterval": 1000, "transactionTimeOut": 500, "transactionCheckMax": 3}


def answer_check(d, check, kind: int, group: str = "pg") -> None:
    """The producer's end for a check: the check header's offsets, fromTransactionCheck."""
    f = check.frame.fields
    end(d, (int(f["tranStateTableOffset"]), int(f["commitLogOffset"])), kind, f["msgId"], group=group,
        from_check=True, channel=check.channel)


def test_the_first_pass_comes_one_interval_after_start_and_checks_an_old_half():
    d = broker()
    producer_heartbeat(d, "p@1")
    half(d, "u1", body="x")
    d.advance(59_999)
    assert not checks(d) and len(stored(d, HALF)) == 1
    mark = d.mark()
    d.advance(1)
    (check,) = checks(d, since=mark)
    assert check.channel == "prod-ch" and check.frame.is_oneway
    original, copy = stored(d, HALF)
    assert copy["properties"] == {**original["properties"], "TRANSACTION_CHECK_TIMES": "1"}
    assert copy["bornTimestamp"] == original["bornTimestamp"] and body_bytes(copy) == b"x"
    assert check.frame.fields == {"commitLogOffset": copy["commitLogOffset"], "offsetMsgId": copy["offsetMsgId"],
                                  "msgId": "u1", "transactionId": "u1", "tranStateTableOffset": 1}
    body = json.loads(check.frame.body)
    assert body["topic"] == "A" and body["queueId"] == 2 and body["properties"]["TRANSACTION_CHECK_TIMES"] == "1"
    (event,) = d.events("tx.check")
    assert event == {"msg_id": "u1", "group": "pg", "broker": "broker-a", "check_times": 1, "offset": 1,
                     "client_id": "p@1", "age_ms": 60_000.0}
    assert d.role.offsets.query_offset("CID_RMQ_SYS_TRANS", HALF, 0) == 1  # the copy waits for the next pass


def test_a_commit_answering_a_check_ends_it():
    d = broker(config=FAST)
    producer_heartbeat(d, "p@1")
    half(d, "u1")
    d.advance(1000)
    (check,) = checks(d)
    answer_check(d, check, COMMIT)
    assert [m["msgId"] for m in stored(d, "A", 2)] == ["u1"]
    assert [body_bytes(op) for op in stored(d, OP)] == [b"1"]  # the copy's offset
    d.advance(5000)
    assert len(checks(d)) == 1  # never checked again
    assert d.role.offsets.query_offset("CID_RMQ_SYS_TRANS", HALF, 0) == 2
    assert d.role.offsets.query_offset("CID_RMQ_SYS_TRANS", OP, 0) == 1
    assert [(e["action"], e["from_check"], e["result"]) for e in d.events("tx.end")] == [("commit", True, "ok")]


def test_unknown_answers_are_checked_each_pass_until_the_maximum_then_discarded():
    d = broker(config=FAST)
    producer_heartbeat(d, "p@1")
    half(d, "u1")
    for _ in range(3):
        mark = d.mark()
        d.advance(1000)
        (check,) = checks(d, since=mark)
        answer_check(d, check, UNKNOWN)
    assert [e["check_times"] for e in d.events("tx.check")] == [1, 2, 3]
    d.advance(1000)
    assert len(checks(d)) == 3
    (discard,) = d.events("tx.discard")
    assert discard == {"msg_id": "u1", "group": "pg", "broker": "broker-a", "check_times": 3, "reason": "max_checks"}
    (gone,) = stored(d, "TRANS_CHECK_MAX_TIME_TOPIC")
    assert gone["properties"]["UNIQ_KEY"] == "u1" and stored(d, "A", 2) == []
    d.advance(3000)
    assert len(d.events("tx.check")) == 3 and len(d.events("tx.discard")) == 1


def test_with_no_producer_of_the_group_the_checks_still_count():
    d = broker(config=FAST)
    producer_heartbeat(d, "p@1", group="other")
    half(d, "u1")
    d.advance(4000)
    assert not checks(d)
    assert [(e["check_times"], e["client_id"]) for e in d.events("tx.check")] == [(1, None), (2, None), (3, None)]
    assert [e["reason"] for e in d.events("tx.discard")] == ["max_checks"]


def test_a_young_half_holds_back_the_ones_behind_it():
    d = broker(config={**FAST, "transactionTimeOut": 1500})
    producer_heartbeat(d, "p@1")
    d.advance(600)
    half(d, "old")
    d.advance(300)
    half(d, "young")  # 100 ms before the pass at 1000: too young, and so is "old" (400 ms)
    d.advance(100)
    assert not d.events("tx.check")
    d.advance(1000)  # the pass at 2000: "old" is 1400 ms old, still under 1500: nothing checked
    assert not d.events("tx.check")
    d.advance(1000)  # at 3000: both are old enough
    assert [e["msg_id"] for e in d.events("tx.check")] == ["old", "young"]


def test_checks_go_round_the_groups_channels():
    d = broker(config=FAST)
    producer_heartbeat(d, "p@1", channel="ch-1")
    producer_heartbeat(d, "p@2", channel="ch-2")
    for u in ("u1", "u2", "u3", "u4"):
        half(d, u)
    d.advance(1000)
    assert sorted({c.channel for c in checks(d)}) == ["ch-1", "ch-2"]


def test_a_late_first_hand_commit_leaves_the_check_copy_pending_and_commits_twice():
    """The producer's own end arrives after the check copy was written: its op names the original,
    the copy is checked again and that answer commits once more (apache/rocketmq #8158)."""
    d = broker(config=FAST)
    producer_heartbeat(d, "p@1")
    resp = half(d, "u1")
    d.advance(1000)
    assert len(checks(d)) == 1
    end(d, resp, COMMIT, "u1")  # late: names offset 0
    mark = d.mark()
    d.advance(1000)
    (again,) = checks(d, since=mark)
    assert again.frame.fields["tranStateTableOffset"] == 2  # a copy of the copy
    answer_check(d, again, COMMIT)
    assert [m["msgId"] for m in stored(d, "A", 2)] == ["u1", "u1"]


def test_halves_ops_and_offsets_survive_a_restart():
    store = FakeStore()
    d = broker(config=FAST, store=store)
    producer_heartbeat(d, "p@1")
    kept = half(d, "kept")
    half(d, "ended")
    d.advance(1000)
    answer_check(d, checks(d)[1], ROLLBACK)
    d.stop()
    d2 = broker(config=FAST, store=store, time=FakeTime(mono_ms=d.time.mono_ms))
    assert len(stored(d2, HALF)) == 4 and len(stored(d2, OP)) == 1
    assert d2.role.offsets.query_offset("CID_RMQ_SYS_TRANS", HALF, 0) == 2
    producer_heartbeat(d2, "p@1")
    d2.advance(1000)
    assert [(e["msg_id"], e["check_times"]) for e in d2.events("tx.check")] == [("kept", 2)]
    end(d2, kept, COMMIT, "kept")  # the first-hand end still finds the original after the restart
    assert [m["msgId"] for m in stored(d2, "A", 2)] == ["kept"]


def test_a_master_that_became_a_slave_does_not_check():
    d = broker(config=FAST)
    producer_heartbeat(d, "p@1")
    half(d, "u1")
    d.role.store_cfg.brokerRole = "SLAVE"
    d.advance(3000)
    assert not d.events("tx.check")


def test_a_pass_checks_each_half_once_when_the_clock_is_between_two_milliseconds():
    """The runtime's clock is fractional (1795938578435.61 ms), the store stamps a put with whole ms
    (``int(wall_ms)``, as ``System.currentTimeMillis``). With a fractional pass start, the copy the
    pass had just written read as stored before the pass: it was checked in the same pass, and its
    copy, up to ``transactionCheckMax`` checks of each half within a millisecond, then a discard: a
    real C++ producer was asked 15 times at once and its answers came after the half was gone."""
    d = broker(config={**FAST, "transactionCheckMax": 15}, time=FakeTime(mono_ms=0.25))
    producer_heartbeat(d, "p@1")
    half(d, "u1")
    half(d, "u2")
    assert d.now().wall_ms % 1 == 0.25
    d.advance(1000)
    assert [(e["msg_id"], e["check_times"]) for e in d.events("tx.check")] == [("u1", 1), ("u2", 1)]
    assert len(checks(d)) == 2 and not d.events("tx.discard")
    assert [m["properties"]["UNIQ_KEY"] for m in stored(d, HALF)] == ["u1", "u2", "u1", "u2"]
    assert d.role.offsets.query_offset("CID_RMQ_SYS_TRANS", HALF, 0) == 2  # the copies wait for the next pass
    d.advance(1000)
    assert [e["check_times"] for e in d.events("tx.check")] == [1, 1, 2, 2]


@settings(max_examples=30, deadline=None)
@given(raw=bodies(), deflate=st.booleans())
def test_a_real_producer_is_pushed_the_checked_copy_with_the_bytes_stored(raw, deflate):
    """A real client's check carries 4.9.4's MessageExt encoding of the copy, its real topic and
    queue. A body that is not UTF-8 is stored as ``body64``: every body the Java and C++ clients
    deflate (4 KiB and over, sysFlag bit 0). The check used to send it empty; the C++ client's
    inflate of nothing failed and its checker was handed an empty body."""
    data = raw.encode() if isinstance(raw, str) else raw
    sent = zlib.compress(data) if deflate else data
    d = broker(config=FAST)
    producer_heartbeat(d, "c@1", channel="rm:1")
    half(d, "u1", body=sent, channel="rm:1", sys_flag=5 if deflate else 4)
    d.advance(1000)
    (check,) = checks(d)
    (msg,) = message_ext.decode_messages(check.frame.body)
    _, copy = stored(d, HALF)
    assert check.channel == "rm:1" and msg["body"] == sent
    assert (msg["topic"], msg["queueId"], msg["sysFlag"] & 1) == ("A", 2, int(deflate))
    assert (msg["queueOffset"], msg["commitLogOffset"]) == (copy["queueOffset"], copy["commitLogOffset"])
    assert (msg["properties"]["UNIQ_KEY"], msg["properties"]["TRANSACTION_CHECK_TIMES"]) == ("u1", "1")
