"""Topic message types (docs/rocketmq-model.md §10.5): the ``message.type`` attribute set by
UPDATE_AND_CREATE_TOPIC's ``attributes``, read back by GET_TOPIC_CONFIG (351), persisted with the topic,
and the proxy's check (:func:`check_message_type`), which 5.x's broker does not make on send."""

from __future__ import annotations

import json

import pytest

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.message_type import check_message_type, message_type_of
from tests.roles.broker_helpers import broker, send
from tests.roles.fakes import Driver, FakeStore


def create(d: Driver, topic: str, attributes: str | None = None):
    fields = {"topic": topic, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicFilterType": "SINGLE_TAG",
              "topicSysFlag": 0, "order": False}
    if attributes is not None:
        fields["attributes"] = attributes
    return d.call(RC.UPDATE_AND_CREATE_TOPIC, fields)


def topic_config(d: Driver, topic: str):
    return d.call(RC.GET_TOPIC_CONFIG, {"topic": topic})


def test_get_topic_config_answers_5x_json_with_attributes_and_normal_by_default():
    d = broker()
    assert create(d, "Plain").code == R.SUCCESS
    resp = topic_config(d, "Plain")
    assert resp.code == R.SUCCESS
    assert resp.json_body() == {"topicName": "Plain", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
                                "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False,
                                "attributes": {}}
    assert d.role.topics.get("Plain").message_type == "NORMAL"
    missing = topic_config(d, "Nope")
    assert (missing.code, missing.remark) == (R.TOPIC_NOT_EXIST, "No topic in this broker. topic: Nope")


@pytest.mark.parametrize("kind", ["NORMAL", "FIFO", "DELAY", "TRANSACTION"])
def test_a_type_set_on_create_is_read_back_and_survives_a_restart(kind):
    store = FakeStore()
    d = broker(store=store)
    assert create(d, "Typed", f"+message.type={kind}").code == R.SUCCESS
    assert topic_config(d, "Typed").json_body()["attributes"] == {"message.type": kind}
    persisted = json.loads(store.files["config/topics.json"])["topicConfigTable"]["Typed"]
    assert persisted["attributes"] == {"message.type": kind}
    d2 = broker(store=store)
    assert d2.role.topics.get("Typed").message_type == kind


def test_mixed_needs_enable_mixed_message_type():
    d = broker()
    resp = create(d, "Mix", "+message.type=MIXED")
    assert (resp.code, resp.remark) == (R.INVALID_PARAMETER, "MIXED message type is not supported.")
    assert d.role.topics.get("Mix") is None
    ok = broker(config={"enableMixedMessageType": True})
    assert create(ok, "Mix", "+message.type=MIXED").code == R.SUCCESS
    assert ok.role.topics.get("Mix").message_type == "MIXED"


def test_an_update_changes_keeps_or_deletes_the_type():
    d = broker()
    create(d, "T", "+message.type=FIFO")
    assert create(d, "T").code == R.SUCCESS  # no attributes: the current ones stay
    assert d.role.topics.get("T").message_type == "FIFO"
    create(d, "T", "+message.type=DELAY")
    assert d.role.topics.get("T").message_type == "DELAY"
    assert create(d, "T", "-message.type").code == R.SUCCESS
    assert d.role.topics.get("T").attributes == () and d.role.topics.get("T").message_type == "NORMAL"


@pytest.mark.parametrize(("attributes", "remark"), [
    ("+message.type=BAD", "value is not in set: "),
    ("message.type=FIFO", "add/alter attribute format is wrong: message.type"),
    ("+message.type=FIFO,+message.type=DELAY", "key duplication: +message.type"),
    ("+nope=1", "unsupported key: nope"),
    ("-message.type", "only add attribute is supported while creating topic. key: message.type"),
    ("message.type", "delete attribute format is wrong: message.type"),
])
def test_bad_attributes_answer_system_error_with_5x_messages(attributes, remark):
    d = broker()
    resp = create(d, "T", attributes)
    assert resp.code == R.SYSTEM_ERROR and resp.remark.startswith(remark)
    assert d.role.topics.get("T") is None


def test_an_unchangeable_attribute_cannot_be_updated():
    d = broker()
    create(d, "Q", "+queue.type=SimpleCQ")
    resp = create(d, "Q", "+queue.type=BatchCQ")
    assert (resp.code, resp.remark) == (R.SYSTEM_ERROR, "attempt to update an unchangeable attribute. key: queue.type")


def test_the_broker_stores_any_message_on_any_type_as_5x_does():
    """5.x's SendMessageProcessor reads the message type for its metrics only: a 4.x client (no
    proxy in between) sends a delayed message to a FIFO topic and it is stored."""
    d = broker()
    create(d, "Fifo", "+message.type=FIFO")
    resp, _ = send(d, "Fifo", props={"UNIQ_KEY": "u", "TIMER_DELAY_SEC": "5"})
    assert resp.code == R.SUCCESS and d.events("timer.park")


@pytest.mark.parametrize(("props", "kind"), [
    ({}, "NORMAL"), ({"TRAN_MSG": "true"}, "TRANSACTION"), ({"TRAN_MSG": "TRUE"}, "NORMAL"),
    ({"DELAY": "3"}, "DELAY"), ({"TIMER_DELIVER_MS": "1"}, "DELAY"), ({"TIMER_DELAY_SEC": "1"}, "DELAY"),
    ({"TIMER_DELAY_MS": "1"}, "DELAY"), ({"__SHARDINGKEY": "g"}, "FIFO"),
    ({"__SHARDINGKEY": "g", "DELAY": "1"}, "DELAY"), ({"TRAN_MSG": "true", "DELAY": "1"}, "TRANSACTION"),
])
def test_a_messages_type_comes_from_its_properties(props, kind):
    assert message_type_of(props) == kind


def test_the_check_passes_a_matching_type_or_a_mixed_topic_only():
    for kind in ("NORMAL", "FIFO", "DELAY", "TRANSACTION"):
        assert check_message_type(kind, kind) is None
        assert check_message_type("MIXED", kind) is None
        assert check_message_type("UNSPECIFIED", kind) == (
            f"TopicMessageType validate failed, the expected type is UNSPECIFIED, but actual type is {kind}")
    assert check_message_type("FIFO", "NORMAL") == (
        "TopicMessageType validate failed, the expected type is FIFO, but actual type is NORMAL")
    assert check_message_type("MIXED", "UNSPECIFIED") is not None
