"""The transport interface the node runtime talks to, and the events its ``poll`` returns.

Only the ``emulator.transport`` package imports zmq; the runtime (and anyone's tests, through
:class:`~emulator.transport.fake.FakeTransport`) sees nothing but this module. Keeping the
interface small is what lets the runtime be tested without sockets.

Addresses are RocketMQ-style ``"127.0.0.1:<port>"``. A *channel* is an opaque string naming one
inbound connection (the server side of a Netty channel); it is unique per connection, so a late
``closed`` of an old connection never looks like the close of its replacement. Frames that arrive
on one of our *outbound* connections (a response to our request, or a server-initiated request or
oneway) carry the pseudo channel ``"out:<addr>"``; a reply on that channel goes back over the same
outbound connection. Real clients' channels: ``rm:<n>`` a remoting connection, ``grpc:<n>`` one
gRPC call (docs/design.md §2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from rmqemu.emulator.node.links import LinkRule
from rmqemu.emulator.protocol import ChannelEvent, Frame

OUT_PREFIX = "out:"


def out_channel(addr: str) -> str:
    """The pseudo channel of our outbound connection to ``addr``."""
    return OUT_PREFIX + addr


@dataclass(frozen=True)
class Received:
    """A decoded frame. ``outbound`` is True when it arrived on a connection *we* opened
    (so a RESPONSE there answers one of our requests); ``addr`` is then the peer's address, and on
    a real client's inbound connection its socket address."""

    channel: str
    peer: str
    frame: Frame
    outbound: bool = False
    addr: str | None = None


@dataclass(frozen=True)
class BadInput:
    """Undecodable input from ``peer``; logged as ``wire.bad_frame`` and dropped. Rate-limited
    (:mod:`._guard`): ``suppressed`` more of the same were dropped unreported before this one."""

    peer: str
    reason: str
    channel: str | None = None
    suppressed: int = 0


@dataclass(frozen=True)
class SendFailed:
    """A frame that was accepted by ``send_to_addr`` but could not be delivered after all (the
    connection attempt was refused or did not complete in time). The runtime fails the matching
    request at once, like RocketMQ's RemotingConnectException."""

    addr: str
    frame: Frame
    reason: str


@dataclass(frozen=True)
class ControlCommand:
    """A command from the launcher (signature and sequence checked); answer it with ``Transport.ack``."""

    cmd_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ControlRefused:
    """A control message that failed its check (signature, sequence, shape): logged, not obeyed.
    Rate-limited like :class:`BadInput`."""

    reason: str
    suppressed: int = 0


@dataclass(frozen=True)
class ControlLost:
    """The connection to the launcher is gone: the node must exit (no orphans)."""

    reason: str


@dataclass(frozen=True)
class Woken:
    """A watched file descriptor (e.g. the signal wakeup pipe) became readable."""

    fd: int


TransportEvent = Union[Received, ChannelEvent, BadInput, SendFailed, ControlCommand, ControlRefused, ControlLost, Woken]


class Transport(Protocol):
    """What the runtime needs from a transport. All methods are non-blocking except ``poll``."""

    name: str

    @property
    def address(self) -> str:
        """``"127.0.0.1:<port>"`` of this node's listening socket."""
        ...

    @property
    def remoting_address(self) -> str | None:
        """``HOST:PORT`` of the remoting port real RocketMQ clients connect to; None when off."""
        ...

    @property
    def grpc_address(self) -> str | None:
        """``HOST:PORT`` of the gRPC port RocketMQ 5 clients connect to (a proxy's); None when off."""
        ...

    def send_to_addr(self, addr: str, frame: Frame) -> bool:
        """Send over our outbound connection to ``addr`` (opened lazily). False means "cannot
        connect" right now (fail the request at once); True means accepted, which includes a frame
        dropped or delayed by a link fault and a frame queued while the first connection is being
        made (a later :class:`SendFailed` reports a connection that then failed)."""
        ...

    def send_to_channel(self, channel: str, frame: Frame) -> bool:
        """Send on an inbound channel (or an ``out:<addr>`` pseudo channel). False if it is gone."""
        ...

    def close_channel(self, channel: str) -> None:
        """Close an inbound connection for real; its ``closed`` event follows from ``poll``."""
        ...

    def poll(self, timeout_ms: float) -> list[TransportEvent]:
        """Wait up to ``timeout_ms`` for events. May return early with an empty list (after
        flushing delayed frames); the caller recomputes its deadline and polls again."""
        ...

    def set_links(self, rules: dict[tuple[str, str], LinkRule], peers: dict[str, str]) -> None:
        """Replace the link table and the peer directory (node name -> address)."""
        ...

    def link_rules(self) -> dict[tuple[str, str], LinkRule]:
        ...

    def watch_fd(self, fd: int) -> None:
        """Also wake ``poll`` when ``fd`` is readable (returns :class:`Woken`; does not read it)."""
        ...

    def ready(self, info: dict[str, Any]) -> None:
        """Tell the launcher this node is ready (its address, pid)."""
        ...

    def ack(self, cmd_id: str, ok: bool, result: dict[str, Any]) -> None:
        """Answer a :class:`ControlCommand`."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counters for the ``state`` command (sent, dropped, delayed, failed, ...)."""
        ...

    def close(self) -> None:
        ...


def peer_label(identity: bytes) -> str:
    """A printable peer name from a ZeroMQ routing id (node names are ASCII; zmq's generated
    ids are binary and shown as ``?<hex>``)."""
    try:
        text = identity.decode("ascii")
        if text.isprintable() and text:
            return text
    except UnicodeDecodeError:
        pass
    return "?" + identity.hex()


def addr_to_endpoint(addr: str) -> str:
    return addr if addr.startswith("tcp://") else "tcp://" + addr


def endpoint_to_addr(endpoint: str) -> str:
    return endpoint[len("tcp://"):] if endpoint.startswith("tcp://") else endpoint
