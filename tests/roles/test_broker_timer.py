"""5.x timed messages on a master (docs/rocketmq-model.md §10.4, emulator/roles/broker/timer/) over the
fake clock: held in rmq_sys_wheel_timer, delivered at the first precision boundary at or after the
instant and not before, the cap's answer, a delay level winning, a clock set forward and back, and a
restart (graceful: exactly once; killed: again, never early)."""

from __future__ import annotations

import json

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.timer.store import CHECKPOINT
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.broker_helpers import broker, send
from tests.roles.fakes import Driver, FakeStore, FakeTime

TIMER = "rmq_sys_wheel_timer"
T0 = 1_700_000_000_000  # FakeTime's wall clock at mono 0: a multiple of 1000


def timed(d: Driver, uniq: str, deliver_ms: int | None = None, topic: str = "A", queue_id: int = 1,
          body: str = "hello", **props: str):
    extra = {"TIMER_DELIVER_MS": str(deliver_ms)} if deliver_ms is not None else {}
    resp, _ = send(d, topic, body=body, queue_id=queue_id, props={"UNIQ_KEY": uniq, **extra, **props})
    return resp


def real(d: Driver, topic: str = "A", queue_id: int = 1) -> list[str]:
    return [r["properties"]["UNIQ_KEY"] for r in d.role.store.queues.get((topic, queue_id), [])]


