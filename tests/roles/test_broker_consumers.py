"""Broker: heartbeats, consumer groups, pulls, long polling, offsets, send-back (docs/rocketmq-model.md §4.2-4.7)."""

from __future__ import annotations

import json

from rmqemu.emulator.protocol import FAQ_SUFFIX, Flag, ResponseCode
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common.base import After, Cancel, CloseChannel, Reply

from .broker_helpers import broker, heartbeat, pull, send
from .fakes import FakeStore

FLAG_COMMIT, FLAG_SUSPEND, FLAG_SUB = 1, 2, 4


def notifies(d, since=0):
    return sorted(a.channel for a in d.actions[since:] if isinstance(a, Reply)
                  and a.frame.code == RC.NOTIFY_CONSUMER_IDS_CHANGED and a.frame.flag == Flag.ONEWAY)


def test_heartbeat_registers_group_creates_retry_topic_and_notifies():
    d = broker()
    m = d.mark()
    resp, acts = heartbeat(d, "c1", "cg", {"T": 1}, "ch1")
    assert resp.code == 0
    assert d.role.topics.get("%RETRY%cg").writeQueueNums == 1
    assert ("%RETRY%cg", "auto") in [(e["topic"], e["how"]) for e in d.events("broker.topic", m)]
    assert notifies(d, m) == ["ch1"]
    n = [a for a in acts if isinstance(a, Reply) and a.frame.code == RC.NOTIFY_CONSUMER_IDS_CHANGED][0]
    assert n.frame.fields == {"consumerGroup": "cg"}
    m = d.mark()
    heartbeat(d, "c1", "cg", {"T": 1}, "ch1")  # nothing changed: no notify
    assert notifies(d, m) == []
    heartbeat(d, "c2", "cg", {"T": 1}, "ch2")
    assert notifies(d, m) == ["ch1", "ch2"]


def test_notify_disabled():
    d = broker(config={"notifyConsumerIdsChangedEnable": False})
    heartbeat(d, "c1", "cg", {"T": 1}, "ch1")
    assert notifies(d) == []


def test_consumer_list_in_channel_order_and_missing_group():
    d = broker()
    heartbeat(d, "zz@1", "cg", {"T": 1}, "ch1")
    heartbeat(d, "aa@2", "cg", {"T": 1}, "ch2")
    resp = d.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"})
    assert resp.json_body() == {"consumerIdList": ["zz@1", "aa@2"]}  # the client sorts, not the broker
    resp = d.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "nobody"})
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "no consumer for this group, nobody")


def test_subscription_overwritten_by_latest_heartbeat():
    d = broker()
    send(d, "A")
    send(d, "B")
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")
    m = d.mark()
    heartbeat(d, "c2", "cg", {"B": 1}, "ch2")  # same group, different topic: A is removed
    assert notifies(d, m) == ["ch1", "ch2"]
    assert list(d.role.consumers.table["cg"].subscriptionTable) == ["B"]
    resp, _ = pull(d, "A")
    assert (resp.code, resp.remark) == (24, "the consumer's subscription not exist" + FAQ_SUFFIX)
    assert pull(d, "B")[0].code == ResponseCode.SUCCESS
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")  # flips back
    assert pull(d, "A")[0].code == ResponseCode.SUCCESS and pull(d, "B")[0].code == 24


def test_sub_version_replaced_only_when_greater_and_not_latest():
    d = broker()
    send(d, "A")
    heartbeat(d, "c1", "cg", {"A": 100}, "ch1")
    heartbeat(d, "c2", "cg", {"A": 50}, "ch2")  # older version: kept at 100
    assert d.role.consumers.table["cg"].subscriptionTable["A"]["subVersion"] == 100
    resp, _ = pull(d, "A", sub_version=200)
    assert (resp.code, resp.remark) == (25, "the consumer's subscription not latest")


