"""RocketMQ's TCP remoting framing (emulator/protocol/remoting.py), pure: bytes in, frames out.

Round trips, frames cut anywhere, and every hostile-input rule: each bad input is a BadFrame
(the connection gets closed), never another exception, and an oversized frame is refused from
its length field alone, before its bytes arrive.
"""

from __future__ import annotations

import json
import random
import struct

import pytest

from rmqemu.emulator.protocol import MAX_HEADER_BYTES, BadFrame, Flag, Frame
from rmqemu.emulator.protocol.remoting import (
    MAX_FRAME_BYTES,
    ROCKETMQ_VERSION,
    StreamDecoder,
    encode,
    expand_send_v2,
)


def raw(header: bytes | dict, body: bytes = b"", serialize: int = 0, length: int | None = None,
        header_len: int | None = None) -> bytes:
    """A frame built by hand from the wire layout, with any field overridable (to break it)."""
    h = json.dumps(header).encode() if isinstance(header, dict) else header
    hl = len(h) if header_len is None else header_len
    total = 4 + len(h) + len(body) if length is None else length
    return struct.pack(">i", total) + struct.pack(">I", (serialize << 24) | hl) + h + body


def decode_all(data: bytes) -> list[Frame]:
    return StreamDecoder().feed(data)


def header_of(wire: bytes) -> dict:
    (word,) = struct.unpack_from(">I", wire, 4)
    assert word >> 24 == 0  # JSON; ali-ons reads the whole word as the header length
    return json.loads(wire[8 : 8 + (word & 0xFFFFFF)])


FRAMES = [
    Frame(code=310, opaque=7, fields={"a": "PG", "b": "TopicTest", "e": "3"}, body=b"\x00\xffbody"),
    Frame(code=0, opaque=7, flag=Flag.RESPONSE, remark="ok", fields={"msgId": "C0A8", "queueOffset": "12"}),
    Frame(code=40, opaque=-5, flag=Flag.ONEWAY, fields={"consumerGroup": "CG"}),
    Frame(code=34, opaque=2**31 - 1, body=b'{"clientID":"x"}'),
    Frame(code=105, opaque=-(2**31), remark="", fields={"topic": "\u4e2d\u6587"}),
]


def test_encode_decode_round_trip() -> None:
    for frame in FRAMES:
        assert decode_all(encode(frame)) == [frame]


def test_encode_writes_what_a_java_node_writes() -> None:
    frame = Frame(code=0, opaque=9, flag=Flag.RESPONSE, fields={"queueId": 3, "ok": True, "no": False,
                                                                "gone": None, "ratio": 0.5})
    wire = encode(frame)
    (length,) = struct.unpack_from(">i", wire)
    assert length == len(wire) - 4
    assert header_of(wire) == {
        "code": 0, "language": "JAVA", "version": ROCKETMQ_VERSION, "opaque": 9, "flag": 1,
        "extFields": {"queueId": "3", "ok": "true", "no": "false", "ratio": "0.5"},
        "serializeTypeCurrentRPC": "JSON",
    }
    assert ROCKETMQ_VERSION == 401  # MQVersion.Version.V4_9_4.ordinal()
    bare = header_of(encode(Frame(code=10, opaque=1, flag=Flag.ONEWAY)))
    assert "remark" not in bare and "extFields" not in bare and bare["flag"] == 2
    assert header_of(encode(Frame(code=10, remark="why")))["remark"] == "why"
    assert encode(Frame(code=10, body=b"xyz")).endswith(b"xyz")


def test_ali_ons_typed_ext_fields_are_kept_as_they_came() -> None:
    header = {"code": 11, "language": "JAVA", "opaque": 3, "flag": 0, "version": 121,
              "extFields": {"queueId": 3, "queueOffset": 2**40, "unitMode": False, "ratio": 0.5, "topic": "T",
                            "remark": None}}
    [frame] = decode_all(raw(header))
    assert frame.fields == {"queueId": 3, "queueOffset": 2**40, "unitMode": False, "ratio": 0.5, "topic": "T"}
    assert type(frame.fields["queueId"]) is int and frame.fields["unitMode"] is False
    assert frame.remark is None and frame.body == b""


