"""Delay levels on a master (docs/rocketmq-model.md §2.9, emulator/roles/broker/schedule.py) through the
real runtime over the fake clock: the rewrite into SCHEDULE_TOPIC_XXXX, delivery when due and not
before, the cap, strict order per level, the clock-jump guard, the offsets file and its restore,
a restart between persists (delivered twice, never early), a slave that only keeps the file."""

from __future__ import annotations

import json

import pytest

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.schedule import DELAY_OFFSET_JSON
from rmqemu.emulator.roles.common.base import Request
from rmqemu.emulator.roles.common.message import body_bytes
from tests.roles.broker_helpers import broker, heartbeat, pull, send
from tests.roles.fakes import Driver, FakeStore, FakeTime
from tests.roles.test_slave_offset_sync import registered_slave, serve_sync

SCHEDULE = "SCHEDULE_TOPIC_XXXX"
DEFAULT_DELAYS = [1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000,
                  540000, 600000, 1200000, 1800000, 3600000, 7200000]


def delayed(d: Driver, uniq: str, level: int | str, topic: str = "A", queue_id: int = 1, **kw):
    resp, _ = send(d, topic, queue_id=queue_id, props={"UNIQ_KEY": uniq, "DELAY": str(level)}, **kw)
    return resp


def real(d: Driver, topic: str = "A", queue_id: int = 1) -> list[str]:
    return [r["properties"]["UNIQ_KEY"] for r in d.role.store.queues.get((topic, queue_id), [])]


def test_a_delayed_send_waits_in_its_level_queue_and_arrives_when_due():
    d = broker()
    d.advance(2000)  # past FIRST_DELAY_TIME
    resp = delayed(d, "u1", 2)
    assert resp.code == R.SUCCESS and resp.fields["queueId"] == 1  # the answer names the real queue
    (parked,) = d.role.store.queues[(SCHEDULE, 1)]
    assert parked["properties"] == {"UNIQ_KEY": "u1", "DELAY": "2", "REAL_TOPIC": "A", "REAL_QID": "1"}
    store_ms = parked["storeTimestamp"]
    (park,) = d.events("delay.park")
    assert park == {"msg_id": "u1", "topic": "A", "queue_id": 1, "broker": "broker-a", "level": 2, "offset": 0,
                    "due_ms": store_ms + 5000.0, "reconsume_times": 0, "delay_ms": 5000.0}
    d.advance(4999)
    assert real(d) == [] and not d.events("delay.deliver")
    d.advance(1)
    (msg,) = d.role.store.queues[("A", 1)]
    assert msg["properties"] == parked["properties"]  # DELAY, REAL_TOPIC, REAL_QID stay in the string
    assert msg["offsetMsgId"] != parked["offsetMsgId"] and msg["storeTimestamp"] == store_ms + 5000
    assert msg["msgId"] == "u1" and body_bytes(msg) == b"hello"
    (deliver,) = d.events("delay.deliver")
    assert deliver == {**{k: v for k, v in park.items() if k != "delay_ms"}, "lateness_ms": 0.0, "queue_offset": 0,
                       "offset_msg_id": msg["offsetMsgId"]}
    assert d.role.schedule.offsets == {2: 1}


def test_every_default_level_has_its_delay():
    d = broker()
    assert d.role.schedule.delays == DEFAULT_DELAYS and d.role.topics.get(SCHEDULE).writeQueueNums == 18
    for level in range(1, 19):
        delayed(d, f"u{level}", level, queue_id=0)
    dues = {e["level"]: e["due_ms"] - e["delay_ms"] for e in d.events("delay.park")}
    assert [e["delay_ms"] for e in d.events("delay.park")] == DEFAULT_DELAYS and len(set(dues.values())) == 1
    arrived: dict[str, float] = {}
    for ms in sorted(set(DEFAULT_DELAYS)):  # walk to each due time: nothing arrives before its own
        d.advance(ms - (d.now().wall_ms - dues[1]))
        arrived.update({u: ms for u in real(d, queue_id=0) if u not in arrived})
    assert arrived == {f"u{level}": DEFAULT_DELAYS[level - 1] for level in range(1, 19)}