def test_pull_check_order_and_remarks():
    d = broker()
    send(d, "A")
    resp, _ = pull(d, "A")
    assert (resp.code, resp.remark) == (24, "the consumer's group info not exist" + FAQ_SUFFIX)
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")
    resp, _ = pull(d, "Nope")
    assert (resp.code, resp.remark) == (17, "topic[Nope] not exist, apply first please! " + FAQ_SUFFIX)
    resp, _ = pull(d, "A", queue_id=4)
    assert (resp.code, resp.remark) == (1, "queueId[4] is illegal, topic:[A] topicConfig.readQueueNums:[4] "
                                           "consumer:[cg-0]")
    d2 = broker(config={"autoCreateSubscriptionGroup": False})
    resp, _ = pull(d2, "TBW102")
    assert (resp.code, resp.remark) == (26, "subscription group [cg] does not exist, " + FAQ_SUFFIX)
    d3 = broker(config={"brokerPermission": 2})
    resp, _ = pull(d3, "TBW102")
    assert (resp.code, resp.remark) == (16, "the broker[127.0.0.1] pulling message is forbidden")


def test_pull_found_and_status_codes():
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")
    for i in range(3):
        send(d, "A", body=f"m{i}", props={"UNIQ_KEY": f"id{i}", "KEYS": "k"})
    resp, _ = pull(d, "A")
    assert resp.code == 0 and resp.remark == "FOUND"
    assert resp.fields == {"nextBeginOffset": 3, "minOffset": 0, "maxOffset": 3, "suggestWhichBrokerId": 0}
    msgs = resp.json_body()
    assert ([m["msgId"] for m in msgs] == ["id0", "id1", "id2"] and msgs[1]["body"] == "m1"
            and msgs[2]["queueOffset"] == 2)
    assert msgs[0]["storeTimestamp"] == int(d.time.wall_ms)
    assert pull(d, "A", offset=3)[0].code == ResponseCode.PULL_NOT_FOUND  # OFFSET_OVERFLOW_ONE
    resp, _ = pull(d, "A", offset=9)
    assert (resp.code, resp.remark, resp.fields["nextBeginOffset"]) == (21, "OFFSET_OVERFLOW_BADLY", 0)
    assert pull(d, "A", queue_id=1)[0].code == ResponseCode.PULL_NOT_FOUND  # empty queue, offset 0
    resp, _ = pull(d, "A", queue_id=1, offset=5)
    assert (resp.code, resp.remark) == (21, "NO_MESSAGE_IN_QUEUE")


def test_tag_filter_and_subscription_flag():
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1", tags="x")
    send(d, "A", props={"UNIQ_KEY": "1", "TAGS": "y"})
    resp, _ = pull(d, "A")
    assert (resp.code, resp.remark, resp.fields["nextBeginOffset"]) == (20, "NO_MATCHED_MESSAGE", 1)
    send(d, "A", props={"UNIQ_KEY": "2", "TAGS": "x"})
    assert [m["msgId"] for m in pull(d, "A")[0].json_body()] == ["2"]
    resp, _ = pull(d, "A", sys_flag=FLAG_SUB, subscription="y || z")  # the request's own subscription
    assert [m["msgId"] for m in resp.json_body()] == ["1"]


def test_slave_pull_serves_data_but_never_moves_offset():
    d = broker(broker_id=1)
    d.role.store.put("TBW102", 0, "b", {"UNIQ_KEY": "1"}, d.time.wall_ms)
    heartbeat(d, "c1", "cg", {"TBW102": 1}, "ch1")
    resp, _ = pull(d, "TBW102")
    assert resp.code == 0 and resp.fields["suggestWhichBrokerId"] == 0
    resp, _ = pull(d, "TBW102", offset=7)
    assert (resp.code, resp.fields["nextBeginOffset"]) == (ResponseCode.PULL_RETRY_IMMEDIATELY, 7)


def test_long_polling_held_then_answered_on_put():
    d = broker()
    send(d, "A")
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")
    resp, acts = pull(d, "A", offset=1, sys_flag=FLAG_SUSPEND | FLAG_COMMIT, commitOffset=1, suspend_ms=150)
    assert resp is None and acts[-1] == After("pull:1", 150)
    assert d.role.state()["held_pulls"] == 1
    assert d.role.offsets.query_offset("cg", "A", 0) == 1  # commit even when held
    d.time.mono_ms += 20
    _, acts = send(d, "A", queue_id=1)  # another queue: still held
    assert d.role.state()["held_pulls"] == 1
    m = d.mark()
    send(d, "A", body="late")
    (answer,) = [r for r in d.replies("cons-ch", m)]
    assert answer.frame.code == 0 and [x["body"] for x in answer.frame.json_body()] == ["late"]
    assert Cancel("pull:1") in d.actions[m:] and "pull:1" not in d.timers
    assert d.role.state()["held_pulls"] == 0


