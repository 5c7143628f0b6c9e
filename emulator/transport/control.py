"""The control plane: the launcher's control socket, and the supervisor RPC of ``rmqemu up``.

Launcher side (:class:`ControlServer`): one ROUTER bound on loopback. Before spawning a node the
launcher enrolls it (:meth:`ControlServer.enroll`: a fresh key, handed to the child on its stdin).
The node connects a DEALER, says ``ready`` with its address, and then obeys commands
(``set_links``, ``set_clock``, ``state``, ``shutdown``) and acks each. Every message in either
direction is signed with the node's key and numbered (:mod:`._auth` says why and how); anything
that does not verify, or replays an old number, is refused, counted, and reported (rate-limited)
to :attr:`ControlServer.on_refused` -- never obeyed, and never able to crash the loop.

Routing never trusts a claimed identity: nodes choose none (the ROUTER numbers their connections,
from a seeded counter: ``_guard.seed_routing_ids``), a peer that claims an id already in use is
ignored (no ``ROUTER_HANDOVER``), and a node's route is the connection its last *verified*
message came on. An impostor can connect and send, but cannot take a node's commands;
a node that reconnects (or is restarted with a new key) re-announces itself with a signed
``hello``. A node's control connection closing (its process died) is reported as
:class:`NodeGone` within milliseconds, from the same monitor + ``SRCFD`` join the data plane uses.

Supervisor side (:class:`SupervisorServer` / :func:`supervisor_call`, in :mod:`._supervisor_rpc`):
the CLI's ``status``, ``down`` and fault verbs reach a cluster started with ``rmqemu up``.

Payloads are JSON (:func:`pack` / :func:`unpack`), parsed only after their signature checked.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import zmq

from rmqemu.emulator.transport import _auth
from rmqemu.emulator.transport._conns import Conn, ConnTracker
from rmqemu.emulator.transport._guard import EventGate, seed_routing_ids
from rmqemu.emulator.transport._monitor import recv_monitor_message
from rmqemu.emulator.transport._supervisor_rpc import SupervisorServer, supervisor_call
from rmqemu.emulator.transport._wire import LOOPBACK, MAX_CONTROL_BYTES, pack, socket_, unpack
from rmqemu.emulator.transport.base import peer_label
from rmqemu.errors import ControlError, ControlTimeout

__all__ = ["Ack", "ControlServer", "LOOPBACK", "NodeGone", "NodeReady", "SupervisorServer", "pack",
           "supervisor_call", "unpack"]
RefusedSink = Callable[[dict[str, Any]], None]


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
    """The launcher's control socket. ``token`` is the run's secret; node keys are per spawn."""

    def __init__(self, token: str) -> None:
        self.token = token
        seed_routing_ids()
        self.ctx = zmq.Context()
        self.sock = socket_(self.ctx, zmq.ROUTER)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.sock.setsockopt(zmq.MAXMSGSIZE, MAX_CONTROL_BYTES)
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
        self._keys: dict[str, bytes] = {}  # node -> the key of its current spawn
        self._seq_in: dict[str, int] = {}  # node -> last sequence number accepted from it
        self._seq_out: dict[str, int] = {}  # node -> last sequence number we sent it
        self._route: dict[str, bytes] = {}  # node -> routing id its last verified message came on
        self._node_of: dict[bytes, str] = {}
        self.refused = 0
        self.gate = EventGate()
        self.on_refused: RefusedSink | None = None  # gets {"peer", "reason", "suppressed"}

    def enroll(self, node: str) -> bytes:
        """A fresh key for a node about to be (re)spawned; what its previous life signed is void."""
        key = _auth.new_key()
        self._keys[node] = key
        self._seq_in[node] = self._seq_out[node] = 0
        old = self._route.pop(node, None)
        if old is not None:
            self._node_of.pop(old, None)
        return key

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
            try:
                self.conns.on_frame(parts[-1].get(zmq.SRCFD), identity, peer_label(identity), 0.0)
                self._gone(self.conns.implicit_closes)
                self.conns.implicit_closes.clear()
                refusal = self._on_message(identity, [p.bytes for p in parts[1:]])
            except Exception as exc:  # noqa: BLE001 - nothing one frame holds may end the launcher's loop
                refusal = f"{type(exc).__name__}: {exc}"
            if refusal is not None:
                self._refuse(peer_label(identity), refusal)
        while self.mon.poll(0):
            ev = recv_monitor_message(self.mon, zmq.NOBLOCK)
            if ev["event"] == zmq.EVENT_ACCEPTED:
                self.conns.accepted(int(ev["value"]))
            elif ev["event"] == zmq.EVENT_DISCONNECTED:
                conn = self.conns.disconnected(int(ev["value"]))
                self._gone([conn] if conn is not None else [])

    def _gone(self, conns: list[Conn]) -> None:
        for conn in conns:
            node = self._node_of.pop(conn.identity, None)
            if node is not None and self._route.get(node) == conn.identity:
                del self._route[node]
                self._backlog.append(NodeGone(node))

    def _on_message(self, identity: bytes, parts: list[bytes]) -> str | None:
        """Handle one message; the reason it is refused, or None."""
        if len(parts) != 3:
            return f"expected [node, payload, signature], got {len(parts)} part(s)"
        name_bytes, payload, got = parts
        node = name_bytes.decode("ascii", "replace")
        key = self._keys.get(node)
        if key is None:
            return f"unknown node {node[:64]!r}"
        if not _auth.verify(key, _auth.FROM_NODE + name_bytes, payload, got):
            return f"bad signature for {node!r}"
        msg = unpack(payload)
        if msg is None:
            return f"{node}: signed payload is not a JSON object"
        if not _auth.fresh_seq(msg.get("seq"), self._seq_in[node]):
            return f"{node}: replayed or out-of-order message (seq {msg.get('seq')!r} <= {self._seq_in[node]})"
        self._seq_in[node] = msg["seq"]
        old = self._route.get(node)
        if old != identity:
            if old is not None:
                self._node_of.pop(old, None)
            self._route[node], self._node_of[identity] = identity, node
        if msg.get("t") == "ready":
            self._backlog.append(NodeReady(node, dict(msg.get("info") or {})))
        elif msg.get("t") == "ack":
            cmd_id = str(msg.get("cmd_id"))
            self._acks[cmd_id] = Ack(node, cmd_id, bool(msg.get("ok")), dict(msg.get("result") or {}))
        return None

    def _refuse(self, peer: str, reason: str) -> None:
        self.refused += 1
        suppressed = self.gate.admit(peer)
        if suppressed is not None and self.on_refused is not None:
            try:
                self.on_refused({"peer": peer, "reason": reason[:500], "suppressed": suppressed})
            except OSError:
                pass  # logging a refusal must not fail the launcher (a full disk, say)

    def command(self, node: str, name: str, args: dict[str, Any]) -> str:
        """Send a command without waiting; returns its id. Raises if the node is not connected."""
        route, key = self._route.get(node), self._keys.get(node)
        if route is None or key is None:
            raise ControlError(f"{node}: not connected to the control plane")
        cmd_id = f"c{next(self._ids)}"
        self._seq_out[node] += 1
        payload = pack({"t": "cmd", "seq": self._seq_out[node], "cmd_id": cmd_id, "name": name, "args": args})
        try:
            self.sock.send_multipart([route, payload, _auth.tag(key, _auth.TO_NODE + node.encode(), payload)],
                                     zmq.NOBLOCK)
        except zmq.ZMQError as exc:  # EHOSTUNREACH: that connection is gone
            raise ControlError(f"{node}: not connected to the control plane ({exc.strerror})") from None
        return cmd_id

    def call(self, node: str, name: str, args: dict[str, Any], timeout_ms: float) -> dict[str, Any]:
        """Send a command and wait for its ack; the result, or :class:`ControlError`
        (:class:`ControlTimeout` when no ack came in time)."""
        cmd_id = self.command(node, name, args)
        deadline = time.monotonic() + timeout_ms / 1000
        while cmd_id not in self._acks:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ControlTimeout(node, name, timeout_ms)
            self._pump(min(left * 1000, 50))
        ack = self._acks.pop(cmd_id)
        if not ack.ok:
            raise ControlError(f"{node}: {name!r} failed: {ack.result.get('error', ack.result)}")
        return ack.result

    def close(self) -> None:
        self.mon.close()
        self.sock.close()
        self.ctx.term()
