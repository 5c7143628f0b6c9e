"""What the hostile-input tests send: the frames that used to kill processes, a seeded generator
of malformed and crafted frames, and a raw DEALER that delivers them as any local user could."""

from __future__ import annotations

import json
import random
from typing import Iterator

import zmq

from rmqemu.emulator.protocol import RequestCode, encode, request

# The measured defects: OverflowError (int(inf)) and RecursionError in the decoders.
OVERFLOW = [b'{"code": 1e400, "opaque": 1, "flag": 0}', b""]
DEEP = [b"[" * 100_000, b""]
HOSTILE = [OVERFLOW, DEEP]

HEADER_KEYS = ("topic", "queueId", "brokerName", "brokerAddr", "clusterName", "brokerId", "consumerGroup",
               "producerGroup", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset", "bornTimestamp",
               "properties", "perm", "readQueueNums", "writeQueueNums", "haServerAddr", "key", "offset")
ODD_VALUES: tuple[object, ...] = (0, -1, 2 ** 63 - 1, -(2 ** 63), 2 ** 31, 1.5, -0.0, True, False, None, "", "x" * 300,
                                  [], {}, [1, [2, [3]]], {"a": {"b": 1}}, "127.0.0.1:1", "\u0000\uffff")
PIECES = (b"1e400", b"-1e400", b"NaN", b"Infinity", b"[" * 3000, b"{" * 3000, b"9" * 25, b"\xff\xfe",
          b'"', b"\\", b"}", b"]", b",", b":", b"true", b"null")


def fuzz_name(rng: random.Random) -> str:
    """Names no real topic, broker, group or cluster of a test topology has."""
    return "fz-" + "".join(rng.choice("abcdef0123456789") for _ in range(8))


def crafted(rng: random.Random) -> list[bytes]:
    """A well-formed frame with a real request code and odd header fields and body."""
    fields: dict[str, object] = {}
    for key in rng.sample(HEADER_KEYS, rng.randint(0, 8)):
        fields[key] = fuzz_name(rng) if key in ("topic", "brokerName", "clusterName", "consumerGroup",
                                                "producerGroup", "key") and rng.random() < 0.7 \
            else rng.choice(ODD_VALUES)
    body: object = rng.choice([None, b"", b"\x00" * 64, {"topicConfigTable": {fuzz_name(rng): {"perm": "x"}}},
                               [1, "a", None], {"consumerDataSet": [{"groupName": fuzz_name(rng)}]},
                               b"[" * 5000, b"1e400", {"x": [[[[[]]]]]}])
    code = int(rng.choice(list(RequestCode)))
    frame = request(code, fields, body).with_opaque(rng.choice([0, 1, 2 ** 31 - 1, rng.randrange(1 << 30)]))
    return encode(frame)


def mutated(rng: random.Random) -> list[bytes]:
    header = bytearray(crafted(rng)[0])
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(header) + 1)
        if rng.random() < 0.5:
            header[at:at + rng.randint(0, 3)] = rng.choice(PIECES)
        else:
            header[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return [bytes(header), b""]


def malformed(rng: random.Random) -> list[bytes]:
    kind = rng.randrange(6)
    if kind == 0:
        return [bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))]
    if kind == 1:  # wrong part counts
        return [b"{}"] * rng.choice([3, 4, 7])
    if kind == 2:  # a header over the size limit
        return [b'{"code": 10, "remark": "' + b"a" * (300 * 1024) + b'"}', b""]
    if kind == 3:
        return rng.choice(HOSTILE)
    if kind == 4:  # old-style control messages, a claimed node name, a bad tag
        return [b"broker-a-0", json.dumps({"t": "ready", "seq": 1, "info": {"addr": "127.0.0.1:1"}}).encode(),
                rng.randbytes(32)]
    return [json.dumps({"t": "ack", "token": "guess", "cmd_id": "c1", "ok": True}).encode()]


def fuzz_frames(seed: int, count: int) -> Iterator[list[bytes]]:
    rng = random.Random(seed)
    for _ in range(count):
        yield rng.choice((crafted, mutated, malformed))(rng)


# glibc's rand() with its default seed starts 1804289383, 846930886: an unseeded libzmq numbers a
# new ROUTER's anonymous peers from 0x00 + 6b8b4567 upwards, in every process
UNSEEDED_FIRST_ROUTING_ID = 0x6B8B4567


def collide_routing_ids(endpoint: str, claims: int = 8) -> None:
    """Claim the routing ids libzmq would give the next anonymous peers, then connect anonymous
    peers: a collision trips an assertion in libzmq (the process aborts) unless the ids are not
    predictable."""
    ctx = zmq.Context()
    socks = []
    try:
        for i in range(claims):
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.setsockopt(zmq.IDENTITY, b"\x00" + (UNSEEDED_FIRST_ROUTING_ID + i).to_bytes(4, "big"))
            sock.connect(endpoint if endpoint.startswith("tcp://") else "tcp://" + endpoint)
            sock.send_multipart([b"claim", b""])
            socks.append(sock)
        for _ in range(claims):
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.connect(endpoint if endpoint.startswith("tcp://") else "tcp://" + endpoint)
            sock.send_multipart([b"anonymous", b""])
            socks.append(sock)
    finally:
        for sock in socks:
            sock.close()
        ctx.term()


def deliver(endpoint: str, frames: list[list[bytes]], identity: bytes | None = b"mallory") -> None:
    """Send every frame from one DEALER and close it only once they are all on the wire."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 10_000)  # close() waits until the queue is flushed
    sock.setsockopt(zmq.SNDHWM, 0)
    if identity is not None:
        sock.setsockopt(zmq.IDENTITY, identity)
    try:
        sock.connect(endpoint if endpoint.startswith("tcp://") else "tcp://" + endpoint)
        for frame in frames:
            sock.send_multipart(frame)
    finally:
        sock.close()
        ctx.term()
