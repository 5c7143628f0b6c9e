"""The RPC of an ``rmqemu up`` supervisor: signed, nonce-carrying request/reply on loopback.

A request is ``[payload, tag]``: ``payload`` is ``{"name", "args", "nonce", "ts"}`` and ``tag``
its HMAC under the key derived from the run's token (:mod:`._auth` explains the design). The
supervisor checks the tag before it parses anything, then the time window and the nonce (a
replayed request is refused), and signs its reply over the request's nonce. Refusals get an
unsigned error reply (it grants nothing) and a rate-limited ``control.refused`` record, written
as a JSON line to stderr, which the supervisor's ``supervisor.log`` keeps, unless
:attr:`SupervisorServer.on_refused` is set to something else.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from typing import Any, Callable

import zmq

from rmqemu.emulator.transport import _auth
from rmqemu.emulator.transport._guard import EventGate, seed_routing_ids
from rmqemu.emulator.transport._wire import LOOPBACK, MAX_RPC_REQUEST_BYTES, pack, socket_, unpack
from rmqemu.emulator.transport.base import peer_label
from rmqemu.errors import ControlError

MAX_PENDING = 1024  # requests handed out but not yet replied to (the CLI serves them one by one)


def _log_refusal(fields: dict[str, Any]) -> None:
    line = {"ts": time.time() * 1000, "node": "supervisor", "kind": "control.refused", **fields}
    print(json.dumps(line), file=sys.stderr, flush=True)


class SupervisorServer:
    """The RPC socket of an ``rmqemu up`` supervisor."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.key = _auth.supervisor_key(token)
        seed_routing_ids()
        self.ctx = zmq.Context()
        self.sock = socket_(self.ctx, zmq.ROUTER)
        self.sock.setsockopt(zmq.MAXMSGSIZE, MAX_RPC_REQUEST_BYTES)
        port = self.sock.bind_to_random_port(LOOPBACK)
        self.endpoint = f"{LOOPBACK}:{port}"
        self._seen: dict[str, float] = {}  # nonce -> host ms after which it may be forgotten
        self._pending: dict[bytes, str] = {}  # reply id -> its request's nonce
        self.refused = 0
        self.gate = EventGate()
        self.on_refused: Callable[[dict[str, Any]], None] = _log_refusal

    def poll(self, timeout_ms: float) -> list[tuple[bytes, str, dict[str, Any]]]:
        """Verified requests as ``(reply_id, command, args)``; refused ones get an error reply."""
        out: list[tuple[bytes, str, dict[str, Any]]] = []
        if not self.sock.poll(max(0, int(timeout_ms))):
            return out
        while True:
            try:
                parts = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return out
            try:
                request = self._check(parts)
            except Exception as exc:  # noqa: BLE001 - nothing one frame holds may end the supervisor's loop
                request = f"{type(exc).__name__}: {exc}"
            if isinstance(request, str):
                self._refuse(parts[0], request)
            else:
                out.append(request)

    def _check(self, parts: list[bytes]) -> tuple[bytes, str, dict[str, Any]] | str:
        """The request, or why it is refused."""
        if len(parts) != 3:
            return f"expected [payload, signature], got {len(parts) - 1} part(s)"
        reply_id, payload, got = parts
        if not _auth.verify(self.key, _auth.RPC_REQUEST, payload, got):
            return "bad signature (not signed with this run's key)"
        msg = unpack(payload)
        if msg is None or not isinstance(msg.get("args", {}), dict) or not isinstance(msg.get("nonce"), str):
            return "signed payload has no nonce or args"
        now = time.time() * 1000
        ts = msg.get("ts")
        if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not abs(now - ts) <= _auth.RPC_WINDOW_MS:
            return f"request time {ts!r} outside the {_auth.RPC_WINDOW_MS / 1000:.0f} s window"
        self._seen = {n: t for n, t in self._seen.items() if t > now} if len(self._seen) > 64 else self._seen
        nonce = msg["nonce"]
        if nonce in self._seen:
            return "replayed request (nonce already used)"
        if len(self._pending) >= MAX_PENDING:
            return "too many requests in flight"
        self._seen[nonce] = now + 2 * _auth.RPC_WINDOW_MS
        self._pending[reply_id] = nonce
        return reply_id, str(msg.get("name")), dict(msg.get("args") or {})

    def _refuse(self, reply_id: bytes, reason: str) -> None:
        self.refused += 1
        self._send(reply_id, pack({"ok": False, "result": {"error": f"refused: {reason}"}}), b"")
        suppressed = self.gate.admit(peer_label(reply_id))
        if suppressed is not None:
            try:
                self.on_refused({"peer": peer_label(reply_id), "reason": reason[:500], "suppressed": suppressed})
            except OSError:
                pass

    def reply(self, reply_id: bytes, ok: bool, result: dict[str, Any]) -> None:
        nonce = self._pending.pop(reply_id, None)
        if nonce is None:
            return  # not a request we handed out
        payload = pack({"ok": ok, "result": result, "nonce": nonce})
        self._send(reply_id, payload, _auth.tag(self.key, _auth.RPC_REPLY, payload))

    def _send(self, reply_id: bytes, payload: bytes, tag: bytes) -> None:
        try:
            self.sock.send_multipart([reply_id, payload, tag], zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the caller gave up and closed its socket

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()


def supervisor_call(endpoint: str, token: str, name: str, args: dict[str, Any], timeout_ms: float) -> dict[str, Any]:
    """One signed request to a supervisor; its verified result, or :class:`ControlError`."""
    key = _auth.supervisor_key(token)
    nonce = secrets.token_hex(16)
    payload = pack({"name": name, "args": args, "nonce": nonce, "ts": time.time() * 1000})
    ctx = zmq.Context()
    sock = socket_(ctx, zmq.DEALER)
    try:
        sock.connect(endpoint)
        sock.send_multipart([payload, _auth.tag(key, _auth.RPC_REQUEST, payload)])
        if not sock.poll(int(timeout_ms)):
            raise ControlError(f"the supervisor at {endpoint} did not answer {name!r} within {timeout_ms / 1000:.0f}s")
        parts = sock.recv_multipart()
    finally:
        sock.close()
        ctx.term()
    reply = unpack(parts[0]) if parts else None
    signed = len(parts) == 2 and _auth.verify(key, _auth.RPC_REPLY, parts[0], parts[1])
    if reply is None or not signed or reply.get("nonce") != nonce:
        error = (reply or {}).get("result", {}).get("error") if isinstance((reply or {}).get("result"), dict) else None
        raise ControlError(str(error)[:500] if error else f"the supervisor at {endpoint} sent an unverifiable reply")
    if not reply.get("ok"):
        raise ControlError(str((reply.get("result") or {}).get("error", reply)))
    return dict(reply.get("result") or {})
