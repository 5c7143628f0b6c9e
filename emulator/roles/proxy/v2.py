"""The v2 messages as the proxy reads and writes them: decoding a call's request, a ``Status`` on
every answer, timestamps and durations (docs/rocketmq-model.md §10.1).

A gRPC call reaches the role as frames whose body is the request's protobuf bytes (docs/design.md
§2, "The gRPC port"); :func:`decode` turns them into the method's request message, or None when
the bytes are not one (the proxy answers ``BAD_REQUEST``). Everything the client sees carries a
``Status`` whose code is never 0: the 5.x clients raise on code 0.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError, Message

from rmqemu.emulator.protocol import EmulatorCode, Flag, Frame
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb

Code = pb.Code
SERVICE = pb.DESCRIPTOR.services_by_name["MessagingService"]
REQUESTS: dict[str, type[Message]] = {m.name: getattr(pb, m.input_type.name) for m in SERVICE.methods}
RESPONSES: dict[str, type[Message]] = {m.name: getattr(pb, m.output_type.name) for m in SERVICE.methods}
STREAMING = frozenset(m.name for m in SERVICE.methods if m.server_streaming)
JAVA_LONG = (-(2**63), 2**63 - 1)


def decode(method: str, body: bytes) -> Message | None:
    """The request message of ``method`` parsed from ``body``; None for an unknown method or bytes
    that are not that message."""
    cls = REQUESTS.get(method)
    if cls is None:
        return None
    msg = cls()
    try:
        msg.ParseFromString(body)
    except (DecodeError, ValueError, RuntimeError):  # protobuf raises these on malformed input
        return None
    return msg


def status(code: int, message: str = "") -> pb.Status:
    return pb.Status(code=code, message=message)


def ok() -> pb.Status:
    return status(Code.OK, "OK")


def answer(call: Frame, message: Message, end: bool = False, where: dict[str, Any] | None = None) -> Frame:
    """The reply frame carrying ``message`` on the call ``call`` arrived on. ``where``: header fields
    only rmqemu's own wire carries (a send's real broker and queue, docs/design.md §2); the gRPC
    port sends the body alone."""
    fields: dict[str, Any] = {**(where or {}), **({"end": True} if end else {})}
    return Frame(code=EmulatorCode.GRPC, opaque=call.opaque, flag=Flag.RESPONSE, fields=fields,
                 body=message.SerializeToString())


def push(message: Message) -> Frame:
    """A server-initiated message on an open stream (a command on a client's Telemetry call)."""
    return Frame(code=EmulatorCode.GRPC, flag=Flag.RESPONSE, body=message.SerializeToString())


def failure(method: str, code: int, text: str) -> Message:
    """The method's response holding only a failed ``status`` (a streamed ReceiveMessage
    response is its status element)."""
    return RESPONSES[method](status=status(code, text))


def timestamp_ms(ts: Any) -> int:
    """Epoch ms of a ``google.protobuf.Timestamp``."""
    return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000


def set_timestamp(ts: Any, epoch_ms: float) -> None:
    ts.seconds, ms = divmod(int(epoch_ms), 1000)
    ts.nanos = ms * 1_000_000


def overflows(t: Any) -> bool:
    """Java's ``Timestamps.toMillis`` / ``Durations.toMillis`` of this Timestamp or Duration would
    throw (``ArithmeticException: long overflow``): its ms fit no Java long. Such a value from a
    client must stop at the proxy, which answers as 5.x's catch-all does: it would otherwise reach
    a broker request's header or an event line, which hold only 64-bit numbers."""
    ms = int(t.seconds) * 1000
    low, high = JAVA_LONG
    return not (low <= ms <= high and low <= ms + int(t.nanos) // 1_000_000 <= high)


def duration_ms(d: Any) -> int:
    return int(d.seconds) * 1000 + int(d.nanos) // 1_000_000


def set_duration(d: Any, ms: float) -> None:
    d.seconds, rest = divmod(int(ms), 1000)
    d.nanos = rest * 1_000_000


def pack(messages: list[Message]) -> bytes:
    """A stream's messages as one body: each a 4-byte big-endian length, then its bytes (how a
    streamed answer reaches an emulated client in one reply frame, docs/design.md §2)."""
    out = bytearray()
    for m in messages:
        raw = m.SerializeToString()
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


def unpack(body: bytes) -> list[bytes] | None:
    """The pieces :func:`pack` joined; None when ``body`` is not such a concatenation."""
    out, i = [], 0
    while i < len(body):
        if i + 4 > len(body):
            return None
        n = int.from_bytes(body[i:i + 4], "big")
        if i + 4 + n > len(body):
            return None
        out.append(body[i + 4:i + 4 + n])
        i += 4 + n
    return out


def stream(channel_is_grpc: bool, call: Frame, messages: list[Message]) -> list[Frame]:
    """The frames that answer a streamed call with ``messages``, then end it: on a gRPC call one
    reply per message, the last ending the call; to an emulated client, whose request takes one
    answer, one reply whose body is :func:`pack` of them all."""
    if not channel_is_grpc:
        return [Frame(code=EmulatorCode.GRPC, opaque=call.opaque, flag=Flag.RESPONSE, fields={"end": True},
                      body=pack(messages))]
    return [answer(call, m, end=i == len(messages) - 1) for i, m in enumerate(messages)]