def test_a_level_above_the_highest_is_capped_and_messageDelayLevel_overrides_the_levels():
    d = broker(config={"messageDelayLevel": "2s 4s"})
    d.advance(2000)
    delayed(d, "big", 7)
    (parked,) = d.role.store.queues[(SCHEDULE, 1)]  # level 2, queue 1
    assert parked["properties"]["DELAY"] == "2"
    (park,) = d.events("delay.park")
    assert (park["level"], park["level_asked"], park["delay_ms"]) == (2, 7, 4000.0)
    d.advance(3999)
    assert real(d) == []
    d.advance(1)
    assert real(d) == ["big"]


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_level_of_zero_or_below_is_no_delay(value):
    d = broker()
    delayed(d, "now", value)
    assert real(d) == ["now"] and not d.events("delay.park")


def test_prepared_and_rolled_back_transactions_are_never_delayed_a_commit_is():
    d = broker()
    for uniq, sys_flag in (("prepared", 4), ("rollback", 12), ("commit", 8), ("plain", 0)):
        delayed(d, uniq, 1, sysFlag=sys_flag)
    assert real(d) == ["prepared", "rollback"]
    assert [e["msg_id"] for e in d.events("delay.park")] == ["commit", "plain"]


def test_a_delay_that_is_no_java_int_is_the_stores_number_format_exception():
    d = broker()
    for bad in ("abc", "", " 3", "3.0", "99999999999"):
        resp = delayed(d, "x", bad)
        assert resp.code == R.SYSTEM_ERROR and resp.remark.startswith(
            f'java.lang.NumberFormatException: For input string: "{bad}", ')
    assert d.role.store.max_offset("A", 1) == 0 and d.role.store.max_offset(SCHEDULE, 2) == 0


def test_a_batch_with_a_delay_level_is_message_illegal():
    d = broker()
    body = json.dumps([{"body": "a", "properties": {"UNIQ_KEY": "1"}}])
    resp, _ = send(d, "B", body=body, props={"DELAY": "2"}, code=RC.SEND_BATCH_MESSAGE, batch=True)
    assert resp.code == R.MESSAGE_ILLEGAL and d.role.store.max_offset("B", 0) == 0


def test_the_properties_limit_counts_real_topic_and_real_qid():
    """The rewrite rebuilds the string (WAIT included) with REAL_TOPIC and REAL_QID, and the encoder
    measures that: a message that fits undelayed can be refused delayed."""
    d = broker()
    base = {"UNIQ_KEY": "U1", "WAIT": "true", "CLUSTER": "DefaultCluster"}
    room = 32767 - len("\u0002".join(f"{k}\u0001{v}" for k, v in {**base, "DELAY": "1", "BIG": ""}.items()))
    props = {"UNIQ_KEY": "U1", "WAIT": "true", "DELAY": "1", "BIG": "x" * room}
    resp, _ = send(d, "P", props=props)
    assert resp.code == R.MESSAGE_ILLEGAL  # + REAL_TOPIC and REAL_QID is too long
    resp, _ = send(d, "P", props={**props, "BIG": "x" * (room - len("\u0002REAL_TOPIC\u0001P\u0002REAL_QID\u00010"))})
    assert resp.code == R.SUCCESS and d.role.store.max_offset(SCHEDULE, 0) == 1


def test_each_level_is_first_in_first_out():
    """An entry not yet due holds back the ones behind it. With one delay per level and the
    clock-jump guard, only a log whose store times run backwards shows it (a record stored by a
    clock that was behind): the second entry is due 5 s before the first, and waits for it."""
    d = broker()
    d.advance(2000)
    delayed(d, "first", 3)
    delayed(d, "second", 3)
    d.role.store.queues[(SCHEDULE, 2)][1]["storeTimestamp"] -= 5000
    d.advance(5000)
    assert real(d) == []  # the second is due by now, the first is not
    d.advance(5000)
    assert real(d) == ["first", "second"]
    assert [e["lateness_ms"] for e in d.events("delay.deliver")] == [0.0, 5000.0]


