"""Producer bodies (``body:``, emulator/roles/client/bodies.py): their size and kind for any seed, the same
bodies for the same seed, and a batch of them stored and pulled back byte for byte."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqemu.emulator.protocol import RequestCode
from rmqemu.emulator.roles.client.bodies import DRAWN, KINDS, LINE_BREAKS, make_body
from rmqemu.emulator.roles.client.workload import MessageFactory, OutgoingMessage, ProducerWorkload
from rmqemu.emulator.roles.common.message import body_bytes

from .broker_helpers import broker, heartbeat, pull
from .test_client_producer import answer_route, make, route

SEEDS = st.integers(-(2**63), 2**63 - 1)
SIZES = st.integers(0, 3000)


def is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@given(seed=SEEDS, size=SIZES, kind=st.sampled_from(KINDS))
def test_any_seed_gives_bodies_of_the_size_and_kind_asked(seed: int, size: int, kind: str) -> None:
    rng = random.Random(seed)
    bodies = [make_body(kind, size, f"pg-0-1-{i}", rng) for i in range(3)]
    assert all(len(b) == size for b in bodies)
    if kind == "text":
        assert all(is_utf8(b) for b in bodies)  # UTF-8 of whole characters: size is exact, no lone surrogate
    if kind == "bytes":
        assert not any(is_utf8(b) for b in bodies if b)  # never text, so the store keeps them as body64
    if kind == "filler":
        assert bodies == [(f"pg-0-1-{i}|".encode() + b"x" * size)[:size] for i in range(3)]


@given(seed=SEEDS, size=SIZES, kind=st.sampled_from(KINDS))
def test_the_same_seed_gives_the_same_bodies(seed: int, size: int, kind: str) -> None:
    one, two = random.Random(seed), random.Random(seed)
    assert [make_body(kind, size, "m", one) for _ in range(4)] == [make_body(kind, size, "m", two) for _ in range(4)]


def test_text_is_rich_in_what_breaks_line_readers_and_mixed_draws_every_kind() -> None:
    rng = random.Random(35)
    texts = [make_body("text", 128, "m", rng).decode("utf-8") for _ in range(20)]
    seen = set("".join(texts))
    assert set(LINE_BREAKS) | {"\x00", '"', "\\"} <= seen
    assert any(ord(ch) > 0xFFFF for ch in seen)  # astral plane: a surrogate pair in Java and JSON
    assert sum(any(ch in t for ch in "\x85\u2028\u2029") for t in texts) >= 18  # what orjson leaves unescaped

    def kind(body: bytes) -> str:
        return "filler" if body.startswith(b"m|") else "text" if is_utf8(body) else "bytes"
    mixed = [kind(make_body("mixed", 64, "m", rng)) for _ in range(60)]
    assert {k: mixed.count(k) for k in DRAWN} == {k: pytest.approx(20, abs=10) for k in DRAWN}


def test_the_workload_key_defaults_to_filler_and_names_a_bad_value() -> None:
    assert ProducerWorkload.from_dict({"topics": ["T"]}).body == "filler"
    for bad in ("txt", 3, None, ["text"]):
        with pytest.raises(ValueError, match=r"workload.body: expected one of filler, text, bytes, mixed, got "):
            ProducerWorkload.from_dict({"topics": ["T"], "body": bad})


def test_the_factory_draws_bodies_apart_from_keys() -> None:
    """A body kind changes the bodies only: message keys come from the producer's own draws."""
    def run(body: str) -> list[OutgoingMessage]:
        w = ProducerWorkload.from_dict({"topics": ["T"], "size": 48, "keys": True, "body": body})
        f = MessageFactory("pg-0", w, random.Random(1), random.Random(2))
        return [f.next_message() for _ in range(5)]
    filler, text = run("filler"), run("text")
    assert [m.properties for m in filler] == [m.properties for m in text]
    assert all(len(m.body) == 48 and is_utf8(m.body) for m in text) and filler[0].body.startswith(b"pg-0-0-1|")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(st.one_of(st.binary(max_size=200), st.text(max_size=60).map(str.encode),
                                 st.sampled_from([make_body(k, 90, "m", random.Random(i)) for k in DRAWN
                                                  for i in range(3)])), min_size=2, max_size=6))
def test_a_batch_of_any_bodies_is_stored_and_pulled_back_unchanged(bodies: list[bytes]) -> None:
    """rmqemu's own batch (a JSON list: ``body`` or ``body64``) from the producer to the store and
    out of a pull, byte for byte; a body that is no UTF-8 used to come back with U+FFFD in it."""
    producer, b = make(), broker(config={"autoCreateTopicEnable": True})
    msgs = [OutgoingMessage("T", body, {"UNIQ_KEY": f"m{i}"}) for i, body in enumerate(bodies)]
    producer.run(lambda now: producer.role.send(msgs, "sync", now))
    answer_route(producer, route("broker-a"))
    req = producer.pending_to(code=RequestCode.SEND_BATCH_MESSAGE)[0]
    answer = b.serve(req, channel="prod-ch", peer="pg-1-0")
    assert answer is not None and answer.code == 0, answer
    qid = int(answer.fields["queueId"])
    heartbeat(b, "cg-0", "cg", {"T": 1}, "cons-ch")
    found, _ = pull(b, "T", queue_id=qid)
    assert found is not None and found.code == 0, found
    assert [body_bytes(m) for m in found.json_body()] == bodies
