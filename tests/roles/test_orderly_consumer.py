"""The orderly push consumer of 4.9.4 over the fake clock (docs/rocketmq-model.md §4.9)."""

from __future__ import annotations

import pytest

from rmqemu.emulator.protocol import RequestCode, oneway
from rmqemu.emulator.roles.client.route_cache import MessageQueue
from rmqemu.emulator.roles.client.workload import ConsumerWorkload
from rmqemu.emulator.roles.common.base import Oneway
from tests.roles.fakes import Driver, response
from tests.roles.test_client_consumer import ME, cid_list, make, route, serve_routes

LOCK, UNLOCK, PULL, QUERY = (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ, RequestCode.PULL_MESSAGE,
                             RequestCode.QUERY_CONSUMER_OFFSET)
Q0 = MessageQueue("T", "b1", 0)
ORDERLY = {"subscribe": ["T"], "allocate": "AVG", "orderly": True}


def grant(d: Driver, keep=lambda m: True) -> list[list[int]]:
    """Answer every pending lock request, granting the queues ``keep`` likes; the queue ids asked."""
    asked = []
    for req in d.pending_to(code=LOCK):
        mqs = req.frame.json_body()["mqSet"]
        asked.append([m["queueId"] for m in mqs])
        d.answer(req, response(0, body={"lockOKMQSet": [m for m in mqs if keep(m)]}))
    return asked


def answer_offsets(d: Driver, value: int = 0) -> int:
    reqs = d.pending_to(code=QUERY)
    for req in reqs:
        d.answer(req, response(0, fields={"offset": value}))
    return len(reqs)


def msg(i: int, queue: int = 0, reconsume: int = 0) -> dict:
    return {"msgId": f"x{i}", "topic": "T", "queueId": queue, "queueOffset": i, "body": "b",
            "properties": {"UNIQ_KEY": f"u{i}", "KEYS": "k"}, "reconsumeTimes": reconsume, "commitLogOffset": i}


def deliver(d: Driver, offsets: list[int], queue: int = 0) -> None:
    """Answer the queue's pull with these messages (a pull that timed out meanwhile is sent again 3 s later)."""
    if not [r for r in d.pending_to(code=PULL) if r.frame.fields["queueId"] == queue]:
        d.advance(3000)
    req = next(r for r in d.pending_to(code=PULL) if r.frame.fields["queueId"] == queue)
    d.answer(req, response(0, fields={"nextBeginOffset": offsets[-1] + 1, "suggestWhichBrokerId": 0},
                           body=[msg(i, queue) for i in offsets]))


def changes(d: Driver, since: int = 0) -> list[tuple[int, str]]:
    return [(e["queue_id"], e["change"]) for e in d.events("orderly.lock", since)]


def consumed(d: Driver, since: int = 0) -> list[tuple[list[str], list[int] | None, list[str] | None]]:
    return [(e["msg_ids"], e.get("offsets"), e.get("reconsume_later")) for e in d.events("consume", since)
            if e["topic"] == "T"]


def next_lock_all(d: Driver) -> None:
    """Advance to the next lockAll (every 20 s from 1 s after start)."""
    d.advance(d.timers["lockAll"].due - d.time.mono_ms)
    assert d.pending_to(code=LOCK)


def orderly(queues: int = 2, config=None, workload=None) -> Driver:
    """Started, with its queues of b1 locked by the first lockAll and pulling (offset 0)."""
    d = make(workload={**ORDERLY, **(workload or {})}, config=config)
    serve_routes(d, {"T": route("b1", queues=queues)})
    cid_list(d, [ME])
    grant(d)
    answer_offsets(d)
    d.advance(1000)  # lockAll
    grant(d)
    d.advance(3000)  # the refused first pulls come back
    answer_offsets(d)  # the first locked pull recomputes its offset
    return d


