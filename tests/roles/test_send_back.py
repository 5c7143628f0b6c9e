"""Where a failed message goes next (docs/rocketmq-model.md §4.7, emulator/roles/broker/send_back.py), as
4.9.4's asyncConsumerSendMsgBack and handleRetryAndDLQ decide it, through the delay levels; and
arbitrary bodies and properties through a delay and a retry, property-based."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import Frame
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.broker_helpers import broker, heartbeat, send
from tests.roles.fakes import Driver

SCHEDULE = "SCHEDULE_TOPIC_XXXX"
_opaques = itertools.count(10_000)


def back(d: Driver, record: dict[str, Any], version: int | None = None, **header: Any) -> Frame:
    """CONSUMER_SEND_MSG_BACK of ``record`` as a client at ``version`` sends it (None: rmqemu's own)."""
    fields = {"offset": record["commitLogOffset"], "group": "cg", "delayLevel": 0, "originMsgId": "from-header",
              "originTopic": record["topic"], "unitMode": False, **header}
    frame = Frame(RC.CONSUMER_SEND_MSG_BACK, next(_opaques), fields={k: v for k, v in fields.items() if v is not None},
                  version=version)
    resp = Driver.response_in(d.deliver(frame, channel="cons-ch", peer="cg-0"), frame.opaque)
    assert resp is not None
    return resp


def latest(d: Driver, topic: str, queue_id: int = 0) -> dict[str, Any]:
    return d.role.store.queues[(topic, queue_id)][-1]


def started() -> tuple[Driver, dict[str, Any]]:
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "cons-ch")
    d.advance(2000)
    send(d, "A", props={"UNIQ_KEY": "u1", "KEYS": "k"})
    return d, latest(d, "A")


def test_three_retries_wait_10_s_30_s_1_min_keep_the_first_copys_id_then_the_dlq():
    d, orig = started()
    first_id = orig["offsetMsgId"]
    msg, waits = orig, []
    for n, level in enumerate((3, 4, 5), start=1):
        assert back(d, msg, maxReconsumeTimes=3).code == R.SUCCESS
        parked = latest(d, SCHEDULE, level - 1)
        assert parked["properties"]["REAL_TOPIC"] == "%RETRY%cg" and parked["reconsumeTimes"] == n
        before = d.role.store.max_offset("%RETRY%cg", 0)
        start = d.now().wall_ms
        while d.role.store.max_offset("%RETRY%cg", 0) == before:
            d.advance(1000)
        waits.append(d.now().wall_ms - start)
        msg = latest(d, "%RETRY%cg")
        props = msg["properties"]
        assert (props["ORIGIN_MESSAGE_ID"], props["RETRY_TOPIC"], props["UNIQ_KEY"], msg["reconsumeTimes"]) == (
            first_id, "A", "u1", n)  # never the header's originMsgId, never the UNIQ_KEY
        assert props["WAIT"] == "false" and props["DELAY"] == str(level) and body_bytes(msg) == b"hello"
    assert waits == [10000, 30000, 60000]
    assert back(d, msg, maxReconsumeTimes=3).code == R.SUCCESS  # stored reconsumeTimes 3 >= 3
    dlq = latest(d, "%DLQ%cg")
    assert (dlq["reconsumeTimes"], dlq["properties"]["DELAY"], dlq["properties"]["ORIGIN_MESSAGE_ID"]) == (
        4, "0", first_id)
    tc = d.role.topics.get("%DLQ%cg")
    assert (tc.readQueueNums, tc.writeQueueNums, tc.perm) == (1, 1, 6)
    lines = d.events("retry.back")
    assert [(e["outcome"], e["level"], e["reconsume_times"]) for e in lines] == [
        ("retry", 3, 1), ("retry", 4, 2), ("retry", 5, 3), ("dlq", None, 4)]
    assert [e["offset_msg_id"] for e in lines[:3]] == [
        r["offsetMsgId"] for r in (latest(d, SCHEDULE, level) for level in (2, 3, 4))]
    assert all(e["msg_id"] == "u1" and e["origin_msg_id"] == first_id and e["topic"] == "A" and e["group"] == "cg"
               and e["via"] == "send_back" and e["client"] == "cg-0" and e["max_reconsume_times"] == 3 for e in lines)


def test_the_maximum_comes_from_the_request_only_from_v3_4_9_on():
    d, orig = started()
    back(d, orig, version=121, maxReconsumeTimes=0)  # ali-ons: V3_4_9 exactly
    assert d.role.store.max_offset("%DLQ%cg", 0) == 1
    back(d, orig, version=120, maxReconsumeTimes=0)  # older: the group's retryMaxTimes (16)
    back(d, orig, version=401)  # no maxReconsumeTimes in the header: the group's
    assert d.role.store.max_offset(SCHEDULE, 2) == 2 and d.role.store.max_offset("%DLQ%cg", 0) == 1
    assert [e["max_reconsume_times"] for e in d.events("retry.back")] == [0, 16, 16]
    d.role.sub_groups.table["cg"].retryMaxTimes = 0
    back(d, orig, version=401)
    assert d.role.store.max_offset("%DLQ%cg", 0) == 2


def test_retry_topic_is_set_only_when_absent_and_a_clients_level_is_kept():
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "cons-ch")
    send(d, "A", props={"UNIQ_KEY": "u2", "RETRY_TOPIC": "Elsewhere", "ORIGIN_MESSAGE_ID": "  "})
    orig = latest(d, "A")
    back(d, orig, delayLevel=1)
    parked = latest(d, SCHEDULE, 0)
    assert parked["properties"]["RETRY_TOPIC"] == "Elsewhere"
    assert parked["properties"]["ORIGIN_MESSAGE_ID"] == orig["offsetMsgId"]  # a blank one counts as none


