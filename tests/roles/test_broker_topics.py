"""Broker: topic table, registration, persistence and admin (docs/rocketmq-model.md §2.1-2.7); the send
path is in test_broker_topics_send.py."""

from __future__ import annotations

import json

import pytest

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode
from rmqemu.emulator.roles.common.base import Every, Oneway, Request

from .broker_helpers import MASTER_ADDR, NS1, NS2, broker, send
from .fakes import FakeStore, response

SYSTEM_ORDER = ["SELF_TEST_TOPIC", "TBW102", "BenchmarkTest", "DefaultCluster", "broker-a",
                "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC",
                "rmq_sys_wheel_timer"]  # 5.x's timer topic, last (timerWheelEnable, docs/rocketmq-model.md §10.4)


def topic_events(d, since=0):
    return [(e["topic"], e["read_queues"], e["write_queues"], e["perm"], e["how"])
            for e in d.events("broker.topic", since)]


def registered_tables(d, since=0):
    out = []
    for a in d.actions[since:]:
        if isinstance(a, (Request, Oneway)) and a.frame.code == RC.REGISTER_BROKER:
            out.append(json.loads(a.frame.body)["topicConfigSerializeWrapper"]["topicConfigTable"])
    return out


def test_system_topics_order_and_perm_with_auto_create():
    d = broker()
    assert topic_events(d) == [
        ("SELF_TEST_TOPIC", 1, 1, 6, "startup"), ("TBW102", 8, 8, 7, "startup"),
        ("BenchmarkTest", 1024, 1024, 6, "startup"), ("DefaultCluster", 16, 16, 7, "startup"),
        ("broker-a", 1, 1, 7, "startup"), ("OFFSET_MOVED_EVENT", 1, 1, 6, "startup"),
        ("SCHEDULE_TOPIC_XXXX", 18, 18, 6, "startup"), ("DefaultCluster_REPLY_TOPIC", 1, 1, 6, "startup"),
        ("rmq_sys_wheel_timer", 1, 1, 6, "startup")]
    assert d.events("broker.topic")[0]["broker"] == "broker-a" and d.events("broker.topic")[0]["broker_id"] == 0


def test_system_topics_without_auto_create_and_flags():
    d = broker(config={"autoCreateTopicEnable": False, "clusterTopicEnable": False, "traceTopicEnable": True,
                       "defaultTopicQueueNums": 4})
    names = [t[0] for t in topic_events(d)]
    assert "TBW102" not in names and names[-3:-1] == ["RMQ_SYS_TRACE_TOPIC", "DefaultCluster_REPLY_TOPIC"]
    assert dict((t[0], t[3]) for t in topic_events(d))["DefaultCluster"] == 1


def test_start_registers_all_namesrvs_in_parallel_then_periodic():
    d = broker()
    reqs = d.pending_to(code=RC.REGISTER_BROKER)
    assert [r.addr for r in reqs] == [NS1, NS2] and all(r.timeout_ms == 6000 for r in reqs)
    f = reqs[0].frame
    assert (f.fields["brokerAddr"] == MASTER_ADDR and f.fields["brokerId"] == 0
            and f.fields["clusterName"] == "DefaultCluster")
    assert f.fields["haServerAddr"] == "127.0.0.1:10912" and f.fields["compressed"] is False
    assert list(registered_tables(d)[0]) == SYSTEM_ORDER
    assert Every("register", 10000, 30000) in d.actions


@pytest.mark.parametrize("period,expected", [(5000, 10000), (30000, 30000), (90000, 60000)])
def test_register_period_formula(period, expected):
    d = broker(config={"registerNameServerPeriod": period})
    assert Every("register", 10000, expected) in d.actions


def test_periodic_register_without_force_asks_data_version_first():
    d = broker(config={"forceRegister": False})
    m = d.mark()
    d.timer("register")
    q = d.pending_to(code=RC.QUERY_DATA_VERSION)
    assert len(q) == 2 and registered_tables(d, m) == []
    d.answer(q[0], response(fields={"changed": False}))
    d.answer(q[1], response(fields={"changed": False}))
    assert registered_tables(d, m) == []
    d.timer("register")
    q = d.pending_to(code=RC.QUERY_DATA_VERSION)
    d.answer(q[0], response(fields={"changed": False}))
    d.answer(q[1], None)  # a failed namesrv means register
    assert len(registered_tables(d, m)) == 2


def test_broker_permission_rewrites_registered_perms_only():
    d = broker(config={"brokerPermission": 4})
    assert {tc["perm"] for tc in registered_tables(d)[0].values()} == {4}
    assert d.role.topics.get("TBW102").perm == 7


def test_restore_from_topics_json_tbw102_survives():
    store = FakeStore()
    d = broker(store=store)
    resp, _ = send(d, "NewTopic")
    assert resp.code == ResponseCode.SUCCESS
    saved = json.loads(store.files["config/topics.json"])
    assert set(saved) == {"topicConfigTable", "dataVersion"} and saved["dataVersion"]["counter"] == 1
    d2 = broker(config={"autoCreateTopicEnable": False}, store=store)
    ev = dict((t[0], t) for t in topic_events(d2))
    assert ev["TBW102"] == ("TBW102", 8, 8, 7, "restore")  # issue #5055
    assert ev["NewTopic"] == ("NewTopic", 4, 4, 6, "restore")
    assert ev["SELF_TEST_TOPIC"][4] == "restore" and "BenchmarkTest" in ev
    assert d2.role.topics.data_version.counter == 1