def test_a_new_queue_is_locked_first_and_waits_for_lockall_before_pulling():
    """4.9.4 (#2621): lock(mq) is granted before the process queue exists, so the queue starts
    unlocked; its pulls are refused every 3 s until lockAll marks it."""
    d = make(workload=ORDERLY)
    serve_routes(d, {"T": route("b1", queues=2)})
    cid_list(d, [ME])
    locks = d.pending_to(code=LOCK)
    assert [(r.addr, r.timeout_ms, [m["queueId"] for m in r.frame.json_body()["mqSet"]]) for r in locks] == [
        ("m-b1", 1000, [0]), ("m-b1", 1000, [1])]  # one lock(mq) per new queue, to the master
    body = locks[0].frame.json_body()
    assert (body["consumerGroup"], body["clientId"]) == ("cg-1", ME)
    assert d.pending_to(code=QUERY) == []  # nothing before the lock
    grant(d)
    assert answer_offsets(d) == 2
    assert d.pending_to(code=PULL) == [] and changes(d) == []  # added, but not locked
    assert "pull|T|b1|0" in d.timers
    d.advance(1000)  # lockAll, 1 s after start
    assert grant(d) == [[0, 1]]
    assert changes(d) == [(0, "locked"), (1, "locked")]
    assert d.pending_to(code=PULL) == []  # the pulls come back on their 3 s timers
    d.advance(3000)
    assert answer_offsets(d) == 2  # the first locked pull: computePullFromWhere again
    assert sorted(r.frame.fields["queueId"] for r in d.pending_to(code=PULL)) == [0, 1]


def test_a_refused_lock_skips_the_queue():
    d = make(workload=ORDERLY)
    serve_routes(d, {"T": route("b1", queues=2)})
    cid_list(d, [ME])
    grant(d, keep=lambda m: m["queueId"] == 1)
    answer_offsets(d)
    assert [mq.queue_id for mq in d.role.process_table if mq.topic == "T"] == [1]


def test_one_at_a_time_in_offset_order_and_committed():
    d = orderly()
    m = d.mark()
    deliver(d, [7, 5, 6])  # out of order in the body: the listener gets offset order
    assert consumed(d, m) == [(["u5"], [5], None), (["u6"], [6], None), (["u7"], [7], None)]
    assert all(e["orderly"] for e in d.events("consume", m))
    assert d.role.offset_store.read_memory(Q0) == 8
    nxt = next(r for r in d.pending_to(code=PULL) if r.frame.fields["queueId"] == 0)
    assert nxt.frame.fields["commitOffset"] == 8


def test_a_failure_suspends_the_queue_and_retries_in_place():
    d = orderly(workload={"fail_rate": 1.0})
    m = d.mark()
    deliver(d, [0, 1])
    assert consumed(d, m) == [([], None, ["u0"])]  # u1 waits behind u0
    d.advance(999)
    assert len(consumed(d, m)) == 1
    d.advance(1)  # suspendCurrentQueueTimeMillis
    assert consumed(d, m)[1] == ([], None, ["u0"])
    assert d.role.process_table[Q0].msgs[0]["reconsumeTimes"] == 2  # counted locally
    d.role.fail_rate = 0.0
    d.advance(1000)
    assert consumed(d, m)[2:] == [(["u0"], [0], None), (["u1"], [1], None)]
    assert d.pending_to(code=RequestCode.CONSUMER_SEND_MSG_BACK) == [] and d.pending_to(
        code=RequestCode.SEND_MESSAGE_V2) == []  # never sent back by default (max = Integer.MAX_VALUE)


def test_past_max_reconsume_times_the_message_goes_to_the_retry_topic():
    d = orderly(config={"maxReconsumeTimes": 1}, workload={"fail_rate": 1.0})
    deliver(d, [0, 1])
    d.advance(1000)  # the second failure: reconsumeTimes 1 >= 1
    [send] = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
    f = send.frame.fields
    assert (send.addr, f["topic"], f["reconsumeTimes"], f["maxReconsumeTimes"]) == ("m-b1", "%RETRY%cg-1", 1, 1)
    assert (f["properties"]["RETRY_TOPIC"], f["properties"]["DELAY"], f["properties"]["ORIGIN_MESSAGE_ID"]) == (
        "T", "4", "u0")
    d.role.fail_rate = 0.0
    m = d.mark()
    d.answer(send, response(0))
    assert consumed(d, m) == [(["u1"], [1], None)]  # u0 left for the retry topic: committed past it
    assert d.role.offset_store.read_memory(Q0) == 2


def test_no_consumption_without_a_live_lock_and_the_expiry_is_an_event():
    d = orderly()
    next_lock_all(d)  # at 21 s: no answer this time (times out)
    m = d.mark()
    d.advance(10001)  # 30 s after the last grant (1 s)
    assert (0, "expired") in changes(d, m)
    deliver(d, [0])  # the pull path checks only `locked`, so messages still arrive
    assert consumed(d, m) == []
    d.advance(100)  # tryLockLaterAndReconsume(100): lock(mq)
    [req] = [r for r in d.pending_to(code=LOCK) if len(r.frame.json_body()["mqSet"]) == 1]
    d.answer(req, response(0, body={"lockOKMQSet": []}))  # refused: consume again in 3 s, locked or not
    d.advance(3000)
    assert consumed(d, m) == []
    d.advance(100)
    grant(d)
    assert (0, "locked") in changes(d, m)
    d.advance(10)
    assert consumed(d, m) == [(["u0"], [0], None)]


