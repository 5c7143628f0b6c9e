"""A master's POP consumption (docs/rocketmq-model.md §10.2, emulator/roles/broker/pop/) through the
real runtime over the fake clock: leases, acks, renewals, the revive into the retry topic with the
attempt counted, the retry topic popped, the proxy's dead-letter path, long polling, 5.x's answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common import pop_keys as keys
from tests.roles.broker_helpers import broker
from tests.roles.fakes import FakeStore, FakeTime
from tests.roles.pop_helpers import (
    CH,
    GROUP,
    RETRY,
    REVIVE,
    TOPIC,
    ack,
    body_of,
    change_invisible,
    create_topic,
    pop,
    pop_frame,
    put,
    renewed,
    uniq,
)
from tests.strategies import bodies, text

REVIVE_LAG = keys.ACK_TIME_INTERVAL + keys.SECOND + 1000  # past the revive time, and one pass


def fresh(queues: int = 1, **config):
    d = broker(config=config or None)
    create_topic(d, queues=queues)
    return d


def test_a_pop_leases_messages_and_answers_5x_header_and_pop_ck():
    d = fresh(queues=2)
    put(d, "u1", queue_id=0)
    put(d, "u2", queue_id=1)
    resp, msgs = pop(d, invisible=20000)
    assert resp.code == R.SUCCESS and resp.remark == "FOUND"
    f = resp.fields
    assert f["popTime"] == int(d.now().wall_ms) and f["invisibleTime"] == 20000 and f["restNum"] == 0
    assert 0 <= f["reviveQid"] < 8
    assert sorted(f["startOffsetInfo"].split(";")) == ["0 0 0", "0 1 0"]
    assert sorted(f["msgOffsetInfo"].split(";")) == ["0 0 0", "0 1 0"]
    assert "orderCountInfo" not in f
    assert sorted(uniq(m) for m in msgs) == ["u1", "u2"]
    for m in msgs:
        assert m["topic"] == TOPIC and m["reconsumeTimes"] == 0
        assert m["properties"][keys.POP_CK] == (f"0 {f['popTime']} 20000 {f['reviveQid']} 0 broker-a "
                                               f"{m['queueId']} {m['queueOffset']}")
    leases = d.events("pop.lease")
    assert {e["msg_id"] for e in leases} == {"u1", "u2"}
    assert all(e["attempt"] == 1 and e["invisible_ms"] == 20000 and not e["fifo"] and not e["retry"] for e in leases)
    # one checkpoint per queue in the revive log, and the pop offsets moved on
    assert len(d.role.store.queues[(REVIVE, f["reviveQid"])]) == 2
    assert d.role.offsets.query_offset(GROUP, TOPIC, 0) == 1 and d.role.offsets.query_offset(GROUP, TOPIC, 1) == 1
    # leased: the next pop finds nothing, and without pollTime says POLLING_TIMEOUT at once
    again, none = pop(d)
    assert again.code == R.POLLING_TIMEOUT and again.remark == "NO_MESSAGE_IN_QUEUE" and none == []


def test_an_acked_message_never_comes_back_and_an_unacked_one_is_revived_into_the_retry_topic():
    d = fresh()
    put(d, "u1")
    put(d, "u2")
    _, msgs = pop(d, invisible=10000)
    first = {uniq(m): m for m in msgs}
    assert ack(d, first["u1"]).code == R.SUCCESS
    assert d.events("pop.ack")[-1]["result"] == "ok"
    d.advance(10000 + REVIVE_LAG)
    (revive,) = d.events("pop.revive")
    assert revive["msg_id"] == "u2" and revive["result"] == "retry" and revive["retry_topic"] == RETRY
    assert revive["attempt"] == 2 and revive["queue_offset"] == 1 and not revive["fifo"]
    (copy,) = d.role.store.queues[(RETRY, 0)]
    assert copy["reconsumeTimes"] == 1 and copy["properties"]["UNIQ_KEY"] == "u2"
    assert copy["properties"][keys.FIRST_POP_TIME] == str(msgs[0]["properties"][keys.POP_CK].split()[1])
    resp, again = pop(d, invisible=10000)
    (m,) = again
    assert uniq(m) == "u2" and m["topic"] == TOPIC and m["reconsumeTimes"] == 1
    assert m["properties"][keys.POP_CK].split()[4] == "1"  # the retry mark: acks name the retry topic
    assert resp.fields["startOffsetInfo"] == "1 0 0"
    assert d.events("pop.lease")[-1]["attempt"] == 2 and d.events("pop.lease")[-1]["retry"]
    assert ack(d, m).code == R.SUCCESS
    d.advance(10000 + REVIVE_LAG)
    assert len(d.events("pop.revive")) == 1  # acked in time: never again
    assert pop(d)[1] == []


def test_the_attempt_grows_by_one_with_every_lease_that_runs_out():
    d = fresh()
    put(d, "u1")
    attempts = []
    for _ in range(4):
        _, msgs = pop(d, invisible=5000)
        (m,) = msgs
        attempts.append(m["reconsumeTimes"] + 1)
        d.advance(5000 + REVIVE_LAG)
    assert attempts == [1, 2, 3, 4]
    assert [e["attempt"] for e in d.events("pop.revive")] == [2, 3, 4, 5]


def test_change_invisible_renews_the_lease_with_a_new_handle():
    d = fresh()
    put(d, "u1")
    _, (m,) = pop(d, invisible=5000)
    d.advance(3000)
    resp = change_invisible(d, m, 20000)
    assert resp.code == R.SUCCESS
    assert resp.fields == {"popTime": int(d.now().wall_ms), "invisibleTime": 20000,
                           "reviveQid": int(m["properties"][keys.POP_CK].split()[3])}
    (event,) = d.events("pop.change_invisible")
    assert event["result"] == "ok" and event["invisible_ms"] == 20000 and event["msg_id"] == "u1"
    d.advance(10000)  # the old lease's end is long past: it was acked by the renewal
    assert d.events("pop.revive") == []
    new = renewed(m, resp)
    assert ack(d, new).code == R.SUCCESS
    d.advance(30000)
    assert d.events("pop.revive") == [] and pop(d)[1] == []


def test_a_renewed_lease_that_runs_out_is_revived_once():
    d = fresh()
    put(d, "u1")
    _, (m,) = pop(d, invisible=5000)
    change_invisible(d, m, 8000)
    d.advance(8000 + REVIVE_LAG)
    (revive,) = d.events("pop.revive")
    assert revive["msg_id"] == "u1" and revive["attempt"] == 2
    d.advance(30000)
    assert len(d.events("pop.revive")) == 1


def test_in_flight_counts_leases_until_acked_or_revived_and_survives_a_restart():
    """What the drain waits for (docs/design.md §6): a lease counts from its pop until its ack (at
    once, not when the ack is due) or its revive; a renewal keeps it; the revived copy counts again
    once popped from the retry topic."""
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    create_topic(d)
    for u in ("u1", "u2", "u3"):
        put(d, u)
    _, msgs = pop(d, invisible=10000)
    first = {uniq(m): m for m in msgs}
    assert d.role.pop.revive.in_flight() == {(TOPIC, GROUP, 0): 3}
    ack(d, first["u1"])
    assert d.role.pop.revive.in_flight() == {(TOPIC, GROUP, 0): 2}
    renewed_u2 = renewed(first["u2"], change_invisible(d, first["u2"], 40000))
    assert d.role.pop.revive.in_flight() == {(TOPIC, GROUP, 0): 2}
    d.stop()  # read back from the revive log by the next life
    d = broker(store=store, time=time)
    in_flight = d.role.pop.revive.in_flight
    assert d.role.state()["pop"]["in_flight"] == [[TOPIC, GROUP, 0, 2]]
    d.advance(10000 + REVIVE_LAG)  # u3's lease ran out: revived, no longer leased, in the retry topic
    assert [e["msg_id"] for e in d.events("pop.revive")] == ["u3"]
    assert in_flight() == {(TOPIC, GROUP, 0): 1}
    _, (again,) = pop(d, invisible=10000)
    assert uniq(again) == "u3" and in_flight() == {(TOPIC, GROUP, 0): 1, (RETRY, GROUP, 0): 1}
    ack(d, again)
    ack(d, renewed_u2)
    assert in_flight() == {}


def test_the_proxys_dead_letter_path_sends_back_with_max_zero_then_acks():
    """5.x's broker revives for ever; the proxy forwards a message whose attempts reached the group's
    maximum with CONSUMER_SEND_MSG_BACK (delayLevel -1, maxReconsumeTimes 0) and then acks it."""
    d = fresh()
    put(d, "u1")
    for _ in range(2):
        pop(d, invisible=5000)
        d.advance(5000 + REVIVE_LAG)
    _, (m,) = pop(d, invisible=5000)
    assert m["reconsumeTimes"] == 2
    resp = d.call(RC.CONSUMER_SEND_MSG_BACK, {"offset": m["commitLogOffset"], "group": GROUP, "delayLevel": -1,
                                              "originMsgId": uniq(m), "originTopic": RETRY, "maxReconsumeTimes": 0},
                  channel=CH, peer="proxy-0")
    assert resp is not None and resp.code == R.SUCCESS
    assert ack(d, m).code == R.SUCCESS
    (dead,) = d.role.store.queues[(f"%DLQ%{GROUP}", 0)]
    assert dead["properties"]["UNIQ_KEY"] == "u1" and dead["reconsumeTimes"] == 3
    d.advance(60000)
    assert len(d.events("pop.revive")) == 2 and pop(d)[1] == []


def test_the_retry_topic_is_read_when_the_topic_has_nothing():
    d = fresh()
    put(d, "u1")
    pop(d, invisible=5000)
    d.advance(5000 + REVIVE_LAG)
    put(d, "u2")
    _, msgs = pop(d, max_nums=32, invisible=5000)
    assert sorted(uniq(m) for m in msgs) == ["u1", "u2"]


def test_a_held_pop_is_answered_when_a_message_arrives():
    d = fresh()
    resp, _ = pop_frame(d, poll=15000)
    assert resp is None and d.role.pop.popper.held  # held
    d.advance(2000)
    mark = d.mark()
    put(d, "u1")
    answers = [a.frame for a in d.actions[mark:] if getattr(a, "channel", None) == CH and a.frame.is_response]
    (answer,) = answers
    assert answer.code == R.SUCCESS and [uniq(m) for m in answer.json_body()] == ["u1"]
    assert not d.role.pop.popper.held


def test_a_held_pop_times_out_with_polling_timeout():
    d = fresh()
    resp, _ = pop_frame(d, poll=5000)
    assert resp is None
    mark = d.mark()
    d.advance(5000)
    answers = [a.frame for a in d.actions[mark:] if getattr(a, "channel", None) == CH and a.frame.is_response]
    (answer,) = answers
    assert answer.code == R.POLLING_TIMEOUT and not d.role.pop.popper.held


def test_a_held_pop_goes_with_its_channel():
    d = fresh()
    pop_frame(d, poll=5000)
    d.channel("closed", CH)
    assert not d.role.pop.popper.held


def test_5x_refusals_of_a_pop():
    d = fresh()
    assert pop(d, max_nums=33)[0].code == R.INVALID_PARAMETER
    assert pop(d, topic="Nope")[0].code == R.TOPIC_NOT_EXIST
    assert pop(d, queue_id=1)[0].code == R.INVALID_PARAMETER
    late = pop(d, poll=1000, bornTime=int(d.now().wall_ms) - 2000)[0]
    assert late.code == R.POLLING_TIMEOUT and "timeout too much" in late.remark
    assert pop(d, exp="a > 1", expType="SQL92")[0].code == R.SUBSCRIPTION_PARSE_FAILED
    missing = d.call(RC.POP_MESSAGE, {"consumerGroup": GROUP, "topic": TOPIC}, channel=CH)
    assert missing is not None and missing.code == R.SYSTEM_ERROR


def test_5x_refusals_of_an_ack_and_a_renewal():
    d = fresh()
    put(d, "u1")
    _, (m,) = pop(d)
    assert ack(d, m, topic="Nope").code == R.TOPIC_NOT_EXIST
    assert ack(d, m, queueId=3).code == R.MESSAGE_ILLEGAL
    bad = ack(d, m, offset=7)
    assert bad.code == R.NO_MESSAGE and bad.remark == "offset is illegal, key:T@0, commit:7, store:0~1"
    assert change_invisible(d, m, 1000, offset=1).code == R.NO_MESSAGE  # a renewal needs offset < max
    assert [e["result"] for e in d.events("pop.ack")] == ["topic_not_exist", "illegal_queue", "no_message"]


@settings(max_examples=150, deadline=None)
@given(extra=st.one_of(text(max_size=60), st.lists(st.one_of(st.integers(-2**70, 2**70).map(str), text(max_size=6)),
                                                   max_size=10).map(" ".join)),
       renew=st.booleans())
def test_any_extra_info_gets_an_answer_and_the_broker_keeps_its_leases(extra, renew):
    d = fresh()
    put(d, "u1")
    _, (m,) = pop(d, invisible=5000)
    header = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "extraInfo": extra, "offset": 0}
    if renew:
        header["invisibleTime"] = 60000
    resp = d.call(RC.CHANGE_INVISIBLE_TIME if renew else RC.ACK_MESSAGE, header, channel=CH)
    assert resp is not None and resp.code in (R.SUCCESS, R.SYSTEM_ERROR)
    kind = "pop.change_invisible" if renew else "pop.ack"
    (event,) = d.events(kind)
    assert event["code"] == resp.code
    d.advance(5000 + REVIVE_LAG)
    # a forged handle names no checkpoint of this pop (its pop time differs): the lease runs out as
    # before, unless the forged text happens to be the real one
    if extra != m["properties"][keys.POP_CK]:
        assert [e["msg_id"] for e in d.events("pop.revive") if e["result"] == "retry"] in (["u1"], [])
    _, again = pop(d, invisible=5000)
    assert ack(d, again[0]).code == R.SUCCESS if again else True


def test_an_ack_with_a_well_formed_unknown_handle_is_stored_and_ignored():
    d = fresh()
    put(d, "u1")
    _, (m,) = pop(d, invisible=5000)
    forged = "0 123 5000 0 0 broker-a 0 0"
    resp = d.call(RC.ACK_MESSAGE, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "extraInfo": forged,
                                   "offset": 0}, channel=CH)
    assert resp is not None and resp.code == R.SUCCESS
    far = d.call(RC.ACK_MESSAGE, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0,
                                  "extraInfo": "0 1 5000 12345 0 broker-a 0 0", "offset": 0}, channel=CH)
    assert far is not None and far.code == R.SUCCESS and d.events("pop.ack")[-1]["result"] == "not_written"
    d.advance(5000 + REVIVE_LAG)
    assert [e["msg_id"] for e in d.events("pop.revive")] == ["u1"]


def test_a_malformed_handle_answers_java_s_exception():
    d = fresh()
    put(d, "u1")
    pop(d)
    resp = d.call(RC.ACK_MESSAGE, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0,
                                   "extraInfo": "0 x 5000 1 0 broker-a 0 0", "offset": 0}, channel=CH)
    assert resp is not None and resp.code == R.SYSTEM_ERROR
    assert resp.remark == 'java.lang.NumberFormatException: For input string: "x"'
    short = d.call(RC.ACK_MESSAGE, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "extraInfo": "0 1 2",
                                    "offset": 0}, channel=CH)
    assert short is not None and short.code == R.SYSTEM_ERROR
    assert short.remark == "java.lang.IllegalArgumentException: getBrokerName fail, extraInfoStrs length 3"


@settings(max_examples=40, deadline=None)
@given(body=bodies(), key=text(min_size=1, max_size=12), value=text(max_size=30))
def test_bodies_and_properties_come_back_unchanged_through_pop_and_revive(body, key, value):
    d = fresh()
    props = {} if key in ("UNIQ_KEY", keys.POP_CK) or "\x01" in key + value or "\x02" in key + value else {key: value}
    put(d, "u1", body=body if isinstance(body, str) else body.decode("latin-1"), props=props)
    sent = d.role.store.queues[(TOPIC, 0)][0]
    _, (m,) = pop(d, invisible=5000)
    assert body_of(m) == body_of(sent) and all(m["properties"].get(k) == v for k, v in props.items())
    d.advance(5000 + REVIVE_LAG)
    _, (again,) = pop(d, invisible=5000)
    assert body_of(again) == body_of(sent) and all(again["properties"].get(k) == v for k, v in props.items())


@settings(max_examples=30, deadline=None)
@given(group=text(min_size=1, max_size=20))
def test_any_group_name_pops_and_revives_without_harm(group):
    d = fresh()
    put(d, "u1")
    resp, msgs = pop(d, group=group, invisible=1000)
    assert resp.code == R.SUCCESS and [uniq(m) for m in msgs] == ["u1"]
    d.advance(1000 + REVIVE_LAG)
    (revive,) = d.events("pop.revive")
    assert revive["result"] == ("retry" if keys.legal_name(keys.retry_topic(TOPIC, group)) else "illegal_topic")
    assert all(".." not in path.split("/") for path in d.store.files)


def test_numbers_java_cannot_decode_fail_the_header():
    d = fresh()
    put(d, "u1")
    assert pop(d, invisible=2**63)[0].code == R.SYSTEM_ERROR
    assert pop(d, queue_id=2**31)[0].code == R.SYSTEM_ERROR
    _, (m,) = pop(d)
    assert ack(d, m, offset=-2**64).code == R.SYSTEM_ERROR
