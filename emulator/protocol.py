"""RocketMQ remoting commands as the emulator carries them: codes, frames and their encoding.

A :class:`Frame` is RocketMQ's ``RemotingCommand``: a request/response ``code``, an ``opaque``
correlation id, a ``flag`` (request, response or oneway), a ``remark``, header ``fields`` and an
opaque ``body``. On the wire it is two ZeroMQ frames: the JSON header and the raw body. Nothing in
this module imports zmq; the transport does.

Numbers are RocketMQ 4.9's (docs/rocketmq-model.md §5).

Everything decoded here comes from a socket anyone on the host can reach, so :func:`decode` and
:meth:`Frame.json_body` turn *any* input into a :class:`Frame`/value or :class:`BadFrame`, nothing
else: JSON goes through :func:`loads_checked` (size limit before parsing, nesting bounded, numbers
finite and ints 64-bit) and the header's ``code``, ``opaque`` and ``flag`` must be integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal

from rmqemu import wire_json

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
_TO_PARENS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def _surely_shallow(data: bytes) -> bool:
    """True when the brackets in ``data`` nest at most :data:`MAX_JSON_DEPTH` deep, by C-speed
    byte operations: keep the brackets only, then strip innermost pairs once per level. Brackets
    inside strings can only make this say False (then the exact walk decides)."""
    parens = data.translate(_TO_PARENS, _NOT_BRACKETS)
    if len(parens) <= 2 * MAX_JSON_DEPTH + 1:  # nesting d takes d openers and d closers
        return True
    for _ in range(MAX_JSON_DEPTH):
        if not parens:
            return True
        parens = parens.replace(b"()", b"")
    return not parens


def _check_depth(value: Any) -> None:
    """Iteratively (a recursive walk could itself overflow)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise BadFrame(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))


def loads_checked(data: bytes, what: str, max_bytes: int) -> Any:
    """JSON from untrusted bytes: :class:`BadFrame` for anything but a sane JSON value.

    The size is checked before parsing. :mod:`rmqemu.wire_json` (orjson) already refuses what
    used to kill nodes through the standard library (``1e400`` became ``inf`` and ``int(inf)``
    an ``OverflowError``; 100,000 ``[`` a ``RecursionError``): numbers beyond a double's range,
    ``NaN``/``Infinity`` and nesting past 1024 are a ``ValueError``, and ints are 64-bit (wider
    ones parse as finite floats). Nesting is bounded tighter, to :data:`MAX_JSON_DEPTH`, because
    what a role does with a 1,000-deep value (an event line: orjson writes at most 254 levels;
    ``repr``) would raise far from here; the exact walk runs only when a byte scan says the
    input could nest that deep, so an ordinary header costs one ``translate``."""
    if len(data) > max_bytes:
        raise BadFrame(f"{what} is {len(data)} bytes, over the {max_bytes}-byte limit")
    try:
        value = wire_json.loads(data)
    except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError is a ValueError
        raise BadFrame(f"{what} is not JSON: {str(exc)[:200]}") from None
    if not _surely_shallow(data):
        _check_depth(value)
    return value


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
        # the constructor, not dataclasses.replace: this runs for every request sent, and
        # replace() inspects the fields each time (several times slower)
        return Frame(self.code, opaque, self.flag, self.remark, self.fields, self.body)

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
    return wire_json.dumps(body, sort_keys=True)


def encode(frame: Frame) -> list[bytes]:
    """Two wire frames: the JSON header and the body."""
    header = {"code": frame.code, "opaque": frame.opaque, "flag": int(frame.flag)}
    if frame.remark is not None:
        header["remark"] = frame.remark
    if frame.fields:
        header["fields"] = frame.fields
    return [wire_json.dumps(header), frame.body]


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
        flag = Flag(flag_)
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
