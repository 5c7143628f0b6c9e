"""Push consumer role driven with hand-built frames and a fake clock (docs/rocketmq-model.md §4)."""

from rmqemu.emulator.protocol import RequestCode, ResponseCode, oneway
from rmqemu.emulator.roles.client.consumer import Consumer
from rmqemu.emulator.roles.client.subscription import build_subscription_data, java_string_hash
from rmqemu.emulator.roles.common.base import Oneway
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from tests.roles.fakes import Driver, response

NS = ["127.0.0.1:9001"]
ME = "127.0.0.1@cg-1-0"


def route(*brokers, queues=4, masters=True):
    return {
        "orderTopicConf": None,
        "queueDatas": [{"brokerName": b, "readQueueNums": queues, "writeQueueNums": queues, "perm": 6,
                        "topicSysFlag": 0} for b in brokers],
        "brokerDatas": [{"cluster": "C", "brokerName": b,
                         "brokerAddrs": ({"0": f"m-{b}"} if masters else {}) | {"1": f"s-{b}"}} for b in brokers],
        "filterServerTable": {},
    }


def make(workload=None, config=None):
    spec = {"name": "cg-1-0", "role": "consumer", "seed": 3, "namesrv_addrs": NS,
            "namesrv_names": ["namesrv-0"], "group": "cg-1", "config": config or {},
            "workload": workload or {"subscribe": [{"topic": "T", "expression": "*"}], "allocate": "AVG"}}
    d = Driver(Consumer.from_spec(NodeSpec.from_dict(spec), "127.0.0.1:7100", lambda p: None))
    d.start()
    return d


def serve_routes(d, routes):
    """Answer route requests (the start-up chain) until none is pending."""
    while d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        req = d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)[0]
        body = routes.get(req.frame.fields["topic"])
        d.answer(req, response(0, body=body) if body else response(ResponseCode.TOPIC_NOT_EXIST))


