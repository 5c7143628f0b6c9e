"""The control plane: the launcher's control socket, and the supervisor RPC of ``rmqemu up``.

Launcher side (:class:`ControlServer`): one ROUTER bound on loopback. Each node connects a DEALER
whose identity is its name, says ``ready`` with its address, and then obeys commands
(``set_links``, ``set_clock``, ``state``, ``shutdown``) and acks each. Every message carries the
run's random token; a message without it is dropped (and never obeyed). A node's control
connection closing (its process died) is reported as :class:`NodeGone` within milliseconds, from
the same monitor + ``SRCFD`` join the data plane uses.

Supervisor side (:class:`SupervisorServer` / :func:`supervisor_call`): the CLI's ``status``,
``down`` and fault verbs reach a cluster started with ``rmqemu up`` through a token-checked
request/reply on loopback.

Messages are single JSON frames (:func:`pack` / :func:`unpack`).
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

import zmq
from emulator.transport._monitor import recv_monitor_message

from rmqemu.errors import ControlError
from emulator.transport._conns import ConnTracker
from emulator.transport.base import peer_label

LOOPBACK = "tcp://127.0.0.1"


def pack(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":"), default=str).encode()


def unpack(data: bytes) -> dict[str, Any] | None:
    """The message, or None when it is not a JSON object."""
    try:
        msg = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return msg if isinstance(msg, dict) else None


def _socket(ctx: zmq.Context, kind: int) -> zmq.Socket:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    return sock


@dataclass(frozen=True)
class NodeReady:
    """A node bound its socket and is ready; ``info`` has ``addr`` and ``pid``."""

    node: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeGone:
    """A node's control connection closed (its process exited or was killed)."""

    node: str


@dataclass(frozen=True)
class Ack:
    node: str
    cmd_id: str
    ok: bool
    result: dict[str, Any]


class ControlServer:
    """The launcher's control socket."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.ctx = zmq.Context()
        self.sock = _socket(self.ctx, zmq.ROUTER)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        port = self.sock.bind_to_random_port(LOOPBACK)
        self.endpoint = f"{LOOPBACK}:{port}"
        self.mon = self.sock.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self.conns = ConnTracker()
        self.poller = zmq.Poller()
        self.poller.register(self.sock, zmq.POLLIN)
        self.poller.register(self.mon, zmq.POLLIN)
        self._ids = itertools.count(1)
        self._acks: dict[str, Ack] = {}
        self._backlog: list[NodeReady | NodeGone] = []
        self.refused = 0

    def poll(self, timeout_ms: float) -> list[NodeReady | NodeGone]:
        """Ready and gone notices (acks are kept for :meth:`call`)."""
        if not self._backlog:
            self._pump(timeout_ms)
        out, self._backlog = self._backlog, []
        return out

    def _pump(self, timeout_ms: float) -> None:
        self.poller.poll(max(0, int(timeout_ms)))
        while True:
            try:
                parts = self.sock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            identity = parts[0].bytes
            self.conns.on_frame(parts[-1].get(zmq.SRCFD), identity, peer_label(identity), 0.0)
            self._backlog += [NodeGone(c.peer) for c in self.conns.implicit_closes]
            self.conns.implicit_closes.clear()
            msg = unpack(parts[-1].bytes) if len(parts) == 2 else None
            if msg is None or msg.get("token") != self.token:
                self.refused += 1
                continue
            node = peer_label(identity)
            if msg.get("t") == "ready":
                self._backlog.append(NodeReady(node, dict(msg.get("info") or {})))
            elif msg.get("t") == "ack":
                cmd_id = str(msg.get("cmd_id"))
                self._acks[cmd_id] = Ack(node, cmd_id, bool(msg.get("ok")), dict(msg.get("result") or {}))
        while self.mon.poll(0):
            ev = recv_monitor_message(self.mon, zmq.NOBLOCK)
            if ev["event"] == zmq.EVENT_ACCEPTED:
                self.conns.accepted(int(ev["value"]))
            elif ev["event"] == zmq.EVENT_DISCONNECTED:
                conn = self.conns.disconnected(int(ev["value"]))
                if conn is not None:
                    self._backlog.append(NodeGone(conn.peer))

    def command(self, node: str, name: str, args: dict[str, Any]) -> str:
        """Send a command without waiting; returns its id. Raises if the node is not connected."""
        cmd_id = f"c{next(self._ids)}"
        msg = {"t": "cmd", "token": self.token, "cmd_id": cmd_id, "name": name, "args": args}
        try:
            self.sock.send_multipart([node.encode(), pack(msg)], zmq.NOBLOCK)
        except zmq.ZMQError as exc:  # EHOSTUNREACH: no such connected node
            raise ControlError(f"{node}: not connected to the control plane ({exc.strerror})") from None
        return cmd_id

    def call(self, node: str, name: str, args: dict[str, Any], timeout_ms: float) -> dict[str, Any]:
        """Send a command and wait for its ack; the result, or :class:`ControlError`."""
        cmd_id = self.command(node, name, args)
        deadline = time.monotonic() + timeout_ms / 1000
        while cmd_id not in self._acks:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ControlError(f"{node}: no ack to {name!r} within {timeout_ms:.0f} ms")
            self._pump(min(left * 1000, 50))
        ack = self._acks.pop(cmd_id)
        if not ack.ok:
            raise ControlError(f"{node}: {name!r} failed: {ack.result.get('error', ack.result)}")
        return ack.result

    def close(self) -> None:
        self.mon.close()
        self.sock.close()
        self.ctx.term()


class SupervisorServer:
    """The RPC socket of an ``rmqemu up`` supervisor."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.ctx = zmq.Context()
        self.sock = _socket(self.ctx, zmq.ROUTER)
        port = self.sock.bind_to_random_port(LOOPBACK)
        self.endpoint = f"{LOOPBACK}:{port}"

    def poll(self, timeout_ms: float) -> list[tuple[bytes, str, dict[str, Any]]]:
        """Requests as ``(reply_id, command, args)``; wrong-token requests get an error reply."""
        out: list[tuple[bytes, str, dict[str, Any]]] = []
        if not self.sock.poll(max(0, int(timeout_ms))):
            return out
        while True:
            try:
                parts = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return out
            if len(parts) != 2:
                continue
            msg = unpack(parts[1])
            if msg is None or msg.get("token") != self.token:
                self.reply(parts[0], False, {"error": "refused: wrong or missing token"})
                continue
            out.append((parts[0], str(msg.get("name")), dict(msg.get("args") or {})))

    def reply(self, reply_id: bytes, ok: bool, result: dict[str, Any]) -> None:
        try:
            self.sock.send_multipart([reply_id, pack({"ok": ok, "result": result})], zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the caller gave up and closed its socket

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()


def supervisor_call(endpoint: str, token: str, name: str, args: dict[str, Any], timeout_ms: float) -> dict[str, Any]:
    """One request to a supervisor; its result, or :class:`ControlError`."""
    ctx = zmq.Context()
    sock = _socket(ctx, zmq.DEALER)
    try:
        sock.connect(endpoint)
        sock.send(pack({"token": token, "name": name, "args": args}))
        if not sock.poll(int(timeout_ms)):
            raise ControlError(f"the supervisor at {endpoint} did not answer {name!r} within {timeout_ms / 1000:.0f}s")
        reply = unpack(sock.recv()) or {}
    finally:
        sock.close()
        ctx.term()
    if not reply.get("ok"):
        raise ControlError(str((reply.get("result") or {}).get("error", reply)))
    return dict(reply.get("result") or {})
