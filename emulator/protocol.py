"""RocketMQ remoting commands as the emulator carries them: codes, frames and their encoding.

A :class:`Frame` is RocketMQ's ``RemotingCommand``: a request/response ``code``, an ``opaque``
correlation id, a ``flag`` (request, response or oneway), a ``remark``, header ``fields`` and an
opaque ``body``. On the wire it is two ZeroMQ frames: the JSON header and the raw body. Nothing in
this module imports zmq; the transport does.

Numbers are RocketMQ 4.9's (docs/rocketmq-model.md §5).

Everything decoded here comes from a socket anyone on the host can reach, so :func:`decode` and
:meth:`Frame.json_body` turn *any* input into a :class:`Frame`/value or :class:`BadFrame`, nothing
else: JSON goes through :func:`loads_checked` (size limit before parsing, nesting bounded, numbers
finite and within 64-bit range) and the header's numbers are checked for type and range.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Literal

FAQ_SUFFIX = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


class RequestCode(IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_MAX_OFFSET = 30
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    GET_CONSUMER_LIST_BY_GROUP = 38
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    GET_ALL_CONSUMER_OFFSET = 43  # a slave's SlaveSynchronize asks its master (docs/rocketmq-model.md §2.1)
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    GET_TOPICS_BY_CLUSTER = 224
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    QUERY_DATA_VERSION = 322
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    ADD_WRITE_PERM_OF_BROKER = 327


class EmulatorCode(IntEnum):
    """Request codes internal to the emulator -- **not** RocketMQ RequestCodes.

    RocketMQ's HA replication runs over its own TCP port (``haListenPort``, listenPort + 1) with a
    raw framing of its own (8-byte offset reports up, offset + size + commit-log bytes down). The
    emulator has one data-plane address per node, so that traffic is carried as requests with
    these codes, chosen far outside RocketMQ's RequestCode numbers.
    """

    HA_TRANSFER = 90001  # slave -> master: "my max commit-log offset is X, send me what follows"


class ResponseCode(IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205


class ClientErrorCode(IntEnum):
    CONNECT_BROKER_EXCEPTION = 10001
    ACCESS_BROKER_TIMEOUT = 10002
    BROKER_NOT_EXIST_EXCEPTION = 10003
    NO_NAME_SERVER_EXCEPTION = 10004
    NOT_FOUND_TOPIC_EXCEPTION = 10005


class Perm:
    """PermName (docs/rocketmq-model.md §2.2)."""

    PRIORITY = 8
    READ = 4
    WRITE = 2
    INHERIT = 1

    @staticmethod
    def readable(perm: int) -> bool:
        return bool(perm & Perm.READ)

    @staticmethod
    def writable(perm: int) -> bool:
        return bool(perm & Perm.WRITE)

    @staticmethod
    def inherited(perm: int) -> bool:
        return bool(perm & Perm.INHERIT)

    @staticmethod
    def to_string(perm: int) -> str:
        """``perm2String``: three chars R/W/X or ``-``."""
        return (
            ("R" if perm & Perm.READ else "-")
            + ("W" if perm & Perm.WRITE else "-")
            + ("X" if perm & Perm.INHERIT else "-")
        )


MASTER_ID = 0
AUTO_CREATE_TOPIC_KEY = "TBW102"


class Flag(IntEnum):
    REQUEST = 0
    RESPONSE = 1
    ONEWAY = 2


class BadFrame(ValueError):
    """A frame that cannot be decoded; the runtime logs it as ``wire.bad_frame`` and drops it."""


MAX_HEADER_BYTES = 256 * 1024  # a header is a code, ids and a flat field map: kilobytes at most
MAX_BODY_JSON_BYTES = 64 * 1024 * 1024  # the transport's socket-level MAXMSGSIZE bounds bodies too
MAX_JSON_DEPTH = 64  # RocketMQ's bodies nest a handful of levels (tables of tables of queue data)
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1  # Java's long: no RocketMQ number is wider
# An int token beyond int64 has 19+ digits right after a separator (":", ",", "[", "-" or
# whitespace). Mask digits to "0" and separators to "S": a digit run inside a string (a hex
# message id) does not follow a separator, so it rarely costs the walk.
_INT_MASK = bytes(0x30 if 0x30 <= b <= 0x39 else 0x53 if b in b":,[- \t\n\r" else 0x20 for b in range(256))
_LONG_INT = b"0" * 19
_TO_PARENS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses as inf: int(inf) raises OverflowError downstream
        raise BadFrame(f"number out of range: {text[:32]}")
    return value


def _no_constant(name: str) -> float:
    raise BadFrame(f"{name} is not a JSON number")


def _surely_shallow(data: bytes) -> bool:
    """True when the brackets in ``data`` nest at most :data:`MAX_JSON_DEPTH` deep, by C-speed
    byte operations: keep the brackets only, then strip innermost pairs once per level. Brackets
    inside strings can only make this say False (then the exact walk decides)."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return True
    parens = data.translate(_TO_PARENS, _NOT_BRACKETS)
    for _ in range(MAX_JSON_DEPTH):
        if not parens:
            return True
        parens = parens.replace(b"()", b"")
    return not parens


