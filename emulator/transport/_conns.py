"""Inbound connection tracking for a ROUTER socket, from socket-monitor events and ``SRCFD``.

The PyPI libzmq has no ``ROUTER_NOTIFY`` (draft API), so a ROUTER cannot tell us directly that a
peer connected or went away. What it does give us: a socket monitor reports ``ACCEPTED`` and
``DISCONNECTED`` with the connection's file descriptor, and every received message says which fd
it came from (``zmq.SRCFD``). Joining the two gives "peer X's connection closed" within
milliseconds of the peer's process dying. No zmq import here: this is plain bookkeeping.

fds are reused by the kernel, so every accepted connection gets a generation number and the
channel id ``"<identity>#<fd>#<gen>"``: a late close of an old connection can never be taken for
the close of the connection that replaced it.

The monitor is a separate socket, so its events and the data frames race. The transport reads
in this order: monitor events first (so a connection's ``ACCEPTED`` is known before its frames),
and before applying a ``DISCONNECTED`` it reads every frame already queued (libzmq queues all of
a connection's frames before it reports the close, and they stay readable after it). What is left
is a frame read before its ``ACCEPTED`` was drained: the connection is created from the frame and
the late ``ACCEPTED`` is absorbed.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Container
from dataclasses import dataclass


@dataclass
class Conn:
    """One inbound connection whose peer identity is known (it has sent a frame)."""

    channel: str
    identity: bytes
    peer: str
    fd: int
    gen: int
    last_ms: float  # last application frame in or out (monotonic): Netty's all-idle clock
    live: bool = True


class ConnTracker:
    """fd -> connection, fed by monitor events and by the SRCFD of received frames."""

    def __init__(self) -> None:
        self._gens = itertools.count(1)
        self._gen: dict[int, int] = {}  # fd -> generation of its current connection
        self._early: set[int] = set()  # fds whose connection was seen in a frame before ACCEPTED
        self._by_fd: dict[int, Conn] = {}
        self._close_seen: set[int] = set()  # fds whose close was inferred from a new identity
        self.implicit_closes: list[Conn] = []  # such closes, for the transport to report
        self._by_channel: dict[str, Conn] = {}

    def accepted(self, fd: int) -> None:
        """EVENT_ACCEPTED: a new connection on ``fd``."""
        if fd in self._early:  # its frames beat this event: the connection already exists
            self._early.discard(fd)
            return
        self._gen[fd] = next(self._gens)

    def disconnected(self, fd: int) -> Conn | None:
        """EVENT_DISCONNECTED: the connection on ``fd`` closed; returns it if its peer was known."""
        if fd in self._close_seen:  # already applied when another peer's frame showed up
            self._close_seen.discard(fd)
            return None
        self._gen.pop(fd, None)
        self._early.discard(fd)
        conn = self._by_fd.pop(fd, None)
        if conn is not None:
            conn.live = False
            self._by_channel.pop(conn.channel, None)
        return conn

    def on_frame(self, fd: int, identity: bytes, peer: str, now_ms: float, touch: bool = True) -> tuple[Conn, bool]:
        """The connection a frame from ``fd`` arrived on and whether it is new to us. ``touch``
        false: the frame was dropped by a link fault and does not count as activity."""
        conn = self._by_fd.get(fd)
        if conn is not None and conn.identity == identity:
            if touch:
                conn.last_ms = now_ms
            return conn, False
        if conn is not None:  # same fd, other peer: the old connection is over, its close late
            self.disconnected(fd)
            self._close_seen.add(fd)
            self.implicit_closes.append(conn)
        gen = self._gen.get(fd)
        if gen is None:
            gen = self._gen[fd] = next(self._gens)
            self._early.add(fd)
        conn = Conn(f"{peer}#{fd}#{gen}", identity, peer, fd, gen, now_ms)
        self._by_fd[fd] = conn
        self._by_channel[conn.channel] = conn
        return conn, True

    def live(self, channel: str) -> Conn | None:
        return self._by_channel.get(channel)

    def conns(self) -> list[Conn]:
        return list(self._by_fd.values())

    def __len__(self) -> int:
        return len(self._by_fd)

    def idle_scan(self, now_ms: float, idle_ms: float, closing: Container[str]) -> tuple[list[Conn], float]:
        """Netty's all-idle rule: the connections with no frame in or out for more than ``idle_ms``
        (except those already ``closing``), and the earliest time another one can go idle. That
        time only moves later (activity moves ``last_ms`` forward; a connection opened after
        ``now_ms`` goes idle after it), so the caller need not wake before it to check again."""
        idle, oldest = [], now_ms
        for conn in self._by_fd.values():
            if conn.channel in closing:
                continue
            if now_ms - conn.last_ms > idle_ms:
                idle.append(conn)
            elif conn.last_ms < oldest:
                oldest = conn.last_ms
        return idle, oldest + idle_ms

    def channels(self) -> list[str]:
        return sorted(self._by_channel)


def shutdown_fd(fd: int) -> None:
    """Shut a TCP connection down through a duplicate of libzmq's fd (the fd stays libzmq's):
    libzmq cannot close one peer of a ROUTER, but it sees the EOF and reports the close."""
    try:
        dup = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()