def test_a_timed_send_is_held_in_the_timer_topic_and_arrives_at_its_instant_not_before():
    d = broker()
    at = int(d.now().wall_ms) + 5500
    resp = timed(d, "u1", at)
    assert resp.code == R.SUCCESS and resp.fields["queueId"] == 1
    (held,) = d.role.store.queues[(TIMER, 0)]
    assert held["properties"] == {"UNIQ_KEY": "u1", "TIMER_DELIVER_MS": str(at), "TIMER_OUT_MS": str(at // 1000 * 1000),
                                  "REAL_TOPIC": "A", "REAL_QID": "1"}
    (park,) = d.events("timer.park")
    assert park == {"msg_id": "u1", "topic": "A", "queue_id": 1, "broker": "broker-a", "offset": 0,
                    "deliver_ms": float(at), "due_ms": float(at // 1000 * 1000 + 1000), "wait_ms": 5500.0}
    d.advance(5999)
    assert real(d) == [] and not d.events("timer.deliver")
    d.advance(1)  # the slot boundary after the instant
    (msg,) = d.role.store.queues[("A", 1)]
    props = msg["properties"]
    assert {k: v for k, v in props.items() if k not in ("TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS")} == {
        "UNIQ_KEY": "u1", "TIMER_DELIVER_MS": str(at), "TIMER_OUT_MS": str(at // 1000 * 1000)}
    assert props["TIMER_DEQUEUE_MS"] == str(T0 + 6000) and props["TIMER_ENQUEUE_MS"] == str(T0)
    assert body_bytes(msg) == b"hello" and msg["offsetMsgId"] != held["offsetMsgId"]
    (deliver,) = d.events("timer.deliver")
    where = {k: v for k, v in park.items() if k != "wait_ms"}  # the park's own field
    assert deliver == {**where, "lateness_ms": 500.0, "queue_offset": 0, "offset_msg_id": msg["offsetMsgId"],
                       "immediate": False}


def test_an_exact_second_is_delivered_at_that_second_and_delay_properties_count_from_now():
    d = broker()
    timed(d, "exact", T0 + 3000)
    timed(d, "sec", None, TIMER_DELAY_SEC="2")
    timed(d, "ms", None, TIMER_DELAY_MS="2500")
    outs = {r["properties"]["UNIQ_KEY"]: r["properties"]["TIMER_OUT_MS"] for r in d.role.store.queues[(TIMER, 0)]}
    assert outs == {"exact": str(T0 + 2000), "sec": str(T0 + 1000), "ms": str(T0 + 2000)}
    d.advance(1999)
    assert real(d) == []
    d.advance(1)
    assert real(d) == ["sec"]
    d.advance(1000)
    assert real(d) == ["sec", "exact", "ms"]  # a slot in the order its entries reached the wheel


def test_precision_rounds_to_its_slot():
    d = broker(config={"timerPrecisionMs": 300})  # snapped to 200 as setTimerPrecisionMs does
    assert d.role.timer.precision == 200
    timed(d, "p", T0 + 450)
    d.advance(599)
    assert real(d) == []
    d.advance(1)
    assert real(d) == ["p"]


def test_an_instant_already_past_is_stored_in_its_topic_as_it_is():
    d = broker()
    timed(d, "past", T0 - 1)
    (msg,) = d.role.store.queues[("A", 1)]
    assert msg["properties"] == {"UNIQ_KEY": "past", "TIMER_DELIVER_MS": str(T0 - 1)}
    assert not d.events("timer.park") and (TIMER, 0) not in d.role.store.queues


def test_beyond_the_cap_is_message_illegal_and_the_cap_itself_is_held():
    d = broker(config={"timerMaxDelaySec": 60})
    assert timed(d, "cap", T0 + 60000).code == R.SUCCESS
    resp = timed(d, "over", T0 + 60001)
    assert resp.code == R.MESSAGE_ILLEGAL and resp.remark.startswith(
        "timer message illegal, the delay time should not be bigger than the max delay 60000ms")
    assert timed(d, "nan", None, TIMER_DELAY_SEC="x").code == R.MESSAGE_ILLEGAL
    assert [r["properties"]["UNIQ_KEY"] for r in d.role.store.queues[(TIMER, 0)]] == ["cap"]
    assert broker().role.store_cfg.timerMaxDelaySec == 3 * 24 * 3600


def test_a_broker_without_the_wheel_answers_system_error():
    d = broker(config={"timerWheelEnable": False})
    resp = timed(d, "off", T0 + 5000)
    assert resp.code == R.SYSTEM_ERROR
    assert resp.remark == "accurate timer message is not enabled, timerWheelEnable is false"
    assert d.role.topics.get(TIMER) is None


def test_a_delay_level_wins_and_drops_the_timer_properties():
    d = broker()
    d.advance(2000)
    timed(d, "both", int(d.now().wall_ms) + 60000, DELAY="1", TIMER_DELAY_SEC="9")
    (parked,) = d.role.store.queues[("SCHEDULE_TOPIC_XXXX", 0)]
    assert parked["properties"] == {"UNIQ_KEY": "both", "DELAY": "1", "REAL_TOPIC": "A", "REAL_QID": "1"}
    d.advance(1000)
    assert real(d) == ["both"] and not d.events("timer.park")


def test_a_clock_set_forward_delivers_at_once_and_one_set_back_waits_for_the_clock():
    d = broker()
    timed(d, "fwd", T0 + 3_600_000)
    d.set_clock(offset_ms=3_600_000)
    assert real(d) == ["fwd"] and d.events("timer.deliver")[0]["lateness_ms"] == 0.0
    timed(d, "back", int(d.now().wall_ms) + 10000)
    d.set_clock(offset_ms=3_600_000 - 20000)  # 20 s back: the instant is now 30 s ahead
    d.advance(29999)
    assert real(d) == ["fwd"]
    d.advance(1)
    assert real(d) == ["fwd", "back"]


def test_a_graceful_restart_delivers_what_was_held_exactly_once():
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    timed(d, "early", T0 + 2000)
    timed(d, "late", T0 + 30000)
    d.advance(5000)
    assert real(d) == ["early"]
    d.stop()
    assert json.loads(store.files[CHECKPOINT])["lastTimerQueueOffset"] == 2
    time.mono_ms += 60000  # down past the second one's instant
    d2 = broker(store=store, time=time)
    assert real(d2) == ["early", "late"]  # at its start, once
    (deliver,) = d2.events("timer.deliver")
    assert deliver["msg_id"] == "late" and deliver["immediate"] is False and deliver["lateness_ms"] == 35000.0
    d2.advance(100000)
    assert real(d2) == ["early", "late"]


def test_a_killed_master_delivers_again_what_it_delivered_since_its_last_flush_never_early():
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time, config={"timerFlushIntervalMs": 10000})
    timed(d, "a", T0 + 2000)
    timed(d, "b", T0 + 50000)
    d.advance(11000)  # a delivered at 2 s, flushed at 10 s
    timed(d, "c", T0 + 12000)
    d.advance(2000)  # c delivered at 12 s, not flushed
    time.mono_ms += 5000  # killed
    d2 = broker(store=store, time=time)
    assert real(d2) == ["a", "c", "c"]  # c again; b still waits
    d2.advance(31999)
    assert real(d2) == ["a", "c", "c"]
    d2.advance(1)
    assert real(d2) == ["a", "c", "c", "b"]
    assert all(e["lateness_ms"] >= 0 for e in d2.events("timer.deliver"))


def test_a_slave_holds_nothing_and_state_shows_the_timer():
    slave = broker(broker_id=1)
    assert not slave.role.timer.started
    d = broker()
    timed(d, "x", T0 + 9000)
    assert d.role.state()["timer"] == {"started": True, "precision_ms": 1000, "lastReadTimeMs": T0,
                                       "lastTimerQueueOffset": 1, "masterTimerQueueOffset": 1, "write_ms": T0,
                                       "held": 1, "pending": 0}
