"""An in-memory :class:`~emulator.transport.base.Transport` for testing the runtime without sockets.

A test pushes events (:meth:`FakeTransport.push`, or the helpers :meth:`deliver`,
:meth:`respond`, :meth:`command`) and reads what the runtime sent from :attr:`sent`. ``poll``
hands back what was pushed; with nothing pushed it advances the test's clock by the timeout it was
given (so timers and request deadlines come due without real waiting) and returns nothing.

It serves the runtime's own tests and the role tests' ``Driver`` (``tests/roles/fakes.py``), which
runs every role under the real runtime over this transport.

gRPC calls (a proxy's): :meth:`grpc_call` delivers a client message as the gRPC port does,
:meth:`grpc_replies` reads a call's answers, :meth:`grpc_client_closed` ends a call on the client's
side. As on the real port, a unary call takes one answer and a stream one up to ``fields["end"]``
or ``close_channel``; later sends return False.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from rmqemu.emulator.node.clock import FakeClock
from rmqemu.emulator.node.links import LinkRule
from rmqemu.emulator.protocol import GRPC_PREFIX, ChannelEvent, EmulatorCode, Flag, Frame, is_grpc
from rmqemu.emulator.transport.base import ControlCommand, Received, TransportEvent, out_channel


@dataclass
class Sent:
    """One frame the runtime sent: to an address (``addr``) or on a channel (``channel``)."""

    frame: Frame
    addr: str | None = None
    channel: str | None = None


@dataclass
class FakeTransport:
    name: str = "node"
    addr: str = "127.0.0.1:10000"
    clock: FakeClock | None = None
    refuse: set[str] = field(default_factory=set)  # addresses whose connect "fails at once"
    sent: list[Sent] = field(default_factory=list)
    acks: list[tuple[str, bool, dict[str, Any]]] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    ready_info: dict[str, Any] | None = None
    rules: dict[tuple[str, str], LinkRule] = field(default_factory=dict)
    peers: dict[str, str] = field(default_factory=dict)
    watched: list[int] = field(default_factory=list)
    inbox: deque = field(default_factory=deque)
    on_send: Callable[[Sent], None] | None = None  # lets a test answer requests as they go out
    grpc_addr: str | None = None  # what grpc_address says (a proxy's test sets it)
    grpc_streams: dict[str, bool] = field(default_factory=dict)  # open gRPC call -> server streaming
    grpc_calls: int = 0  # the gRPC calls grpc_call opened (their channels' numbers)

    @property
    def address(self) -> str:
        return self.addr

    @property
    def remoting_address(self) -> str | None:
        return None

    @property
    def grpc_address(self) -> str | None:
        return self.grpc_addr

    # ------------------------------------------------------------------ what a test pushes

    def push(self, *events: TransportEvent) -> None:
        self.inbox.extend(events)

    def deliver(self, frame: Frame, channel: str = "ch-1", peer: str = "peer", addr: str | None = None) -> None:
        """An inbound request or oneway from ``peer`` (``addr``: its socket address, a real client's)."""
        self.push(Received(channel, peer, frame, addr=addr))

    def respond(self, request: Sent, code: int = 0, **fields: Any) -> None:
        """Answer a request the runtime sent, with its opaque id."""
        assert request.addr is not None
        frame = Frame(code=code, opaque=request.frame.opaque, flag=Flag.RESPONSE, fields=fields)
        self.push(Received(out_channel(request.addr), request.addr, frame, outbound=True, addr=request.addr))

    def grpc_call(self, method: str, body: bytes = b"", *, channel: str | None = None, opaque: int = 1,
                  streaming: bool = False, peer: str = "client@4242", addr: str = "127.0.0.1:50000",
                  **meta: str) -> str:
        """A client's message on gRPC call ``channel`` (a new ``grpc:<n>`` when None), as the port
        delivers it; ``meta``: ``client_id``, ``language``, ``version``, ``namespace``. ``streaming``:
        the method streams answers (ReceiveMessage, Telemetry). Returns the channel."""
        if channel is None:
            self.grpc_calls += 1
            channel = f"{GRPC_PREFIX}{self.grpc_calls}"
        self.grpc_streams.setdefault(channel, streaming)
        frame = Frame(code=int(EmulatorCode.GRPC), opaque=opaque, fields={"method": method, **meta}, body=body)
        self.push(Received(channel, peer, frame, addr=addr))
        return channel

    def grpc_client_closed(self, channel: str, peer: str = "client@4242") -> None:
        """The client cancelled or half-closed the call, or its connection went."""
        self.grpc_streams.pop(channel, None)
        self.push(ChannelEvent(kind="closed", channel=channel, peer=peer))

    def grpc_replies(self, channel: str) -> list[Frame]:
        return [s.frame for s in self.sent if s.channel == channel]

    def command(self, name: str, cmd_id: str = "c1", **args: Any) -> None:
        self.push(ControlCommand(cmd_id, name, args))

    def requests(self, code: int | None = None) -> list[Sent]:
        return [s for s in self.sent if s.addr is not None and s.frame.flag == Flag.REQUEST
                and (code is None or s.frame.code == code)]

    # ------------------------------------------------------------------ the Transport interface

    def send_to_addr(self, addr: str, frame: Frame) -> bool:
        if addr in self.refuse:
            return False
        self._record(Sent(frame, addr=addr))
        return True

    def send_to_channel(self, channel: str, frame: Frame) -> bool:
        if channel in self.closed:
            return False
        if is_grpc(channel):
            streaming = self.grpc_streams.get(channel)
            if streaming is None:
                return False  # ended on either side
            if not streaming or frame.fields.get("end"):
                del self.grpc_streams[channel]
        self._record(Sent(frame, channel=channel))
        return True

    def _record(self, sent: Sent) -> None:
        self.sent.append(sent)
        if self.on_send is not None:
            self.on_send(sent)

    def close_channel(self, channel: str) -> None:
        self.closed.append(channel)
        self.grpc_streams.pop(channel, None)

    def poll(self, timeout_ms: float) -> list[TransportEvent]:
        if self.inbox:
            out = list(self.inbox)
            self.inbox.clear()
            return out
        if self.clock is not None:
            self.clock.advance(timeout_ms)
        return []

    def set_links(self, rules: dict[tuple[str, str], LinkRule], peers: dict[str, str]) -> None:
        self.rules, self.peers = dict(rules), dict(peers)

    def link_rules(self) -> dict[tuple[str, str], LinkRule]:
        return dict(self.rules)

    def watch_fd(self, fd: int) -> None:
        self.watched.append(fd)

    def ready(self, info: dict[str, Any]) -> None:
        self.ready_info = dict(info)

    def ack(self, cmd_id: str, ok: bool, result: dict[str, Any]) -> None:
        self.acks.append((cmd_id, ok, result))

    def stats(self) -> dict[str, Any]:
        return {"sent": len(self.sent)}

    def close(self) -> None:
        pass
