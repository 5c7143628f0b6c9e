"""Reading socket-monitor events without ``zmq.utils.monitor`` (which imports ``zmq.asyncio`` and
with it asyncio: about 40 ms of every node's start-up, paid again on every restart)."""

from __future__ import annotations

import struct
from typing import Any

import zmq


def recv_monitor_message(mon: zmq.Socket, flags: int = 0) -> dict[str, Any]:
    """One event: ``{"event": int, "value": int, "endpoint": bytes}`` (the libzmq v1 format:
    a 6-byte frame of uint16 event and uint32 value, then the endpoint)."""
    parts = mon.recv_multipart(flags)
    event, value = struct.unpack("=HI", parts[0][:6])
    return {"event": event, "value": value, "endpoint": parts[1] if len(parts) > 1 else b""}
