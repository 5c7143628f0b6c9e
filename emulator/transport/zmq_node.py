"""A node's data plane over ZeroMQ (docs/design.md §2): the only :class:`Transport` with sockets.

- Inbound: one ROUTER bound on 127.0.0.1 (``ROUTER_HANDOVER`` so a restarted peer under the same
  identity is accepted, ``ROUTER_MANDATORY`` so a reply to a vanished peer fails instead of
  vanishing, ``MAXMSGSIZE`` so a huge frame drops its connection before it is buffered). Any
  frame decodes to a :class:`Frame` or a rate-limited :class:`BadInput` (:mod:`._guard`); no
  exception of one frame leaves :meth:`ZmqTransport._decode`. Channels come from
  :mod:`._conns` (monitor + ``SRCFD``). Netty's ``IdleStateHandler(0, 0, 120 s)`` is modelled
  at the application level: a channel with no frame in or out for ``idle_ms`` is closed for real
  and reported ``idle`` (docs/rocketmq-model.md §1.5).
- Outbound: one DEALER per peer address (:mod:`._outbound`), ZMQ heartbeats so a dead or frozen
  peer's connection is noticed, ``disconnected`` reported to the role.
- Closing a channel for real: libzmq cannot close one peer of a ROUTER, so we ``shutdown(2)``
  the connection's socket through a duplicate of its fd; libzmq then sees EOF, the peer sees the
  close, and our monitor reports ``DISCONNECTED`` like any other close.
- Link faults: the sender applies block/loss/delay/duplicate of ``(self, dst)`` (:mod:`._shaping`),
  the receiver the block of ``(src, self)`` (:mod:`emulator.node.links`).
- Control: :mod:`._control_client`, never faulted, signed per message (:mod:`._auth`).
"""

from __future__ import annotations

import random
from typing import Any

import zmq

from rmqemu.emulator.node.clock import mono_ms
from rmqemu.emulator.node.links import LinkRule, LinkTable
from rmqemu.emulator.protocol import BadFrame, ChannelEvent, Frame, decode, encode
from rmqemu.emulator.transport import base
from rmqemu.emulator.transport._conns import ConnTracker, shutdown_fd
from rmqemu.emulator.transport._control_client import ControlClient
from rmqemu.emulator.transport._frames import recv_parts, send_parts
from rmqemu.emulator.transport._guard import EventGate, seed_routing_ids
from rmqemu.emulator.transport._monitor import recv_monitor_message
from rmqemu.emulator.transport._outbound import Outbound, OutboundSet
from rmqemu.emulator.transport._readiness import EpollPoller
from rmqemu.emulator.transport._shaping import ShapedSender
from rmqemu.emulator.transport.base import OUT_PREFIX, BadInput, TransportEvent, out_channel

_EVENTS, _POLLIN, _SRCFD = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.SRCFD)  # plain ints: fast (see _frames)
IDLE_CHECK_FRACTION = 20  # idle closes are checked every idle_ms / 20: 5% precision
MAX_INBOUND_FRAME_BYTES = 64 * 1024 * 1024  # libzmq drops a connection sending a larger frame