def test_topics_json_that_does_not_decode_falls_back_to_bak():
    """ConfigManager.load -> loadBak (docs/rocketmq-model.md §2.6): a torn or corrupt topics.json is not an
    empty table; the previous version (.bak, kept by every persist) is restored."""
    store = FakeStore()
    d = broker(store=store)
    assert send(d, "NewTopic")[0].code == ResponseCode.SUCCESS
    store.files["config/topics.json.bak"] = store.files["config/topics.json"]
    store.files["config/topics.json"] = '{"topicConfigTable": {"Half'
    ev = dict((t[0], t) for t in topic_events(broker(store=store)))
    assert ev["NewTopic"] == ("NewTopic", 4, 4, 6, "restore")
    store.files["config/topics.json.bak"] = "not json either"
    assert "NewTopic" not in dict((t[0], t) for t in topic_events(broker(store=store)))


def test_update_and_create_topic_registers_increment():
    d = broker()
    m = d.mark()
    resp, acts = d.send(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "OrderTopic", "readQueueNums": 4, "writeQueueNums": 4,
                                                     "perm": 6, "topicFilterType": "SINGLE_TAG"})
    assert resp.code == 0
    assert topic_events(d, m) == [("OrderTopic", 4, 4, 6, "admin")]
    tables = registered_tables(d, m)
    assert len(tables) == 2 and list(tables[0]) == ["OrderTopic"]
    regs = [a for a in acts if isinstance(a, Request)]
    body = json.loads(regs[0].frame.body)["topicConfigSerializeWrapper"]
    assert body["dataVersion"]["counter"] == 1
    resp = d.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6})
    assert (resp.code, resp.remark) == (1, "The topic[TBW102] is conflict with system topic.")
    resp = d.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "broker-a", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6})
    assert resp.remark == "The topic[broker-a] is conflict with system topic."
    resp = d.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "", "readQueueNums": 1})
    assert resp.remark == "The specified topic is blank."


def test_delete_topic_in_broker_and_get_all_topic_config():
    d = broker()
    send(d, "Gone")
    m = d.mark()
    assert d.call(RC.DELETE_TOPIC_IN_BROKER, {"topic": "Gone"}).code == 0
    assert d.events("broker.topic", m) == [{"broker": "broker-a", "broker_id": 0, "topic": "Gone", "read_queues": 0,
                                            "write_queues": 0, "perm": 0, "how": "admin", "deleted": True}]
    assert d.store.files["store/commitlog/Gone/0.jsonl"] == ""
    body = d.call(RC.GET_ALL_TOPIC_CONFIG).json_body()
    assert "Gone" not in body["topicConfigTable"] and body["dataVersion"]["counter"] == 2


def test_slave_gets_master_from_register_and_syncs_topics():
    master = broker()
    send(master, "Synced")
    slave = broker(broker_id=1)
    assert any(isinstance(a, Every) and a.name == "slave_sync" and a.initial_ms == 3000 for a in slave.actions)
    regs = slave.pending_to(code=RC.REGISTER_BROKER)
    slave.answer(regs[1], response(fields={"masterAddr": MASTER_ADDR, "haServerAddr": "127.0.0.1:10912"}))
    slave.answer(regs[0], response(fields={"masterAddr": None, "haServerAddr": None}))  # not the first
    assert slave.role.master_addr == MASTER_ADDR
    m = slave.mark()
    slave.timer("slave_sync")
    (req,) = slave.pending_to(MASTER_ADDR, RC.GET_ALL_TOPIC_CONFIG)
    slave.answer(req, master.call(RC.GET_ALL_TOPIC_CONFIG))
    assert ("Synced", 4, 4, 6, "sync") in topic_events(slave, m)
    assert slave.role.topics.data_version == master.role.topics.data_version
    assert "Synced" in json.loads(slave.store.files["config/topics.json"])["topicConfigTable"]
    m = slave.mark()
    slave.timer("slave_sync")
    slave.answer(slave.pending_to(MASTER_ADDR, RC.GET_ALL_TOPIC_CONFIG)[0], master.call(RC.GET_ALL_TOPIC_CONFIG))
    assert topic_events(slave, m) == []  # same DataVersion: nothing adopted


def test_stop_unregisters_from_every_namesrv():
    d = broker()
    acts = d.stop()
    regs = [a for a in acts if isinstance(a, Request) and a.frame.code == RC.UNREGISTER_BROKER]
    assert [r.addr for r in regs] == [NS1, NS2] and regs[0].timeout_ms == 3000
    assert regs[0].frame.fields == {"brokerAddr": MASTER_ADDR, "brokerName": "broker-a", "brokerId": 0,
                                    "clusterName": "DefaultCluster"}


def test_unknown_code():
    resp = broker().call(4242)
    assert (resp.code, resp.remark) == (3, " request type 4242 not supported")


def test_message_store_survives_restart():
    store = FakeStore()
    d = broker(store=store)
    send(d, "Durable", body="one")
    send(d, "Durable", body="two")
    d2 = broker(store=store)
    assert d2.role.store.max_offset("Durable", 0) == 2
    resp, _ = send(d2, "Durable", body="three")
    assert resp.fields["queueOffset"] == 2