def test_a_negative_level_goes_straight_to_the_dlq_and_no_retry_queue_drops_the_message():
    d, orig = started()
    back(d, orig, delayLevel=-1)
    assert latest(d, "%DLQ%cg")["properties"]["UNIQ_KEY"] == "u1"
    d.role.sub_groups.table["cg"].retryQueueNums = 0
    before = d.role.store.snapshot()
    assert back(d, orig).code == R.SUCCESS and d.role.store.snapshot() == before
    assert [(e["outcome"], e["level"]) for e in d.events("retry.back")] == [("dlq", None), ("dropped", None)]
    assert back(d, {**orig, "commitLogOffset": 999999}, delayLevel=0).code == R.SUCCESS  # dropped before the look-up
    d.role.sub_groups.table["cg"].retryQueueNums = 1
    resp = back(d, {**orig, "commitLogOffset": 999999})
    assert (resp.code, resp.remark) == (R.SYSTEM_ERROR, "look message by offset failed, 999999")


def retry_send(d: Driver, reconsume: int, props: dict[str, str], version: int | None = None, **header: Any) -> Frame:
    """The client's fallback: a plain SEND_MESSAGE to %RETRY%cg (handleRetryAndDLQ)."""
    fields = {"producerGroup": "CLIENT_INNER_PRODUCER", "topic": "%RETRY%cg", "defaultTopic": "TBW102",
              "defaultTopicQueueNums": 4, "queueId": 0, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
              "properties": props, "reconsumeTimes": reconsume, **header}
    frame = Frame(RC.SEND_MESSAGE, next(_opaques), fields=fields, body=b"again", version=version)
    resp = Driver.response_in(d.deliver(frame, channel="cons-ch", peer="client@7"), frame.opaque)
    assert resp is not None
    return resp


def test_the_retry_send_path_turns_to_the_dlq_and_a_delay_still_applies_on_the_way():
    """A DLQ-bound fallback send that carries DELAY parks first (the client's properties replace the
    DELAY=0 handleRetryAndDLQ set), then lands in %DLQ%<group>."""
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "cons-ch")
    d.advance(2000)
    props = {"UNIQ_KEY": "u3", "RETRY_TOPIC": "A", "ORIGIN_MESSAGE_ID": "O", "DELAY": "3"}
    assert retry_send(d, 1, props, version=401, maxReconsumeTimes=2).code == R.SUCCESS
    assert latest(d, SCHEDULE, 2)["properties"]["REAL_TOPIC"] == "%RETRY%cg"
    assert retry_send(d, 2, props, version=401, maxReconsumeTimes=2).code == R.SUCCESS
    assert latest(d, SCHEDULE, 2)["properties"]["REAL_TOPIC"] == "%DLQ%cg"
    assert retry_send(d, 2, props, version=100, maxReconsumeTimes=2).code == R.SUCCESS  # group max: 16
    assert latest(d, SCHEDULE, 2)["properties"]["REAL_TOPIC"] == "%RETRY%cg"
    d.advance(10000)
    assert d.role.store.max_offset("%DLQ%cg", 0) == 1 and d.role.store.max_offset("%RETRY%cg", 0) == 2
    assert [(e["outcome"], e["level"], e["via"], e["origin_msg_id"], e["client"]) for e in d.events("retry.back")] \
        == [("retry", 3, "send", "O", "client@7"), ("dlq", 3, "send", "O", "client@7"),
            ("retry", 3, "send", "O", "client@7")]


def test_a_batch_to_a_retry_topic_is_not_judged_by_handle_retry_and_dlq():
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "cons-ch")
    body = '[{"body": "a", "properties": {"UNIQ_KEY": "b1"}}]'
    resp, _ = send(d, "%RETRY%cg", body=body, props={}, code=RC.SEND_BATCH_MESSAGE, batch=True, reconsumeTimes=99)
    assert resp.code == R.SUCCESS and d.role.store.max_offset("%RETRY%cg", 0) == 1 and not d.events("retry.back")


TEXT = st.text(alphabet=st.characters(blacklist_characters="\u0001\u0002", blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(min_size=1, max_size=300), user=st.dictionaries(
    TEXT.map(lambda k: "u_" + k), TEXT, max_size=5), level=st.integers(1, 4))
def test_any_body_and_properties_survive_a_delay_and_a_retry(body: bytes, user: dict[str, str], level: int) -> None:
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "cons-ch")
    props = {**user, "UNIQ_KEY": "p1", "DELAY": str(level)}
    resp, _ = d.send(RC.SEND_MESSAGE_V2, {"producerGroup": "pg", "topic": "A", "defaultTopic": "TBW102",
                                          "defaultTopicQueueNums": 4, "queueId": 0, "properties": props}, body,
                     channel="prod-ch", peer="pg-0")
    assert resp.code == R.SUCCESS
    d.advance(30000)
    delivered = latest(d, "A")
    assert body_bytes(delivered) == body and {k: delivered["properties"][k] for k in user} == user
    back(d, delivered)
    d.advance(10000)
    retry = latest(d, "%RETRY%cg")
    assert body_bytes(retry) == body and {k: retry["properties"][k] for k in user} == user
    assert retry["properties"]["ORIGIN_MESSAGE_ID"] == delivered["offsetMsgId"]
