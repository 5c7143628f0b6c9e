"""Hostile input on the remoting port (issue 26): what anyone on the host can send to a node's
real-client port must close at most its own connection. The fuzz frames of the ZeroMQ tests, in
RocketMQ's framing, plus byte-level garbage; afterwards every node is alive, the emulated
producer still gets sends ok, and a well-formed route request on the remoting port is answered.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any

from rmqemu import wire_json
from rmqemu.emulator.protocol import Frame, remoting
from tests.integration.hostile_lib import fuzz_frames
from tests.integration.test_hostile_wire import TOPO as HOSTILE_TOPO
from tests.integration.test_hostile_wire import assert_all_alive_and_routing, now_ms

TOPO: dict[str, Any] = {**HOSTILE_TOPO, "name": "hostile-remoting", "remoting": True}
GARBAGE = [
    (1 << 31 - 1).to_bytes(4, "big"),  # 2 GiB announced
    b"\xff\xff\xff\xff",  # a negative length
    struct.pack(">iI", 8, (1 << 24) | 4) + b"\x00" * 4,  # ROCKETMQ binary header type
    struct.pack(">iI", 8, 400) + b"{}",  # a header longer than its frame
    struct.pack(">iI", 6, 2) + b"[]",  # a header that is not an object
    bytes(random.Random(3).randrange(256) for _ in range(4096)),
]


def as_remoting(parts: list[bytes]) -> bytes:
    """A ZeroMQ fuzz frame (JSON header with ``fields``, body) in RocketMQ's framing."""
    header = parts[0]
    try:
        value = wire_json.loads(header)
        if isinstance(value, dict) and "fields" in value:
            value["extFields"] = value.pop("fields")
            header = wire_json.dumps(value)
    except ValueError:
        pass
    body = parts[1] if len(parts) > 1 else b""
    return struct.pack(">iI", 4 + len(header) + len(body), len(header) & 0xFFFFFF) + header + body


def send_raw(addr: str, data: bytes) -> None:
    host, _, port = addr.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        try:
            s.sendall(data)
        except OSError:  # closed by the node while we still wrote: what a bad frame gets
            pass


def route_answer(addr: str, topic: str) -> Frame:
    host, _, port = addr.rpartition(":")
    decoder = remoting.StreamDecoder()
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(remoting.encode(Frame(105, opaque=9, fields={"topic": topic})))
        while True:
            data = s.recv(65536)
            assert data, "the namesrv closed a well-formed request's connection"
            frames = decoder.feed(data)
            if frames:
                return frames[0]


def test_garbage_and_fuzz_on_the_remoting_port_close_only_their_connections(start_cluster) -> None:
    c = start_cluster(TOPO)
    since = now_ms()
    ports = sorted(c.launcher.remoting_addrs.values())
    assert len(ports) == 4  # namesrv-0, broker-a-0, broker-a-1, broker-b-0
    for addr in ports:
        for data in GARBAGE:
            send_raw(addr, data)
        for i, frame in enumerate(fuzz_frames(seed=26, count=150)):
            send_raw(addr, as_remoting(frame) * (1 + i % 3))  # several frames per connection too
    assert_all_alive_and_routing(c, since)
    namesrv = c.launcher.remoting_addrs["namesrv-0"]
    answer = route_answer(namesrv, "OrderTopic")
    assert answer.code == 0 and b"brokerDatas" in answer.body
    assert not c.events("node.error"), c.events("node.error")[:3]  # odd values answered, never a role's exception
    bad = c.events("wire.bad_frame")
    assert any(str(e.get("peer", "")).startswith("client@") for e in bad), "bad frames are logged by client name"
    deadline = time.monotonic() + 30
    while any(c.state(n)["_runtime"]["transport"].get("remoting_clients") for n in c.launcher.remoting_addrs):
        assert time.monotonic() < deadline, "connections of the fuzzing client were left open"
        time.sleep(0.1)
