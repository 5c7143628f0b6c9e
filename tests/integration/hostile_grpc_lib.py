"""What the gRPC hostile-input test (test_hostile_grpc.py) sends, and how: raw calls on a proxy's
MessagingService with grpcio (no (de)serializer, so any bytes go out), malformed bodies that no
request type parses, forged receipt handles as a hypothesis strategy, an endless Telemetry
stream and a thousand held Telemetry streams. Every call has a deadline; every helper closes
what it opened, whatever happens.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import threading
import time
from typing import Any, Iterator

import grpc
from google.protobuf.message import DecodeError, Message
from grpc import aio
from hypothesis import strategies as st

from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy import v2

PATH = "/apache.rocketmq.v2.MessagingService/"
CLIENT = (("x-mq-client-id", "mallory@hostile"), ("x-mq-language", "PYTHON"))
DEADLINE_S = 10.0
#: bytes that may not parse: bad varints and tags, truncated fields, a group never closed, noise
CANDIDATES = [b"\xff\xff\xff", b"\x0a\x05ab", b"\x08", b"\x0f\x00", b"\x12\xff\xff\xff\xff\x0f", b"\x0b\x08\x01",
              b"\x80", b"\x0a\x02\x0a\x05", *(random.Random(42).randbytes(n) for n in (7, 64, 500))]
UNKNOWN = [PATH + "NoSuchRpc", "/apache.rocketmq.v1.MessagingService/SendMessage", "/grpc.health.v1.Health/Check",
           "/x/y", PATH.rstrip("/")]


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    """One HTTP/2 frame."""
    return struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream) + payload


#: not gRPC at all: HTTP/1.1, a TLS hello, a cut preface, frames of unknown type, headers that are
#: not HPACK, a window update of 2**31-1, 500 streams opened and never written, noise
NOT_GRPC = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(300),
            PREFACE[:10], PREFACE + h2(99, 0, 0, bytes(1000)), PREFACE + h2(4, 0, 0, b"") + h2(1, 4, 1, b"\xff" * 50),
            PREFACE + h2(4, 0, 0, b"") + h2(8, 0, 0, b"\x7f\xff\xff\xff") + h2(8, 0, 0, b"\x7f\xff\xff\xff"),
            PREFACE + h2(4, 0, 0, b"") + b"".join(h2(1, 4, 2 * i + 1, b"\x82\x86\x84") for i in range(500)),
            random.Random(7).randbytes(100_000)]


def send_raw(addr: str, data: bytes) -> None:
    """``data`` on a TCP connection of its own, then read what the server says (at most 2 s), close."""
    host, _, port = addr.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as s:
        try:
            s.sendall(data)
            s.settimeout(2)
            s.recv(65536)
        except OSError:  # refused or reset: what such bytes get
            pass


def malformed(method: str) -> list[bytes]:
    """The candidates that ``method``'s request type refuses to parse (at least 3 for each)."""
    out = []
    for body in CANDIDATES:
        try:
            v2.REQUESTS[method].FromString(body)
        except DecodeError:
            out.append(body)
    assert len(out) >= 3, (method, out)
    return out


def parse(method: str, raw: bytes) -> Any:
    return v2.RESPONSES[method].FromString(raw)


def unary(ch: grpc.Channel, method: str, request: Message | bytes, meta: tuple = CLIENT) -> Any:
    body = request if isinstance(request, bytes) else request.SerializeToString()
    return parse(method, ch.unary_unary(PATH + method)(body, timeout=DEADLINE_S, metadata=meta))


def server_stream(ch: grpc.Channel, method: str, request: Message | bytes, meta: tuple = CLIENT) -> list[Any]:
    """Every response of a server stream, read to its end (which must come before the deadline)."""
    body = request if isinstance(request, bytes) else request.SerializeToString()
    return [parse(method, r) for r in ch.unary_stream(PATH + method)(body, timeout=DEADLINE_S, metadata=meta)]


