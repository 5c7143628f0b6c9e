"""What a namesrv and a broker answer differently on a real client's channel (``rm:<n>``, the
remoting port): routes with the brokers' remoting addresses, pulls in RocketMQ's binary MessageExt,
bodies kept as bytes, packed batches; and the queue requests only real clients send (29, 31, 41, 42)."""

from __future__ import annotations

import json
import zlib

from rmqemu.emulator.protocol import Frame, ResponseCode, message_ext
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.broker.broker import Broker
from rmqemu.emulator.roles.broker.queue_processor import LOCK_MAX_LIVE_MS
from rmqemu.emulator.roles.common.base import Emit, Reply
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.node_spec import NodeSpec
from rmqemu.emulator.roles.namesrv.namesrv import NameServer
from rmqemu.emulator.roles.store.message_store import store_host_of
from tests.roles.broker_helpers import MASTER_ADDR, broker, heartbeat, pull, send, spec
from tests.roles.fakes import Driver, FakeStore

RM = "rm:1"
REMOTING = "127.0.0.1:20911"


def register(ns: Driver, addr: str, name: str, broker_id: int, remoting: str | None) -> None:
    wrapper = {"topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}},
               "dataVersion": {"timestamp": 1, "counter": 1}}
    fields = {"brokerAddr": addr, "brokerName": name, "brokerId": broker_id, "clusterName": "C",
              "haServerAddr": "x:1", **({"remotingAddr": remoting} if remoting else {})}
    assert ns.call(RC.REGISTER_BROKER, fields, {"topicConfigSerializeWrapper": wrapper}).code == 0


def test_a_real_client_gets_the_brokers_remoting_addresses_and_ours_the_zeromq_ones():
    ns = Driver(NameServer("namesrv-0", "127.0.0.1:9876"))
    ns.start()
    register(ns, "127.0.0.1:10911", "broker-a", 0, "127.0.0.1:20911")
    register(ns, "127.0.0.1:10921", "broker-a", 1, "127.0.0.1:20921")
    register(ns, "127.0.0.1:10931", "broker-b", 0, None)  # no remoting port: not reachable by a real client
    ours = json.loads(ns.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, channel="pg-1-0#5#1").body)
    real = json.loads(ns.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, channel=RM).body)
    assert {bd["brokerName"]: bd["brokerAddrs"] for bd in ours["brokerDatas"]} == {
        "broker-a": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"}, "broker-b": {"0": "127.0.0.1:10931"}}
    assert {bd["brokerName"]: bd["brokerAddrs"] for bd in real["brokerDatas"]} == {
        "broker-a": {"0": "127.0.0.1:20911", "1": "127.0.0.1:20921"}, "broker-b": {}}
    assert real["queueDatas"] == ours["queueDatas"]


def test_a_broker_registers_its_remoting_address():
    d = broker(start=False)
    d.role.remoting_addr = REMOTING
    d.start()
    regs = d.transport.requests(RC.REGISTER_BROKER)
    assert regs and all(r.frame.fields["remotingAddr"] == REMOTING for r in regs)
    assert "remotingAddr" not in broker().transport.requests(RC.REGISTER_BROKER)[0].frame.fields


def test_binary_bodies_are_stored_and_pulled_byte_for_byte_as_message_ext():
    d = broker(config={"autoCreateTopicEnable": True})
    deflated = zlib.compress(bytes(range(256)) * 40)
    actions = d.deliver(Frame(RC.SEND_MESSAGE, opaque=77, fields={
        "producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4, "queueId": 1,
        "sysFlag": 1, "bornTimestamp": 5, "flag": 0, "properties": "UNIQ_KEY\x01U1\x02TAGS\x01a"}, body=deflated),
        channel=RM, peer="client@1", addr="127.0.0.1:5555")
    resp = d.response_in(actions, 77, RM)
    assert resp.code == ResponseCode.SUCCESS
    record = d.role.store.queues[("T", 1)][0]
    assert body_bytes(record) == deflated and "body64" in record
    heartbeat(d, "127.0.0.1@1", "cg", {"T": 0}, channel=RM)
    found, _ = pull(d, "T", queue_id=1, channel=RM)
    assert found.code == ResponseCode.SUCCESS
    [m] = message_ext.decode_messages(found.body)
    assert m["body"] == deflated and m["sysFlag"] & 1 and m["queueOffset"] == 0 and m["queueId"] == 1
    assert m["properties"] == {"UNIQ_KEY": "U1", "TAGS": "a"} and m["bornHost"] == "127.0.0.1:5555"
    assert m["msgId"] == record["offsetMsgId"] == resp.fields["msgId"]
    assert m["commitLogOffset"] == record["commitLogOffset"]
    ours, _ = pull(d, "T", queue_id=1)  # rmqemu's own consumer: the JSON list, the bytes as base64
    [j] = json.loads(ours.body)
    assert body_bytes(j) == deflated and j["msgId"] == "U1"


def test_a_packed_batch_from_a_real_client_is_stored_message_by_message():
    d = broker(config={"autoCreateTopicEnable": True})
    body = message_ext.encode_batch([(0, b"one", {"UNIQ_KEY": "A"}), (0, b"\xfftwo", {"UNIQ_KEY": "B"})])
    resp, _ = d.send(RC.SEND_BATCH_MESSAGE, {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102",
                                             "defaultTopicQueueNums": 4, "queueId": 0, "sysFlag": 0,
                                             "bornTimestamp": 5, "flag": 0, "properties": "", "batch": True},
                     body, channel=RM, peer="client@1")
    assert resp.code == ResponseCode.SUCCESS and len(resp.fields["msgId"].split(",")) == 2
    assert [body_bytes(r) for r in d.role.store.queues[("T", 0)]] == [b"one", b"\xfftwo"]


def test_a_send_back_of_a_binary_message_keeps_its_bytes():
    d = broker(config={"autoCreateTopicEnable": True})
    d.send(RC.SEND_MESSAGE, {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102",
                             "defaultTopicQueueNums": 4, "queueId": 0, "properties": "UNIQ_KEY\x01U"},
           b"\x00\x80", channel=RM, peer="client@1")
    offset = d.role.store.queues[("T", 0)][0]["commitLogOffset"]
    resp, _ = d.send(RC.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "cg", "delayLevel": 0,
                                                  "originMsgId": "U", "originTopic": "T"}, channel=RM)
    assert resp.code == ResponseCode.SUCCESS
    assert body_bytes(d.role.store.queues[("SCHEDULE_TOPIC_XXXX", 2)][0]) == b"\x00\x80"  # level 3 first
    d.advance(10000)
    assert body_bytes(d.role.store.queues[("%RETRY%cg", 0)][0]) == b"\x00\x80"


