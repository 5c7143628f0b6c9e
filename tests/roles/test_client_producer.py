"""Producer role driven with hand-built frames and a fake clock (docs/rocketmq-model.md §1.9, §3.2-3.6)."""

import pytest

from rmqemu.emulator.protocol import FAQ_SUFFIX, RequestCode, ResponseCode
from rmqemu.emulator.roles.client.producer import Producer
from rmqemu.emulator.roles.client.workload import OutgoingMessage
from rmqemu.emulator.roles.common.base import Oneway
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from tests.roles.fakes import Driver, response

NS = ["127.0.0.1:9001", "127.0.0.1:9002"]
NAMES = ["namesrv-0", "namesrv-1"]


def route(*brokers, queues=4, perm=6, masters=True):
    return {
        "orderTopicConf": None,
        "queueDatas": [{"brokerName": b, "readQueueNums": queues, "writeQueueNums": queues, "perm": perm,
                        "topicSysFlag": 0} for b in brokers],
        "brokerDatas": [{"cluster": "C", "brokerName": b,
                         "brokerAddrs": ({"0": f"addr-{b}"} if masters else {}) | {"1": f"addr-{b}-s"}}
                        for b in brokers],
        "filterServerTable": {},
    }


def make(config=None, workload=None, namesrvs=NS, seed=7, scale=1.0):
    spec = {"name": "pg-1-0", "role": "producer", "seed": seed, "namesrv_addrs": namesrvs,
            "namesrv_names": NAMES[: len(namesrvs)], "group": "pg-1", "config": config or {}}
    if workload:
        spec["workload"] = workload
    d = Driver(Producer.from_spec(NodeSpec.from_dict(spec), "127.0.0.1:7000", lambda p: None), scale=scale)
    d.start()
    return d


def msg(topic="T", i=1):
    return OutgoingMessage(topic, b"hello", {"UNIQ_KEY": f"m{i}"})


def answer_route(d, body=None, code=0):
    req = d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)[0]
    return req, d.answer(req, response(code, body=body))


def send(d, m, mode="sync"):
    return d.run(lambda now: d.role.send(m, mode, now))


def test_start_polls_tbw102_from_one_namesrv():
    d = make()
    d.advance(10)  # initial 10 ms
    reqs = d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert [r.frame.fields["topic"] for r in reqs] == ["TBW102"]
    assert reqs[0].addr in NS


def test_topic_route_then_send_ok_event():
    d = make()
    send(d, msg())
    req, _ = answer_route(d, route("b1", "b2"))
    assert req.frame.fields["topic"] == "T"
    ev = d.events("client.route")[-1]
    assert ev["topic"] == "T" and ev["source"] in NAMES and ev["changed"] is True
    assert len(ev["publish_queues"]) == 8
    s = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    f = s.frame.fields
    assert (f["defaultTopic"], f["defaultTopicQueueNums"], f["producerGroup"]) == ("TBW102", 4, "pg-1")
    assert f["properties"]["UNIQ_KEY"] == "m1" and s.addr.startswith("addr-b")
    assert (s.timeout_ms, s.min_timeout_wall_ms) == (3000, 200)  # sendMsgTimeout, minSendTimeoutWallMs
    d.time.mono_ms += 2
    d.answer(s, response(0, fields={"msgId": "m1", "queueId": f["queueId"], "queueOffset": 0}))
    ev = d.events("send")[-1]
    assert (ev["outcome"], ev["attempt"], ev["code"], ev["msg_id"], ev["broker_id"]) == ("ok", 1, 0, "m1", 0)
    assert ev["latency_ms"] == 2 and ev["queue_id"] == f["queueId"]
    assert d.role.state()["ok"] == 1 and not d.role.sync_in_flight
    assert "delay_level" not in ev


def test_a_delayed_messages_send_carries_its_level_on_the_wire_and_in_the_event():
    d = make(workload={"topics": ["T"], "rate": 1, "delay_level": [3]})
    d.advance(1000)  # the first workload tick
    for req in d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        d.answer(req, response(0, body=route("b1")))
    s = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0]
    assert s.frame.fields["properties"]["DELAY"] == "3"
    d.answer(s, response(0, fields={"msgId": "x", "queueId": 0, "queueOffset": 0}))
    assert d.events("send")[-1]["delay_level"] == 3


def test_falls_back_to_tbw102_route_with_min_queues():
    d = make()
    send(d, msg())
    answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)
    req, _ = answer_route(d, route("b1", "b2", queues=8, perm=7))
    assert req.frame.fields["topic"] == "TBW102"
    ev = d.events("client.route")[-1]
    assert ev["topic"] == "T" and ev["source"] == "TBW102"
    got = sorted((q["broker"], q["queue_id"]) for q in ev["publish_queues"])
    assert got == [(b, i) for b in ("b1", "b2") for i in range(4)]
    assert d.pending_to(code=RequestCode.SEND_MESSAGE_V2)


def test_topic_not_exist_keeps_old_route():
    d = make()
    send(d, msg())
    answer_route(d, route("b1", "b2"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    n_route_events = len(d.events("client.route"))
    d.timer("pollNameServer")
    while d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC):
        answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)
    assert len(d.events("client.route")) == n_route_events
    assert len(d.role.publish_table["T"].message_queues) == 8


def test_no_route_info_event_and_error_text():
    d = make()
    send(d, msg("Nowhere"))
    answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)
    answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)  # createTopicKey route missing as well
    ev = d.events("send")[-1]
    assert ev["outcome"] == "no_route" and ev["broker"] is None and ev["queue_id"] is None
    assert ev["latency_ms"] is None  # never on the wire: kept out of the latency percentiles
    assert ev["code"] == 10005 and ev["error"] == "No route info of this topic: Nowhere" + FAQ_SUFFIX
    assert d.events("send.fail")[-1]["code"] == 10005


