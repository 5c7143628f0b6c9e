"""Consumer offsets when a master is out of the route (the broker side: test_slave_offset_sync).

4.9.4's ``RemoteBrokerOffsetStore.fetchConsumeOffsetFromBroker`` (QUERY_CONSUMER_OFFSET) and
``updateConsumeOffsetToBroker`` (UPDATE_CONSUMER_OFFSET) look for the master only
(``findBrokerAddressInSubscribe(brokerName, MASTER_ID, true)``); without one they call
``updateTopicRouteInfoFromNameServer(topic)`` and look again taking any address
(``findBrokerAddressInSubscribe(brokerName, MASTER_ID, false)``): the slave left in the route
(docs/rocketmq-model.md §4.8), or nothing, when the query gives the queue up this rebalance.
The refresh is a request here, so the second look happens when its answer comes.
"""

from __future__ import annotations

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common.base import Oneway, Request

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


def route_refreshes(d: Driver, since: int = 0) -> list[str]:
    return [a.frame.fields["topic"] for a in d.actions[since:]
            if isinstance(a, Request) and a.frame.code == RC.GET_ROUTEINFO_BY_TOPIC]



def masterless_consumer(offset: int):
    """A consumer owning b1's four queues while the namesrv lists only b1's slave: the route
    served, the consumer list answered, the refreshes served and every offset query at ``offset``."""
    d = make()
    serve_routes(d, {"T": route("b1", masters=False)})
    cid_list(d, [ME])
    serve_routes(d, {"T": route("b1", masters=False)})
    for q in d.pending_to(code=RC.QUERY_CONSUMER_OFFSET):
        d.answer(q, response(0, fields={"offset": offset}))
    return d

def test_master_gone_fetch_consume_offset_from_broker_refreshes_then_queries_the_slave():
    """RemoteBrokerOffsetStore.fetchConsumeOffsetFromBroker (4.9.4): no master, so one route
    refresh per queue, then the query goes to the slave (the second look takes any address)."""
    d = make()
    serve_routes(d, {"T": route("b1", masters=False)})  # the namesrv lists only b1's slave
    m = d.mark()
    cid_list(d, [ME])
    assert not d.pending_to(code=RC.QUERY_CONSUMER_OFFSET)
    assert route_refreshes(d, m) == ["T"] * 4
    serve_routes(d, {"T": route("b1", masters=False)})
    queries = d.pending_to(code=RC.QUERY_CONSUMER_OFFSET)
    assert sorted((q.addr, q.frame.fields["queueId"]) for q in queries) == [("s-b1", i) for i in range(4)]
    for q in queries:
        d.answer(q, response(0, fields={"offset": 5}))
    assert sorted(mq.queue_id for mq, pq in d.role.process_table.items() if pq.ready) == [0, 1, 2, 3]
    pulls = d.pending_to(code=RC.PULL_MESSAGE)
    assert {(p.addr, p.frame.fields["queueOffset"]) for p in pulls} == {("s-b1", 5)}


def test_master_gone_update_consume_offset_to_broker_refreshes_every_persist():
    """RemoteBrokerOffsetStore.updateConsumeOffsetToBroker (4.9.4): four owned queues of a broker
    without master make four route requests each persistOffsets round, then commit to the slave."""
    d = masterless_consumer(offset=5)
    consume_queue0(d, 5, 3)
    assert d.events("consume")[-1]["msg_ids"] == ["u0-5", "u0-6", "u0-7"]
    for _ in range(2):
        m = d.mark()
        d.timer("persistOffsets")
        assert route_refreshes(d, m) == ["T"] * 4 and not commits(d, m)
        serve_routes(d, {"T": route("b1", masters=False)})
        assert sorted((o.addr, o.frame.fields["queueId"], o.frame.fields["commitOffset"]) for o in commits(d, m)) == [
            ("s-b1", 0, 8), ("s-b1", 1, 5), ("s-b1", 2, 5), ("s-b1", 3, 5)]


def test_with_master_and_slave_the_master_then_the_slave_once_the_master_leaves():
    d = make()
    serve_routes(d, {"T": route("b1")})
    m = d.mark()
    cid_list(d, [ME])
    queries = d.pending_to(code=RC.QUERY_CONSUMER_OFFSET)
    assert {q.addr for q in queries} == {"m-b1"} and len(queries) == 4 and not route_refreshes(d, m)
    for q in queries:
        d.answer(q, response(0, fields={"offset": 3}))
    assert {p.addr for p in d.pending_to(code=RC.PULL_MESSAGE)} == {"m-b1"}
    consume_queue0(d, 3, 1)
    m = d.mark()
    d.timer("persistOffsets")
    assert sorted((o.addr, o.frame.fields["queueId"], o.frame.fields["commitOffset"]) for o in commits(d, m)) == [
        ("m-b1", 0, 4), ("m-b1", 1, 3), ("m-b1", 2, 3), ("m-b1", 3, 3)]
    assert not route_refreshes(d, m)
    d.timer("pollNameServer")
    serve_routes(d, {"T": route("b1", masters=False)})
    m = d.mark()
    d.timer("persistOffsets")
    serve_routes(d, {"T": route("b1", masters=False)})
    assert sorted((o.addr, o.frame.fields["queueId"], o.frame.fields["commitOffset"]) for o in commits(d, m)) == [
        ("s-b1", 0, 4), ("s-b1", 1, 3), ("s-b1", 2, 3), ("s-b1", 3, 3)]


def test_a_refresh_that_shows_the_master_back_commits_to_the_master():
    """The second look of updateConsumeOffsetToBroker sees the refreshed route: the master, if
    the namesrv lists it again (the commit waits for the refresh's answer)."""
    d = masterless_consumer(offset=2)
    m = d.mark()
    d.timer("persistOffsets")
    serve_routes(d, {"T": route("b1")})  # the master is back
    assert {o.addr for o in commits(d, m)} == {"m-b1"} and len(commits(d, m)) == 4


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
    d = masterless_consumer(offset=6)
    consume_queue0(d, 6, 2)
    d.timer("persistOffsets")
    serve_routes(d, {"T": route("b1", masters=False)})
    slave = broker(broker_id=1)
    (up,) = [o for o in commits(d) if o.frame.fields["queueId"] == 0]
    assert up.addr == "s-b1"
    slave.serve(up, channel="cons-ch")
    resp = slave.call(RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": "cg-1", "topic": "T", "queueId": 0})
    assert resp is not None and (resp.code, resp.fields) == (0, {"offset": 8})
