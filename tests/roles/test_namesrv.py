"""NameServer: RouteInfoManager semantics of docs/rocketmq-model.md §1 and the ns.* events of docs/design.md §6."""

from __future__ import annotations

import json

import pytest

from rmqemu.emulator.protocol import FAQ_SUFFIX, ResponseCode
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.namesrv.namesrv import NameServer, crc32

from .fakes import Driver

A0, A1, B0 = "127.0.0.1:10911", "127.0.0.1:10921", "127.0.0.1:10931"


def topic(name: str, queues: int = 4, perm: int = 6) -> dict:
    return {"topicName": name, "readQueueNums": queues, "writeQueueNums": queues, "perm": perm,
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}


def register(d: Driver, addr: str, name: str, bid: int, topics: list[dict], counter: int = 1,
             ts: int = 100, channel: str | None = None, cluster: str = "DefaultCluster", ha: str | None = None,
             filters: list | None = None):
    body = {"topicConfigSerializeWrapper": {"topicConfigTable": {t["topicName"]: t for t in topics},
                                            "dataVersion": {"timestamp": ts, "counter": counter}}}
    if filters is not None:
        body["filterServerList"] = filters
    fields = {"brokerAddr": addr, "brokerName": name, "brokerId": bid, "clusterName": cluster,
              "haServerAddr": ha or addr.replace("109", "209"), "compressed": False, "bodyCrc32": 0}
    return d.send(RC.REGISTER_BROKER, fields, body, channel=channel or f"ch-{addr}", peer=name)


def route(d: Driver, t: str):
    return d.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, channel="client")


@pytest.fixture
def d() -> Driver:
    drv = Driver(NameServer("namesrv-0", "127.0.0.1:9876"))
    drv.start()
    return drv


def test_from_spec():
    ns = NameServer.from_spec(NodeSpec(name="namesrv-1", role="namesrv", scale=0.5, seed=1), "127.0.0.1:1",
                              lambda p: None)
    assert (ns.name, ns.addr) == ("namesrv-1", "127.0.0.1:1") and not hasattr(ns, "scale")