def test_old_client_create_topic_key_mismatch_gives_no_route():
    d = make(config={"createTopicKey": "AUTO_CREATE_TOPIC_KEY"})
    send(d, msg("NewTopic"))
    answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)
    req, _ = answer_route(d, code=ResponseCode.TOPIC_NOT_EXIST)
    assert req.frame.fields["topic"] == "AUTO_CREATE_TOPIC_KEY"
    assert d.events("send")[-1]["outcome"] == "no_route"


def test_no_name_server():
    d = make(namesrvs=[])
    send(d, msg())
    ev = d.events("send.fail")[-1]
    assert ev["code"] == 10004 and ev["error"] == "No name server address, please set it." + FAQ_SUFFIX


def test_validation_failure_is_send_fail_without_attempt():
    d = make()
    send(d, OutgoingMessage("T", b"", {"UNIQ_KEY": "m9"}))
    assert d.events("send") == [] and d.events("send.fail")[-1]["error"] == "the message body length is zero"
    assert not d.role.sync_in_flight


def test_namesrv_sticky_then_failover_on_disconnect():
    d = make()
    chosen = set()
    for _ in range(3):
        d.timer("pollNameServer")
        req, _ = answer_route(d, route("b1"))
        chosen.add(req.addr)
    assert len(chosen) == 1
    first = chosen.pop()
    d.channel("disconnected", addr=first)
    d.timer("pollNameServer")
    req, _ = answer_route(d, route("b1"))
    assert req.addr != first
    d.channel("connected", addr=first)
    d.timer("pollNameServer")
    assert d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)[0].addr == req.addr  # still sticky


def test_namesrv_failover_on_timeout_moves_next_topic():
    d = make()
    send(d, msg())
    answer_route(d, route("b1"))
    d.answer(d.pending_to(code=RequestCode.SEND_MESSAGE_V2)[0], response(0))
    d.timer("pollNameServer")  # polls TBW102 then T, one after the other
    r1 = d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert len(r1) == 1
    d.answer(r1[0], None)
    r2 = d.pending_to(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert len(r2) == 1 and r2[0].addr != r1[0].addr


def test_sync_in_flight_skips_ticks():
    d = make(workload={"topics": ["T"], "rate": 100, "size": 16, "mode": "sync"}, scale=0.01)
    assert d.timers["workload"].period == 2.0  # one message per 10 ms = 0.1 wall ms: ticks on the 2 wall ms floor
    d.advance(1000)
    assert len([r for r in d.pending if r.frame.code == RequestCode.GET_ROUTEINFO_BY_TOPIC]) >= 1
    assert d.role.state()["skipped_ticks"] > 0
    assert d.role.counts["sent"] == 1


def test_oneway_single_attempt():
    d = make()
    send(d, msg(), mode="oneway")
    answer_route(d, route("b1"))
    ow = [a for a in d.actions if isinstance(a, Oneway)]
    assert len(ow) == 1 and ow[0].frame.is_oneway
    assert d.events("send")[-1]["outcome"] == "oneway" and d.events("send")[-1]["latency_ms"] is None


def test_batch_uses_send_batch_message():
    d = make()
    send(d, [msg(i=1), msg(i=2)])
    answer_route(d, route("b1"))
    req = d.pending_to(code=RequestCode.SEND_BATCH_MESSAGE)[0]
    assert [m["properties"]["UNIQ_KEY"] for m in req.frame.json_body()] == ["m1", "m2"]
    d.answer(req, response(0))
    assert d.events("send")[-1]["msg_ids"] == ["m1", "m2"]


def test_heartbeat_to_masters_and_clean_offline():
    d = make()
    send(d, msg())
    answer_route(d, route("b1", "b2"))
    d.timer("heartbeat")
    hb = d.pending_to(code=RequestCode.HEART_BEAT)
    assert sorted(r.addr for r in hb) == ["addr-b1", "addr-b2"]
    body = hb[0].frame.json_body()
    assert body["clientID"] == "127.0.0.1@pg-1-0"
    assert {"groupName": "pg-1"} in body["producerDataSet"] and body["consumerDataSet"] == []
    d.role.instance.topic_route_table["T"]["brokerDatas"] = d.role.instance.topic_route_table["T"]["brokerDatas"][:1]
    d.timer("heartbeat")
    assert "b2" not in d.role.instance.broker_addr_table


@pytest.mark.parametrize("scale,config,timeout_ms", [
    (1.0, {}, 3000),  # sendMsgTimeout
    (0.1, {}, 3000),  # 300 wall ms: above the 200 wall ms floor
    (0.01, {}, 20000),  # 30 wall ms, raised to the floor: 200 wall ms = 20 cluster s
    (0.01, {"minSendTimeoutWallMs": 0}, 3000),
    (0.01, {"minSendTimeoutWallMs": 0, "sendMsgTimeout": 5000}, 5000),
])
def test_send_timeout_is_send_msg_timeout_with_a_wall_floor(scale, config, timeout_ms):
    """The role asks for sendMsgTimeout (cluster ms) and minSendTimeoutWallMs; the runtime waits
    max(sendMsgTimeout x scale, minSendTimeoutWallMs) wall ms (README "Time")."""
    d = make(config=config, scale=scale)
    send(d, msg())
    answer_route(d, route("b1"))
    (first,) = d.pending_to(code=RequestCode.SEND_MESSAGE_V2)
    d.advance(timeout_ms - 10)
    assert d.pending_to(code=RequestCode.SEND_MESSAGE_V2) == [first] and not d.events("send")
    d.advance(20)
    assert d.events("send")[0]["outcome"] == "timeout"
