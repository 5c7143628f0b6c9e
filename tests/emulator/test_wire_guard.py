"""The decoders against hostile input, pure (no sockets): every input is a Frame or a BadFrame.

Also the pieces the transports build on: the event rate limit and the HMAC helpers.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu import jsonlines
from rmqemu.emulator.protocol import (
    MAX_HEADER_BYTES,
    MAX_JSON_DEPTH,
    BadFrame,
    Flag,
    Frame,
    decode,
    encode,
    loads_checked,
    request,
)
from rmqemu.emulator.transport import _auth
from rmqemu.emulator.transport._guard import GLOBAL_PER_S, EventGate

HOSTILE_HEADERS = [
    b'{"code": 1e400, "opaque": 1, "flag": 0}',  # OverflowError in int(inf): killed namesrv-0
    b"[" * 100_000,  # RecursionError: killed broker-b-0
    b'{"code": 10, "fields": ' + b"[" * 100_000 + b"}",
    b'{"code": NaN}', b'{"code": Infinity}', b'{"code": -Infinity}',
    b'{"code": 10, "opaque": 1e400}', b'{"code": 10, "fields": {"queueId": 1e400}}',
    b'{"code": 10, "fields": {"queueId": -1e999}}',
    b'{"code": 10, "opaque": 123456789012345678901234567890}',
    b'{"code": 10, "fields": {"x": ' + b"9" * 4000 + b"}}",  # below Python's int-digit limit, above int64
    b'{"code": 10, "fields": {"x": ' + b"9" * 5000 + b"}}",  # above it (ValueError in json)
    b'{"code": 10, "fields": {"a": ' + b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1) + b"}}",
    b'{"code": "10"}', b'{"code": true}', b'{"code": 10.5}', b'{"code": null}', b'{"opaque": 1}',
    b'{"code": 10, "flag": 7}', b'{"code": 10, "flag": -1}', b'{"code": 10, "fields": [1]}',
    b'{"code": 10, "remark": 5}', b"\xff\xfe\x00", b"", b"null", b"[]", b'"x"', b"1e400",
    b'{"code": 10}' + b" " * (MAX_HEADER_BYTES + 1),
]


@pytest.mark.parametrize("header", HOSTILE_HEADERS, ids=lambda h: repr(h[:40]))
def test_hostile_headers_are_bad_frames(header: bytes) -> None:
    with pytest.raises(BadFrame):
        decode([header, b""])


@pytest.mark.parametrize("body", [b"[" * 100_000, b"1e400", b'{"a": NaN}', b"[" * 65 + b"]" * 65,
                                  b'{"a": [' + b'{"b": [' * 40 + b"]}" * 40 + b"]}", b"\xff"])
def test_hostile_json_bodies_are_bad_frames(body: bytes) -> None:
    with pytest.raises(BadFrame):
        Frame(code=10, body=body).json_body()


def test_sane_frames_still_round_trip() -> None:
    frame = request(10, {"topic": "T", "queueId": 3, "bornTimestamp": 2 ** 62, "ratio": 0.5, "ok": True},
                    {"deep": [[[[1]]]], "offset": -(2 ** 63)})
    back = decode(encode(frame.with_opaque(2 ** 31)))
    assert back == frame.with_opaque(2 ** 31)
    assert back.json_body() == {"deep": [[[[1]]]], "offset": -(2 ** 63)}
    nested = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH  # exactly the limit is fine
    assert loads_checked(nested.encode(), "body", 1000) == json.loads(nested)
    assert decode([b'{"code": 11, "flag": 1}']).flag == Flag.RESPONSE  # one part: empty body
    wide = loads_checked(b'{"a": 123456789012345678901234567890, "b": -9223372036854775808}', "body", 1000)
    assert wide["b"] == -(2 ** 63) and isinstance(wide["a"], float)  # ints are 64-bit; wider ones finite floats


def test_seeded_fuzz_of_decode_yields_frames_or_bad_frames_only() -> None:
    """Mutations of real headers and random bytes, 5,000 of them: nothing else escapes."""
    rng = random.Random(1313)
    seeds = [encode(request(code, {"topic": "T", "queueId": 1, "n": 1.5}, {"k": [1, {"v": "x"}]}))[0]
             for code in (10, 34, 103, 105, 310)]
    pieces = [b"1e400", b"NaN", b"[" * 200, b"{" * 200, b"-", b'"', b"\\u0000", b"\xff", b"9" * 30, b"true",
              b"null", b"}", b"]", b",", b":"]
    frames = bad = 0
    for _ in range(5000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data) + 1)
            if rng.random() < 0.5:
                data[at:at + rng.randint(0, 3)] = rng.choice(pieces)
            else:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        parts = [bytes(data)] + ([rng.choice([b"", b"[" * 5000, b"{}", b"\x00"])] if rng.random() < 0.9 else [])
        try:
            frame = decode(parts)
            frames += 1
            try:
                frame.json_body()
            except BadFrame:
                pass
        except BadFrame:
            bad += 1
    assert bad > 1000 and frames + bad == 5000


def test_event_gate_lets_one_per_key_per_second_and_counts_the_rest() -> None:
    now = [0.0]
    gate = EventGate(clock=lambda: now[0])
    assert gate.admit("mallory") == 0
    assert [gate.admit("mallory") for _ in range(5)] == [None] * 5
    assert gate.admit("eve") == 0  # another peer has its own budget
    now[0] = 1.0
    assert gate.admit("mallory") == 5  # reports what it held back
    assert gate.admit("mallory") is None


def test_event_gate_caps_a_flood_of_fresh_names() -> None:
    now = [0.0]
    gate = EventGate(clock=lambda: now[0])
    admitted = [gate.admit(f"peer-{i}") for i in range(10_000)]
    assert sum(a is not None for a in admitted) == GLOBAL_PER_S and gate.total_held == 10_000 - GLOBAL_PER_S


def test_hmac_tags_bind_key_context_and_payload() -> None:
    key = _auth.new_key()
    t = _auth.tag(key, _auth.TO_NODE + b"broker-a-0", b'{"seq":1}')
    assert _auth.verify(key, _auth.TO_NODE + b"broker-a-0", b'{"seq":1}', t)
    assert not _auth.verify(key, _auth.TO_NODE + b"broker-b-0", b'{"seq":1}', t)  # another node
    assert not _auth.verify(key, _auth.FROM_NODE + b"broker-a-0", b'{"seq":1}', t)  # reflected back
    assert not _auth.verify(key, _auth.TO_NODE + b"broker-a-0", b'{"seq":2}', t)
    assert not _auth.verify(_auth.new_key(), _auth.TO_NODE + b"broker-a-0", b'{"seq":1}', t)
    assert not _auth.verify(key, _auth.TO_NODE + b"broker-a-0", b'{"seq":1}', t[:-1])
    assert _auth.supervisor_key("tok") == _auth.supervisor_key("tok") != _auth.supervisor_key("tok2")
    assert _auth.fresh_seq(2, 1) and not _auth.fresh_seq(1, 1) and not _auth.fresh_seq(True, 0)
    assert not _auth.fresh_seq("2", 1) and not _auth.fresh_seq(2.5, 1)


def test_a_flood_of_refused_requests_is_rate_limited_in_the_event_log(tmp_path) -> None:
    from rmqemu.emulator.node.io import EventLog

    log = EventLog(tmp_path / "n.jsonl", "namesrv-0", lambda: 0.0)
    for _ in range(1000):
        log.write("wire.bad_frame", {"peer": "mallory", "code": 103, "error": "KeyError: 'brokerName'"})
    log.write("wire.bad_frame", {"peer": "mallory", "reason": "header is not JSON"})  # the transport's: own gate
    log.close()
    lines = jsonlines.records(tmp_path / "n.jsonl")
    assert [("code" in e, e.get("suppressed")) for e in lines] == [(True, 0), (False, None)]


lone_surrogates = st.integers(0xD800, 0xDFFF).map(chr)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.characters(codec="utf-8"), lone_surrogates), max_size=12))
def test_a_lone_surrogate_escape_reads_as_java_stores_it_and_nothing_else_changes(chars: list[str]) -> None:
    """JavaScript (ali-ons) writes half an emoji in a key as a ``\\udXXX`` escape; RocketMQ's
    broker stores a ``?`` for it. "x" between the characters: no two halves make a pair."""
    value = "x".join(chars)
    header = json.dumps({"code": 10, "extFields": {"keys": value, "path": "C:\\ud800"}}).encode()
    got = loads_checked(header, "header", MAX_HEADER_BYTES)
    assert got["extFields"]["keys"] == "".join("?" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    assert got["extFields"]["path"] == "C:\\ud800"  # an escaped backslash before "u" is text
    assert loads_checked(b'["\\ud83d\\ude00", "\\uD83D"]', "body", 100) == ["\U0001F600", "?"]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40).filter(lambda b: not any(c in b for c in b'"\\') and all(c >= 0x20 for c in b)))
def test_bytes_that_are_not_utf8_read_as_javas_new_string_reads_them(raw: bytes) -> None:
    """``new String(bytes, UTF_8)``: each malformed sequence becomes U+FFFD; the rest is kept."""
    got = loads_checked(b'{"code": 10, "remark": "' + raw + b'"}', "header", MAX_HEADER_BYTES)
    assert got["remark"] == raw.decode("utf-8", "replace")