def test_the_clock_jump_guard_delivers_at_once_what_is_due_further_than_its_delay():
    d = broker()
    d.advance(2000)
    delayed(d, "u", 3)  # 10 s
    d.set_clock(offset_ms=-20000)  # now the due time is 30 s ahead: more than the level's delay
    assert real(d) == ["u"]
    (deliver,) = d.events("delay.deliver")
    assert deliver["lateness_ms"] == -30000.0  # early by the jump plus the delay: the guard's doing


def test_a_clock_set_forward_delivers_what_it_made_due():
    d = broker()
    d.advance(2000)
    delayed(d, "hours", 18)  # 2 h
    d.advance(1000)
    assert real(d) == []
    d.set_clock(offset_ms=7200000)
    assert real(d) == ["hours"] and d.events("delay.deliver")[0]["lateness_ms"] == 1000.0


def test_nothing_is_delivered_in_the_first_second_after_start():
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    delayed(d, "old", 1)
    stop_and_wait(d, 60000)
    d2 = broker(store=store, time=time)  # restarted over the same store: the message was not delivered
    d2.advance(999)
    assert real(d2) == []
    d2.advance(1)
    assert real(d2) == ["old"] and d2.events("delay.deliver")[0]["lateness_ms"] == 60000.0


def stop_and_wait(d: Driver, ms: float) -> None:
    """A kill (no graceful stop: nothing persisted) and ``ms`` of downtime on the shared clock."""
    d.time.mono_ms += ms


def test_offsets_are_persisted_every_flush_interval_and_on_a_graceful_stop():
    d = broker(config={"flushDelayOffsetInterval": 5000})
    delayed(d, "a", 1)
    d.advance(9999)
    assert DELAY_OFFSET_JSON not in d.store.files
    d.advance(1)  # persist() first runs 10 s after start
    assert json.loads(d.store.files[DELAY_OFFSET_JSON]) == {"offsetTable": {"1": 1}}
    delayed(d, "b", 1)
    d.advance(1000)
    assert json.loads(d.store.files[DELAY_OFFSET_JSON]) == {"offsetTable": {"1": 1}}
    d.advance(4000)  # then every flushDelayOffsetInterval
    assert json.loads(d.store.files[DELAY_OFFSET_JSON]) == {"offsetTable": {"1": 2}}
    delayed(d, "c", 1)
    d.advance(1000)
    d.stop()
    assert json.loads(d.store.files[DELAY_OFFSET_JSON]) == {"offsetTable": {"1": 3}}


def test_a_master_killed_between_persists_delivers_again_never_early_and_loses_nothing():
    store, time = FakeStore(), FakeTime()
    d = broker(store=store, time=time)
    delayed(d, "a", 2)
    d.advance(10000)  # a delivered at 5 s, persisted at 10 s
    delayed(d, "b", 2)
    delayed(d, "c", 2)  # due at 15 s
    d.advance(6000)  # b and c delivered at 15 s, not persisted (the next persist is at 20 s)
    delayed(d, "d", 3)  # due at 26 s
    assert real(d) == ["a", "b", "c"]
    stop_and_wait(d, 30000)
    d2 = broker(store=store, time=time)
    assert d2.role.schedule.offsets == {2: 1}
    d2.advance(1000)
    assert real(d2) == ["a", "b", "c", "b", "c", "d"]  # b and c twice; d after its due, never before
    ids = [r["offsetMsgId"] for r in d2.role.store.queues[("A", 1)]]
    assert len(set(ids)) == 6
    lateness = {e["msg_id"]: e["lateness_ms"] for e in d2.events("delay.deliver")}
    assert lateness == {"b": 32000.0, "c": 32000.0, "d": 21000.0}  # restarted at 46 s, delivering at 47 s