def test_lockall_refusal_unmarks_and_stops_pulling():
    d = orderly()
    next_lock_all(d)
    m = d.mark()
    grant(d, keep=lambda q: q["queueId"] == 1)
    assert changes(d, m) == [(0, "refused")]
    deliver(d, [0])  # the pull in flight is answered, then no new pull for queue 0
    assert [r.frame.fields["queueId"] for r in d.pending_to(code=PULL)] == [1]
    assert consumed(d, m) == []


def test_giving_a_queue_up_unlocks_at_once_or_20_s_later_with_messages_cached():
    d = orderly()
    next_lock_all(d)  # unanswered
    d.advance(10001)  # both local locks expired: what is pulled now stays cached
    deliver(d, [0, 1], queue=1)
    m = d.mark()
    d.deliver(oneway(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "cg-1"}), channel="ch", peer="b")
    cid_list(d, ["127.0.0.1@another"])  # we are not listed: both queues go
    dropped = {e["queue_id"]: e for e in d.events("orderly.lock", m) if e["change"] == "dropped"}
    assert (dropped[0]["cached"], dropped[0]["unlock_delay_ms"], dropped[0]["locked"]) == (0, 0, False)
    assert (dropped[1]["cached"], dropped[1]["unlock_delay_ms"]) == (2, 20000)
    unlocks = [a for a in d.oneways(m) if a.frame.code == UNLOCK]
    assert [[q["queueId"] for q in u.frame.json_body()["mqSet"]] for u in unlocks] == [[0]]
    persisted = [a for a in d.oneways(m) if a.frame.code == RequestCode.UPDATE_CONSUMER_OFFSET]
    assert persisted and d.actions.index(persisted[0]) < d.actions.index(unlocks[0])  # persist, then unlock
    d.advance(20000)
    unlocks = [a for a in d.oneways(m) if a.frame.code == UNLOCK]
    assert [[q["queueId"] for q in u.frame.json_body()["mqSet"]] for u in unlocks] == [[0], [1]]


def test_shutdown_unlocks_every_queue_synchronously():
    d = orderly()
    d.stop()
    [req] = d.pending_to(code=UNLOCK)
    assert not isinstance(req, Oneway) and req.timeout_ms == 1000
    assert sorted(q["queueId"] for q in req.frame.json_body()["mqSet"]) == [0, 1]
    m = d.mark()
    d.answer(req, response(0))
    assert changes(d, m) == [(0, "unlocked"), (1, "unlocked")]


def test_no_master_no_lock_the_slave_does_not_help():
    d = orderly()
    d.timer("pollNameServer")
    serve_routes(d, {"T": route("b1", queues=2, masters=False)})  # the master left the route
    m = d.mark()
    d.advance(20000)
    assert d.pending_to(code=LOCK) == []  # lockAll finds no master for b1: nothing asked, nothing changes
    d.advance(10001)
    assert sorted(changes(d, m)) == [(0, "expired"), (1, "expired")]


def test_orderly_and_broadcasting_are_refused():
    with pytest.raises(ValueError, match="needs messageModel CLUSTERING"):
        ConsumerWorkload.from_dict({**ORDERLY, "messageModel": "BROADCASTING"})


def test_a_failed_offset_lookup_at_the_first_locked_pull_pulls_from_minus_one():
    """4.9.4 returns -1 from computePullFromWhere when the broker's offset cannot be fetched, and
    the first locked pull uses it: the broker then moves the queue to its min offset (#1825)."""
    d = make(workload=ORDERLY)
    serve_routes(d, {"T": route("b1", queues=1)})
    cid_list(d, [ME])
    grant(d)
    answer_offsets(d, 40)
    d.advance(1000)
    grant(d)
    d.advance(3000)
    [query] = d.pending_to(code=QUERY)
    d.answer(query, None)  # no answer: readOffset -2
    [pull] = d.pending_to(code=PULL)
    assert pull.frame.fields["queueOffset"] == -1
