"""Broker: the 4.9.4 store's properties limit on the send path (Short.MAX_VALUE UTF-8 bytes of the
properties string the commit log stores: the header's properties plus the broker's CLUSTER)."""

from __future__ import annotations

import json

import pytest

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode
from rmqemu.emulator.roles.broker.send_processor import message_illegal_remark, properties_length
from rmqemu.emulator.roles.common.base import Append
from tests.roles.broker_helpers import broker, send

LIMIT = 32767
ILLEGAL = ("the message is illegal, maybe msg body or properties length not matched. "
           "msg body length limit 4194304B, msg properties length limit 32KB.")
BATCH_EXCEEDED = ("java.lang.RuntimeException: Properties size of messageExtBatch exceeded!, "
                  "org.apache.rocketmq.store.CommitLog$MessageExtEncoder.encode(CommitLog.java:1587)")
# "UNIQ_KEY\1U1" (11) + "\2" + "BIG\1" (4) + value + "\2" + "CLUSTER\1DefaultCluster" (22): 39 + len(value)
OVERHEAD = 39


def props_of(total: int, **extra: str) -> dict[str, str]:
    """Header properties whose stored string (with CLUSTER, without ``extra``) is ``total`` bytes long."""
    return {"UNIQ_KEY": "U1", "BIG": "x" * (total - OVERHEAD), **extra}


def stored_nothing(d, actions, topic: str) -> bool:
    return d.role.store.max_offset(topic, 0) == 0 and not any(isinstance(a, Append) for a in actions)


def test_rendering_matches_message_properties2string():
    """messageProperties2String (4.9.4) deletes the last separator; the length is in UTF-8 bytes."""
    assert properties_length({"a": "1", "b": "2"}) == len("a\u00011\u0002b\u00012")
    assert properties_length({}) == 0
    assert properties_length({"k": "\u00e9"}) == 4 and properties_length({"k": "\U0001f600"}) == 6
    assert properties_length({"CLUSTER": "DefaultCluster"}) == 22
    assert properties_length(props_of(LIMIT, CLUSTER="DefaultCluster")) == LIMIT


@pytest.mark.parametrize("code", [RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2])
def test_single_send_over_the_limit_is_message_illegal(code):
    d = broker()
    resp, actions = send(d, "P", props=props_of(LIMIT + 1), code=code)
    assert (resp.code, resp.remark) == (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL)
    assert resp.remark == message_illegal_remark(d.role.store_cfg.maxMessageSize)
    assert stored_nothing(d, actions, "P")


@pytest.mark.parametrize("code", [RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2])
def test_single_send_at_the_limit_is_stored(code):
    d = broker()
    resp, actions = send(d, "P", props=props_of(LIMIT), code=code)
    assert resp.code == ResponseCode.SUCCESS
    assert d.role.store.max_offset("P", 0) == 1 and any(isinstance(a, Append) for a in actions)


def test_single_send_counts_utf8_bytes():
    """MessageExtEncoder.encode measures getBytes(UTF-8): 2-byte characters count twice."""
    d = broker()
    props = props_of(LIMIT)
    props["BIG"] = props["BIG"][:-1] + "\u00e9"  # LIMIT characters, LIMIT + 1 bytes
    resp, actions = send(d, "P", props=props)
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and stored_nothing(d, actions, "P")


def test_single_send_does_not_count_wait_but_counts_the_brokers_cluster():
    """asyncSendMessage drops WAIT from the propertiesString and puts CLUSTER (the broker's name,
    replacing a client's value) before the store measures it."""
    d = broker()
    resp, _ = send(d, "P", props=props_of(LIMIT, WAIT="true"))
    assert resp.code == ResponseCode.SUCCESS
    resp, _ = send(d, "P", props={"UNIQ_KEY": "U2", "CLUSTER": "y" * 40000})
    assert resp.code == ResponseCode.SUCCESS
    assert d.role.store.max_offset("P", 0) == 2


def _batch(d, header_props: dict[str, str]):
    body = json.dumps([{"body": "a", "properties": {"UNIQ_KEY": "1"}}, {"body": "b", "properties": {"UNIQ_KEY": "2"}}])
    return send(d, "B", body=body, props=header_props, code=RC.SEND_BATCH_MESSAGE, batch=True)


def test_batch_header_properties_over_the_limit_are_a_system_error():
    """MessageExtEncoder.encode(MessageExtBatch) throws; the remoting layer answers SYSTEM_ERROR with
    exceptionSimpleDesc. A batch keeps WAIT in the measured string."""
    d = broker()
    resp, actions = _batch(d, props_of(LIMIT + 1))
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, BATCH_EXCEEDED)
    assert stored_nothing(d, actions, "B")
    wait = "WAIT\u0001true\u0002"
    props = props_of(LIMIT - len(wait) + 1, WAIT="true")
    resp, actions = _batch(d, props)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, BATCH_EXCEEDED)
    assert stored_nothing(d, actions, "B")


def test_batch_header_properties_at_the_limit_are_stored():
    d = broker()
    resp, _ = _batch(d, props_of(LIMIT))
    assert resp.code == ResponseCode.SUCCESS and d.role.store.max_offset("B", 0) == 2
