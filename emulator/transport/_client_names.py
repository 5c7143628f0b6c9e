"""How a real client on the remoting port is named: after its process, ``client@<pid>``."""

from __future__ import annotations

import time
from typing import Callable

import psutil


class ClientNamer:
    """``client@<pid>`` for a local process, ``client@<ip>`` when its owner cannot be seen.

    The owner comes from a scan of the host's TCP sockets (psutil, a few ms), made for an accept
    whose port the last scan does not have, or which is older than :data:`FRESH_S` (a port may be
    reused by another process since). Scans are rate-limited (a burst of :data:`BURST`, then
    :data:`PER_S` a second), so a flood of connections cannot keep the node scanning; an accept
    the limit leaves unscanned is named ``client@<ip>``."""

    FRESH_S, BURST, PER_S = 0.05, 20.0, 10.0

    def __init__(self, server_port: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.server_port = server_port
        self.clock = clock
        self.owners: dict[int, int] = {}  # client port -> pid, as of the last scan
        self.scanned = -float("inf")
        self.tokens, self.refilled = self.BURST, clock()

    def __call__(self, peer: tuple[str, int]) -> str:
        ip, port = peer[0], peer[1]
        if not (ip.startswith("127.") or ip == "::1"):
            return f"client@{ip}"
        now = self.clock()
        self.tokens = min(self.BURST, self.tokens + (now - self.refilled) * self.PER_S)
        self.refilled = now
        stale = now - self.scanned > self.FRESH_S
        if (stale or port not in self.owners) and self.tokens >= 1:
            self.tokens -= 1
            self.scanned, self.owners, stale = now, self._scan(), False
        pid = None if stale else self.owners.pop(port, None)
        return f"client@{pid}" if pid else f"client@{ip}"

    def _scan(self) -> dict[int, int]:
        try:
            return {c.laddr.port: c.pid for c in psutil.net_connections("tcp")
                    if c.pid and c.laddr and c.raddr and c.raddr.port == self.server_port}
        except (psutil.Error, OSError):
            return {}
