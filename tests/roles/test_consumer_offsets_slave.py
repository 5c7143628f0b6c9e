"""Consumer offsets when a master is out of the route (the broker side: test_slave_offset_sync).

``RemoteBrokerOffsetStore`` queries (QUERY_CONSUMER_OFFSET) and commits (UPDATE_CONSUMER_OFFSET)
at ``findBrokerAddressInAdmin`` -- the master, else the slave left in the route (cf. docs/rocketmq-model.md §4.6:
the master dead, the route keeps the slave) -- refreshing the route once when the broker has no
address at all, and giving the queue up this rebalance if it still has none.
"""

from __future__ import annotations

from emulator.protocol import RequestCode as RC
from emulator.roles.base import Oneway

from .broker_helpers import broker
from .fakes import Driver, response
from .test_client_consumer import ME, cid_list, make, route, serve_routes


def msgs(queue_id: int, offsets: range) -> list[dict]:
    return [{"msgId": f"x{i}", "topic": "T", "queueId": queue_id, "queueOffset": i, "body": "b",
             "properties": {"UNIQ_KEY": f"u{queue_id}-{i}"}, "reconsumeTimes": 0} for i in offsets]


def commits(d: Driver, since: int = 0) -> list[Oneway]:
    return [a for a in d.oneways(since) if a.frame.code == RC.UPDATE_CONSUMER_OFFSET]


def consume_queue0(d: Driver, start: int, count: int) -> None:
    """Answer the pending pull of queue 0 with ``count`` messages from ``start``: the consumed
    offset is what ``persistOffsets`` commits for it (the other queues commit the offset their
    query returned: readOffset keeps the broker's answer in memory, as RocketMQ's does)."""
    req = [p for p in d.pending_to(code=RC.PULL_MESSAGE) if p.frame.fields["queueId"] == 0][0]
    body = msgs(0, range(start, start + count))
    d.answer(req, response(0, fields={"nextBeginOffset": start + count, "suggestWhichBrokerId": 0}, body=body))


def test_master_gone_offsets_are_queried_and_committed_at_the_slave():
    d = make()
    serve_routes(d, {"T": route("b1", masters=False)})  # the namesrv lists only b1's slave
    cid_list(d, [ME])
    queries = d.pending_to(code=RC.QUERY_CONSUMER_OFFSET)
    assert sorted((q.addr, q.frame.fields["queueId"]) for q in queries) == [("s-b1", i) for i in range(4)]
    for q in queries:
        d.answer(q, response(0, fields={"offset": 5}))
    assert sorted(mq.queue_id for mq, pq in d.role.process_table.items() if pq.ready) == [0, 1, 2, 3]
    pulls = d.pending_to(code=RC.PULL_MESSAGE)
    assert {(p.addr, p.frame.fields["queueOffset"]) for p in pulls} == {("s-b1", 5)}
    req = [p for p in pulls if p.frame.fields["queueId"] == 0][0]
    d.answer(req, response(0, fields={"nextBeginOffset": 8, "suggestWhichBrokerId": 0}, body=msgs(0, range(5, 8))))
    assert d.events("consume")[-1]["msg_ids"] == ["u0-5", "u0-6", "u0-7"]
    d.timer("persistOffsets")
    assert [(o.addr, o.frame.fields["queueId"], o.frame.fields["commitOffset"]) for o in commits(d)
            if o.frame.fields["queueId"] == 0] == [("s-b1", 0, 8)]
    assert {o.addr for o in commits(d)} == {"s-b1"}


def test_with_master_and_slave_the_master_then_the_slave_once_the_master_leaves():
    d = make()
    serve_routes(d, {"T": route("b1")})
    cid_list(d, [ME])
    queries = d.pending_to(code=RC.QUERY_CONSUMER_OFFSET)
    assert {q.addr for q in queries} == {"m-b1"} and len(queries) == 4
    for q in queries:
        d.answer(q, response(0, fields={"offset": 3}))
    assert {p.addr for p in d.pending_to(code=RC.PULL_MESSAGE)} == {"m-b1"}
    consume_queue0(d, 3, 1)
    d.timer("persistOffsets")
    assert sorted((o.addr, o.frame.fields["queueId"], o.frame.fields["commitOffset"]) for o in commits(d)) == [
        ("m-b1", 0, 4), ("m-b1", 1, 3), ("m-b1", 2, 3), ("m-b1", 3, 3)]
    d.timer("pollNameServer")
    serve_routes(d, {"T": route("b1", masters=False)})
    m = d.mark()
    d.timer("persistOffsets")
    assert sorted((o.addr, o.frame.fields["queueId"], o.frame.fields["commitOffset"]) for o in commits(d, m)) == [
        ("s-b1", 0, 4), ("s-b1", 1, 3), ("s-b1", 2, 3), ("s-b1", 3, 3)]


def orphan_route() -> dict:
    """b1's queue data is listed but its BrokerData is not (docs/rocketmq-model.md §1.7): no address for b1."""
    r = route("b1", "b2")
    r["brokerDatas"] = [bd for bd in r["brokerDatas"] if bd["brokerName"] != "b1"]
    return r


def test_no_address_refreshes_the_route_and_looks_once_more():
    d = make()
    serve_routes(d, {"T": orphan_route()})
    cid_list(d, [ME])
    assert {q.addr for q in d.pending_to(code=RC.QUERY_CONSUMER_OFFSET)} == {"m-b2"}
    refresh = d.pending_to(code=RC.GET_ROUTEINFO_BY_TOPIC)
    assert [r.frame.fields["topic"] for r in refresh] == ["T"] * 4  # one per b1 queue, as in RocketMQ
    d.answer(refresh[0], response(0, body=route("b1", "b2")))  # b1 has its addresses again
    b1 = [q for q in d.pending_to(code=RC.QUERY_CONSUMER_OFFSET) if q.addr == "m-b1"]
    assert len(b1) == 1 and b1[0].frame.fields["queueId"] == 0


def test_no_address_after_the_refresh_the_queue_is_not_added():
    d = make()
    serve_routes(d, {"T": orphan_route()})
    cid_list(d, [ME])
    refresh = d.pending_to(code=RC.GET_ROUTEINFO_BY_TOPIC)
    assert len(refresh) == 4 and not d.pending_to(code=RC.PULL_MESSAGE, addr="m-b1")
    for req in refresh:
        d.answer(req, response(0, body=orphan_route()))  # "The broker[b1] not exist": readOffset -2
    assert not any(q.addr == "m-b1" for q in d.pending_to(code=RC.QUERY_CONSUMER_OFFSET))
    assert sorted({mq.broker_name for mq in d.role.process_table}) == ["b2"]


def test_consumer_commit_served_by_a_real_slave():
    """The client's oneway commit to ``s-b1`` lands in a slave broker's table."""
    d = make()
    serve_routes(d, {"T": route("b1", masters=False)})
    cid_list(d, [ME])
    for q in d.pending_to(code=RC.QUERY_CONSUMER_OFFSET):
        d.answer(q, response(0, fields={"offset": 6}))
    consume_queue0(d, 6, 2)
    d.timer("persistOffsets")
    slave = broker(broker_id=1)
    (up,) = [o for o in commits(d) if o.frame.fields["queueId"] == 0]
    assert up.addr == "s-b1"
    slave.serve(up, channel="cons-ch")
    resp = slave.call(RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": "cg-1", "topic": "T", "queueId": 0})
    assert resp is not None and (resp.code, resp.fields) == (0, {"offset": 8})
