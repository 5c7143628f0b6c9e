"""What the control plane and the supervisor RPC share: JSON payloads, loopback, socket limits."""

from __future__ import annotations

import json
from typing import Any

import zmq

LOOPBACK = "tcp://127.0.0.1"
MAX_CONTROL_BYTES = 64 * 1024 * 1024  # a `state` ack of a big broker is megabytes; libzmq drops larger
MAX_RPC_REQUEST_BYTES = 1024 * 1024  # a CLI request is a verb and a few arguments


def pack(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":"), default=str).encode()


def unpack(data: bytes) -> dict[str, Any] | None:
    """The message, or None when it is not a JSON object. Called on signed payloads only, yet
    any exception (deep nesting included) still means "not a message", never a crash."""
    try:
        msg = json.loads(data)
    except Exception:  # noqa: BLE001 - deep nesting raises RecursionError, not ValueError: still not a message
        return None
    return msg if isinstance(msg, dict) else None


def socket_(ctx: zmq.Context, kind: int) -> zmq.Socket:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    return sock
