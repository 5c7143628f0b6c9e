"""A remoting command (:class:`Frame`) and its two-part wire encoding; connection events."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal

from rmqemu import wire_json
from rmqemu.emulator.protocol.codes import ResponseCode
from rmqemu.emulator.protocol.guard import MAX_BODY_JSON_BYTES, MAX_HEADER_BYTES, BadFrame, loads_checked

CURRENT_VERSION = 401  # MQVersion.Version.V4_9_4.ordinal(): the "version" a 4.9.4 node writes
V3_4_9 = 121  # MQVersion.Version.V3_4_9.ordinal(): from it on, a request's maxReconsumeTimes is honoured


class Flag(IntEnum):
    REQUEST = 0
    RESPONSE = 1
    ONEWAY = 2


@dataclass(frozen=True)
class Frame:
    """One remoting command. ``fields`` is RocketMQ's custom header; ``body`` is raw bytes.
    ``version``: the ``MQVersion`` ordinal a real client's header carried (None on the emulator's
    own wire, whose nodes are 4.9.4: :data:`CURRENT_VERSION`)."""

    code: int
    opaque: int = 0
    flag: Flag = Flag.REQUEST
    remark: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""
    version: int | None = field(default=None, compare=False)  # metadata: equal commands stay equal

    @property
    def sender_version(self) -> int:
        """``RemotingCommand.getVersion()`` of a request: what RocketMQ gates header fields on."""
        return CURRENT_VERSION if self.version is None else self.version

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
        return Frame(self.code, opaque, self.flag, self.remark, self.fields, self.body, self.version)

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


REMOTING_PREFIX = "rm:"  # the channels of real RocketMQ clients' TCP connections (the remoting port)


def is_remoting(channel: str) -> bool:
    """Whether ``channel`` is a real client's connection, which wants RocketMQ's own body formats."""
    return channel.startswith(REMOTING_PREFIX)


GRPC_PREFIX = "grpc:"  # one gRPC call on a proxy's gRPC port (emulator/transport/_grpc.py)


def is_grpc(channel: str) -> bool:
    """Whether ``channel`` is one gRPC call of a RocketMQ 5 client on a proxy's gRPC port."""
    return channel.startswith(GRPC_PREFIX)


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