def cid_list(d, cids):
    for req in d.pending_to(code=RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        d.answer(req, response(0, body={"consumerIdList": cids}))


def offsets(d, value=0):
    for req in d.pending_to(code=RequestCode.QUERY_CONSUMER_OFFSET):
        d.answer(req, response(0, fields={"offset": value}))


def started(cids=(ME,), routes=None, **kw):
    d = make(**kw)
    serve_routes(d, routes or {"T": route("b1", "b2")})
    cid_list(d, list(cids))
    offsets(d)
    return d


def test_start_heartbeats_with_subscriptions_and_retry_topic():
    d = make()
    serve_routes(d, {"T": route("b1")})
    hb = d.pending_to(code=RequestCode.HEART_BEAT)
    assert sorted(r.addr for r in hb) == ["m-b1", "s-b1"]  # consumers heartbeat every address
    cd = hb[0].frame.json_body()["consumerDataSet"][0]
    assert cd["groupName"] == "cg-1" and cd["consumeType"] == "CONSUME_PASSIVELY"
    assert {s["topic"] for s in cd["subscriptionDataSet"]} == {"T", "%RETRY%cg-1"}
    assert all(s["subVersion"] == int(d.time.wall_ms) for s in cd["subscriptionDataSet"])
    ev = d.events("client.route")[0]
    assert ev["publish_queues"] == ev["subscribe_queues"] == [{"broker": "b1", "queue_id": i} for i in range(4)]


def test_route_event_without_a_master_keeps_the_subscribe_view_only():
    """docs/rocketmq-model.md §3.6: publish info needs a master, subscribe info does not (the slave serves pulls)."""
    d = make()
    serve_routes(d, {"T": route("b1", masters=False)})
    ev = [e for e in d.events("client.route") if e["topic"] == "T"][0]
    assert ev["publish_queues"] == [] and ev["subscribe_queues"] == [{"broker": "b1", "queue_id": i} for i in range(4)]


def test_a_shared_instance_name_gives_a_shared_client_id_and_the_same_queues():
    """clientIP@instanceName (docs/rocketmq-model.md §3.1): two processes configured with one instanceName share a
    cid; the broker lists it twice, each finds itself at index 0 and takes the first half,
    so half of the queues go to both and the other half to none (a known RocketMQ pitfall)."""
    shared = "10.0.0.1@shared"
    d = started(cids=[shared, shared], config={"clientIP": "10.0.0.1", "instanceName": "shared"})
    ev = d.events("rebalance")[-1]
    assert ev["cid"] == shared and ev["cids"] == [shared, shared]
    assert ev["allocated"] == [{"broker": "b1", "queue_id": i} for i in range(4)]  # b2's queues: nobody's
    hb = d.pending_to(code=RequestCode.HEART_BEAT)[0].frame.json_body()
    assert hb["clientID"] == shared
    unit = make(config={"instanceName": "x", "unitName": "u1"})
    assert unit.role.client_id == "127.0.0.1@x@u1"


def test_rebalance_event_and_pulls_for_allocated_queues():
    d = started(cids=["127.0.0.1@cg-1-1", ME])
    ev = d.events("rebalance")[-1]
    assert ev["cids"] == ["127.0.0.1@cg-1-1", ME] and ev["strategy"] == "AVG" and ev["cid"] == ME
    # sorted cids: ME is index 0 -> first 4 of 8 sorted queues
    assert ev["allocated"] == [{"broker": "b1", "queue_id": i} for i in range(4)]
    pulls = d.pending_to(code=RequestCode.PULL_MESSAGE)
    assert sorted((r.addr, r.frame.fields["queueId"]) for r in pulls) == [("m-b1", i) for i in range(4)]
    f = pulls[0].frame.fields
    assert f["suspendTimeoutMillis"] == 15000 and pulls[0].timeout_ms == 30000 and f["sysFlag"] & 2
    assert f["subVersion"] == d.role.subscriptions["T"]["subVersion"]


def test_allocation_change_bumps_subversion_and_heartbeats_once_the_queues_are_added():
    """messageQueueChanged (docs/rocketmq-model.md §4.3) follows a rebalance that really added a queue: after
    its first offset is known, once for the whole rebalance."""
    d = make()
    serve_routes(d, {"T": route("b1")})
    before = d.role.subscriptions["T"]["subVersion"]
    d.time.mono_ms += 4  # time passes, short of the first periodic task (pollNameServer, 10 ms)
    n = len(d.pending_to(code=RequestCode.HEART_BEAT))
    cid_list(d, [ME])
    assert d.role.subscriptions["T"]["subVersion"] == before  # offsets not known yet
    d.time.mono_ms += 4
    offsets(d)
    assert d.role.subscriptions["T"]["subVersion"] == before + 8
    assert len(d.pending_to(code=RequestCode.HEART_BEAT)) == n + 2  # once, to b1's master and slave


def test_a_rebalance_whose_queues_all_fail_to_add_changes_nothing():
    """nextOffset < 0 for every new queue ("add new mq failed"): no subVersion bump, no heartbeat."""
    d = make()
    serve_routes(d, {"T": route("b1")})
    before = d.role.subscriptions["T"]["subVersion"]
    n = len(d.pending_to(code=RequestCode.HEART_BEAT))
    cid_list(d, [ME])
    d.time.mono_ms += 5
    for req in d.pending_to(code=RequestCode.QUERY_CONSUMER_OFFSET):
        d.answer(req, None)  # timeouts: readOffset -2
    assert d.role.subscriptions["T"]["subVersion"] == before
    assert len(d.pending_to(code=RequestCode.HEART_BEAT)) == n
    assert not [mq for mq in d.role.process_table if mq.topic == "T"]


def test_notify_consumer_ids_changed_triggers_rebalance():
    d = started()
    m = d.mark()
    d.deliver(oneway(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "cg-1"}), channel="ch", peer="broker")
    assert [r for r in d.pending_to(code=RequestCode.GET_CONSUMER_LIST_BY_GROUP)]
    cid_list(d, [ME, "127.0.0.1@cg-1-9"])
    ev = d.events("rebalance", since=m)[-1]
    assert ev["allocated"] == [{"broker": "b1", "queue_id": i} for i in range(4)]
    assert sorted(mq.pair() for mq in d.role.process_table if mq.topic == "T") == [["b1", i] for i in range(4)]


def test_not_listed_consumer_gets_nothing():
    d = started(cids=["127.0.0.1@other"])
    ev = [e for e in d.events("rebalance") if e["topic"] == "T"][-1]
    assert ev["allocated"] == [] and not d.pending_to(code=RequestCode.PULL_MESSAGE)


