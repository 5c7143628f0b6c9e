"""A master's transactional messages (docs/rocketmq-model.md §9, emulator/roles/broker/transaction/)
through the real runtime over the fake clock: the half stored out of sight, END_TRANSACTION's
commit and rollback with 4.9.4's checks and answers, the non-idempotent commit, a slave's refusal."""

from __future__ import annotations

from hypothesis import given, settings

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.broker_helpers import broker, send
from tests.roles.fakes import FakeStore
from tests.roles.tx_helpers import COMMIT, HALF, OP, ROLLBACK, UNKNOWN, end, half, offsets_of, stored
from tests.strategies import bodies, text


def test_a_half_is_stored_in_the_half_queue_out_of_sight():
    d = broker()
    resp = half(d, "u1", topic="A", queue_id=2)
    assert resp.code == R.SUCCESS
    assert resp.fields["queueId"] == 2 and resp.fields["queueOffset"] == 0  # the queue asked, the half's offset
    (h,) = stored(d, HALF)
    assert h["properties"] == {"UNIQ_KEY": "u1", "TRAN_MSG": "true", "PGROUP": "pg", "REAL_TOPIC": "A",
                               "REAL_QID": "2"}
    assert h["sysFlag"] == 0 and resp.fields["msgId"] == h["offsetMsgId"]  # the type reset to 0
    assert stored(d, "A", 2) == []
    (event,) = d.events("tx.half")
    assert event == {"msg_id": "u1", "group": "pg", "broker": "broker-a", "topic": "A", "queue_id": 2,
                     "offset": 0, "commit_log_offset": h["commitLogOffset"]}


def test_a_broker_that_rejects_transactions_says_so():
    d = broker(config={"rejectTransactionMessage": True})
    resp = half(d, "u1")
    assert resp.code == R.NO_PERMISSION
    assert resp.remark == "the broker[127.0.0.1] sending transaction message is forbidden"
    assert stored(d, HALF) == [] and not d.events("tx.half")


def test_a_commit_stores_the_message_in_its_real_queue_and_marks_the_half_done():
    d = broker()
    resp = half(d, "u1", body="pay 10 €")
    (h,) = stored(d, HALF)
    mark = d.mark()
    assert end(d, resp, COMMIT, "u1") is None  # oneway: no answer
    assert not d.replies(since=mark)
    (msg,) = stored(d, "A", 2)
    assert body_bytes(msg) == "pay 10 €".encode()
    assert msg["sysFlag"] == COMMIT and msg["msgId"] == "u1"
    assert msg["properties"] == h["properties"]  # 4.9.4 stores the half's string: TRAN_MSG, REAL_* kept
    assert msg["bornTimestamp"] == h["bornTimestamp"]
    (op,) = stored(d, OP)
    assert body_bytes(op) == b"0" and op["properties"] == {"TAGS": "d"}
    (event,) = d.events("tx.end")
    assert event == {"msg_id": "u1", "group": "pg", "broker": "broker-a", "action": "commit", "from_check": False,
                     "offset": 0, "result": "ok", "code": 0, "queue_offset": 0, "topic": "A", "queue_id": 2}


def test_a_rollback_only_marks_the_half_done():
    d = broker()
    resp = half(d, "u1")
    end(d, resp, ROLLBACK, "u1")
    assert stored(d, "A", 2) == []
    (op,) = stored(d, OP)
    assert body_bytes(op) == b"0"
    assert [e["result"] for e in d.events("tx.end")] == ["ok"]


def test_unknown_and_unknown_types_get_no_answer_even_when_asked():
    d = broker()
    resp = half(d, "u1")
    for kind in (UNKNOWN, 5):
        assert end(d, resp, kind, "u1", oneway=False) is None
    assert stored(d, "A", 2) == [] and stored(d, OP) == []
    assert [(e["action"], e["result"], e["code"]) for e in d.events("tx.end")] == [
        ("none", "ignored", None), ("none", "ignored", None)]


def test_a_second_commit_stores_the_message_again():
    """4.9.4's END_TRANSACTION looks for no earlier end (apache/rocketmq #5574)."""
    d = broker()
    resp = half(d, "u1")
    end(d, resp, COMMIT, "u1")
    end(d, resp, COMMIT, "u1", from_check=True)  # a forged fromTransactionCheck changes nothing but a log line
    assert [m["msgId"] for m in stored(d, "A", 2)] == ["u1", "u1"]
    assert [body_bytes(op) for op in stored(d, OP)] == [b"0", b"0"]
    assert [(e["result"], e["from_check"]) for e in d.events("tx.end")] == [("ok", False), ("ok", True)]


def test_hostile_ends_get_4_9_4s_answers_and_change_nothing():
    d = broker()
    resp = half(d, "u1")
    plain, _ = send(d, "B", queue_id=0)
    state, commit_log = offsets_of(resp)
    cases = [
        ((state, commit_log + 1), {}, "not_found", "Find prepared transaction message failed"),
        ((state, commit_log), {"producerGroup": "other"}, "mismatch", "The producer group wrong"),
        ((state + 3, commit_log), {}, "mismatch", "The transaction state table offset wrong"),
        (offsets_of(plain), {}, "mismatch", "java.lang.NullPointerException, org.apache.rocketmq.broker.processor."
         "EndTransactionProcessor.checkPrepareMessage(EndTransactionProcessor.java:169)"),
    ]
    for offsets, override, result, remark in cases:
        for kind in (COMMIT, ROLLBACK):
            mark = d.mark()
            answer = end(d, offsets, kind, "u1", oneway=False, **override)
            assert answer is not None and answer.code == R.SYSTEM_ERROR and answer.remark == remark
            (event,) = d.events("tx.end", since=mark)
            assert event["result"] == result and event["error"] == remark
    missing = d.call(RC.END_TRANSACTION, {"producerGroup": "pg", "commitOrRollback": COMMIT}, channel="prod-ch")
    assert missing is not None and missing.code == R.SYSTEM_ERROR  # a header field absent: decode fails
    assert stored(d, "A", 2) == [] and stored(d, OP) == [] and len(stored(d, HALF)) == 1


def test_a_slave_refuses_to_end_a_transaction():
    store = FakeStore()
    d = broker(broker_id=1, store=store)
    answer = end(d, (0, 0), COMMIT, "u1", oneway=False)
    assert answer is not None and answer.code == R.SLAVE_NOT_AVAILABLE
    assert d.events("tx.end")[0]["result"] == "slave"
    assert "tx_check" not in d.timers  # only a master checks


@settings(max_examples=40, deadline=None)
@given(body=bodies(), topic_key=text(min_size=1, max_size=12), group=text(min_size=1, max_size=12))
def test_any_body_and_group_come_out_of_a_commit_as_they_went_in(body, topic_key, group):
    d = broker()
    resp = half(d, "u-1", group=group, body=body, KEYS=topic_key)
    assert resp.code == R.SUCCESS
    end(d, resp, COMMIT, "u-1", group=group)
    (msg,) = stored(d, "A", 2)
    assert body_bytes(msg) == (body.encode() if isinstance(body, str) else body)
    assert msg["properties"]["KEYS"] == topic_key and msg["properties"]["PGROUP"] == group