def test_min_offset_and_search_by_timestamp():
    d = broker(config={"autoCreateTopicEnable": True})
    for _ in range(3):
        send(d, "T")
        d.advance(1000)
    stamps = [r["storeTimestamp"] for r in d.role.store.queues[("T", 0)]]
    assert d.call(RC.GET_MIN_OFFSET, {"topic": "T", "queueId": 0}).fields["offset"] == 0
    search = [d.call(RC.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": "T", "queueId": 0, "timestamp": t}).fields["offset"]
              for t in (0, stamps[1], stamps[1] + 1, stamps[2] + 1)]
    assert search == [0, 1, 2, 3]


def lock_body(client: str, *queues: int) -> dict:
    return {"consumerGroup": "cg", "clientId": client,
            "mqSet": [{"topic": "T", "brokerName": "broker-a", "queueId": q} for q in queues]}


def locked(d: Driver, client: str, *queues: int) -> list[int]:
    resp = d.call(RC.LOCK_BATCH_MQ, {}, lock_body(client, *queues))
    assert resp.code == ResponseCode.SUCCESS
    return [m["queueId"] for m in json.loads(resp.body)["lockOKMQSet"]]


def test_queue_locks_belong_to_one_client_until_unlocked_or_expired():
    d = broker()
    assert locked(d, "A", 0, 1) == [0, 1]
    assert locked(d, "B", 1, 2) == [2]
    assert locked(d, "A", 1) == [1]  # its own: renewed
    assert d.call(RC.UNLOCK_BATCH_MQ, {}, lock_body("B", 0, 2)).code == ResponseCode.SUCCESS  # 0 is not B's
    assert locked(d, "B", 0, 2) == [2]
    d.advance(LOCK_MAX_LIVE_MS + 1)
    assert locked(d, "B", 0, 1) == [0, 1]  # A's locks expired
    assert d.role.state()["locks"] == {"cg": {"T:broker-a:0": "B", "T:broker-a:1": "B", "T:broker-a:2": "B"}}


def test_a_real_clients_lock_changes_are_the_brokers_lines_naming_it():
    d = broker()
    resp, actions = d.send(RC.LOCK_BATCH_MQ, {}, lock_body("10.0.0.1@7", 0), channel=RM, peer="client@7")
    [line] = emitted(actions, "broker.lock")
    assert line.node is None and (line.fields["peer"], line.fields["client_id"], line.fields["change"]) == (
        "client@7", "10.0.0.1@7", "locked")  # the broker's own line: the lock table is its state


def test_a_bad_lock_body_is_a_system_error_not_a_crash():
    d = broker()
    assert d.call(RC.LOCK_BATCH_MQ, {}, [1, 2]).code == ResponseCode.SYSTEM_ERROR
    assert d.call(RC.LOCK_BATCH_MQ, {}, {"consumerGroup": "cg", "clientId": "A",
                                         "mqSet": [{"topic": "T"}]}).code == ResponseCode.SYSTEM_ERROR


def test_store_host_is_the_brokers():
    d = broker()
    assert d.role.store.store_host == MASTER_ADDR


def emitted(actions, kind: str) -> list:
    return [a for a in actions if isinstance(a, Emit) and a.kind == kind]


def test_a_real_clients_route_is_written_under_its_name_as_its_view():
    ns = Driver(NameServer("namesrv-0", "127.0.0.1:9876"))
    ns.start()
    register(ns, "127.0.0.1:10911", "broker-a", 0, REMOTING)
    _, actions = ns.send(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, channel=RM, peer="client@7")
    [route] = emitted(actions, "client.route")
    assert route.node == "client@7" and route.fields["source"] == "namesrv-0"
    assert route.fields["publish_queues"] == [{"broker": "broker-a", "queue_id": q} for q in range(4)]
    assert route.fields["changed"]
    _, again = ns.send(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, channel=RM, peer="client@7")
    assert not emitted(again, "client.route")[0].fields["changed"]
    _, unknown = ns.send(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "U"}, channel=RM, peer="client@7")
    assert emitted(unknown, "client.route")[0].fields["publish_queues"] == []
    _, ours = ns.send(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, channel="pg-1-0#5#1", peer="pg-1-0")
    assert not emitted(ours, "client.route")  # rmqemu's own clients write their own


