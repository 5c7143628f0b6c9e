"""One outbound connection: a DEALER to one peer address, like a Netty client channel.

Why a small queue of our own: the DEALER has ``IMMEDIATE=1`` so that zmq never silently queues
frames for a peer that is not (or no longer) connected. But then the very first send after
``connect`` would fail, because the TCP connect and ZMTP handshake take a moment. RocketMQ's
client waits for the connect (``connectTimeoutMillis``) and fails with RemotingConnectException
when it is refused. So: frames sent before the handshake wait here until it succeeds (flushed),
the connect is refused (``EVENT_CLOSED`` of the attempt: all fail at once), or the connect
deadline passes (fail). While the last attempt was refused, sends fail immediately.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import zmq

from rmqemu.emulator.protocol import ChannelEvent, Frame, encode
from rmqemu.emulator.transport._frames import send_parts
from rmqemu.emulator.transport._monitor import recv_monitor_message
from rmqemu.emulator.transport.base import SendFailed, addr_to_endpoint

OUT_EVENTS = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED


@dataclass
class _Queued:
    deadline_ms: float
    frame: Frame


class Outbound:
    """A DEALER to ``addr`` (identity = our node name) plus its monitor."""

    def __init__(self, ctx: zmq.Context, addr: str, identity: bytes, heartbeat_ivl_ms: int,
                 heartbeat_timeout_ms: int, reconnect_ivl_ms: int = 50) -> None:
        self.addr = addr
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.IDENTITY, identity)
        self.sock.setsockopt(zmq.IMMEDIATE, 1)
        self.sock.setsockopt(zmq.RECONNECT_IVL, reconnect_ivl_ms)
        self.sock.setsockopt(zmq.HEARTBEAT_IVL, heartbeat_ivl_ms)
        self.sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, heartbeat_timeout_ms)
        self.mon = self.sock.get_monitor_socket(OUT_EVENTS)
        self.sock.connect(addr_to_endpoint(addr))
        self.up = False  # handshake done and no disconnect since
        self.refused = False  # the latest connect attempt was refused
        self.queue: deque[_Queued] = deque()

    def send(self, frame: Frame, now_ms: float, connect_timeout_ms: float) -> bool:
        """Send now if connected, else queue until connected. False = cannot connect."""
        if self.up and not self.queue:
            try:
                send_parts(self.sock, encode(frame))
                return True
            except zmq.Again:  # pipe not attached yet, or the peer's buffer is full
                pass
        elif self.refused:
            return False
        self.queue.append(_Queued(now_ms + connect_timeout_ms, frame))
        return True

    def on_monitor(self, out: list) -> None:
        """Drain monitor events: connect / disconnect / refused."""
        while self.mon.poll(0):
            try:
                ev = recv_monitor_message(self.mon, zmq.NOBLOCK)
            except zmq.Again:
                return
            kind = ev["event"]
            if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.up, self.refused = True, False
                out.append(ChannelEvent(kind="connected", addr=self.addr))
            elif kind == zmq.EVENT_DISCONNECTED:
                if self.up:
                    out.append(ChannelEvent(kind="disconnected", addr=self.addr))
                self.up = False
            elif kind == zmq.EVENT_CLOSED and not self.up:  # a connect attempt failed
                self.refused = True
                self.fail_all("connection refused", out)

    def flush(self, now_ms: float, out: list) -> None:
        """Send queued frames if connected; fail the ones past their deadline."""
        while self.queue and self.up:
            try:
                send_parts(self.sock, encode(self.queue[0].frame))
            except zmq.Again:
                break
            self.queue.popleft()
        while self.queue and self.queue[0].deadline_ms <= now_ms:
            q = self.queue.popleft()
            out.append(SendFailed(self.addr, q.frame, "connect timeout"))

    def fail_all(self, reason: str, out: list) -> None:
        while self.queue:
            out.append(SendFailed(self.addr, self.queue.popleft().frame, reason))

    def next_due_ms(self, now_ms: float) -> float | None:
        """When ``flush`` must run again: in 1 ms if connected with a backlog, else the deadline."""
        if not self.queue:
            return None
        if self.up:
            return now_ms + 1.0
        return self.queue[0].deadline_ms

    def close(self) -> None:
        self.sock.close(linger=0)
        self.mon.close(linger=0)


class OutboundSet:
    """Every Outbound of a node, indexed for its poll loop: which one a ready socket (or monitor)
    belongs to, and which hold frames waiting to be sent. A client of a 56-node cluster has ~30
    peers; walking all of them on every loop step was a visible share of its CPU."""

    def __init__(self, ctx: zmq.Context, identity: bytes, heartbeat_ms: int, poller: Any) -> None:
        self.ctx = ctx
        self.identity = identity
        self.heartbeat_ms = heartbeat_ms
        self.poller = poller
        self.by_addr: dict[str, Outbound] = {}
        self.by_sock: dict[zmq.Socket, Outbound] = {}
        self.by_mon: dict[zmq.Socket, Outbound] = {}
        self.backlogged: set[Outbound] = set()

    def get(self, addr: str) -> Outbound | None:
        return self.by_addr.get(addr)

    def send(self, addr: str, frame: Frame, now_ms: float, connect_timeout_ms: float) -> bool:
        """Send over the connection to ``addr`` (opened on first use); see :meth:`Outbound.send`."""
        out = self.by_addr.get(addr)
        if out is None:
            out = self.by_addr[addr] = Outbound(self.ctx, addr, self.identity, self.heartbeat_ms // 4,
                                                self.heartbeat_ms)
            self.poller.register(out.sock)
            self.poller.register(out.mon)
            self.by_sock[out.sock] = out
            self.by_mon[out.mon] = out
        ok = out.send(frame, now_ms, connect_timeout_ms)
        self.poller.touched(out.sock)  # a send may take the socket's input signal (see _readiness)
        if out.queue:
            self.backlogged.add(out)
        return ok

    def flush(self, now_ms: float, out: list) -> None:
        """Send what waits for a connection, fail what waited too long."""
        for ob in list(self.backlogged):
            ob.flush(now_ms, out)
            self.poller.touched(ob.sock)
            if not ob.queue:
                self.backlogged.discard(ob)

    def next_due_ms(self, now_ms: float) -> list[float]:
        return [d for ob in self.backlogged if (d := ob.next_due_ms(now_ms)) is not None]

    def addrs(self) -> list[str]:
        return sorted(self.by_addr)

    def close(self) -> None:
        for ob in self.by_addr.values():
            self.poller.unregister(ob.sock)
            self.poller.unregister(ob.mon)
            ob.close()