def _maybe_wide_int(data: bytes) -> bool:
    masked = data.translate(_INT_MASK)
    return b"S" + _LONG_INT in masked or masked.startswith(_LONG_INT)


def _check_shape(value: Any) -> None:
    """Iteratively (a recursive walk could itself overflow): depth and int ranges."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise BadFrame(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
        elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            raise BadFrame("integer out of 64-bit range")


def loads_checked(data: bytes, what: str, max_bytes: int) -> Any:
    """``json.loads`` for untrusted bytes: :class:`BadFrame` for anything but a sane JSON value.

    The size is checked before parsing; non-finite numbers are refused while parsing; nesting and
    int ranges are walked only when a cheap byte scan says they could be exceeded (more brackets
    than the depth limit, or a 19-digit run), with C-speed byte operations (``count``,
    ``translate``, ``replace``): a few microseconds on top of ``json.loads``."""
    if len(data) > max_bytes:
        raise BadFrame(f"{what} is {len(data)} bytes, over the {max_bytes}-byte limit")
    try:
        value = _DECODER.decode(data.decode())
    except BadFrame:
        raise
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError; RecursionError: "[[[[..."
        raise BadFrame(f"{what} is not JSON: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not _surely_shallow(data) or _maybe_wide_int(data):
        _check_shape(value)
    return value


_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constant)  # one, not one per call


@dataclass(frozen=True)
class Frame:
    """One remoting command. ``fields`` is RocketMQ's custom header; ``body`` is raw bytes."""

    code: int
    opaque: int = 0
    flag: Flag = Flag.REQUEST
    remark: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""

    @property
    def is_response(self) -> bool:
        return self.flag == Flag.RESPONSE

    @property
    def is_oneway(self) -> bool:
        return self.flag == Flag.ONEWAY

    def response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        fields: dict[str, Any] | None = None,
        body: bytes | dict | list | None = None,
    ) -> "Frame":
        """The response to this request, carrying its opaque id."""
        return Frame(
            code=int(code),
            opaque=self.opaque,
            flag=Flag.RESPONSE,
            remark=remark,
            fields=fields or {},
            body=encode_body(body),
        )

    def with_opaque(self, opaque: int) -> "Frame":
        return replace(self, opaque=opaque)

    def json_body(self) -> Any:
        """The body decoded as JSON (``None`` when empty); raises :class:`BadFrame` if not JSON."""
        if not self.body:
            return None
        return loads_checked(self.body, "body", MAX_BODY_JSON_BYTES)


def request(code: int, fields: dict[str, Any] | None = None, body: Any = None) -> Frame:
    return Frame(code=int(code), fields=fields or {}, body=encode_body(body))


def oneway(code: int, fields: dict[str, Any] | None = None, body: Any = None) -> Frame:
    return Frame(code=int(code), flag=Flag.ONEWAY, fields=fields or {}, body=encode_body(body))


def encode_body(body: bytes | dict | list | str | None) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def encode(frame: Frame) -> list[bytes]:
    """Two wire frames: the JSON header and the body."""
    header = {"code": frame.code, "opaque": frame.opaque, "flag": int(frame.flag)}
    if frame.remark is not None:
        header["remark"] = frame.remark
    if frame.fields:
        header["fields"] = frame.fields
    return [json.dumps(header, separators=(",", ":")).encode(), frame.body]


def decode(parts: list[bytes]) -> Frame:
    """Inverse of :func:`encode`; anything malformed raises :class:`BadFrame`."""
    if len(parts) not in (1, 2):
        raise BadFrame(f"expected 2 parts (header, body), got {len(parts)}")
    header = loads_checked(parts[0], "header", MAX_HEADER_BYTES)
    if not isinstance(header, dict):
        raise BadFrame("header is not a JSON object")
    code, opaque, flag_ = header.get("code"), header.get("opaque", 0), header.get("flag", 0)
    if type(code) is not int or type(opaque) is not int or type(flag_) is not int:  # bool is not int here
        raise BadFrame(f"header code/opaque/flag must be integers: {str(parts[0][:100])}")
    try:
        flag = Flag(flag_)  # int64 range of code and opaque: loads_checked
    except ValueError as exc:
        raise BadFrame(f"bad header flag: {exc}") from None
    fields = header.get("fields") or {}
    remark = header.get("remark")
    if not isinstance(fields, dict) or (remark is not None and not isinstance(remark, str)):
        raise BadFrame("header fields must be an object and remark a string")
    body = parts[1] if len(parts) == 2 else b""
    return Frame(code=code, opaque=opaque, flag=flag, remark=remark, fields=fields, body=body)


@dataclass(frozen=True)
class ChannelEvent:
    """A connection changed state (the transport reports it, a role reacts to it).

    Server side (``channel`` set): ``closed`` when the peer's socket closed (process died,
    graceful close) and ``idle`` when the idle timeout closed it (Netty's 120 s IdleStateHandler).
    Client side (``addr`` set): ``connected`` / ``disconnected`` for an outbound connection,
    which is how a client knows its chosen namesrv's channel is no longer OK.
    """

    kind: Literal["opened", "closed", "idle", "connected", "disconnected"]
    channel: str | None = None
    addr: str | None = None
    peer: str | None = None
