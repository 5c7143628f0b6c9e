"""RocketMQ's binary message formats (emulator/protocol/message_ext.py), pure.

The golden tests spell the Java layout out field by field with struct.pack, independently of the
module's own struct formats; the hostile tests cut and corrupt inputs: only BadFrame comes out.
"""

from __future__ import annotations

import random
import struct
import zlib
from typing import Callable

import pytest

from rmqemu.emulator.protocol import BadFrame
from rmqemu.emulator.protocol.message_ext import (
    MESSAGE_MAGIC_CODE,
    crc32,
    decode_batch,
    decode_messages,
    encode_batch,
    encode_messages,
    properties_to_string,
    string_to_properties,
)
from rmqemu.emulator.roles.store.message_store import offset_msg_id

STORE = "192.168.1.10:10911"


def record(**over: object) -> dict:
    r = {
        "topic": "TopicTest", "queueId": 2, "queueOffset": 5, "body": b"Hello",
        "properties": {"TAGS": "TagA", "UNIQ_KEY": "ABC"}, "bornTimestamp": 1700000000123,
        "bornHost": "10.0.0.7:54321", "storeTimestamp": 1700000000456, "reconsumeTimes": 1, "flag": 3,
        "sysFlag": 0, "commitLogOffset": 1234,
    }
    r.update(over)
    return r


# ------------------------------------------------------------------ properties


@pytest.mark.parametrize(("s", "expected"), [
    ("", {}),
    ("a\x01b", {"a": "b"}),
    ("TAGS\x01A\x02KEYS\x01k1 k2", {"TAGS": "A", "KEYS": "k1 k2"}),
    ("a\x01b\x02", {"a": "b"}),  # trailing separator
    ("\x02\x02a\x01b\x02\x02", {"a": "b"}),  # empty items
    ("a\x01", {}), ("\x01b", {}), ("ab", {}), ("a\x01\x02c\x01d", {"c": "d"}),  # empty value / name / no sep
    ("a\x01b\x01c", {"a": "b\x01c"}),  # the name ends at the first NAME_VALUE_SEPARATOR
    ("abc\x02d\x01e", {"d": "e"}),  # the separator found lies beyond the item: skipped
    ("a\x011\x02a\x012", {"a": "2"}),  # a later duplicate wins (HashMap.put)
    ("\u4e2d\x01\u6587", {"\u4e2d": "\u6587"}),
])
def test_string_to_properties_matches_java(s: str, expected: dict) -> None:
    assert string_to_properties(s) == expected


def test_properties_to_string_matches_java() -> None:
    assert properties_to_string({}) == ""
    assert properties_to_string({"a": "1", "b": "2"}) == "a\x011\x02b\x012"
    assert properties_to_string({"a": "1", "gone": None, "b": "2"}) == "a\x011\x02b\x012"  # type: ignore[dict-item]
    props = {"TAGS": "TagA", "KEYS": "k", "UNIQ_KEY": "7F00000100002A9F0000000000000001"}
    assert string_to_properties(properties_to_string(props)) == props


def test_crc32_is_java_utilall_crc32() -> None:
    assert crc32(b"123456789") == 0xCBF43926 & 0x7FFFFFFF  # the CRC-32 check value, masked non-negative
    assert crc32(b"") == 0


# ------------------------------------------------------------------ MessageExt


def golden_message_ext() -> bytes:
    """MessageDecoder.encode's layout (4.9, IPv4), written out field by field."""
    body, topic = b"Hello", b"TopicTest"
    props = "TAGS\x01TagA\x02UNIQ_KEY\x01ABC".encode()
    total = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + len(body) + 1 + len(topic) + 2 + len(props)
    return b"".join([
        struct.pack(">i", total),                   # 1 TOTALSIZE
        struct.pack(">i", -626843481),              # 2 MAGICCODE
        struct.pack(">i", 0x77D18982),              # 3 BODYCRC: CRC-32("Hello") 0xF7D18982 & 0x7FFFFFFF
        struct.pack(">i", 2),                       # 4 QUEUEID
        struct.pack(">i", 3),                       # 5 FLAG
        struct.pack(">q", 5),                       # 6 QUEUEOFFSET
        struct.pack(">q", 1234),                    # 7 PHYSICALOFFSET
        struct.pack(">i", 0),                       # 8 SYSFLAG
        struct.pack(">q", 1700000000123),           # 9 BORNTIMESTAMP
        bytes([10, 0, 0, 7]), struct.pack(">i", 54321),      # 10 BORNHOST
        struct.pack(">q", 1700000000456),           # 11 STORETIMESTAMP
        bytes([192, 168, 1, 10]), struct.pack(">i", 10911),  # 12 STOREHOST
        struct.pack(">i", 1),                       # 13 RECONSUMETIMES
        struct.pack(">q", 0),                       # 14 Prepared Transaction Offset
        struct.pack(">i", len(body)), body,         # 15 BODY
        struct.pack(">b", len(topic)), topic,       # 16 TOPIC
        struct.pack(">h", len(props)), props,       # 17 properties
    ])