class ZmqTransport:
    """See the module docstring. ``idle_ms`` / ``heartbeat_ms`` are already scaled."""

    def __init__(self, name: str, port: int = 0, *, idle_ms: float = 1200.0, heartbeat_ms: float = 1200.0,
                 connect_timeout_ms: float = 3000.0, seed: int = 0,
                 control_endpoint: str | None = None, control_key: bytes = b"") -> None:
        self.name = name
        self.idle_ms = idle_ms
        self.heartbeat_ms = max(int(heartbeat_ms), 20)
        self.connect_timeout_ms = connect_timeout_ms
        seed_routing_ids()
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        for opt, val in ((zmq.LINGER, 0), (zmq.ROUTER_HANDOVER, 1), (zmq.ROUTER_MANDATORY, 1),
                         (zmq.MAXMSGSIZE, MAX_INBOUND_FRAME_BYTES)):
            self.router.setsockopt(opt, val)
        self.router.bind(f"tcp://127.0.0.1:{port or '*'}")
        self._address = base.endpoint_to_addr(self.router.getsockopt_string(zmq.LAST_ENDPOINT))
        self.router_mon = self.router.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self.conns = ConnTracker()
        self.closing: dict[str, str] = {}  # channel -> event kind to report when its close shows up
        self.peer_labels: dict[bytes, str] = {}  # routing id -> printable peer name (few peers, many frames)
        self.links = LinkTable(rng=random.Random(f"{seed}:{name}"))
        self.counters = dict(sent=0, received=0, dropped_out=0, dropped_in=0, delayed=0, duplicated=0,
                             send_failed=0, bad_frames=0, idle_closed=0)
        self.peers: dict[str, str] = {}  # node name -> addr
        self.names: dict[str, str] = {}  # addr -> node name
        self.shaper = ShapedSender(name, self.links, self._deliver, self._peer_of, self._reachable, self.counters)
        self.poller = EpollPoller()
        self.poller.register(self.router)
        self.poller.register(self.router_mon)
        self.outbound = OutboundSet(self.ctx, name.encode(), self.heartbeat_ms, self.poller)
        self.control: ControlClient | None = None
        if control_endpoint:
            self.control = ControlClient(self.ctx, control_endpoint, control_key, name)
            self.poller.register(self.control.sock)
            self.poller.register(self.control.mon)
            if self.control.parent_fd is not None:
                self.poller.register(self.control.parent_fd)
        self.watched: set[int] = set()
        self.next_idle_check = 0.0
        self.idle_due = 0.0  # no channel can go idle before this (as of the last idle check)
        self.bad_input_gate = EventGate()

    @property
    def address(self) -> str:
        return self._address

    # ------------------------------------------------------------------ sending

    def send_to_addr(self, addr: str, frame: Frame) -> bool:
        return self.shaper.send(out_channel(addr), frame)

    def send_to_channel(self, channel: str, frame: Frame) -> bool:
        return self.shaper.send(channel, frame)

    def _peer_of(self, channel: str) -> str | None:
        if channel.startswith(OUT_PREFIX):
            addr = channel[len(OUT_PREFIX):]
            return self.names.get(addr, addr)
        conn = self.conns.live(channel)
        return conn.peer if conn is not None else None

    def _reachable(self, channel: str) -> bool:
        if channel.startswith(OUT_PREFIX):
            out = self.outbound.get(channel[len(OUT_PREFIX):])
            return out is None or not out.refused
        return self.conns.live(channel) is not None

    def _deliver(self, channel: str, frame: Frame) -> bool:
        now = mono_ms()
        if channel.startswith(OUT_PREFIX):
            ok = self.outbound.send(channel[len(OUT_PREFIX):], frame, now, self.connect_timeout_ms)
        else:
            conn = self.conns.live(channel)
            if conn is None:
                return False
            try:
                send_parts(self.router, [conn.identity, *encode(frame)])
                self.poller.touched(self.router)  # a send may take its input signal (see _readiness)
                conn.last_ms = now
                ok = True
            except zmq.ZMQError:  # EHOSTUNREACH (peer gone) or EAGAIN (its buffer is full)
                ok = False
        self.counters["sent" if ok else "send_failed"] += 1
        return ok

    def close_channel(self, channel: str, kind: str = "closed") -> None:
        conn = self.conns.live(channel)
        if conn is None or channel in self.closing:
            return
        self.closing[channel] = kind
        shutdown_fd(conn.fd)

    # ------------------------------------------------------------------ receiving

    def poll(self, timeout_ms: float) -> list[TransportEvent]:
        now = mono_ms()
        due = self._next_due(now)
        wait = max(0.0, min(timeout_ms, due - now)) if due is not None else max(0.0, timeout_ms)
        ready = dict(self.poller.poll(wait))
        out: list[TransportEvent] = []
        now = mono_ms()
        # A socket not in `ready` has nothing to read now; one in it may (each reader below
        # drains its socket until ZMQ_EVENTS says it is empty, see _readiness).
        if self.router_mon in ready:
            self._drain_router_monitor(now, out)  # reads the frames queued before each close first
        if self.router in ready:
            self._recv_router(now, out)
        for sock in ready:
            if (ob := self.outbound.by_mon.get(sock)) is not None:
                ob.on_monitor(out)
        for sock in ready:
            if (ob := self.outbound.by_sock.get(sock)) is not None:
                self._recv_outbound(ob, now, out)
        self.outbound.flush(now, out)
        self.shaper.flush(now)
        self._check_idle(now)
        if self.control is not None:
            self.control.service(ready, now, out, self.poller)
        for fd in self.watched:
            if fd in ready:
                out.append(base.Woken(fd))
        self.counters["send_failed"] += sum(1 for e in out if isinstance(e, base.SendFailed))
        return out

    def _next_due(self, now: float) -> float | None:
        """When the transport's own work (delayed frames, backlogs, idle closes, the control
        plane) next needs the loop awake; None for never. Asked before every wait."""
        delayed_due = self.shaper.next_due()
        due = float("inf") if delayed_due is None else delayed_due
        if self.outbound.backlogged:  # (a backlog whose queue a refusal emptied has no due: [])
            due = min([due, *self.outbound.next_due_ms(now)])
        if len(self.conns):
            due = min(due, max(self.next_idle_check, self.idle_due))
        if self.control is not None:
            due = min(due, self.control.next_due_ms(now))
        return None if due == float("inf") else due

    def _drain_router_monitor(self, now: float, out: list[TransportEvent]) -> None:
        """Connection events in order. Before a close is applied, the frames its peer sent are
        read (they stay queued after the close) — unless the same batch also holds a new
        connection on the same fd: then queued frames may be the new one's, and attributing them
        to the closed channel would lose the answers; the close goes first (see ``_conns``)."""
        batch = []
        while self.router_mon.poll(0):
            ev = recv_monitor_message(self.router_mon, zmq.NOBLOCK)
            batch.append((ev["event"], int(ev["value"])))
        for i, (kind, fd) in enumerate(batch):
            if kind == zmq.EVENT_ACCEPTED:
                self.conns.accepted(fd)
            elif kind == zmq.EVENT_DISCONNECTED:
                if (zmq.EVENT_ACCEPTED, fd) not in batch[i + 1:]:
                    self._recv_router(now, out)
                conn = self.conns.disconnected(fd)
                if conn is not None:
                    kind_ = self.closing.pop(conn.channel, "closed")
                    out.append(ChannelEvent(kind=kind_, channel=conn.channel, peer=conn.peer))  # type: ignore[arg-type]

    def _recv_router(self, now: float, out: list[TransportEvent]) -> None:
        router = self.router
        while router.getsockopt(_EVENTS) & _POLLIN:  # cheaper than ending on a raised zmq.Again
            parts = recv_parts(router)
            identity = parts[0].bytes
            peer = self.peer_labels.get(identity)
            if peer is None:
                if len(self.peer_labels) > 4096:  # random routing ids (a fuzzer) must not grow it forever
                    self.peer_labels.clear()
                peer = self.peer_labels[identity] = base.peer_label(identity)
            blocked = bool(self.links.rules) and self.links.on_receive(peer, self.name).dropped
            conn, _new = self.conns.on_frame(parts[-1].get(_SRCFD), identity, peer, now, touch=not blocked)
            while self.conns.implicit_closes:
                old = self.conns.implicit_closes.pop(0)
                out.append(ChannelEvent(kind=self.closing.pop(old.channel, "closed"), channel=old.channel,  # type: ignore[arg-type]
                                        peer=old.peer))
            if blocked:
                self.counters["dropped_in"] += 1
                continue
            self._decode(conn.channel, peer, [p.bytes for p in parts[1:]], out, outbound=False)

    def _recv_outbound(self, ob: Outbound, now: float, out: list[TransportEvent]) -> None:
        peer = self.names.get(ob.addr, ob.addr)
        sock = ob.sock
        while sock.getsockopt(_EVENTS) & _POLLIN:
            parts = recv_parts(sock)
            if self.links.rules and self.links.on_receive(peer, self.name).dropped:
                self.counters["dropped_in"] += 1
                continue
            self._decode(out_channel(ob.addr), peer, [p.bytes for p in parts], out, outbound=True, addr=ob.addr)

    def _decode(self, channel: str, peer: str, parts: list[bytes], out: list[TransportEvent],
                outbound: bool, addr: str | None = None) -> None:
        try:
            frame = decode(parts)
        except Exception as exc:  # noqa: BLE001 - BadFrame, or anything decode did not foresee: never the loop's end
            self.counters["bad_frames"] += 1
            suppressed = self.bad_input_gate.admit(peer)
            if suppressed is not None:
                reason = str(exc) if isinstance(exc, BadFrame) else f"{type(exc).__name__}: {exc}"
                out.append(BadInput(peer, reason[:500], channel, suppressed))
            return
        self.counters["received"] += 1
        out.append(base.Received(channel, peer, frame, outbound, addr))

    def _check_idle(self, now: float) -> None:
        """Close idle channels (``ConnTracker.idle_scan``) whenever the loop is awake and a check
        interval has passed; the loop is not woken for it before ``idle_due``."""
        if now < self.next_idle_check:
            return
        self.next_idle_check = now + min(max(self.idle_ms / IDLE_CHECK_FRACTION, 10.0), 1000.0)
        idle, self.idle_due = self.conns.idle_scan(now, self.idle_ms, self.closing)
        for conn in idle:
            self.counters["idle_closed"] += 1
            self.close_channel(conn.channel, "idle")

    # ------------------------------------------------------------------ configuration

    def set_links(self, rules: dict[tuple[str, str], LinkRule], peers: dict[str, str]) -> None:
        self.links.replace(rules)
        self.peers = dict(peers)
        self.names = {addr: name for name, addr in peers.items()}

    def link_rules(self) -> dict[tuple[str, str], LinkRule]:
        return dict(self.links.rules)

    def watch_fd(self, fd: int) -> None:
        self.watched.add(fd)
        self.poller.register(fd)

    def ready(self, info: dict[str, Any]) -> None:
        if self.control is not None:
            self.control.ready(info)
            self.poller.touched(self.control.sock)

    def ack(self, cmd_id: str, ok: bool, result: dict[str, Any]) -> None:
        if self.control is not None:
            self.control.ack(cmd_id, ok, result)
            self.poller.touched(self.control.sock)

    def stats(self) -> dict[str, Any]:
        return {**self.counters, "channels": self.conns.channels(), "outbound": self.outbound.addrs(),
                "delayed_now": len(self.shaper.delayed), "blocked_links": self.links.blocked_links()}

    def close(self) -> None:
        self.outbound.close()
        self.poller.close()  # before the control client closes its parent pidfd
        if self.control is not None:
            self.control.close()
        self.router_mon.close()
        self.router.close()
        self.ctx.term()