def test_optional_header_parts() -> None:
    [frame] = decode_all(raw({"code": 10}))  # fastjson's defaults: opaque 0, flag 0, no extFields
    assert frame == Frame(code=10)
    [frame] = decode_all(raw({"code": 10, "extFields": None, "remark": None, "language": "CPP"}))
    assert frame == Frame(code=10)


def test_the_senders_version_is_kept_for_what_it_gates() -> None:
    """ali-ons writes MQVersion ordinal 121 (V3_4_9), a 4.9.4 Java client 401; absent or not an
    int32 it is fastjson's 0. The emulator's own frames carry none and count as 4.9.4."""
    versions = [decode_all(raw({"code": 36, **extra}))[0].sender_version
                for extra in ({"version": 121}, {"version": 401}, {}, {"version": "7"}, {"version": 2**40})]
    assert versions == [121, 401, 0, 0, 0]
    assert Frame(code=36).sender_version == 401


def test_a_frame_cut_at_every_byte_decodes_the_same() -> None:
    data = b"".join(encode(f) for f in FRAMES)
    for cut in range(len(data) + 1):
        d = StreamDecoder()
        assert d.feed(data[:cut]) + d.feed(data[cut:]) == FRAMES, cut
    d = StreamDecoder()
    assert [f for i in range(len(data)) for f in d.feed(data[i : i + 1])] == FRAMES


def test_several_frames_in_one_chunk_and_a_partial_tail() -> None:
    data = b"".join(encode(f) for f in FRAMES)
    d = StreamDecoder()
    assert d.feed(data + data[:10]) == FRAMES
    assert d.feed(data[10:]) == FRAMES
    assert d.feed(b"") == []


def test_a_4mb_body_in_64kb_reads() -> None:
    body = random.Random(1).randbytes(4 * 1024 * 1024)
    data = encode(Frame(code=310, opaque=1, fields={"b": "T"}, body=body))
    d = StreamDecoder()
    out = [f for i in range(0, len(data), 65536) for f in d.feed(data[i : i + 65536])]
    assert len(out) == 1 and out[0].body == body and out[0].fields == {"b": "T"}


def test_an_oversized_frame_is_refused_from_its_length_field_alone() -> None:
    d = StreamDecoder()
    with pytest.raises(BadFrame, match="limit"):
        d.feed(struct.pack(">i", MAX_FRAME_BYTES - 3))  # 4 + length is one byte over Netty's 16 MiB
    assert d.dead
    assert StreamDecoder().feed(struct.pack(">i", MAX_FRAME_BYTES - 4)) == []  # exactly the limit: waits
    with pytest.raises(BadFrame):
        StreamDecoder().feed(struct.pack(">i", 2**31 - 1)[:4])
    with pytest.raises(ValueError):  # and encode never writes what a client would refuse
        encode(Frame(code=0, body=bytes(MAX_FRAME_BYTES)))


