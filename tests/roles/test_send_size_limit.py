"""Broker: the 4.9.4 store's size limit on the send path (docs/rocketmq-model.md §2.4): a single
message's body alone against the broker's ``maxMessageSize`` (the stored message, with its header,
topic and properties, may be longer), a batch's whole packed body against it; MESSAGE_ILLEGAL."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode, message_ext
from rmqemu.emulator.roles.common.base import Append
from rmqemu.emulator.roles.common.message import body_bytes, body_fields
from tests import strategies
from tests.roles.broker_helpers import broker, send

MAX = 128
ILLEGAL = ("the message is illegal, maybe msg body or properties length not matched. "
           f"msg body length limit {MAX}B, msg properties length limit 32KB.")
RM = "rm:1"  # a real client's channel: its batch is RocketMQ's packed binary
TOPIC_CHARS = "_-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def small_broker():
    return broker(config={"autoCreateTopicEnable": True, "maxMessageSize": MAX})


def single(d, topic: str, body: bytes, props: dict[str, str] | None = None):
    header = {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": 0, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
              "properties": props if props is not None else {"UNIQ_KEY": "U1"}}
    return d.send(RC.SEND_MESSAGE_V2, header, body, channel="prod-ch", peer="pg-0")


def batch_header(topic: str) -> dict[str, Any]:
    return {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
            "queueId": 0, "sysFlag": 0, "bornTimestamp": 1, "flag": 0, "properties": "", "batch": True}


def json_batch(d, topic: str, msgs: list[tuple[bytes, dict[str, str]]]):
    """rmqemu's own producer: the JSON list send_processor.batch_messages reads."""
    body = json.dumps([{**body_fields(b), "properties": p} for b, p in msgs]).encode()
    return d.send(RC.SEND_BATCH_MESSAGE, batch_header(topic), body, channel="prod-ch", peer="pg-0")


def packed_batch(d, topic: str, msgs: list[tuple[bytes, dict[str, str]]]):
    """A real client: ``MessageDecoder.encodeMessages``."""
    body = message_ext.encode_batch([(0, b, p) for b, p in msgs])
    return d.send(RC.SEND_BATCH_MESSAGE, batch_header(topic), body, channel=RM, peer="client@1")


def stored(d, topic: str) -> list[dict[str, Any]]:
    return list(d.role.store.queues.get((topic, 0), []))


def test_a_single_body_of_max_message_size_is_stored_one_byte_more_is_illegal():
    """4.9.4 holds the body alone against maxMessageSize: the stored message (91 bytes of header
    with IPv4 hosts, topic, properties) may be longer than the limit."""
    d = small_broker()
    resp, _ = single(d, "T", b"x" * MAX)
    assert resp.code == ResponseCode.SUCCESS
    [record] = stored(d, "T")
    assert body_bytes(record) == b"x" * MAX and record["storeSize"] > MAX
    resp, actions = single(d, "T", b"y" * (MAX + 1))
    assert (resp.code, resp.remark) == (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL)
    assert len(stored(d, "T")) == 1 and not any(isinstance(a, Append) for a in actions)


def test_a_bad_delay_level_is_answered_before_the_body_size():
    """CommitLog.asyncPutMessage parses DELAY before the encoder measures the body."""
    d = small_broker()
    resp, _ = single(d, "T", b"x" * (MAX + 1), {"UNIQ_KEY": "U1", "DELAY": "soon"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "NumberFormatException" in resp.remark


def two_of(total: int) -> list[tuple[bytes, dict[str, str]]]:
    """Two messages whose packed batch is ``total`` bytes: each 20 + body + 2 + 11 (``UNIQ_KEY\\1Un``)."""
    first = (total - 2 * 33) // 2
    return [(b"a" * first, {"UNIQ_KEY": "U1"}), (b"b" * (total - 2 * 33 - first), {"UNIQ_KEY": "U2"})]


def test_a_batch_is_held_whole_against_max_message_size():
    """DefaultMessageStore.checkMessages: the packed body of all the batch's messages; each body
    here is under half the limit. The same from rmqemu's JSON and a real client's packed body."""
    for sender in (json_batch, packed_batch):
        d = small_broker()
        assert message_ext.batch_length(two_of(MAX)) == len(message_ext.encode_batch(
            [(0, b, p) for b, p in two_of(MAX)])) == MAX
        resp, _ = sender(d, "B", two_of(MAX))
        assert resp.code == ResponseCode.SUCCESS and len(stored(d, "B")) == 2, sender.__name__
        resp, actions = sender(d, "B", two_of(MAX + 1))
        assert (resp.code, resp.remark) == (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL), sender.__name__
        assert len(stored(d, "B")) == 2 and not any(isinstance(a, Append) for a in actions)


def test_the_default_limit_is_4_mib():
    d = broker(config={"autoCreateTopicEnable": True})
    assert d.role.store_cfg.maxMessageSize == 4 * 1024 * 1024
    resp, _ = send(d, "T", body="x" * (4 * 1024 * 1024 + 1))
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL


topics = st.text(alphabet=TOPIC_CHARS, min_size=1, max_size=127).filter(lambda t: t != "TBW102")
properties = st.dictionaries(strategies.text(max_size=20).map(lambda k: "k" + k), strategies.text(max_size=40),
                             max_size=4)
raw_bodies = strategies.bodies(max_size=2 * MAX).map(lambda b: b.encode() if isinstance(b, str) else b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topic=topics, body=raw_bodies, props=properties)
def test_a_single_send_is_judged_by_its_body_alone(topic: str, body: bytes, props: dict[str, str]):
    d = small_broker()
    resp, _ = single(d, topic, body, {"UNIQ_KEY": "U1", **props})
    if len(body) <= MAX:
        assert resp.code == ResponseCode.SUCCESS and body_bytes(stored(d, topic)[0]) == body
    else:
        assert (resp.code, resp.remark) == (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL) and not stored(d, topic)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topic=topics, msgs=st.lists(st.tuples(raw_bodies, properties), min_size=1, max_size=3))
def test_a_batch_is_judged_by_its_packed_length_from_either_client(topic: str,
                                                                   msgs: list[tuple[bytes, dict[str, str]]]):
    size = message_ext.batch_length(msgs)
    assert size == len(message_ext.encode_batch([(0, b, p) for b, p in msgs]))
    for sender in (json_batch, packed_batch):
        d = small_broker()
        resp, _ = sender(d, topic, msgs)
        if size <= MAX:
            assert resp.code == ResponseCode.SUCCESS, sender.__name__
            assert [body_bytes(r) for r in stored(d, topic)] == [b for b, _ in msgs]
        else:
            assert (resp.code, resp.remark) == (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL) and not stored(d, topic)
