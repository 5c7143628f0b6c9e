"""Authentication of the control plane and the supervisor RPC: HMAC-SHA256 over every message.

Why this design (docs/design.md §2, "Control-plane security"): every socket here is on
127.0.0.1, which every local user can connect to, so a message proves where it came from by a
key only its two ends hold, never by a routing identity (anyone can claim one) or a token sent in
clear (the first impostor to receive one could replay it).

- Launcher <-> node: the launcher draws a fresh random key for every spawn of a node
  (:func:`new_key`) and hands it to the child on its stdin pipe, which no other process can read
  (it never touches a file). Each message is ``[payload, tag]`` with ``tag = HMAC(key, context
  || payload)``; the context names the direction and the node, so a message cannot be reflected
  back or fed to another node. Payloads carry a sequence number that must strictly increase per
  direction and per key: a captured message replays as a refusal. A restarted node gets a new key
  and starts its sequences again; messages of its previous life no longer verify.
- CLI -> supervisor: the key is derived from the token in ``supervisor.json`` (mode 0600, so only
  the user who ran ``rmqemu up`` can read it); the token itself never crosses the wire. A request
  carries a random nonce and its send time; the supervisor refuses one outside
  :data:`RPC_WINDOW_MS` of its own clock or with a nonce it has seen within that window. Replies
  are signed over the request's nonce, so the CLI knows the answer is the supervisor's and is the
  answer to its own request.

CURVE (zmq's own encryption) would also authenticate peers, but the secrets would still have to
be handed over the same way, and loopback traffic cannot be read by another unprivileged user;
HMAC from the standard library keeps the wire plain JSON that tests and humans can read.
The tag is checked before the payload is parsed, so an unauthenticated peer's bytes never reach
a JSON parser.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

KEY_BYTES = 32
TAG_BYTES = hashlib.sha256().digest_size
RPC_WINDOW_MS = 120_000.0  # a signed supervisor request older (or newer) than this is refused

TO_NODE = b"launcher->node:"
FROM_NODE = b"node->launcher:"
RPC_REQUEST = b"rpc-request"
RPC_REPLY = b"rpc-reply"


def new_key() -> bytes:
    """A fresh per-spawn node key."""
    return secrets.token_bytes(KEY_BYTES)


def supervisor_key(token: str) -> bytes:
    """The RPC key both ends derive from the token in ``supervisor.json``."""
    return hmac.new(token.encode(), b"rmqemu supervisor rpc v1", hashlib.sha256).digest()


def tag(key: bytes, context: bytes, payload: bytes) -> bytes:
    return hmac.new(key, context + b"\0" + payload, hashlib.sha256).digest()


def verify(key: bytes, context: bytes, payload: bytes, got: bytes) -> bool:
    """Constant-time check of ``got`` against the payload's tag."""
    return len(got) == TAG_BYTES and hmac.compare_digest(tag(key, context, payload), got)


def fresh_seq(seq: object, last: int) -> bool:
    """A sequence number that is an int and strictly above the last one accepted."""
    return isinstance(seq, int) and not isinstance(seq, bool) and seq > last