HOSTILE = {
    "negative length": struct.pack(">i", -1),
    "int32 min length": struct.pack(">i", -(2**31)),
    "zero length": struct.pack(">i", 0) + b"\x00" * 8,
    "length 3": struct.pack(">i", 3) + b"\x00" * 8,
    "header beyond frame": raw({"code": 10}, b"body", header_len=100),
    "header length 3 bytes max": raw({"code": 10}, header_len=0xFFFFFF),
    "header over the header limit": raw(b'{"code":10}' + b" " * MAX_HEADER_BYTES),
    "binary serialize type": raw({"code": 10}, serialize=1),
    "unknown serialize type": raw({"code": 10}, serialize=2),
    "empty header": raw(b""),
    "array header": raw(b"[]"),
    "number header": raw(b"1"),
    "string header": raw(b'"x"'),
    "null header": raw(b"null"),
    "code missing": raw({"opaque": 1}),
    "code string": raw({"code": "10"}),
    "code bool": raw({"code": True}),
    "code float": raw({"code": 10.0}),
    "code null": raw({"code": None}),
    "code over int32": raw({"code": 2**31}),
    "code under int32": raw({"code": -(2**31) - 1}),
    "code over int64": raw(b'{"code": 123456789012345678901234567890}'),
    "code 1e400": raw(b'{"code": 1e400}'),
    "opaque over int32": raw({"code": 10, "opaque": 2**31}),
    "opaque string": raw({"code": 10, "opaque": "1"}),
    "flag 3": raw({"code": 10, "flag": 3}),
    "flag 4": raw({"code": 10, "flag": 4}),
    "flag -1": raw({"code": 10, "flag": -1}),
    "flag bool": raw({"code": 10, "flag": True}),
    "flag null": raw({"code": 10, "flag": None}),
    "nested extFields object": raw({"code": 10, "extFields": {"a": {"b": 1}}}),
    "nested extFields array": raw({"code": 10, "extFields": {"a": [1]}}),
    "extFields array": raw({"code": 10, "extFields": [1]}),
    "extFields string": raw({"code": 10, "extFields": "a=b"}),
    "remark number": raw({"code": 10, "remark": 5}),
    "remark object": raw({"code": 10, "remark": {}}),
    "deep nesting": raw(b"[" * 100_000),
    "deep nesting in extFields": raw(b'{"code": 10, "extFields": {"a": ' + b"[" * 70 + b"]" * 70 + b"}}"),
    "truncated json": raw(b'{"code": 10'),
    "NaN": raw(b'{"code": NaN}'),
    "trailing garbage": raw(b'{"code": 10} x'),
}


@pytest.mark.parametrize("data", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_input_is_a_bad_frame_and_kills_the_decoder(data: bytes) -> None:
    d = StreamDecoder()
    with pytest.raises(BadFrame):
        d.feed(data)
    assert d.dead
    with pytest.raises(BadFrame):
        d.feed(encode(Frame(code=10)))  # nothing more from this connection


def test_a_header_that_is_not_utf8_reads_as_javas_new_string_reads_it() -> None:
    """RocketMQ decodes a header with ``new String(bytes, UTF_8)``: U+FFFD for each bad sequence."""
    [frame] = decode_all(raw(b'{"code": 10, "remark": "a\xff\xfeb"}'))
    assert frame.remark == "a\ufffd\ufffdb"


def test_binary_serialization_says_so() -> None:
    with pytest.raises(BadFrame, match="ROCKETMQ"):
        decode_all(raw({"code": 10}, serialize=1))


def test_hostile_prefixes_fail_as_soon_as_they_can() -> None:
    """The length is judged from 4 bytes, the header word from 8: no waiting for a body."""
    with pytest.raises(BadFrame):
        StreamDecoder().feed(struct.pack(">i", -1))
    with pytest.raises(BadFrame, match="beyond"):
        StreamDecoder().feed(struct.pack(">iI", 100, 200))
    with pytest.raises(BadFrame, match="ROCKETMQ"):
        StreamDecoder().feed(struct.pack(">iI", 100, (1 << 24) | 10))


def test_good_frames_before_a_bad_one_are_handed_over_on_the_error() -> None:
    d = StreamDecoder()
    with pytest.raises(BadFrame) as info:
        d.feed(encode(FRAMES[0]) + encode(FRAMES[1]) + struct.pack(">i", -1))
    assert info.value.frames == FRAMES[:2]  # type: ignore[attr-defined]


def test_random_garbage_is_frames_or_bad_frame() -> None:
    rng = random.Random(7)
    good = encode(FRAMES[0])
    for _ in range(2000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        d = StreamDecoder()
        try:
            for i in range(0, len(data), 7):
                d.feed(bytes(data[i : i + 7]))
        except BadFrame:
            pass


def test_expand_send_v2() -> None:
    short = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0",
             "i": "TAGS\u0001A", "j": "0", "k": "false", "l": "16", "m": "false", "x": "kept"}
    assert expand_send_v2(short) == {
        "producerGroup": "PG", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
        "queueId": "1", "sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "0",
        "properties": "TAGS\u0001A", "reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "16",
        "batch": "false", "x": "kept",
    }
    assert expand_send_v2({"b": "T", "e": 2, "k": True}) == {"topic": "T", "queueId": 2, "unitMode": True}
