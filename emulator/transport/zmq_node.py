"""A node's data plane over ZeroMQ (docs/design.md §2): the only :class:`Transport` with sockets.

- Inbound: one ROUTER bound on 127.0.0.1 (:mod:`._inbound`). Any frame decodes to a
  :class:`Frame` or a rate-limited :class:`BadInput` (:mod:`._guard`); no exception of one frame
  leaves :meth:`ZmqTransport._decode`. Netty's ``IdleStateHandler(0, 0, 120 s)`` is modelled at
  the application level: a channel with no frame in or out for ``idle_ms`` is closed for real
  and reported ``idle`` (docs/rocketmq-model.md §1.5).
- Real clients: the remoting port, when enabled (:mod:`._remoting`), channels ``rm:<n>``; the
  same link faults and idle rule apply to them. RocketMQ 5 clients: the gRPC port (:mod:`._grpc`),
  a channel ``grpc:<n>`` per call, served on a thread of its own; link faults apply, the idle rule
  is grpc's own (connection idle and keepalive: a Telemetry call is silent for minutes).
- Outbound: one DEALER per peer address (:mod:`._outbound`), ZMQ heartbeats so a dead or frozen
  peer's connection is noticed, ``disconnected`` reported to the role.
- Link faults: the sender applies block/loss/delay/duplicate of ``(self, dst)`` (:mod:`._shaping`),
  the receiver the block of ``(src, self)`` (:mod:`emulator.node.links`).
- Control: :mod:`._control_client`, never faulted, signed per message (:mod:`._auth`).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import zmq

from rmqemu.emulator.node.clock import mono_ms
from rmqemu.emulator.node.links import DELIVER, Delivery, LinkRule, LinkTable
from rmqemu.emulator.protocol import BadFrame, Frame, decode, is_grpc, is_remoting
from rmqemu.emulator.transport import base
from rmqemu.emulator.transport._control_client import ControlClient
from rmqemu.emulator.transport._frames import recv_parts
from rmqemu.emulator.transport._guard import EventGate, seed_routing_ids
from rmqemu.emulator.transport._inbound import RouterInbound
from rmqemu.emulator.transport._outbound import Outbound, OutboundSet
from rmqemu.emulator.transport._readiness import EpollPoller
from rmqemu.emulator.transport._remoting import RemotingListener
from rmqemu.emulator.transport._shaping import ShapedSender
from rmqemu.emulator.transport.base import OUT_PREFIX, BadInput, TransportEvent, out_channel

if TYPE_CHECKING:
    from rmqemu.emulator.transport._grpc import GrpcPort

_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)  # plain ints: fast (see _frames)
IDLE_CHECK_FRACTION = 20  # idle closes are checked every idle_ms / 20: 5% precision


class ZmqTransport:
    """See the module docstring. ``idle_ms`` / ``heartbeat_ms`` are already scaled."""

    def __init__(self, name: str, port: int = 0, *, idle_ms: float = 1200.0, heartbeat_ms: float = 1200.0,
                 connect_timeout_ms: float = 3000.0, seed: int = 0,
                 control_endpoint: str | None = None, control_key: bytes = b"",
                 remoting: tuple[str, int] | None = None, grpc: tuple[str, int] | None = None,
                 grpc_service: Any = None) -> None:
        """``grpc``: HOST, PORT of the gRPC port (0: any) serving ``grpc_service``, a ServiceDescriptor."""
        self.name = name
        self.idle_ms = idle_ms
        self.heartbeat_ms = max(int(heartbeat_ms), 20)
        self.connect_timeout_ms = connect_timeout_ms
        seed_routing_ids()
        self.ctx = zmq.Context()
        self.links = LinkTable(rng=random.Random(f"{seed}:{name}"))
        self.counters = dict(sent=0, received=0, dropped_out=0, dropped_in=0, delayed=0, duplicated=0,
                             send_failed=0, bad_frames=0, idle_closed=0, remoting_refused=0, grpc_calls=0)
        self.peers: dict[str, str] = {}  # node name -> addr
        self.names: dict[str, str] = {}  # addr -> node name
        self.shaper = ShapedSender(name, self.links, self._deliver, self._peer_of, self._reachable, self.counters)
        self.poller = EpollPoller()
        self.inbound = RouterInbound(self.ctx, port, self.poller, self.counters, self._blocked_from,
                                     lambda ch, peer, parts, out: self._decode(ch, peer, parts, out, outbound=False))
        self.outbound = OutboundSet(self.ctx, name.encode(), self.heartbeat_ms, self.poller)
        self.control: ControlClient | None = None
        if control_endpoint:
            self.control = ControlClient(self.ctx, control_endpoint, control_key, name)
            self.poller.register(self.control.sock)
            self.poller.register(self.control.mon)
            if self.control.parent_fd is not None:
                self.poller.register(self.control.parent_fd)
        self.remoting: RemotingListener | None = None
        self.grpc: GrpcPort | None = None
        if remoting is not None:
            try:
                self.remoting = RemotingListener(*remoting, self.poller, self._from_client, self.counters)
            except OSError:  # its port is taken: release the sockets made so far
                self.close()
                raise
        if grpc is not None:
            from rmqemu.emulator.transport._grpc import GrpcPort  # grpc.aio's import: ~70 ms, only where used
            try:
                self.grpc = GrpcPort(*grpc, grpc_service, self._from_client, self.counters, idle_ms=idle_ms)
            except OSError:
                self.close()
                raise
            self.poller.register(self.grpc.fd)
        self.watched: set[int] = set()
        self.next_idle_check = 0.0
        self.idle_due = 0.0  # no channel can go idle before this (as of the last idle check)
        self.bad_input_gate = EventGate()

    @property
    def address(self) -> str:
        return self.inbound.address

    @property
    def remoting_address(self) -> str | None:
        """``HOST:PORT`` of the remoting port real RocketMQ clients connect to, if enabled."""
        return self.remoting.address if self.remoting is not None else None

    @property
    def grpc_address(self) -> str | None:
        """``HOST:PORT`` of the gRPC port RocketMQ 5 clients connect to, if enabled."""
        return self.grpc.address if self.grpc is not None else None

    # ------------------------------------------------------------------ sending

    def send_to_addr(self, addr: str, frame: Frame) -> bool:
        return self.shaper.send(out_channel(addr), frame)

    def send_to_channel(self, channel: str, frame: Frame) -> bool:
        return self.shaper.send(channel, frame)

    def _peer_of(self, channel: str) -> str | None:
        if self.grpc is not None and is_grpc(channel):
            return self.grpc.calls.peer_of(channel)
        if self.remoting is not None and is_remoting(channel):
            return self.remoting.peer_of(channel)
        if channel.startswith(OUT_PREFIX):
            addr = channel[len(OUT_PREFIX):]
            return self.names.get(addr, addr)
        return self.inbound.peer_of(channel)

    def _reachable(self, channel: str) -> bool:
        if self.grpc is not None and is_grpc(channel):
            return self.grpc.calls.live(channel) is not None
        if self.remoting is not None and is_remoting(channel):
            return self.remoting.peer_of(channel) is not None
        if channel.startswith(OUT_PREFIX):
            out = self.outbound.get(channel[len(OUT_PREFIX):])
            return out is None or not out.refused
        return self.inbound.peer_of(channel) is not None

    def _deliver(self, channel: str, frame: Frame) -> bool:
        now = mono_ms()
        if self.grpc is not None and is_grpc(channel):
            ok = self.grpc.send(channel, frame)
        elif self.remoting is not None and is_remoting(channel):
            ok = self.remoting.send(channel, frame, now)
        elif channel.startswith(OUT_PREFIX):
            ok = self.outbound.send(channel[len(OUT_PREFIX):], frame, now, self.connect_timeout_ms)
        elif self.inbound.peer_of(channel) is None:
            return False
        else:
            ok = self.inbound.send(channel, frame, now)
        self.counters["sent" if ok else "send_failed"] += 1
        return ok

    def close_channel(self, channel: str, kind: str = "closed") -> None:
        if self.grpc is not None and is_grpc(channel):
            self.grpc.close(channel)
            return
        if self.remoting is not None and is_remoting(channel):
            self.remoting.close(channel, kind)
            return
        self.inbound.close(channel, kind)

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
        self.inbound.service(ready, now, out)
        for sock in ready:
            if (ob := self.outbound.by_mon.get(sock)) is not None:
                ob.on_monitor(out)
        for sock in ready:
            if (ob := self.outbound.by_sock.get(sock)) is not None:
                self._recv_outbound(ob, now, out)
        if self.remoting is not None:
            for item, mask in ready.items():
                if type(item) is int and self.remoting.owns(item):
                    self.remoting.service(item, mask, now, out, self._report_bad)
        if self.grpc is not None and (self.grpc.fd in ready or self.grpc.calls.backlog()):
            self.grpc.service(now, out)
        self.outbound.flush(now, out)
        self.shaper.flush(now)
        if self.remoting is not None:
            self.remoting.flush(now, out)
        if self.grpc is not None:
            self.grpc.calls.flush(now, out)
        self._check_idle(now)
        if self.remoting is not None:
            self.remoting.drain_events(out)
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
        dues = (self.shaper.next_due(), self.remoting.next_due() if self.remoting is not None else None,
                None if self.grpc is None else now if self.grpc.calls.backlog() else self.grpc.calls.next_due())
        due = min((d for d in dues if d is not None), default=float("inf"))
        if self.outbound.backlogged:  # (a backlog whose queue a refusal emptied has no due: [])
            due = min([due, *self.outbound.next_due_ms(now)])
        if len(self.inbound) or (self.remoting is not None and len(self.remoting)):
            due = min(due, max(self.next_idle_check, self.idle_due))
        if self.control is not None:
            due = min(due, self.control.next_due_ms(now))
        return None if due == float("inf") else due

    def _recv_outbound(self, ob: Outbound, now: float, out: list[TransportEvent]) -> None:
        peer = self.names.get(ob.addr, ob.addr)
        sock = ob.sock
        while sock.getsockopt(_EVENTS) & _POLLIN:
            parts = recv_parts(sock)
            if self._blocked_from(peer):
                self.counters["dropped_in"] += 1
                continue
            self._decode(out_channel(ob.addr), peer, [p.bytes for p in parts], out, outbound=True, addr=ob.addr)

    def _decode(self, channel: str, peer: str, parts: list[bytes], out: list[TransportEvent],
                outbound: bool, addr: str | None = None) -> None:
        try:
            frame = decode(parts)
        except Exception as exc:  # noqa: BLE001 - BadFrame, or anything decode did not foresee: never the loop's end
            self.counters["bad_frames"] += 1
            reason = str(exc) if isinstance(exc, BadFrame) else f"{type(exc).__name__}: {exc}"
            if (bad := self._report_bad(peer, reason, channel)) is not None:
                out.append(bad)
            return
        self.counters["received"] += 1
        out.append(base.Received(channel, peer, frame, outbound, addr))

    def _report_bad(self, peer: str, reason: str, channel: str | None) -> BadInput | None:
        """The event of a bad frame, unless the rate limit holds it back."""
        suppressed = self.bad_input_gate.admit(peer)
        return None if suppressed is None else BadInput(peer, reason[:500], channel, suppressed)

    def _from_client(self, peer: str) -> Delivery:
        """The link fault on what a real client sends us: its sender side is applied on arrival."""
        return self.links.on_send(peer, self.name) if self.links.rules else DELIVER

    def _blocked_from(self, peer: str) -> bool:
        """A link fault drops what ``peer`` sends us."""
        return bool(self.links.rules) and self.links.on_receive(peer, self.name).dropped

    def _check_idle(self, now: float) -> None:
        """Close idle channels (the remoting port's too) whenever the loop is awake and a check
        interval has passed; the loop is not woken for it before ``idle_due``."""
        if now < self.next_idle_check:
            return
        self.next_idle_check = now + min(max(self.idle_ms / IDLE_CHECK_FRACTION, 10.0), 1000.0)
        channels, self.idle_due = self.inbound.idle_scan(now, self.idle_ms)
        if self.remoting is not None:
            idle_rm, due_rm = self.remoting.idle_scan(now, self.idle_ms)
            channels += idle_rm
            self.idle_due = min(self.idle_due, due_rm)
        for channel in channels:
            self.counters["idle_closed"] += 1
            self.close_channel(channel, "idle")

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
        return {**self.counters, "channels": self.inbound.conns.channels(), "outbound": self.outbound.addrs(),
                "delayed_now": len(self.shaper.delayed), "blocked_links": self.links.blocked_links(),
                **({"remoting_clients": self.remoting.clients()} if self.remoting is not None else {}),
                **({"grpc_clients": self.grpc.calls.clients(), **self.grpc.stats()} if self.grpc is not None else {})}

    def close(self) -> None:
        if self.grpc is not None:
            self.poller.unregister(self.grpc.fd)
            self.grpc.shutdown()
        if self.remoting is not None:
            self.remoting.shutdown()
        self.outbound.close()
        self.poller.close()  # before the control client closes its parent pidfd
        if self.control is not None:
            self.control.close()
        self.inbound.close_sockets()
        self.ctx.term()
