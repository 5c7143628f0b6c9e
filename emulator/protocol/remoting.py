"""RocketMQ 4.x's own remoting framing over TCP, so real clients (the Java client, ali-ons) can talk to a node.

A frame is ``int32 total length`` (the bytes after it), ``int32 header word`` (high byte: serialize
type, 0 = JSON; low 3 bytes: header length), the JSON header, the body; all big-endian.
:class:`StreamDecoder` turns the bytes of one connection into the emulator's :class:`Frame` objects and
:func:`encode` writes one; both are pure (no sockets): the transport feeds them.

Limits, because anyone who can reach the port can send anything: a frame is at most
:data:`MAX_FRAME_BYTES` (Netty's ``FRAME_MAX_LENGTH``, 16 MiB, length field included), refused as
soon as its length field arrives, before its bytes are buffered; the header at most
``MAX_HEADER_BYTES`` of flat JSON (``code``/``opaque``/``flag`` int32, ``extFields`` scalars only).
Only JSON headers are read (the ROCKETMQ binary header type is refused): both clients send JSON by
default and ali-ons reads nothing else. Any violation is :class:`BadFrame` and the decoder stays
dead, like Netty's ``NettyDecoder`` closing the channel.
"""

from __future__ import annotations

import struct
from typing import Any

from rmqemu import wire_json
from rmqemu.emulator.protocol.frame import CURRENT_VERSION, Flag, Frame
from rmqemu.emulator.protocol.guard import MAX_HEADER_BYTES, BadFrame, loads_checked

MAX_FRAME_BYTES = 16 * 1024 * 1024  # NettyDecoder.FRAME_MAX_LENGTH 16777216; Netty counts the length field too
ROCKETMQ_VERSION = CURRENT_VERSION  # the "version" a 4.9.4 node writes
SERIALIZE_JSON, SERIALIZE_ROCKETMQ = 0, 1  # SerializeType codes (the header word's high byte)
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_FLAGS = {0: Flag.REQUEST, 1: Flag.RESPONSE, 2: Flag.ONEWAY}  # bit0 response, bit1 oneway
_SCALARS = (str, int, float, bool)
_HEAD = struct.Struct(">iI")  # total length (signed: a negative one is an error), header word
_LENGTH = struct.Struct(">i")

# SendMessageRequestHeaderV2's short names (SEND_MESSAGE_V2, 310) -> SendMessageRequestHeader's,
# as createSendMessageRequestHeaderV1 maps them
SEND_V2_NAMES = {
    "a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
    "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
    "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch",
}


