"""A node's end of the control plane: say ready, receive commands, ack them, notice a lost launcher.

"Lost" has two signs, either enough: the launcher process is gone (a pidfd of the parent, which
the transport's poller watches, becomes readable when it exits; where pidfds are missing, the
parent pid is checked every :data:`PPID_CHECK_MS` instead: the kernel re-parents an orphan), or
the control connection dropped and did not come back within :data:`RECONNECT_GRACE_MS` (a
SIGSTOPped node's own heartbeat may time out when it resumes; the DEALER then reconnects at
once, which is not a loss). ZMQ heartbeats on the connection catch a launcher that hangs
without dying.

Messages are signed with the key the launcher handed this process at spawn and numbered
(:mod:`._auth`); a command that does not verify or replays an old number is refused
(:class:`ControlRefused`, rate-limited) and never obeyed. The DEALER has no chosen identity: the
launcher routes to the connection our last signed message came on, so after every (re)connect we
send a signed ``hello``.
"""

from __future__ import annotations

import os
from collections.abc import Container
from typing import Any

import zmq

from rmqemu.emulator.transport import _auth
from rmqemu.emulator.transport._guard import EventGate
from rmqemu.emulator.transport._monitor import recv_monitor_message
from rmqemu.emulator.transport._wire import MAX_CONTROL_BYTES, pack, unpack
from rmqemu.emulator.transport.base import ControlCommand, ControlLost, ControlRefused, TransportEvent

RECONNECT_GRACE_MS = 2000.0
HEARTBEAT_IVL_MS = 1000
HEARTBEAT_TIMEOUT_MS = 30000
PPID_CHECK_MS = 200.0


class ControlClient:
    def __init__(self, ctx: zmq.Context, endpoint: str, key: bytes, name: str) -> None:
        self.key = key
        self.name = name.encode()
        self.seq_out = 0
        self.seq_in = 0  # the last command sequence number accepted
        self.gate = EventGate()
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.MAXMSGSIZE, MAX_CONTROL_BYTES)
        self.sock.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_IVL_MS)
        self.sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, HEARTBEAT_TIMEOUT_MS)
        self.sock.setsockopt(zmq.RECONNECT_IVL, 50)
        self.mon = self.sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)
        self.sock.connect(endpoint)
        self.ppid = os.getppid()
        self.parent_fd = _pidfd(self.ppid)  # readable once the launcher exits: no polling for it
        self.parent_exited = False  # set when parent_fd turns readable
        self.down_since: float | None = None
        self.next_ppid_check = 0.0  # the first check also catches a parent gone before the pidfd
        self.lost = False

    def send(self, msg: dict[str, Any]) -> None:
        # Never blocks: before the handshake, zmq queues the message on the pipe (no IMMEDIATE).
        self.seq_out += 1
        payload = pack({**msg, "seq": self.seq_out})
        self.sock.send_multipart([self.name, payload, _auth.tag(self.key, _auth.FROM_NODE + self.name, payload)],
                                 zmq.NOBLOCK)

    def ready(self, info: dict[str, Any]) -> None:
        self.send({"t": "ready", "info": info})

    def ack(self, cmd_id: str, ok: bool, result: dict[str, Any]) -> None:
        try:
            self.send({"t": "ack", "cmd_id": cmd_id, "ok": ok, "result": result})
        except zmq.ZMQError:
            pass  # the launcher is going away; its loss is noticed separately

    def on_readable(self, out: list[TransportEvent]) -> None:
        while True:
            try:
                parts = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                refusal = self._on_message(parts, out)
            except Exception as exc:  # noqa: BLE001 - nothing one frame holds may end the node's loop
                refusal = f"{type(exc).__name__}: {exc}"
            if refusal is not None:
                suppressed = self.gate.admit("launcher")
                if suppressed is not None:
                    out.append(ControlRefused(refusal[:500], suppressed))

    def _on_message(self, parts: list[bytes], out: list[TransportEvent]) -> str | None:
        if len(parts) != 2:
            return f"expected [payload, signature], got {len(parts)} part(s)"
        payload, got = parts
        if not _auth.verify(self.key, _auth.TO_NODE + self.name, payload, got):
            return "bad signature (not this spawn's key)"
        msg = unpack(payload)
        if msg is None:
            return "signed payload is not a JSON object"
        if not _auth.fresh_seq(msg.get("seq"), self.seq_in):
            return f"replayed or out-of-order command (seq {msg.get('seq')!r} <= {self.seq_in})"
        self.seq_in = msg["seq"]
        if msg.get("t") == "cmd":
            out.append(ControlCommand(str(msg.get("cmd_id")), str(msg.get("name")), dict(msg.get("args") or {})))
        return None

    def on_monitor(self, now_ms: float) -> None:
        while self.mon.poll(0):
            ev = recv_monitor_message(self.mon, zmq.NOBLOCK)
            if ev["event"] == zmq.EVENT_DISCONNECTED:
                self.down_since = self.down_since if self.down_since is not None else now_ms
            elif ev["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.down_since = None
                try:  # a new connection has a new routing id at the launcher: tell it who we are
                    self.send({"t": "hello"})
                except zmq.ZMQError:
                    pass

    def service(self, ready: Container[Any], now_ms: float, out: list[TransportEvent], poller: Any) -> None:
        """One turn of the node's loop: read what of ours is ``ready`` (the control socket, its
        monitor, the parent's pidfd), then :meth:`check`. ``poller`` is the transport's
        :class:`~emulator.transport._readiness.EpollPoller`."""
        if self.sock in ready:
            self.on_readable(out)
        if self.mon in ready:
            self.on_monitor(now_ms)
            poller.touched(self.sock)  # it may have sent a hello
        if self.parent_fd is not None and self.parent_fd in ready:
            self.parent_exited = True
            poller.unregister(self.parent_fd)  # it stays readable: report it once
        self.check(now_ms, out)

    def check(self, now_ms: float, out: list[TransportEvent]) -> None:
        """Report the launcher's loss once."""
        if self.lost:
            return
        reason = None
        if now_ms >= self.next_ppid_check or self.parent_exited:
            self.next_ppid_check = now_ms + PPID_CHECK_MS if self.parent_fd is None else float("inf")
            if os.getppid() != self.ppid or self.parent_exited:
                reason = "the launcher process exited"
        if reason is None and self.down_since is not None and now_ms - self.down_since > RECONNECT_GRACE_MS:
            reason = f"control connection down for more than {RECONNECT_GRACE_MS:.0f} ms"
        if reason is not None:
            self.lost = True
            out.append(ControlLost(reason))

    def next_due_ms(self, now_ms: float) -> float:
        due = self.next_ppid_check
        if self.down_since is not None:
            due = min(due, self.down_since + RECONNECT_GRACE_MS + 1)
        return max(due, now_ms)

    def close(self) -> None:
        self.mon.close()
        self.sock.close()
        if self.parent_fd is not None:
            os.close(self.parent_fd)
            self.parent_fd = None


def _pidfd(pid: int) -> int | None:
    """A pidfd of ``pid`` (Linux 5.3+), or None where there is none: then the loop polls
    ``getppid`` every :data:`PPID_CHECK_MS`, five wake-ups a second of every idle node."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