def telemetry(ch: grpc.Channel, body: bytes, meta: tuple = CLIENT) -> list[Any]:
    """One message on a Telemetry stream the client keeps open (a half-close would end the call
    before the answer): what the server wrote until it ended the stream."""
    ended = threading.Event()

    def requests() -> Iterator[bytes]:
        yield body
        ended.wait(DEADLINE_S)

    call = ch.stream_stream(PATH + "Telemetry")(requests(), timeout=DEADLINE_S, metadata=meta)
    try:
        return [parse("Telemetry", r) for r in call]
    finally:
        ended.set()
        call.cancel()


def flood_telemetry(ch: grpc.Channel, limit: int = 200_000) -> tuple[grpc.StatusCode, str, int]:
    """An endless Telemetry stream of Settings (bounded here by ``limit`` messages and the deadline):
    the status that ended it, its details and how many messages were written."""
    settings = pb.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER)).SerializeToString()
    written = [0]
    stop = threading.Event()

    def requests() -> Iterator[bytes]:
        while not stop.is_set() and written[0] < limit:
            written[0] += 1
            yield settings

    call = ch.stream_stream(PATH + "Telemetry")(requests(), timeout=DEADLINE_S * 2, metadata=CLIENT)
    try:
        for _ in call:
            pass
        return call.code(), call.details() or "", written[0]
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or "", written[0]
    finally:
        stop.set()
        call.cancel()


NUMBER = st.one_of(st.integers(-(2**70), 2**70),
                   st.sampled_from([2**63, 2**63 - 1, -(2**63), -(2**63) - 1, 2**64, 2**31, -1, 0]))
BROKER_NAMES = st.sampled_from(["broker-a", "broker-b", "broker-zz", "", "%RETRY%G1", "broker-a broker-b"])


def forged_handles(real: str) -> st.SearchStrategy[str]:
    """Receipt handles: any text; numbers of any size where a handle has them; a real handle with one
    field replaced (a number, another broker's name, text); the real one itself (sent with another
    group or topic by the test)."""
    parts = real.split(" ")

    def replace(at_value: tuple[int, str]) -> str:
        at, value = at_value
        return " ".join(parts[:at] + [value] + parts[at + 1:])

    field = st.one_of(NUMBER.map(str), BROKER_NAMES, st.text(max_size=12))
    return st.one_of(st.text(max_size=80), st.lists(NUMBER.map(str), min_size=8, max_size=10).map(" ".join),
                     st.tuples(st.integers(0, len(parts) - 1), field).map(replace), st.just(real))


async def _held_streams(addr: str, n: int, while_held: Any) -> tuple[int, Any]:
    channels = [aio.insecure_channel(addr, options=[("grpc.use_local_subchannel_pool", 1)]) for _ in range(n)]
    release = asyncio.Event()
    settings = pb.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER)).SerializeToString()

    async def requests() -> Any:
        yield settings
        await release.wait()

    calls = [ch.stream_stream(PATH + "Telemetry")(requests(), metadata=(("x-mq-client-id", f"held-{i}"),),
                                                   timeout=60) for i, ch in enumerate(channels)]
    try:
        firsts = await asyncio.wait_for(asyncio.gather(*(c.read() for c in calls)), 60)
        answered = sum(1 for raw in firsts if isinstance(raw, bytes) and parse("Telemetry", raw).status.code == pb.OK)
        return answered, await asyncio.get_running_loop().run_in_executor(None, while_held)
    finally:
        release.set()
        for c in calls:
            c.cancel()
        await asyncio.wait_for(asyncio.gather(*(ch.close() for ch in channels), return_exceptions=True), 30)


def held_telemetry_streams(addr: str, n: int, while_held: Any) -> tuple[int, Any, float]:
    """``n`` connections (a subchannel each), each with a Telemetry stream that wrote its Settings
    and stays open; ``while_held()`` runs on a thread once every stream has its answer. How many
    were answered OK, what ``while_held`` returned, and the seconds from the first connection to
    the last one closed."""
    started = time.monotonic()
    answered, result = asyncio.run(_held_streams(addr, n, while_held))
    return answered, result, time.monotonic() - started