def test_long_polling_timeout_answers_not_found():
    d = broker()
    heartbeat(d, "c1", "cg", {"TBW102": 1}, "ch1")
    resp, _ = pull(d, "TBW102", sys_flag=FLAG_SUSPEND, suspend_ms=150)
    assert resp is None
    m = d.mark()
    d.advance(149)
    assert d.replies("cons-ch", m) == []
    d.advance(1)
    (answer,) = d.replies("cons-ch", m)
    assert (answer.frame.code, answer.frame.remark) == (ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE")


def test_short_polling_when_long_polling_off_and_channel_close_drops_hold():
    d = broker(config={"longPollingEnable": False})
    heartbeat(d, "c1", "cg", {"TBW102": 1}, "ch1")
    _, acts = pull(d, "TBW102", sys_flag=FLAG_SUSPEND, suspend_ms=150)
    assert acts[-1] == After("pull:1", 1000)
    acts = d.channel("closed", "cons-ch")
    assert Cancel("pull:1") in acts and d.role.state()["held_pulls"] == 0


def test_channel_close_removes_consumer_and_notifies_rest():
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")
    heartbeat(d, "c2", "cg", {"A": 1}, "ch2")
    m = d.mark()
    d.channel("closed", "ch1")
    assert notifies(d, m) == ["ch2"]
    assert d.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"}).json_body() == {"consumerIdList": ["c2"]}
    d.channel("idle", "ch2")
    assert "cg" not in d.role.consumers.table
    assert [(e["client_id"], e["change"], e.get("reason"), e["remaining"]) for e in d.events("broker.consumer")] == [
        ("c1", "joined", None, 1), ("c2", "joined", None, 2), ("c1", "left", "closed", 1), ("c2", "left", "idle", 0)]


def test_unregister_client():
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")
    heartbeat(d, "c2", "cg", {"A": 1}, "ch2")
    m = d.mark()
    resp = d.call(RC.UNREGISTER_CLIENT, {"clientID": "c1", "consumerGroup": "cg"}, channel="ch1")
    assert resp.code == 0 and notifies(d, m) == ["ch2"]
    (left,) = d.events("broker.consumer", since=m)
    assert left == {"group": "cg", "client": "c1", "client_id": "c1", "change": "left", "remaining": 1,
                    "real": False, "reason": "unregister"}
    heartbeat(d, "c2", "cg", {"A": 1}, "ch2")  # a heartbeat of a known channel is no new member
    assert len(d.events("broker.consumer")) == 3


def test_client_scan_expires_silent_channels():
    d = broker()
    heartbeat(d, "c1", "cg", {"A": 1}, "ch1")
    d.advance(10000)  # first scan at 10 s
    assert "cg" in d.role.consumers.table
    d.time.bump(120000 + 1)
    acts = d.advance(10000)
    assert CloseChannel("ch1") in acts and "cg" not in d.role.consumers.table
    assert d.events("broker.consumer")[-1]["reason"] == "expired"


def test_offsets_update_query_persist_restore():
    store = FakeStore()
    d = broker(store=store)
    send(d, "A")
    hdr = {"consumerGroup": "cg", "topic": "A", "queueId": 0}
    assert d.call(RC.QUERY_CONSUMER_OFFSET, hdr).fields == {"offset": 0}  # never committed: 0 (min offset 0)
    assert d.call(RC.UPDATE_CONSUMER_OFFSET, {**hdr, "commitOffset": 1}).code == 0
    assert d.call(RC.QUERY_CONSUMER_OFFSET, hdr).fields == {"offset": 1}
    assert "config/consumerOffset.json" not in store.files
    d.advance(10000)  # offset_flush at 10 s
    assert json.loads(store.files["config/consumerOffset.json"]) == {"offsetTable": {"A@cg": {"0": 1}}}
    d2 = broker(store=store)
    assert d2.call(RC.QUERY_CONSUMER_OFFSET, hdr).fields == {"offset": 1}


def test_a_heartbeat_body_of_the_wrong_json_type_is_a_bad_frame_not_a_node_error():
    d = broker()
    resp = d.call(RC.HEART_BEAT, {}, [1, 2, 3])  # a list where HeartbeatData's object belongs
    assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark.startswith("AttributeError")
    assert d.events("wire.bad_frame") and not d.events("node.error")