def test_a_real_clients_sends_pulls_and_heartbeats_are_written_under_its_name():
    d = broker(config={"autoCreateTopicEnable": True})
    _, hb = d.send(RC.HEART_BEAT, {}, {"clientID": "10.0.0.1@7", "producerDataSet": [{"groupName": "pg"}],
                                       "consumerDataSet": []}, channel=RM, peer="client@7")
    [beat] = emitted(hb, "client.heartbeat")
    assert beat.node == "client@7" and beat.fields["producer_groups"] == ["pg"] and beat.fields["code"] == 0
    ok, actions = d.send(RC.SEND_MESSAGE_V2, {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102",
                                              "defaultTopicQueueNums": 4, "queueId": 2, "properties": ""},
                         b"x", channel=RM, peer="client@7")
    [sent] = emitted(actions, "send")
    assert sent.node == "client@7" and sent.fields["msg_id"] == ok.fields["msgId"]
    assert (sent.fields["broker"], sent.fields["queue_id"], sent.fields["outcome"], sent.fields["mode"]) == (
        "broker-a", 2, "ok", "wire")
    _, bad = d.send(RC.SEND_MESSAGE_V2, {"producerGroup": "pg", "topic": "T", "queueId": 99, "properties": ""},
                    b"x", channel=RM, peer="client@7")
    assert emitted(bad, "send")[0].fields["outcome"] == "error"
    heartbeat(d, "10.0.0.1@7", "cg", {"T": 0}, channel=RM)
    _, held = pull(d, "T", queue_id=3, sys_flag=2, channel=RM)  # long polling: held, nothing written yet
    assert not emitted(held, "pull")
    _, woken = send(d, "T", queue_id=3)
    [pulled] = emitted(woken, "pull")
    [consumed] = emitted(woken, "consume")  # delivered counts as consumed for a real client
    assert consumed.fields["msg_ids"] == ["U-T-3"] and consumed.node == pulled.node
    assert consumed.fields["offsets"] == [0]  # judged per queue in offset order: the key is in the client
    assert pulled.node == "cg-0" and (pulled.fields["count"], pulled.fields["queue_id"]) == (1, 3)  # pull()'s peer


