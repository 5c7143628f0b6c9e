"""How an emulated RocketMQ 5 client reaches its proxies: the access point's endpoints, picked as
gRPC's ``pick_first`` picks them, and one call as a GRPC frame (docs/design.md §2).

The Java client opens one gRPC channel on the endpoints list (``RpcClientImpl``:
``NettyChannelBuilder.forTarget("ipv4:a:p,b:p")``, grpc-java's default ``pick_first``): it connects
to the first address that accepts, keeps it while the connection lives, and only when that
connection is lost tries the list again from the first. A call that merely times out (a proxy
that is slow, frozen or cut off while its connection stays up) moves nothing; the connection's
loss does (a killed proxy at once; a frozen one when keepalive gives up, which rmqemu's transport
reports as the channel's ``disconnected``). In cluster mode every queue of a route names the same
endpoints, so sends, receives and acks all go over that one channel.
"""

from __future__ import annotations

from typing import Any, Callable

from google.protobuf.message import Message

from rmqemu.emulator.protocol import EmulatorCode, Flag, Frame
from rmqemu.emulator.roles.common.base import Action, Now, Request
from rmqemu.emulator.roles.proxy import v2

CLIENT_VERSION = "5.0.7"  # what the emulated client says it is (x-mq-client-version)
Answer = Callable[[Any, "str | None", Now], list[Action]]


class PickFirst:
    """The endpoints in access-point order; ``choose`` the address calls go to now."""

    def __init__(self, addrs: list[str] | None = None) -> None:
        self.addrs: list[str] = list(addrs or [])
        self.down: set[str] = set()
        self.chosen: str | None = None
        self.moves = 0  # how often the channel went to another address
        self._walk = 0

    def update(self, addrs: list[str]) -> None:
        self.addrs = list(addrs)
        if self.chosen not in self.addrs:
            self.chosen = None

    def choose(self) -> str | None:
        if self.chosen is not None and self.chosen not in self.down:
            return self.chosen
        old = self.chosen
        up = [a for a in self.addrs if a not in self.down]
        if up:
            self.chosen = up[0]
        elif self.addrs:  # every connection down: try them in turn (each connect attempt is a call)
            self._walk += 1
            self.chosen = self.addrs[self._walk % len(self.addrs)]
        else:
            self.chosen = None
        if old is not None and self.chosen != old:
            self.moves += 1
        return self.chosen

    def on_channel(self, kind: str, addr: str) -> None:
        if addr not in self.addrs:
            return
        if kind == "disconnected":
            self.down.add(addr)
        elif kind == "connected":
            self.down.discard(addr)


def call(addr: str, method: str, request: Message, client_id: str, timeout_ms: float, then: Answer,
         where: dict[str, Any] | None = None) -> Request:
    """One RPC to the proxy at ``addr``: ``then(response, addr, now)`` with the method's response
    message (a list of them for a streamed method), or None without an answer (a timeout, a
    connection refused) or with bytes that are not one. ``where``, when given, receives the
    answer's rmqemu-only header (a send's real broker and queue, docs/design.md §2)."""
    frame = Frame(code=EmulatorCode.GRPC, flag=Flag.REQUEST, body=request.SerializeToString(),
                  fields={"method": method, "client_id": client_id, "language": "JAVA", "version": CLIENT_VERSION,
                          "timeout_ms": int(timeout_ms)})  # what gRPC sends as the call's deadline

    def on_reply(resp: Frame | None, now: Now) -> list[Action]:
        if where is not None and resp is not None:
            where.update({k: resp.fields[k] for k in ("broker", "queue_id") if k in resp.fields})
        return then(None if resp is None else decode(method, resp.body), addr, now)

    return Request(addr, frame, timeout_ms, on_reply, held=method == "ReceiveMessage")


def decode(method: str, body: bytes) -> Any:
    """The response of ``method`` in ``body``; a streamed method's is the list of its elements
    (:func:`v2.unpack`); None when the bytes are not that."""
    cls = v2.RESPONSES.get(method)
    if cls is None:
        return None
    pieces = v2.unpack(body) if method in v2.STREAMING else [body]
    if pieces is None:
        return None
    out = []
    for piece in pieces:
        msg = cls()
        try:
            msg.ParseFromString(piece)
        except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends: not that message
            return None
        out.append(msg)
    return out if method in v2.STREAMING else out[0]
