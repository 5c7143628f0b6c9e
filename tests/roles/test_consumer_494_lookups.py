"""4.9.4's consumer lookups and rebalance schedule (docs/rocketmq-model.md §4.3, §4.6): after a
failed broker lookup, rebalance and pull refresh the route, look again and carry on in the same
call; the rebalance waits 20 s after each run, a woken one included."""

from __future__ import annotations

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import oneway
from rmqemu.emulator.roles.client.route_cache import MessageQueue

from .fakes import response
from .test_client_consumer import ME, route, started

NOTIFY = oneway(RC.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "cg-1"})


def test_find_consumer_id_list_refreshes_looks_again_and_asks():
    """MQClientInstance.findConsumerIdList: no broker address for the topic ->
    updateTopicRouteInfoFromNameServer(topic), findBrokerAddrByTopic again, and
    GET_CONSUMER_LIST_BY_GROUP in the same call."""
    d = started()
    del d.role.instance.topic_route_table["T"]  # the subscribe queues stay: findBrokerAddrByTopic is null
    m = d.mark()
    d.timer("rebalance")
    (refresh,) = [r for r in d.pending_to(code=RC.GET_ROUTEINFO_BY_TOPIC) if r.frame.fields["topic"] == "T"]
    assert not [r for r in d.pending_to(code=RC.GET_CONSUMER_LIST_BY_GROUP)]
    d.answer(refresh, response(0, body=route("b1", "b2")))
    asks = d.pending_to(code=RC.GET_CONSUMER_LIST_BY_GROUP)
    assert asks and asks[0].addr in {"m-b1", "m-b2"}
    d.answer(asks[0], response(0, body={"consumerIdList": [ME]}))
    assert [e for e in d.events("rebalance", since=m) if e["topic"] == "T"]


def test_find_consumer_id_list_still_nothing_after_the_refresh_does_nothing():
    d = started()
    del d.role.instance.topic_route_table["T"]
    d.timer("rebalance")
    (refresh,) = [r for r in d.pending_to(code=RC.GET_ROUTEINFO_BY_TOPIC) if r.frame.fields["topic"] == "T"]
    d.answer(refresh, None)  # the refresh failed: cidAll null, nothing done
    assert not d.pending_to(code=RC.GET_CONSUMER_LIST_BY_GROUP)


def pull_without_a_route():
    """A started consumer that has forgotten T's route and b1's address, asked to pull T/b1/0;
    the driver and the action mark before the pull."""
    d = started()
    inst = d.role.instance
    del inst.topic_route_table["T"], inst.broker_addr_table["b1"]
    m = d.mark()
    d.run(lambda now: d.role.puller.pull(MessageQueue("T", "b1", 0), now))
    return d, m


def test_pull_kernel_impl_refreshes_looks_again_and_pulls():
    """PullAPIWrapper.pullKernelImpl: findBrokerAddressInSubscribe null ->
    updateTopicRouteInfoFromNameServer(topic), look again, and pull in the same call (before:
    a "not exist" pull event and a retry 3 s later)."""
    d, m = pull_without_a_route()
    assert not [p for p in d.pending_to(code=RC.PULL_MESSAGE) if p.addr == "m-b1" and d.actions.index(p) >= m]
    (refresh,) = [r for r in d.pending_to(code=RC.GET_ROUTEINFO_BY_TOPIC) if r.frame.fields["topic"] == "T"]
    d.answer(refresh, response(0, body=route("b1", "b2")))
    pulls = [a for a in d.actions[m:] if getattr(a, "frame", None) is not None and a.frame.code == RC.PULL_MESSAGE]
    assert [(p.addr, p.frame.fields["queueId"]) for p in pulls] == [("m-b1", 0)]
    assert not [e for e in d.events("pull", since=m) if e.get("error")]


def test_pull_kernel_impl_no_address_after_the_refresh_is_broker_not_exist():
    d, m = pull_without_a_route()
    (refresh,) = [r for r in d.pending_to(code=RC.GET_ROUTEINFO_BY_TOPIC) if r.frame.fields["topic"] == "T"]
    d.answer(refresh, None)
    (ev,) = d.events("pull", since=m)
    assert ev["error"] == "The broker[b1] not exist" and "pull|T|b1|0" in d.timers


def test_rebalance_service_waits_20s_after_each_run_a_woken_one_included():
    """RebalanceService.run: waitForRunning(waitInterval) then doRebalance, in a loop; wakeup()
    (NOTIFY_CONSUMER_IDS_CHANGED) ends the wait early, and the next wait is 20 s from that run."""
    d = started()
    runs = d.role.rebalancer.runs
    d.advance(15_000)
    d.deliver(NOTIFY, channel="ch", peer="broker")
    assert d.role.rebalancer.runs == runs + 1
    d.advance(19_000)  # 34 s after start: a fixed-rate timer would have run at 20 s
    assert d.role.rebalancer.runs == runs + 1
    d.advance(1_500)
    assert d.role.rebalancer.runs == runs + 2
    d.advance(20_000)
    assert d.role.rebalancer.runs == runs + 3