def test_first_register_builds_tables_and_events(d):
    m = d.mark()
    resp, _ = register(d, A0, "broker-a", 0, [topic("T")])
    assert resp.code == ResponseCode.SUCCESS
    assert resp.fields == {"masterAddr": None, "haServerAddr": None}
    st = d.role.state()
    assert st["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    assert st["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {"0": A0}
    assert st["topicQueueTable"]["T"]["broker-a"]["writeQueueNums"] == 4
    assert st["brokerLiveTable"][A0]["lastUpdateTimestamp"] == d.time.wall_ms
    assert d.events(since=m) == [
        {"broker_addr": A0, "broker": "broker-a", "broker_id": 0, "change": "register"},
        {"topic": "T", "queue_datas": [{"broker": "broker-a", "read": 4, "write": 4, "perm": 6}],
         "masters": ["broker-a"]},
    ]
    body = route(d, "T").json_body()
    assert body == {"orderTopicConf": None, "filterServerTable": {},
                    "queueDatas": [{"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
                                    "topicSysFlag": 0}],
                    "brokerDatas": [{"cluster": "DefaultCluster", "brokerName": "broker-a", "brokerAddrs": {"0": A0}}]}


def test_reregister_same_version_keeps_queue_data_new_version_updates(d):
    register(d, A0, "broker-a", 0, [topic("T", 4)], counter=1)
    m = d.mark()
    register(d, A0, "broker-a", 0, [topic("T", 8)], counter=1)  # same dataVersion: ignored
    assert d.role.state()["topicQueueTable"]["T"]["broker-a"]["writeQueueNums"] == 4
    assert d.events(since=m) == []  # re-register of a live address is not an event
    register(d, A0, "broker-a", 0, [topic("T", 8)], counter=2)
    assert d.role.state()["topicQueueTable"]["T"]["broker-a"]["writeQueueNums"] == 8
    assert d.events("ns.route", since=m) == [
        {"topic": "T", "queue_datas": [{"broker": "broker-a", "read": 8, "write": 8, "perm": 6}],
         "masters": ["broker-a"]}]


def test_topics_never_removed_by_register(d):
    register(d, A0, "broker-a", 0, [topic("T"), topic("U")], counter=1)
    register(d, A0, "broker-a", 0, [topic("T")], counter=2)
    assert set(d.role.state()["topicQueueTable"]) == {"T", "U"}  # issue #288


def test_slave_register_never_changes_queue_data_and_gets_master(d):
    register(d, A0, "broker-a", 0, [topic("T", 4)], ha="127.0.0.1:10912")
    resp, _ = register(d, A1, "broker-a", 1, [topic("T", 8), topic("S")], counter=9)
    assert resp.fields == {"masterAddr": A0, "haServerAddr": "127.0.0.1:10912"}
    st = d.role.state()
    assert set(st["topicQueueTable"]) == {"T"} and st["topicQueueTable"]["T"]["broker-a"]["writeQueueNums"] == 4
    assert st["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {"0": A0, "1": A1}


def test_slave_first_gets_no_master_and_adds_no_queue_data(d):
    resp, _ = register(d, A1, "broker-a", 1, [topic("T")])
    assert resp.fields == {"masterAddr": None, "haServerAddr": None}
    assert d.role.state()["topicQueueTable"] == {}
    assert route(d, "T").code == ResponseCode.TOPIC_NOT_EXIST


def test_master_without_live_entry_not_returned_to_slave(d):
    register(d, A0, "broker-a", 0, [topic("T")])
    register(d, A1, "broker-a", 1, [])
    d.role.rim.brokerLiveTable.pop(A0)  # master stays in brokerAddrs but not live
    resp, _ = register(d, A1, "broker-a", 1, [])
    assert resp.fields == {"masterAddr": None, "haServerAddr": None}


def test_address_dedup_slave_to_master_switch(d):
    register(d, A0, "broker-a", 0, [topic("T")])
    register(d, A1, "broker-a", 1, [topic("T")])
    d.channel("closed", f"ch-{A0}")  # the master dies
    assert d.role.state()["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {"1": A1}
    m = d.mark()
    register(d, A1, "broker-a", 0, [topic("T")], counter=5, channel=f"ch-{A1}")  # promoted slave
    assert d.role.state()["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {"0": A1}
    assert d.events("ns.route", since=m) == [
        {"topic": "T", "queue_datas": [{"broker": "broker-a", "read": 4, "write": 4, "perm": 6}],
         "masters": ["broker-a"]}]


def test_unregister_by_id(d):
    register(d, A0, "broker-a", 0, [topic("T")])
    register(d, A1, "broker-a", 1, [])
    m = d.mark()
    # by id: brokerId 1 with the master's address removes the slave's entry, not the master's
    resp = d.call(RC.UNREGISTER_BROKER, {"brokerAddr": A0, "clusterName": "DefaultCluster", "brokerName": "broker-a",
                                         "brokerId": 1})
    assert resp.code == ResponseCode.SUCCESS
    st = d.role.state()
    assert st["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {"0": A0}
    assert A0 not in st["brokerLiveTable"]
    assert d.events("ns.broker", since=m) == [
        {"broker_addr": A0, "broker": "broker-a", "broker_id": 1, "change": "unregister"}]


def test_unregister_last_removes_name_cluster_and_topics(d):
    register(d, A0, "broker-a", 0, [topic("T")])
    register(d, B0, "broker-b", 0, [topic("T"), topic("U")])
    m = d.mark()
    d.call(RC.UNREGISTER_BROKER, {"brokerAddr": B0, "clusterName": "DefaultCluster", "brokerName": "broker-b",
                                  "brokerId": 0})
    st = d.role.state()
    assert set(st["topicQueueTable"]) == {"T"} and list(st["topicQueueTable"]["T"]) == ["broker-a"]
    assert st["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    assert d.events("ns.route", since=m) == [
        {"topic": "T", "queue_datas": [{"broker": "broker-a", "read": 4, "write": 4, "perm": 6}],
         "masters": ["broker-a"]},
        {"topic": "U", "queue_datas": [], "masters": []},
    ]
    resp = d.call(RC.UNREGISTER_BROKER, {"brokerAddr": B0, "clusterName": "DefaultCluster", "brokerName": "broker-b",
                                         "brokerId": 0})
    assert resp.code == ResponseCode.SUCCESS  # always SUCCESS


def test_topic_not_exist_remark_exact(d):
    resp = route(d, "Nope")
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST == 17
    assert resp.remark == ("No topic route info in name server for the topic: Nope\n"
                           "See http://rocketmq.apache.org/docs/faq/ for further details.")
    assert resp.remark.endswith(FAQ_SUFFIX)


def test_orphan_queue_data(d):
    register(d, A0, "broker-a", 0, [topic("T")])
    register(d, B0, "broker-b", 0, [topic("T")])
    d.role.rim.brokerAddrTable.pop("broker-b")  # e.g. removed without the topic cascade
    body = route(d, "T").json_body()
    assert [q["brokerName"] for q in body["queueDatas"]] == ["broker-a", "broker-b"]
    assert [b["brokerName"] for b in body["brokerDatas"]] == ["broker-a"]
    d.role.rim.brokerAddrTable.clear()
    assert route(d, "T").code == ResponseCode.TOPIC_NOT_EXIST  # queue data but no BrokerData


def test_cluster_info_topic_list_delete_topic(d):
    register(d, A0, "broker-a", 0, [topic("T"), topic("U")])
    register(d, A1, "broker-a", 1, [])
    info = d.call(RC.GET_BROKER_CLUSTER_INFO).json_body()
    assert info == {"brokerAddrTable": {"broker-a": {"cluster": "DefaultCluster", "brokerName": "broker-a",
                                                     "brokerAddrs": {"0": A0, "1": A1}}},
                    "clusterAddrTable": {"DefaultCluster": ["broker-a"]}}
    assert d.call(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).json_body() == {"topicList": ["T", "U"]}
    m = d.mark()
    assert d.call(RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "U"}).code == ResponseCode.SUCCESS
    assert d.events(since=m) == [{"topic": "U", "queue_datas": [], "masters": []}]
    assert d.call(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).json_body() == {"topicList": ["T"]}


def test_unknown_code_and_crc(d):
    resp = d.call(9999)
    assert (resp.code, resp.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 9999 not supported")
    body = json.dumps({"topicConfigSerializeWrapper": {"topicConfigTable": {},
                                                       "dataVersion": {"timestamp": 1, "counter": 1}}}).encode()
    fields = {"brokerAddr": A0, "brokerName": "broker-a", "brokerId": 0, "clusterName": "C",
              "bodyCrc32": crc32(body) ^ 1}
    resp = d.call(RC.REGISTER_BROKER, fields, body)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    fields["bodyCrc32"] = crc32(body)
    assert d.call(RC.REGISTER_BROKER, fields, body).code == ResponseCode.SUCCESS


def test_missing_header_is_system_error_not_crash(d):
    resp, acts = d.send(RC.REGISTER_BROKER, {"brokerName": "x"})
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert d.events("wire.bad_frame")


def test_filter_server_list(d):
    register(d, A0, "broker-a", 0, [topic("T")], filters=["127.0.0.1:1"])
    assert route(d, "T").json_body()["filterServerTable"] == {A0: ["127.0.0.1:1"]}
    register(d, A0, "broker-a", 0, [topic("T")])  # null list: unchanged
    assert d.role.state()["filterServerTable"] == {A0: ["127.0.0.1:1"]}
    register(d, A0, "broker-a", 0, [topic("T")], filters=[])
    assert d.role.state()["filterServerTable"] == {}


def test_wipe_and_add_write_perm(d):
    register(d, A0, "broker-a", 0, [topic("T"), topic("U"), topic("TBW102", perm=7)])
    resp = d.call(RC.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert resp.fields == {"wipeTopicCount": 3}
    assert route(d, "T").json_body()["queueDatas"][0]["perm"] == 4
    assert route(d, "TBW102").json_body()["queueDatas"][0]["perm"] == 5
    d.call(RC.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert route(d, "T").json_body()["queueDatas"][0]["perm"] == 6
    assert route(d, "TBW102").json_body()["queueDatas"][0]["perm"] == 6  # READ|WRITE: INHERIT is gone