class StreamDecoder:
    """The frames of one TCP connection, from its bytes in whatever pieces they arrive.

    :meth:`feed` returns the frames completed by ``data`` (none, one or several). A protocol
    violation raises :class:`BadFrame`; the frames that chunk completed before the bad one are on
    the exception's ``frames`` attribute (Netty hands those on before it closes the channel), and
    every later :meth:`feed` raises :class:`BadFrame` too: the caller closes the connection.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0  # start of the first unread frame in _buf
        self._error: str | None = None

    @property
    def dead(self) -> bool:
        return self._error is not None

    def feed(self, data: bytes) -> list[Frame]:
        if self._error is not None:
            raise BadFrame(f"connection already failed: {self._error}")
        frames: list[Frame] = []
        try:
            self._buf += data
            while (frame := self._next()) is not None:
                frames.append(frame)
        except BadFrame as exc:
            self._error = str(exc)
            self._buf, self._pos = bytearray(), 0
            exc.frames = frames  # type: ignore[attr-defined]
            raise
        if self._pos:  # drop what was read: copies only the tail, a partial frame's bytes of this chunk
            del self._buf[: self._pos]
            self._pos = 0
        return frames

    def _next(self) -> Frame | None:
        buf, pos = self._buf, self._pos
        available = len(buf) - pos
        if available < 4:
            return None
        (length,) = _LENGTH.unpack_from(buf, pos)
        if length < 4:
            raise BadFrame(f"frame length {length} is below 4 (the header word alone takes 4)")
        if length + 4 > MAX_FRAME_BYTES:
            raise BadFrame(f"frame of {length + 4} bytes announced, over the {MAX_FRAME_BYTES}-byte limit")
        if available < 8:
            return None
        _, word = _HEAD.unpack_from(buf, pos)
        serialize, header_len = word >> 24, word & 0xFFFFFF
        if serialize == SERIALIZE_ROCKETMQ:
            raise BadFrame("ROCKETMQ (binary) header serialization is not supported; clients must send JSON headers")
        if serialize != SERIALIZE_JSON:
            raise BadFrame(f"unknown header serialize type {serialize}")
        if header_len > length - 4:
            raise BadFrame(f"header length {header_len} is beyond the frame's {length - 4} bytes")
        if header_len > MAX_HEADER_BYTES:
            raise BadFrame(f"header is {header_len} bytes, over the {MAX_HEADER_BYTES}-byte limit")
        if available < 4 + length:
            return None
        start = pos + 8
        with memoryview(buf) as view:
            header = bytes(view[start : start + header_len])
            body = bytes(view[start + header_len : pos + 4 + length])
        self._pos = pos + 4 + length
        return _frame(header, body)


def _int32(header: dict[str, Any], key: str, default: int | None) -> int:
    value = header.get(key, default)
    if type(value) is not int:  # bool and float are not int here
        raise BadFrame(f"header {key} must be an integer, got {str(value)[:50]!r}")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise BadFrame(f"header {key} {value} is out of the int32 range")
    return value


def _frame(raw: bytes, body: bytes) -> Frame:
    """The emulator's Frame of one JSON header and body."""
    header = loads_checked(raw, "header", MAX_HEADER_BYTES)
    if not isinstance(header, dict):
        raise BadFrame("header is not a JSON object")
    code = _int32(header, "code", None)
    opaque = _int32(header, "opaque", 0)  # fastjson leaves an absent int at its default
    flag = _FLAGS.get(_int32(header, "flag", 0))
    if flag is None:
        raise BadFrame(f"header flag {header['flag']} is not a request, response or oneway")
    remark = header.get("remark")
    if remark is not None and not isinstance(remark, str):
        raise BadFrame("header remark must be a string or null")
    ext = header.get("extFields")
    if ext is None:
        ext = {}
    elif not isinstance(ext, dict):
        raise BadFrame("header extFields must be an object")
    fields: dict[str, Any] = {}
    for key, value in ext.items():
        if value is None:
            continue
        if not isinstance(value, _SCALARS):
            raise BadFrame(f"header extFields value of {key[:50]!r} is not a scalar")
        fields[key] = value
    version = header.get("version")  # read only for what it gates (a send-back's maxReconsumeTimes)
    if type(version) is not int or not _INT32_MIN <= version <= _INT32_MAX:
        version = 0  # fastjson leaves an absent int at 0
    return Frame(code=code, opaque=opaque, flag=flag, remark=remark, fields=fields, body=body, version=version)


def _ext_value(value: Any) -> str:
    """What Java's ``HashMap<String, String>`` extFields would carry."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return wire_json.dumps(value).decode()  # not a header value in RocketMQ; never dropped silently


def encode(frame: Frame) -> bytes:
    """One full frame, length prefix included, as a 4.9.4 Java node writes it (JSON header)."""
    header: dict[str, Any] = {
        "code": int(frame.code), "language": "JAVA", "version": ROCKETMQ_VERSION,
        "opaque": int(frame.opaque), "flag": int(frame.flag),
    }
    if frame.remark is not None:
        header["remark"] = frame.remark
    ext = {str(k): _ext_value(v) for k, v in frame.fields.items() if v is not None}
    if ext:
        header["extFields"] = ext
    header["serializeTypeCurrentRPC"] = "JSON"
    raw = wire_json.dumps(header)
    if len(raw) > 0xFFFFFF:
        raise ValueError(f"header of {len(raw)} bytes does not fit the 3-byte header length")
    length = 4 + len(raw) + len(frame.body)
    if length + 4 > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {length + 4} bytes is over the {MAX_FRAME_BYTES}-byte limit clients accept")
    return b"".join((_HEAD.pack(length, (SERIALIZE_JSON << 24) | len(raw)), raw, frame.body))


def expand_send_v2(fields: dict[str, Any]) -> dict[str, Any]:
    """SEND_MESSAGE_V2's header with SendMessageRequestHeader's long names (other keys kept)."""
    return {SEND_V2_NAMES.get(k, k): v for k, v in fields.items()}
