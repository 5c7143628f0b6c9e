"""The remoting port: real RocketMQ clients' TCP connections, beside ZeroMQ (docs/real-clients.md).

A namesrv or broker with remoting enabled listens on one more TCP port and speaks RocketMQ 4.x's
own framing there (:mod:`rmqemu.emulator.protocol.remoting`). Each accepted connection is a
channel ``rm:<n>`` that the role answers like any other; ZeroMQ stays the bus between rmqemu's
own processes.

A real client is named after its process, ``client@<pid>``: on loopback the socket's owner is
looked up at accept (:class:`ClientNamer`), so its namesrv and broker connections carry the
same name, which the fault verbs take as a target. A client on another host is ``client@<ip>``.

Hostile input closes its own connection and nothing else: a bad frame (the decoder checks sizes
before buffering), more than :data:`MAX_PENDING_OUT` of answers the client does not read, or
more than :data:`MAX_CONNS` connections (the newest is refused). A connection that sends half a
frame and stalls is closed by the idle rule like any channel.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import select
import socket
from dataclasses import dataclass, field
from typing import Callable

from rmqemu.emulator.node.links import Delivery
from rmqemu.emulator.protocol import BadFrame, ChannelEvent, Frame, remoting
from rmqemu.emulator.protocol.frame import REMOTING_PREFIX
from rmqemu.emulator.transport._client_names import Address, ClientNamer
from rmqemu.emulator.transport._readiness import EpollPoller
from rmqemu.emulator.transport.base import BadInput, Received, TransportEvent

SHORT_HEADER_CODES = frozenset((310, 320, 325))  # SendMessageRequestHeaderV2's a..m: SEND_MESSAGE_V2, batch, reply
MAX_CONNS = 256
MAX_PENDING_OUT = 64 * 1024 * 1024  # answers a client has not read: a pull body is at most a few MB
READ_CHUNK = 256 * 1024
MAX_READ_PER_WAKE = 4 * 1024 * 1024  # then the other connections get their turn
_IN, _OUT, _ERR = select.EPOLLIN, select.EPOLLOUT, select.EPOLLERR | select.EPOLLHUP


@dataclass
class RemotingConn:
    channel: str
    sock: socket.socket
    peer: str
    addr: str
    last_ms: float
    decoder: remoting.StreamDecoder = field(default_factory=remoting.StreamDecoder)
    out: bytearray = field(default_factory=bytearray)
    writing: bool = False


class RemotingListener:
    """The listening socket and its connections; the transport drives it from its poll loop.

    ``poller`` is the transport's; ``shape(peer)`` is the link fault on what ``peer`` sends us
    (block, loss, delay, duplication: a real client is not rmqemu's process, so its side of a link
    is applied here, on arrival); delayed frames wait in :attr:`delayed` for :meth:`flush`."""

    def __init__(self, host: str, port: int, poller: EpollPoller, shape: Callable[[str], Delivery],
                 counters: dict[str, int], namer: Callable[[Address, Address], str] | None = None) -> None:
        self.poller = poller
        self.shape = shape
        self.delayed: list[tuple[float, int, Received]] = []  # (due, seq, frame) heap
        self.counters = counters
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart rebinds at once
        try:
            self.sock.bind((host, port))
        except OSError as exc:
            self.sock.close()
            raise OSError(exc.errno, f"cannot listen for real clients on {host}:{port}: {exc.strerror} (a port "
                                     "fixed by remoting.ports, or the one the node had before a restart)") from None
        self.sock.listen(128)
        self.sock.setblocking(False)
        bound = self.sock.getsockname()
        self.address = f"{host}:{bound[1]}"
        self.namer = namer or ClientNamer()
        self.poller.register(self.sock.fileno())
        self.by_fd: dict[int, RemotingConn] = {}
        self.by_channel: dict[str, RemotingConn] = {}
        self.events: list[TransportEvent] = []  # closes decided outside poll, reported by the next one
        self._ids = itertools.count(1)
        self._seq = itertools.count()

    def owns(self, fd: int) -> bool:
        return fd == self.sock.fileno() or fd in self.by_fd

    def __len__(self) -> int:
        return len(self.by_fd)

    # ------------------------------------------------------------------ input

    def service(self, fd: int, mask: int, now: float, out: list[TransportEvent],
                report_bad: Callable[[str, str, str], BadInput | None]) -> None:
        """Handle one ready descriptor: accept, read and decode, or flush pending output."""
        if fd == self.sock.fileno():
            self._accept(now)
        elif (conn := self.by_fd.get(fd)) is not None:
            if mask & _OUT:
                self._flush(conn)
            if mask & (_IN | _ERR) and conn.channel in self.by_channel:
                self._read(conn, now, out, report_bad)
        self.drain_events(out)

    def drain_events(self, out: list[TransportEvent]) -> None:
        out.extend(self.events)
        self.events.clear()

    def _accept(self, now: float) -> None:
        while True:
            try:
                sock, peer = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and the like: refuse this one, keep serving
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.counters["remoting_refused"] += 1
                    return
                raise
            if len(self.by_fd) >= MAX_CONNS:
                self.counters["remoting_refused"] += 1
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = RemotingConn(f"{REMOTING_PREFIX}{next(self._ids)}", sock, self.namer(peer, sock.getsockname()),
                                f"{peer[0]}:{peer[1]}", now)
            self.by_fd[sock.fileno()] = conn
            self.by_channel[conn.channel] = conn
            self.poller.register(sock.fileno())
            self.events.append(ChannelEvent(kind="opened", channel=conn.channel, peer=conn.peer))

    def _read(self, conn: RemotingConn, now: float, out: list[TransportEvent],
              report_bad: Callable[[str, str, str], BadInput | None]) -> None:
        got = 0
        while got < MAX_READ_PER_WAKE:
            try:
                data = conn.sock.recv(READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.close(conn.channel, "closed")
                return
            if not data:
                self.close(conn.channel, "closed")
                return
            got += len(data)
            error: BadFrame | None = None
            try:
                frames = conn.decoder.feed(data)
            except BadFrame as exc:  # the frames before the bad one still count, as in Netty
                error, frames = exc, list(getattr(exc, "frames", []))
            self._deliver(conn, frames, now, out)
            if error is not None:
                self.counters["bad_frames"] += 1
                bad = report_bad(conn.peer, str(error), conn.channel)
                if bad is not None:
                    out.append(bad)
                self.close(conn.channel, "closed")
                return

    def _deliver(self, conn: RemotingConn, frames: list[Frame], now: float, out: list[TransportEvent]) -> None:
        for frame in frames:
            decision = self.shape(conn.peer)
            if decision.dropped:
                self.counters["dropped_in"] += 1
                continue
            conn.last_ms = now
            self.counters["received"] += 1
            if frame.code in SHORT_HEADER_CODES and not frame.is_response:
                frame = Frame(frame.code, frame.opaque, frame.flag, frame.remark,
                              remoting.expand_send_v2(frame.fields), frame.body, frame.version)
            event = Received(conn.channel, conn.peer, frame, addr=conn.addr)
            for _ in range(decision.copies):
                if decision.delay_ms > 0:
                    heapq.heappush(self.delayed, (now + decision.delay_ms, next(self._seq), event))
                else:
                    out.append(event)
            self.counters["delayed"] += decision.delay_ms > 0
            self.counters["duplicated"] += decision.copies > 1

    def next_due(self) -> float | None:
        """When the first delayed frame is due."""
        return self.delayed[0][0] if self.delayed else None

    def flush(self, now: float, out: list[TransportEvent]) -> None:
        """Hand on the delayed frames that are due."""
        while self.delayed and self.delayed[0][0] <= now:
            out.append(heapq.heappop(self.delayed)[2])

    # ------------------------------------------------------------------ output

    def send(self, channel: str, frame: Frame, now: float) -> bool:
        """Queue an encoded frame and write what the socket takes now; False if the connection is gone."""
        conn = self.by_channel.get(channel)
        if conn is None:
            return False
        try:
            conn.out += remoting.encode(frame)
        except ValueError:  # over the frame size a client accepts: as if lost on the way
            return False
        conn.last_ms = now
        self._flush(conn)
        if len(conn.out) > MAX_PENDING_OUT:
            self.close(channel, "closed")
            return False
        return channel in self.by_channel

    def _flush(self, conn: RemotingConn) -> None:
        while conn.out:
            try:
                n = conn.sock.send(conn.out)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.close(conn.channel, "closed")
                return
            del conn.out[:n]
        want = bool(conn.out)
        if want != conn.writing:
            conn.writing = want
            self.poller.want_write(conn.sock.fileno(), want)

    # ------------------------------------------------------------------ closing

    def close(self, channel: str, kind: str = "closed") -> None:
        """Close a connection for real; its ChannelEvent is reported by the next poll."""
        conn = self.by_channel.pop(channel, None)
        if conn is None:
            return
        fd = conn.sock.fileno()
        self.by_fd.pop(fd, None)
        self.poller.unregister(fd)
        conn.sock.close()
        self.events.append(ChannelEvent(kind=kind, channel=channel, peer=conn.peer))  # type: ignore[arg-type]

    def idle_scan(self, now: float, idle_ms: float) -> tuple[list[str], float]:
        """Channels with no frame in or out for more than ``idle_ms``, and when the next may go idle."""
        idle, oldest = [], now
        for conn in self.by_channel.values():
            if now - conn.last_ms > idle_ms:
                idle.append(conn.channel)
            elif conn.last_ms < oldest:
                oldest = conn.last_ms
        return idle, oldest + idle_ms

    def peer_of(self, channel: str) -> str | None:
        conn = self.by_channel.get(channel)
        return conn.peer if conn is not None else None

    def clients(self) -> dict[str, str]:
        """channel -> client name, for the ``state`` command."""
        return {c: conn.peer for c, conn in sorted(self.by_channel.items())}

    def shutdown(self) -> None:
        for channel in list(self.by_channel):
            self.close(channel)
        self.events.clear()
        self.poller.unregister(self.sock.fileno())
        self.sock.close()
