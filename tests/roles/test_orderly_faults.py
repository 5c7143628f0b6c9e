"""Faults on queue locks, with an orderly consumer whose lock requests reach a real broker role
(docs/rocketmq-model.md §4.9): a paused or dead consumer keeps its locks until they expire on the
broker, and a restarted broker has lost them while the consumer still believes it holds them."""

from __future__ import annotations

import json

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.broker.queue_processor import LOCK_MAX_LIVE_MS

from .broker_helpers import broker
from .fakes import Driver, FakeStore
from .test_client_consumer import ME, cid_list, make, route, serve_routes
from .test_orderly_consumer import Q0, answer_offsets, changes

LOCKS = (RC.LOCK_BATCH_MQ, RC.UNLOCK_BATCH_MQ)


def relay(consumer: Driver, b: Driver) -> None:
    """Carry the consumer's lock and unlock requests (and oneways) to broker ``b``."""
    for req in [r for r in consumer.pending if r.frame.code in LOCKS]:
        consumer.answer(req, b.serve(req, channel="ch-consumer", peer=consumer.role.name))
    for ow in [o for o in consumer.oneways(getattr(consumer, "relayed", 0)) if o.frame.code in LOCKS]:
        b.serve(ow, channel="ch-consumer", peer=consumer.role.name)
    consumer.relayed = consumer.mark()


def other_client_locks(b: Driver, *queues: int) -> list[int]:
    body = {"consumerGroup": "cg-1", "clientId": "127.0.0.1@cg-1-1",
            "mqSet": [{"topic": "T", "brokerName": "b1", "queueId": q} for q in queues]}
    resp = b.call(RC.LOCK_BATCH_MQ, {}, body, channel="ch-other", peer="cg-1-1")
    return [m["queueId"] for m in json.loads(resp.body)["lockOKMQSet"]]


def running(store: FakeStore | None = None) -> tuple[Driver, Driver]:
    """A broker and an orderly consumer holding b1's two queues, locked by its first lockAll."""
    c = make(workload={"subscribe": ["T"], "allocate": "AVG", "orderly": True})
    b = broker(time=c.time, store=store)
    serve_routes(c, {"T": route("b1", queues=2)})
    cid_list(c, [ME])
    relay(c, b)
    answer_offsets(c)
    c.advance(1000)  # lockAll
    relay(c, b)
    assert changes(c) == [(0, "locked"), (1, "locked")]
    return c, b


def test_a_running_consumer_keeps_its_locks_by_renewing_them():
    c, b = running()
    for _ in range(5):  # 100 s of lockAll renewals
        c.advance(20000)
        relay(c, b)
        assert other_client_locks(b, 0) == []
    assert [e["change"] for e in b.events("broker.lock")] == ["locked", "locked"]  # renewals write nothing


def test_a_paused_consumer_keeps_its_locks_until_they_expire_on_the_broker():
    c, b = running()
    paused_at = b.time.mono_ms  # the last grant: the consumer stops here (SIGSTOP: no timer, no request)
    b.advance(LOCK_MAX_LIVE_MS)
    assert other_client_locks(b, 0, 1) == []  # still the paused consumer's
    b.advance(1)
    assert other_client_locks(b, 0, 1) == [0, 1]
    taken = b.events("broker.lock")[-2:]
    assert [(e["change"], e["previous"]) for e in taken] == [("taken_over", ME)] * 2
    assert all(e["idle_ms"] == b.time.mono_ms - paused_at for e in taken)
    m = c.mark()
    c.advance(0)  # resumed: its overdue timers run (lockAll, the local expiry)
    relay(c, b)
    assert sorted(changes(c, m)) == [(0, "expired"), (0, "refused"), (1, "expired"), (1, "refused")]
    late = {e["late_ms"] for e in c.events("orderly.lock", m) if e["change"] == "expired"}
    assert late == {LOCK_MAX_LIVE_MS + 1 - 30000}  # it ran out 30 s after the last grant, noticed on resume


def test_a_restarted_broker_has_lost_the_locks_the_consumer_still_holds():
    store = FakeStore()
    c, b = running(store)
    b.stop()
    b = broker(time=c.time, store=store)  # the restart: an empty lock table
    assert other_client_locks(b, 0) == [0]  # another client gets the queue at once...
    pq = c.role.process_table[Q0]
    assert pq.locked and c.time.wall_ms - pq.last_lock_ms <= 30000  # ...while this one may still consume it
    m = c.mark()
    c.advance(c.timers["lockAll"].due - c.time.mono_ms)
    relay(c, b)
    assert changes(c, m) == [(0, "refused")]  # the next lockAll: queue 0 is the other's now
    assert [(e["queue_id"], e["change"]) for e in b.events("broker.lock")] == [(0, "locked"), (1, "locked")]
