"""One blocking request outside any node: what ``rmqemu admin`` and the launcher's topic creation use.

A throwaway DEALER connects, sends one frame, waits for the response with the same opaque id and
closes. A refused connection fails at once (the socket monitor reports the failed attempt) rather
than after the whole timeout.
"""

from __future__ import annotations

import itertools
import os
import time

import zmq

from rmqemu.emulator.protocol import BadFrame, Frame, decode, encode
from rmqemu.emulator.transport._monitor import recv_monitor_message
from rmqemu.emulator.transport.base import addr_to_endpoint

_opaques = itertools.count(1)


class RequestFailed(Exception):
    """No response: the connection was refused or the timeout elapsed."""


def request_once(addr: str, frame: Frame, timeout_ms: float, identity: str | None = None) -> Frame:
    """Send ``frame`` to ``addr`` and return the response, or raise :class:`RequestFailed`."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.IDENTITY, (identity or f"oneshot-{os.getpid()}").encode())
    mon = sock.get_monitor_socket(zmq.EVENT_CLOSED | zmq.EVENT_HANDSHAKE_SUCCEEDED)
    opaque = next(_opaques)
    try:
        sock.connect(addr_to_endpoint(addr))
        sock.send_multipart(encode(frame.with_opaque(opaque)))
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(mon, zmq.POLLIN)
        deadline = time.monotonic() + timeout_ms / 1000
        connected = False
        while True:
            left_ms = (deadline - time.monotonic()) * 1000
            if left_ms <= 0:
                raise RequestFailed(f"no response within {timeout_ms:.0f} ms")
            ready = dict(poller.poll(max(1, int(left_ms))))
            while mon in ready and mon.poll(0):
                ev = recv_monitor_message(mon)
                if ev["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                    connected = True
                elif ev["event"] == zmq.EVENT_CLOSED and not connected:
                    raise RequestFailed("connection refused")
            if sock in ready:
                try:
                    resp = decode(sock.recv_multipart())
                except BadFrame as exc:
                    raise RequestFailed(f"bad response: {exc}") from None
                if resp.is_response and resp.opaque == opaque:
                    return resp
    finally:
        mon.close()
        sock.close()
        ctx.term()