def test_pull_found_gives_consume_event_and_commit_offset():
    d = started()
    req = [r for r in d.pending_to(code=RequestCode.PULL_MESSAGE) if r.frame.fields["queueId"] == 0
           and r.addr == "m-b1"][0]
    msgs = [{"msgId": f"x{i}", "topic": "T", "queueId": 0, "queueOffset": i, "body": "b",
             "properties": {"UNIQ_KEY": f"u{i}"}, "bornTimestamp": 0, "storeTimestamp": 0, "reconsumeTimes": 0}
            for i in range(3)]
    d.answer(req, response(0, fields={"nextBeginOffset": 3, "minOffset": 0, "maxOffset": 3,
                                      "suggestWhichBrokerId": 0}, body=msgs))
    pull = [e for e in d.events("pull") if e["queue_id"] == 0][-1]
    assert (pull["code"], pull["count"], pull["broker"]) == (0, 3, "b1")
    cons = d.events("consume")[-1]
    assert cons["msg_ids"] == ["u0", "u1", "u2"] and cons["queue_id"] == 0 and cons["group"] == "cg-1"
    nxt = [r for r in d.pending_to(code=RequestCode.PULL_MESSAGE) if r.frame.fields["queueId"] == 0
           and r.addr == "m-b1"][0]
    assert nxt.frame.fields["queueOffset"] == 3 and nxt.frame.fields["commitOffset"] == 3
    assert nxt.frame.fields["sysFlag"] & 1
    d.timer("persistOffsets")
    ups = [o for o in d.actions if isinstance(o, Oneway) and o.frame.code == RequestCode.UPDATE_CONSUMER_OFFSET]
    assert any(o.frame.fields["commitOffset"] == 3 and o.addr == "m-b1" for o in ups)


def test_pull_error_waits_exception_delay():
    d = started()
    req = d.pending_to(code=RequestCode.PULL_MESSAGE)[0]
    d.answer(req, response(ResponseCode.SUBSCRIPTION_NOT_LATEST, remark="the consumer's subscription not latest"))
    name = f"pull|T|{req.frame.fields and 'b1'}|{req.frame.fields['queueId']}"
    assert d.timers[name].due == d.time.mono_ms + 3000  # pullTimeDelayMillsWhenException
    assert d.events("pull")[-1]["code"] == 25


def test_pull_from_slave_when_master_missing():
    d = started(routes={"T": route("b1")})
    d.timer("pollNameServer")  # the master died: the namesrv now lists only the slave
    serve_routes(d, {"T": route("b1", masters=False)})
    assert d.role.instance.broker_addr_table["b1"] == {1: "s-b1"}
    req = d.pending_to(code=RequestCode.PULL_MESSAGE)[0]
    d.answer(req, response(ResponseCode.PULL_NOT_FOUND, fields={"nextBeginOffset": 0, "suggestWhichBrokerId": 0}))
    nxt = d.pending_to(code=RequestCode.PULL_MESSAGE)[-1]
    assert nxt.addr == "s-b1" and not (nxt.frame.fields["sysFlag"] & 1)
    d.answer(nxt, response(0, fields={"nextBeginOffset": 0, "suggestWhichBrokerId": 0}, body=[]))
    assert d.events("pull")[-1]["broker_id"] == 1


def test_new_queue_without_master_is_added_through_the_slave():
    """QUERY_CONSUMER_OFFSET (fetchConsumeOffsetFromBroker, 4.9.4): no master, a route refresh,
    then the slave left in the route (more in test_consumer_offsets_slave.py)."""
    d = make()
    serve_routes(d, {"T": route("b1", masters=False)})
    cid_list(d, [ME])
    serve_routes(d, {"T": route("b1", masters=False)})  # the refreshes before the second look
    offsets(d)
    assert {r.addr for r in d.pending_to(code=RequestCode.PULL_MESSAGE)} == {"s-b1"}
    assert len(d.role.process_table) == 4