def test_with_a_remoting_port_msg_ids_name_it_and_a_slave_serves_its_masters_store_host():
    store = FakeStore()
    d = Driver(Broker.from_spec(NodeSpec.from_dict(spec(0, {"autoCreateTopicEnable": True}, remoting=REMOTING)),
                                MASTER_ADDR, store), store=store)
    d.start()
    ok, _ = send(d, "T")
    assert ok.fields["msgId"].startswith(message_ext.message_id(*message_ext.host_bytes(REMOTING), 0)[:16])
    record = d.role.store.queues[("T", 0)][0]
    assert store_host_of(record, "x") == REMOTING
    heartbeat(d, "10.0.0.1@7", "cg", {"T": 0}, channel=RM)
    found, _ = pull(d, "T", channel=RM)
    assert message_ext.decode_messages(found.body)[0]["storeHost"] == REMOTING
    d.role.store.store_host = "127.0.0.1:1"  # a slave holding the record answers with the master's host
    found, _ = pull(d, "T", channel=RM)
    assert message_ext.decode_messages(found.body)[0]["msgId"] == record["offsetMsgId"]


def test_a_oneway_offset_update_is_applied_and_not_answered():
    """The Java client sends UPDATE_CONSUMER_OFFSET oneway; RocketMQ writes no response to a oneway."""
    d = broker()
    resp, actions = d.send(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "cg", "topic": "T", "queueId": 0,
                                                       "commitOffset": 5}, channel=RM, oneway=True)
    assert resp is None and not [a for a in actions if isinstance(a, Reply)]
    assert d.call(RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": "cg", "topic": "T", "queueId": 0}).fields["offset"] == 5


def test_a_real_clients_delayed_send_is_written_with_its_level_and_its_leaving_group_is_seen():
    d = broker(config={"autoCreateTopicEnable": True})
    heartbeat(d, "10.0.0.1@7", "cg", {"T": 0}, channel=RM)
    ok, actions = d.send(RC.SEND_MESSAGE_V2, {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102",
                                              "defaultTopicQueueNums": 4, "queueId": 1,
                                              "properties": "UNIQ_KEY\x01D1\x02DELAY\x012\x02"},
                         b"later", channel=RM, peer="client@7")
    [sent] = emitted(actions, "send")
    assert ok.code == ResponseCode.SUCCESS and sent.fields["delay_level"] == 2 and sent.node == "client@7"
    assert [e.fields["msg_id"] for e in emitted(actions, "delay.park")] == ["D1"]
    left = emitted(d.channel("closed", RM), "broker.consumer")
    assert [(e.fields["change"], e.fields["reason"], e.fields["real"], e.node) for e in left] == [
        ("left", "closed", True, None)]


def test_a_real_clients_delayed_message_is_consumed_under_the_id_its_send_was_acked_with():
    """ali-ons sets no UNIQ_KEY: the delivered copy has a new offsetMsgId, and the broker writes the
    client's consumption under the parked copy's, the msgId of the send's answer."""
    d = broker(config={"autoCreateTopicEnable": True})
    heartbeat(d, "10.0.0.1@7", "cg", {"T": 0}, channel=RM)
    d.advance(2000)
    ok, _ = d.send(RC.SEND_MESSAGE_V2, {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102",
                                        "defaultTopicQueueNums": 4, "queueId": 0, "properties": "DELAY\x011"},
                   b"x", channel=RM, peer="client@7")
    d.advance(1000)
    (deliver,) = d.events("delay.deliver")
    assert deliver["msg_id"] == ok.fields["msgId"] != deliver["offset_msg_id"]
    _, actions = pull(d, "T", queue_id=0, channel=RM)
    [consumed] = emitted(actions, "consume")
    assert consumed.fields["msg_ids"] == [ok.fields["msgId"]]
    resp, actions = d.send(RC.CONSUMER_SEND_MSG_BACK, {"offset": d.role.store.queues[("T", 0)][0]["commitLogOffset"],
                                                        "group": "cg", "delayLevel": 0, "originTopic": "T"}, channel=RM)
    [back] = emitted(actions, "retry.back")
    assert resp.code == 0 and back.fields["msg_id"] == ok.fields["msgId"]  # the chain keeps the send's id
    assert back.fields["origin_msg_id"] == deliver["offset_msg_id"]  # 4.9.4: the consumed copy's offsetMsgId