def test_golden_message_ext() -> None:
    assert MESSAGE_MAGIC_CODE == -626843481
    assert encode_messages([record()], STORE) == golden_message_ext()


def test_decode_golden_and_msg_id() -> None:
    [m] = decode_messages(golden_message_ext())
    assert m["msgId"] == m["offsetMsgId"] == "C0A8010A00002A9F00000000000004D2" == offset_msg_id(STORE, 1234)
    expected = {k: v for k, v in record().items()}
    assert {k: m[k] for k in expected} == expected
    assert m["storeHost"] == STORE and m["storeSize"] == len(golden_message_ext()) and m["bodyCRC"] == 0x77D18982
    assert m["preparedTransactionOffset"] == 0


@pytest.mark.parametrize("store", ["127.0.0.1:10911", "10.1.2.3:1", "172.16.0.9:65535", "localhost:10911"])
def test_msg_id_is_message_store_offset_msg_id(store: str) -> None:
    for offset in (0, 1, 2**40 + 17):
        [m] = decode_messages(encode_messages([record(commitLogOffset=offset)], store))
        assert m["msgId"] == offset_msg_id(store, offset)


def test_round_trip_of_several_records() -> None:
    records = [record(queueOffset=i, commitLogOffset=1000 * i, body=f"m{i}".encode(), properties={"i": str(i)})
               for i in range(5)]
    records.append(record(properties={}, body=b"", topic="%RETRY%CG", storeHost="10.9.9.9:10921"))
    out = decode_messages(encode_messages(records, STORE))
    assert [m["body"] for m in out] == [r["body"] for r in records]
    assert [m["properties"] for m in out] == [r["properties"] for r in records]
    assert [m["commitLogOffset"] for m in out] == [r["commitLogOffset"] for r in records]
    assert out[-1]["topic"] == "%RETRY%CG" and out[-1]["storeHost"] == "10.9.9.9:10921"  # a record's own wins
    assert out[0]["storeHost"] == STORE


def test_str_body_is_utf8_and_properties_may_be_a_string() -> None:
    [m] = decode_messages(encode_messages([record(body="h\u00e9llo", properties="a\x01b")], STORE))
    assert m["body"] == "h\u00e9llo".encode() and m["properties"] == {"a": "b"}


def test_ipv6_host_flags_are_cleared_and_refused() -> None:
    data = encode_messages([record(sysFlag=0x30 | 0x1)], STORE)
    [m] = decode_messages(data)
    assert m["sysFlag"] == 0x1
    bad = bytearray(data)
    bad[36:40] = struct.pack(">i", 0x10)  # SYSFLAG_POSITION
    with pytest.raises(BadFrame, match="IPv6"):
        decode_messages(bytes(bad))


def test_a_compressed_body_stays_byte_identical() -> None:
    original = b"payload " * 1000
    deflated = zlib.compress(original)
    [m] = decode_messages(encode_messages([record(body=deflated, sysFlag=1)], STORE))
    assert m["body"] == deflated and m["sysFlag"] == 1 and zlib.decompress(m["body"]) == original
    assert m["bodyCRC"] == zlib.crc32(deflated) & 0x7FFFFFFF  # the CRC of the stored (compressed) bytes


def test_a_4mb_binary_body_round_trips() -> None:
    body = random.Random(3).randbytes(4 * 1024 * 1024)
    [m] = decode_messages(encode_messages([record(body=body)], STORE))
    assert m["body"] == body


def test_records_rocketmq_could_not_hold_are_value_errors() -> None:
    with pytest.raises(ValueError, match="topic"):
        encode_messages([record(topic="t" * 128)], STORE)
    with pytest.raises(ValueError, match="properties"):
        encode_messages([record(properties={"k": "v" * 40000})], STORE)
    with pytest.raises(ValueError):
        encode_messages([record(queueId=2**31)], STORE)