def test_offset_query_not_found_uses_max_offset():
    d = make()
    serve_routes(d, {"T": route("b1")})
    cid_list(d, [ME])
    for req in d.pending_to(code=RequestCode.QUERY_CONSUMER_OFFSET):
        d.answer(req, response(ResponseCode.QUERY_NOT_FOUND, remark="Not found"))
    maxes = d.pending_to(code=30)
    assert len(maxes) == 4
    d.answer(maxes[0], response(0, fields={"offset": 42}))
    assert d.pending_to(code=RequestCode.PULL_MESSAGE)[0].frame.fields["queueOffset"] == 42


def failing_consumer() -> tuple[Driver, dict]:
    """A consumer whose listener fails everything, handed one message from b1."""
    d = started(workload={"subscribe": ["T"], "allocate": "AVG", "fail_rate": 1.0})
    req = [r for r in d.pending_to(code=RequestCode.PULL_MESSAGE) if r.addr == "m-b1"][0]
    m = {"msgId": "x", "topic": "T", "queueId": req.frame.fields["queueId"], "queueOffset": 0, "body": "b",
         "properties": {"UNIQ_KEY": "u"}, "commitLogOffset": 77, "reconsumeTimes": 0}
    d.answer(req, response(0, fields={"nextBeginOffset": 1, "suggestWhichBrokerId": 0}, body=[m]))
    assert d.events("consume")[-1]["reconsume_later"] == ["u"]
    return d, m


def test_failed_consume_sends_back():
    d, m = failing_consumer()
    back = d.pending_to(code=RequestCode.CONSUMER_SEND_MSG_BACK)[0]
    f = back.frame.fields
    assert (f["offset"], f["group"], f["delayLevel"], f["maxReconsumeTimes"], f["originTopic"]) == (
        77, "cg-1", 0, 16, "T")
    d.answer(back, response(0))
    mq = [mq for mq in d.role.process_table if mq.queue_id == m["queueId"] and mq.broker_name == "b1"][0]
    assert d.role.offset_store.read_memory(mq) == 1


def test_a_failed_send_back_is_consumed_again_5_s_later_counting_one_more_reconsume():
    d, _ = failing_consumer()
    d.answer(d.pending_to(code=RequestCode.CONSUMER_SEND_MSG_BACK)[0], response(1, remark="no"))
    assert [x["reconsumeTimes"] for xs in d.role.puller.reconsume.values() for x in xs] == [1]
    d.advance(4999)
    assert not d.pending_to(code=RequestCode.CONSUMER_SEND_MSG_BACK)
    d.advance(1)
    assert d.events("consume")[-1]["reconsume_later"] == ["u"]  # fail_rate 1: fails again, sent back again
    assert len(d.pending_to(code=RequestCode.CONSUMER_SEND_MSG_BACK)) == 1


def test_broadcasting_takes_all_queues_without_cid_list():
    d = make(workload={"subscribe": ["T"], "allocate": "AVG", "messageModel": "BROADCASTING"})
    serve_routes(d, {"T": route("b1", "b2")})
    assert not d.pending_to(code=RequestCode.GET_CONSUMER_LIST_BY_GROUP)
    assert len(d.events("rebalance")[-1]["allocated"]) == 8
    assert "%RETRY%cg-1" not in d.role.subscriptions


def test_subscription_data_tags():
    s = build_subscription_data("T", "TagA || TagB", 5.0)
    assert s["tagsSet"] == ["TagA", "TagB"] and s["subVersion"] == 5
    assert s["codeSet"] == [java_string_hash("TagA"), java_string_hash("TagB")]
    assert java_string_hash("hello") == 99162322 and java_string_hash("polygenelubricants") == -2147483648


def test_stop_persists_unregisters_and_ignores_late_pull_answers():
    """shutdown: offsets persisted, UNREGISTER_CLIENT sent, queues dropped; a held pull answered
    after the unregister (SUBSCRIPTION_NOT_EXIST, the group is gone) is not processed."""
    d = started()
    req = d.pending_to(code=RequestCode.PULL_MESSAGE)[0]
    mark = d.mark()
    d.stop()
    assert d.pending_to(code=RequestCode.UNREGISTER_CLIENT)
    assert all(pq.dropped for pq in d.role.process_table.values())
    d.answer(req, response(ResponseCode.SUBSCRIPTION_NOT_EXIST, remark="the consumer's group info not exist"))
    assert d.events("pull", since=mark) == [] and not d.timers.get(f"pull|T|b1|{req.frame.fields['queueId']}")
