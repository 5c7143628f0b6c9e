"""Broker: the send path (docs/rocketmq-model.md §2.3-2.5): topic auto-creation while sending,
msgCheck and queue id errors, a slave's refusal, batches, size limits and the max offset."""

from __future__ import annotations

import json

import pytest

from rmqemu.emulator.protocol import FAQ_SUFFIX, Flag, ResponseCode
from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.common.base import Oneway, Persist
from tests.roles.broker_helpers import NS1, NS2, broker, send
from tests.roles.fakes import FakeStore
from tests.roles.test_broker_topics import topic_events

SNA = ("service not available now. It may be caused by one of the following reasons: the broker's disk is full "
       "[CL:  0.00 CQ:  0.00 INDEX:  0.00], messages are put to the slave, message store has been shut down, etc.")


def test_auto_create_in_send_path():
    d = broker()
    m = d.mark()
    resp, acts = send(d, "NewTopic", queue_id=3)
    assert resp.code == ResponseCode.SUCCESS and resp.fields["queueId"] == 3 and resp.fields["queueOffset"] == 0
    assert topic_events(d, m) == [("NewTopic", 4, 4, 6, "auto")]  # min(4, 8) queues, perm 7 & ~INHERIT
    assert any(isinstance(a, Persist) and a.relpath == "config/topics.json" for a in acts)
    ones = [a for a in acts if isinstance(a, Oneway)]
    assert [a.addr for a in ones] == [NS1, NS2] and ones[0].frame.flag == Flag.ONEWAY
    assert "NewTopic" in json.loads(ones[0].frame.body)["topicConfigSerializeWrapper"]["topicConfigTable"]
    assert len(resp.fields["msgId"]) == 32
    resp, acts = send(d, "Other", defaultTopicQueueNums=16)
    assert d.role.topics.get("Other").writeQueueNums == 8  # min(client 16, TBW102 8)
    resp, acts = send(d, "NewTopic", queue_id=1)
    assert not [a for a in acts if isinstance(a, Oneway)]  # exists now: no register


def test_auto_created_topic_sys_flag_in_unit_mode():
    """msgCheck: a unit-mode send creates a normal topic with FLAG_UNIT (1), a %RETRY% one with
    FLAG_UNIT_SUB (2); outside unit mode the flag is 0."""
    d = broker()
    for topic, unit, flag in (("Plain", False, 0), ("Unit", True, 1), ("%RETRY%cg", True, 2)):
        assert send(d, topic, unitMode=unit)[0].code == ResponseCode.SUCCESS
        assert d.role.topics.get(topic).topicSysFlag == flag, topic


def test_tbw102_perm_overwrite_when_auto_create_off():
    store = FakeStore()  # a topics.json written by an earlier run with autoCreateTopicEnable=true
    store.files["config/topics.json"] = json.dumps({"topicConfigTable": {"TBW102": {
        "topicName": "TBW102", "readQueueNums": 8, "writeQueueNums": 8, "perm": 7}},
        "dataVersion": {"timestamp": 5, "counter": 3}})
    d = broker(config={"autoCreateTopicEnable": False}, store=store)
    m = d.mark()
    resp, _ = send(d, "X")
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == "topic[X] not exist, apply first please!" + FAQ_SUFFIX
    assert d.role.topics.get("TBW102").perm == 6  # step 3
    assert topic_events(d, m) == [("TBW102", 8, 8, 6, "auto")]


def test_no_default_topic_topic_not_exist_remark():
    d = broker(config={"autoCreateTopicEnable": False})
    resp, acts = send(d, "Missing")
    assert (resp.code, resp.remark) == (17, "topic[Missing] not exist, apply first please!\n"
                                            "See http://rocketmq.apache.org/docs/faq/ for further details.")
    assert d.role.topics.get("Missing") is None


def test_retry_topic_created_without_default():
    d = broker(config={"autoCreateTopicEnable": False})
    resp, _ = send(d, "%RETRY%cg")
    assert resp.code == ResponseCode.SUCCESS
    tc = d.role.topics.get("%RETRY%cg")
    assert (tc.readQueueNums, tc.perm) == (1, 6)


def test_queue_id_illegal_remark():
    d = broker()
    send(d, "T4")
    resp, _ = send(d, "T4", queue_id=4)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == ("request queueId[4] is illegal, TopicConfig [topicName=T4, readQueueNums=4, "
                           "writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] "
                           "Producer: pg-0")
    resp, _ = send(d, "T4", queue_id=-1)
    assert resp.code == ResponseCode.SUCCESS and 0 <= resp.fields["queueId"] < 4


@pytest.mark.parametrize("topic,code,remark", [
    ("bad topic", 1, "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ("topic\n", 1, "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ("x" * 128, 1, "The specified topic is longer than topic max length."),
    ("SCHEDULE_TOPIC_XXXX", 16, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."),
])
def test_msg_check_topic_errors(topic, code, remark):
    resp, _ = send(broker(), topic)
    assert (resp.code, resp.remark) == (code, remark)


def test_slave_refuses_writes():
    d = broker(broker_id=1)
    resp, _ = send(d, "TBW102")
    assert (resp.code, resp.remark) == (ResponseCode.SERVICE_NOT_AVAILABLE, SNA)
    resp = d.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "T", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6})
    assert (resp.code, resp.remark) == (1, "Can't modify topic or subscription group from slave broker, "
                                           "please execute it from master broker.")


def test_batch_send():
    d = broker()
    body = json.dumps([{"body": "a", "properties": {"UNIQ_KEY": "1"}}, {"body": "b", "properties": {"UNIQ_KEY": "2"}}])
    resp, _ = send(d, "B", body=body, code=RC.SEND_BATCH_MESSAGE)
    assert resp.code == 0 and resp.fields["queueOffset"] == 0 and len(resp.fields["msgId"].split(",")) == 2
    assert d.role.store.max_offset("B", 0) == 2


def test_get_max_offset_answers_the_next_offset_of_the_queue():
    """AdminBrokerProcessor.getMaxOffset: what a LAST_OFFSET consumer without an offset starts at."""
    d = broker()
    for _ in range(3):
        send(d, "M", queue_id=1)
    resp, _ = d.send(RC.GET_MAX_OFFSET, {"topic": "M", "queueId": 1}, b"", channel="c", peer="cg-0")
    assert (resp.code, resp.fields["offset"]) == (ResponseCode.SUCCESS, 3)
    resp, _ = d.send(RC.GET_MAX_OFFSET, {"topic": "Unknown", "queueId": 0}, b"", channel="c", peer="cg-0")
    assert (resp.code, resp.fields["offset"]) == (ResponseCode.SUCCESS, 0)


def test_max_message_size_remark_follows_494_handle_put_message_result():
    """SendMessageProcessor.handlePutMessageResult (4.9.4): the MESSAGE_ILLEGAL remark formats
    getMaxMessageSize() in bytes (4.9.3 and before: a fixed "128k ... 32k")."""
    d = broker(config={"maxMessageSize": 4})
    resp, _ = send(d, "TBW102", body="12345")
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL
    assert resp.remark == ("the message is illegal, maybe msg body or properties length not matched. "
                           "msg body length limit 4B, msg properties length limit 32KB.")