def test_restored_offsets_are_clamped_to_the_queue_and_unknown_files_fall_back():
    store = FakeStore({DELAY_OFFSET_JSON: json.dumps({"offsetTable": {"1": 50, "2": -4, "30": 2}})})
    d = broker(store=store)
    assert d.role.schedule.offsets == {1: 0, 2: 0, 30: 2}  # a level it does not have is kept, untouched
    store = FakeStore({DELAY_OFFSET_JSON: "{not json", DELAY_OFFSET_JSON + ".bak": '{"offsetTable": {"3": 0}}'})
    assert broker(store=store).role.schedule.offsets == {3: 0}


def test_levels_beyond_the_topics_eighteen_queues_survive_a_restart():
    levels = " ".join(["1s"] * 19 + ["3s"])
    store, time = FakeStore(), FakeTime()
    d = broker(config={"messageDelayLevel": levels}, store=store, time=time)
    delayed(d, "twenty", 20)
    assert d.role.store.max_offset(SCHEDULE, 19) == 1 and d.role.topics.get(SCHEDULE).readQueueNums == 18
    d2 = broker(config={"messageDelayLevel": levels}, store=store, time=time)
    assert d2.role.store.max_offset(SCHEDULE, 19) == 1
    d2.advance(3000)
    assert real(d2) == ["twenty"]


def test_a_delivery_wakes_a_held_pull_of_the_real_queue():
    d = broker()
    send(d, "A", queue_id=1, props={"UNIQ_KEY": "before"})
    heartbeat(d, "c1", "cg", {"A": 0}, "cons-ch")
    resp, _ = pull(d, "A", queue_id=1, offset=1, suspend_ms=60000, sys_flag=2)
    assert resp is None  # held: nothing new yet
    delayed(d, "u", 1)
    mark = d.mark()
    d.advance(1000)
    (answer,) = [r for r in d.replies("cons-ch", since=mark) if r.frame.is_response]
    assert answer.frame.code == R.SUCCESS and [m["msgId"] for m in answer.frame.json_body()] == ["u"]


def test_a_slave_keeps_the_file_but_never_delivers():
    store = FakeStore({DELAY_OFFSET_JSON: json.dumps({"offsetTable": {"4": 3}})})
    slave = broker(broker_id=1, store=store)
    assert not slave.role.schedule.started and not [n for n in slave.timers if n.startswith("schedule")]
    resp = slave.call(RC.GET_ALL_DELAY_OFFSET)
    assert resp.code == R.SUCCESS and resp.json_body() == {"offsetTable": {"4": 0}}  # clamped: its queue is empty
    slave.stop()
    assert json.loads(slave.store.files[DELAY_OFFSET_JSON]) == {"offsetTable": {"4": 3}}  # a slave never persists


def test_state_shows_offsets_and_pending_levels():
    d = broker()
    delayed(d, "u", 4)
    assert d.role.state()["schedule"] == {"started": True, "levels": 18, "offsetTable": {}, "pending": {"4": 1}}


def test_a_slave_syncs_the_masters_delay_offsets_into_its_file_only():
    """SlaveSynchronize.syncDelayOffset, after the consumer offsets: GET_ALL_DELAY_OFFSET (45), the
    body written to delayOffset.json as it came; the slave's in-memory table stays as loaded."""
    time = FakeTime()
    master, slave = broker(time=time), registered_slave(time)
    delayed(master, "a", 1)
    delayed(master, "b", 2)
    master.advance(5000)
    slave.advance(3000)
    serve_sync(master, slave)
    (req,) = [r for r in slave.actions if isinstance(r, Request) and r.frame.code == RC.GET_ALL_DELAY_OFFSET]
    assert req.timeout_ms == 3000
    assert json.loads(slave.store.files[DELAY_OFFSET_JSON]) == {"offsetTable": {"1": 1, "2": 1}}
    assert slave.role.schedule.offsets == {} and slave.role.state()["schedule"]["offsetTable"] == {}