@pytest.mark.parametrize(("first", "second", "decode"), [
    (encode_messages([record()], STORE), encode_messages([record(queueOffset=6, body=b"x" * 50)], STORE),
     decode_messages),
    (encode_batch([(0, b"body", {"a": "b"})]), encode_batch([(1, b"second", {})]), decode_batch),
], ids=["message_ext", "batch"])
def test_truncated_input_at_every_length_is_bad_frame(first: bytes, second: bytes, decode: Callable) -> None:
    """Two messages cut anywhere: the first alone where the cut falls between them, else BadFrame."""
    data = first + second
    for cut in range(1, len(data)):
        if cut == len(first):
            assert len(decode(data[:cut])) == 1
            continue
        with pytest.raises(BadFrame):
            decode(data[:cut])


@pytest.mark.parametrize(("pos", "value", "fmt"), [
    (0, 10, ">i"), (0, -1, ">i"), (0, 10**6, ">i"),  # totalSize too small, negative, beyond the data
    (4, 0, ">i"), (4, -626843477, ">i"),  # magic: the client batch's 0, 5.x's v2
    (84, -1, ">i"), (84, 10**6, ">i"),  # body length
    (52, 70000, ">i"), (68, -1, ">i"),  # bornHost / storeHost port out of range
])
def test_inconsistent_message_ext_is_bad_frame(pos: int, value: int, fmt: str) -> None:
    data = bytearray(golden_message_ext())
    data[pos : pos + struct.calcsize(fmt)] = struct.pack(fmt, value)
    with pytest.raises(BadFrame):
        decode_messages(bytes(data))


# ------------------------------------------------------------------ SEND_BATCH_MESSAGE


def golden_batch_message(flag: int, body: bytes, props: str) -> bytes:
    """MessageDecoder.encodeMessage: only flag, body and properties (magic and CRC are 0s)."""
    p = props.encode()
    total = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(p)
    return (struct.pack(">i", total) + struct.pack(">i", 0) + struct.pack(">i", 0) + struct.pack(">i", flag)
            + struct.pack(">i", len(body)) + body + struct.pack(">h", len(p)) + p)


def test_golden_batch() -> None:
    data = golden_batch_message(0, b"one", "UNIQ_KEY\x01U1\x02TAGS\x01A") + golden_batch_message(7, b"", "")
    assert decode_batch(data) == [(0, b"one", {"UNIQ_KEY": "U1", "TAGS": "A"}), (7, b"", {})]
    assert encode_batch([(0, b"one", {"UNIQ_KEY": "U1", "TAGS": "A"}), (7, "", {})]) == data
    assert decode_batch(b"") == []


def test_batch_round_trip_with_binary_and_compressed_bodies() -> None:
    msgs = [(0, zlib.compress(b"z" * 5000), {"UNIQ_KEY": "U1"}), (1, bytes(range(256)), {"k": "v"})]
    assert decode_batch(encode_batch(msgs)) == msgs


@pytest.mark.parametrize(("pos", "value", "fmt"), [
    (0, 5, ">i"), (0, -1, ">i"), (0, 10**6, ">i"),  # totalSize disagrees with the parts
    (16, -1, ">i"), (16, 10**6, ">i"),  # body length
    (24, -1, ">h"), (24, 30000, ">h"),  # properties length (body is 4 bytes: at 20 + 4)
])
def test_inconsistent_batch_is_bad_frame(pos: int, value: int, fmt: str) -> None:
    data = bytearray(encode_batch([(0, b"body", {"a": "b"})]))
    data[pos : pos + struct.calcsize(fmt)] = struct.pack(fmt, value)
    with pytest.raises(BadFrame):
        decode_batch(bytes(data))


@pytest.mark.parametrize(("decode", "good", "seed"), [
    (decode_messages, encode_messages([record(), record(body=b"\x00\x01")], STORE), 5),
    (decode_batch, encode_batch([(0, b"body", {"a": "b"}), (2, b"\xff" * 30, {"UNIQ_KEY": "x"})]), 9),
], ids=["message_ext", "batch"])
def test_corrupt_input_decodes_or_is_bad_frame(decode: Callable[[bytes], object], good: bytes, seed: int) -> None:
    """Bytes flipped at random: whatever the decoder makes of them, it raises nothing but BadFrame."""
    rng = random.Random(seed)
    for _ in range(3000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            decode(bytes(data))
        except BadFrame:
            pass
