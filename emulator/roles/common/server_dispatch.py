"""Request dispatch shared by the namesrv and broker roles: RocketMQ's processor table.

``NettyRemotingAbstract.processRequestCommand`` answers a code nobody registered with
REQUEST_CODE_NOT_SUPPORTED and remark ``" request type <code> not supported"`` (docs/rocketmq-model.md §1.8), and a
header that fails to decode (RemotingCommandException) with SYSTEM_ERROR carrying the exception
text. Oneway requests never get an answer (a handler's response to one is dropped here). Header
values arrive as JSON (RocketMQ sends them as strings), so the readers here accept either form.
"""

from __future__ import annotations

from typing import Any, Callable

from rmqemu.emulator.protocol import BadFrame, Frame, ResponseCode
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply

Handler = Callable[[Inbound, Now], list[Action]]


class HeaderError(ValueError):
    """A missing or malformed header field (RocketMQ's RemotingCommandException)."""


def h_str(f: Frame, key: str, default: str | None = None, required: bool = False) -> str | None:
    v = f.fields.get(key)
    if v is None:
        if required:
            raise HeaderError(f"the custom field <{key}> is null")
        return default
    return str(v)


def h_int(f: Frame, key: str, default: int | None = None, required: bool = False) -> int | None:
    v = f.fields.get(key)
    if v is None or v == "":
        if required:
            raise HeaderError(f"the custom field <{key}> is null")
        return default
    if isinstance(v, bool):
        raise HeaderError(f"the custom field <{key}> is not a number: {v!r}")
    try:
        return int(v)
    except (TypeError, ValueError) as exc:
        raise HeaderError(f"the custom field <{key}> is not a number: {v!r}") from exc


def h_bool(f: Frame, key: str, default: bool = False) -> bool:
    v = f.fields.get(key)
    if v is None:
        return default
    if isinstance(v, str):
        return v.strip().lower() == "true"
    return bool(v)


def parse_properties(raw: Any) -> dict[str, str]:
    """A dict, or ``MessageDecoder.string2messageProperties`` (NAME_VALUE \\u0001, PROPERTY \\u0002)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    if isinstance(raw, str):
        out = {}
        for item in raw.split("\u0002"):
            k, sep, v = item.partition("\u0001")
            if sep:
                out[k] = v
        return out
    raise HeaderError(f"the custom field <properties> is not a map: {raw!r}")


def not_supported(frame: Frame) -> Frame:
    return frame.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {frame.code} not supported")


def dispatch(handlers: dict[int, Handler], msg: Inbound, now: Now) -> list[Action]:
    """Run the handler for ``msg.frame.code``; unknown codes and bad headers answered as RocketMQ."""
    frame = msg.frame
    if frame.is_response:
        return []  # a stray response on a server channel: nothing asked for it
    handler = handlers.get(frame.code)
    if handler is None:
        return [] if frame.is_oneway else [Reply(msg.channel, not_supported(frame))]
    try:
        actions = handler(msg, now)
        if frame.is_oneway:  # processRequestCommand writes no response to a oneway request
            return [a for a in actions if not (isinstance(a, Reply) and a.channel == msg.channel
                                               and a.frame.is_response and a.frame.opaque == frame.opaque)]
        return actions
    except (HeaderError, BadFrame, KeyError, TypeError, ValueError, AttributeError) as exc:
        # AttributeError: a body of the wrong JSON type (a list where an object belongs) from
        # any peer; RocketMQ's decode fails there too and the request gets SYSTEM_ERROR
        bad = Emit("wire.bad_frame", {"peer": msg.peer, "code": frame.code, "error": f"{type(exc).__name__}: {exc}"})
        if frame.is_oneway:
            return [bad]
        return [bad, Reply(msg.channel, frame.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}"))]
