"""The broker's queue locks (RebalanceLockManager, docs/rocketmq-model.md §4.9) and their events."""

from __future__ import annotations

import json

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode
from rmqemu.emulator.roles.broker.queue_processor import LOCK_MAX_LIVE_MS

from .broker_helpers import broker
from .fakes import Driver, FakeStore


def body(client: str, *queues: int) -> dict:
    return {"consumerGroup": "cg", "clientId": client,
            "mqSet": [{"topic": "T", "brokerName": "broker-a", "queueId": q} for q in queues]}


def lock(d: Driver, client: str, *queues: int) -> list[int]:
    resp = d.call(RC.LOCK_BATCH_MQ, {}, body(client, *queues), peer=f"node-{client}")
    assert resp.code == ResponseCode.SUCCESS
    return [m["queueId"] for m in json.loads(resp.body)["lockOKMQSet"]]


def unlock(d: Driver, client: str, *queues: int, oneway: bool = True) -> None:
    d.send(RC.UNLOCK_BATCH_MQ, {}, body(client, *queues), peer=f"node-{client}", oneway=oneway)


def changes(d: Driver, since: int = 0) -> list[tuple]:
    return [(e["queue_id"], e["client_id"], e["change"], e.get("previous")) for e in d.events("broker.lock", since)]


def test_grant_renew_refuse_unlock_and_their_events():
    d = broker()
    assert lock(d, "A", 0, 1) == [0, 1]
    assert lock(d, "B", 1, 2) == [2]  # 1 is A's
    m = d.mark()
    d.advance(LOCK_MAX_LIVE_MS - 1)
    assert lock(d, "A", 0, 1) == [0, 1]  # renewed: no line
    assert changes(d, m) == []
    unlock(d, "B", 0, 2)  # 0 is not B's: only 2 goes
    assert changes(d, m) == [(2, "B", "unlocked", None)]
    assert d.role.state()["locks"] == {"cg": {"T:broker-a:0": "A", "T:broker-a:1": "A"}}
    e = d.events("broker.lock")[0]
    assert (e["group"], e["topic"], e["broker"], e["peer"], e["change"]) == ("cg", "T", "broker-a", "node-A", "locked")
    assert [(q, c, ch) for q, c, ch, _ in changes(d)[:3]] == [(0, "A", "locked"), (1, "A", "locked"),
                                                                (2, "B", "locked")]


def test_an_expired_lock_is_taken_over_and_its_holder_named():
    d = broker()
    lock(d, "A", 0)
    d.advance(LOCK_MAX_LIVE_MS)
    assert lock(d, "B", 0) == []  # exactly 60 s: not expired yet (now - last > 60000)
    d.advance(1)
    m = d.mark()
    assert lock(d, "B", 0) == [0]
    [e] = d.events("broker.lock", m)
    assert (e["change"], e["client_id"], e["previous"], e["idle_ms"]) == ("taken_over", "B", "A", LOCK_MAX_LIVE_MS + 1)
    assert lock(d, "A", 0) == []  # A lost it


def test_expiry_is_on_the_brokers_wall_clock():
    d = broker()
    lock(d, "A", 0)
    d.time.bump(LOCK_MAX_LIVE_MS + 1)  # a clock fault: no time passed on the monotonic clock
    assert lock(d, "B", 0) == [0]


def test_the_same_client_relocks_its_expired_lock_without_a_line():
    d = broker()
    lock(d, "A", 0)
    d.advance(LOCK_MAX_LIVE_MS + 5)
    m = d.mark()
    assert lock(d, "A", 0) == [0] and changes(d, m) == []


def test_a_restarted_broker_has_no_locks():
    store = FakeStore()
    d = broker(store=store)
    lock(d, "A", 0, 1)
    d.stop()
    again = broker(store=store, time=d.time)
    assert again.role.state()["locks"] == {}
    assert lock(again, "B", 0) == [0]
    assert changes(again) == [(0, "B", "locked", None)]  # a fresh grant: the old holder left no trace


def test_a_synchronous_unlock_is_answered():
    d = broker()
    lock(d, "A", 3)
    _, actions = d.send(RC.UNLOCK_BATCH_MQ, {}, body("A", 3), peer="node-A")
    assert d.replies()[-1].frame.code == ResponseCode.SUCCESS and changes(d)[-1] == (3, "A", "unlocked", None)
