"""A node's inbound ZeroMQ channels: the ROUTER every peer connects to (see :mod:`.zmq_node`).

``ROUTER_HANDOVER`` so a restarted peer under the same identity is accepted, ``ROUTER_MANDATORY``
so a reply to a vanished peer fails instead of vanishing, ``MAXMSGSIZE`` so a huge frame drops
its connection before it is buffered. Channels come from :mod:`._conns` (monitor + ``SRCFD``).
Closing a channel for real: libzmq cannot close one peer of a ROUTER, so we ``shutdown(2)`` the
connection's socket through a duplicate of its fd; libzmq then sees EOF, the peer sees the close,
and our monitor reports ``DISCONNECTED`` like any other close.
"""

from __future__ import annotations

from typing import Callable

import zmq

from rmqemu.emulator.protocol import ChannelEvent, Frame, encode
from rmqemu.emulator.transport import base
from rmqemu.emulator.transport._conns import ConnTracker, shutdown_fd
from rmqemu.emulator.transport._frames import recv_parts, send_parts
from rmqemu.emulator.transport._monitor import recv_monitor_message
from rmqemu.emulator.transport._readiness import EpollPoller
from rmqemu.emulator.transport.base import TransportEvent

_EVENTS, _POLLIN, _SRCFD = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.SRCFD)  # plain ints: fast (see _frames)
MAX_INBOUND_FRAME_BYTES = 64 * 1024 * 1024  # libzmq drops a connection sending a larger frame
Decode = Callable[[str, str, list[bytes], list[TransportEvent]], None]


class RouterInbound:
    """The ROUTER, its monitor and the channels they make. ``blocked(peer)`` is the receive side
    of the link table; ``decode(channel, peer, parts, out)`` turns a frame into an event."""

    def __init__(self, ctx: zmq.Context, port: int, poller: EpollPoller, counters: dict[str, int],
                 blocked: Callable[[str], bool], decode: Decode) -> None:
        self.router = ctx.socket(zmq.ROUTER)
        for opt, val in ((zmq.LINGER, 0), (zmq.ROUTER_HANDOVER, 1), (zmq.ROUTER_MANDATORY, 1),
                         (zmq.MAXMSGSIZE, MAX_INBOUND_FRAME_BYTES)):
            self.router.setsockopt(opt, val)
        self.router.bind(f"tcp://127.0.0.1:{port or '*'}")
        self.address = base.endpoint_to_addr(self.router.getsockopt_string(zmq.LAST_ENDPOINT))
        self.mon = self.router.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self.poller = poller
        poller.register(self.router)
        poller.register(self.mon)
        self.counters = counters
        self.blocked = blocked
        self.decode = decode
        self.conns = ConnTracker()
        self.closing: dict[str, str] = {}  # channel -> event kind to report when its close shows up
        self.peer_labels: dict[bytes, str] = {}  # routing id -> printable peer name (few peers, many frames)

    def __len__(self) -> int:
        return len(self.conns)

    def service(self, ready: dict, now: float, out: list[TransportEvent]) -> None:
        if self.mon in ready:
            self._drain_monitor(now, out)  # reads the frames queued before each close first
        if self.router in ready:
            self._recv(now, out)

    def _drain_monitor(self, now: float, out: list[TransportEvent]) -> None:
        """Connection events in order. Before a close is applied, the frames its peer sent are
        read (they stay queued after the close) — unless the same batch also holds a new
        connection on the same fd: then queued frames may be the new one's, and attributing them
        to the closed channel would lose the answers; the close goes first (see ``_conns``)."""
        batch = []
        while self.mon.poll(0):
            ev = recv_monitor_message(self.mon, zmq.NOBLOCK)
            batch.append((ev["event"], int(ev["value"])))
        for i, (kind, fd) in enumerate(batch):
            if kind == zmq.EVENT_ACCEPTED:
                self.conns.accepted(fd)
            elif kind == zmq.EVENT_DISCONNECTED:
                if (zmq.EVENT_ACCEPTED, fd) not in batch[i + 1:]:
                    self._recv(now, out)
                conn = self.conns.disconnected(fd)
                if conn is not None:
                    kind_ = self.closing.pop(conn.channel, "closed")
                    out.append(ChannelEvent(kind=kind_, channel=conn.channel, peer=conn.peer))  # type: ignore[arg-type]

    def _recv(self, now: float, out: list[TransportEvent]) -> None:
        router = self.router
        while router.getsockopt(_EVENTS) & _POLLIN:  # cheaper than ending on a raised zmq.Again
            parts = recv_parts(router)
            identity = parts[0].bytes
            peer = self.peer_labels.get(identity)
            if peer is None:
                if len(self.peer_labels) > 4096:  # random routing ids (a fuzzer) must not grow it forever
                    self.peer_labels.clear()
                peer = self.peer_labels[identity] = base.peer_label(identity)
            blocked = self.blocked(peer)
            conn, _new = self.conns.on_frame(parts[-1].get(_SRCFD), identity, peer, now, touch=not blocked)
            while self.conns.implicit_closes:
                old = self.conns.implicit_closes.pop(0)
                out.append(ChannelEvent(kind=self.closing.pop(old.channel, "closed"), channel=old.channel,  # type: ignore[arg-type]
                                        peer=old.peer))
            if blocked:
                self.counters["dropped_in"] += 1
                continue
            self.decode(conn.channel, peer, [p.bytes for p in parts[1:]], out)

    def send(self, channel: str, frame: Frame, now: float) -> bool:
        conn = self.conns.live(channel)
        if conn is None:
            return False
        try:
            send_parts(self.router, [conn.identity, *encode(frame)])
        except zmq.ZMQError:  # EHOSTUNREACH (peer gone) or EAGAIN (its buffer is full)
            return False
        finally:
            self.poller.touched(self.router)  # a send may take its input signal (see _readiness)
        conn.last_ms = now
        return True

    def close(self, channel: str, kind: str) -> None:
        conn = self.conns.live(channel)
        if conn is None or channel in self.closing:
            return
        self.closing[channel] = kind
        shutdown_fd(conn.fd)

    def idle_scan(self, now: float, idle_ms: float) -> tuple[list[str], float]:
        idle, due = self.conns.idle_scan(now, idle_ms, self.closing)
        return [conn.channel for conn in idle], due

    def peer_of(self, channel: str) -> str | None:
        conn = self.conns.live(channel)
        return conn.peer if conn is not None else None

    def close_sockets(self) -> None:
        self.mon.close()
        self.router.close()
