"""Rate limits for the events hostile input causes (``wire.bad_frame``, ``control.refused``),
and :func:`seed_routing_ids`, which keeps libzmq from being aborted by a peer.

Every bad frame is counted, but a flood of them must not become a flood of event lines (the disk
would fill at the attacker's pace). :class:`EventGate` lets through at most one event per key
(e.g. ``(kind, peer)``) per second, and at most :data:`GLOBAL_PER_S` in all per second, because a
peer names itself and could take a new name for every frame. An event that gets through carries
``suppressed``: how many of its key were held back since the previous one of that key. What a
flood leaves behind after its last event is not reported (there is no later event to carry it);
the transport's counters still have it.
"""

from __future__ import annotations

import ctypes
import secrets
import time
from typing import Callable, Hashable

PER_KEY_S = 1.0
GLOBAL_PER_S = 20
MAX_KEYS = 1024  # beyond this many keys in memory, the oldest are forgotten


class EventGate:
    """``admit(key)`` -> the suppressed count to report with this event, or None to hold it back."""

    def __init__(self, per_key_s: float = PER_KEY_S, global_per_s: int = GLOBAL_PER_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_key_s = per_key_s
        self.global_per_s = global_per_s
        self.clock = clock
        self._last: dict[Hashable, float] = {}  # key -> when its last event went through
        self._held: dict[Hashable, int] = {}  # key -> held back since then
        self._second = -1.0
        self._in_second = 0
        self.total_held = 0

    def admit(self, key: Hashable) -> int | None:
        now = self.clock()
        if now - self._second >= 1.0:
            self._second, self._in_second = now, 0
        last = self._last.get(key)
        if (last is not None and now - last < self.per_key_s) or self._in_second >= self.global_per_s:
            if key in self._held or len(self._held) < MAX_KEYS:  # else counted in total_held only
                self._held[key] = self._held.get(key, 0) + 1
            self.total_held += 1
            return None
        self._in_second += 1
        self._last.pop(key, None)  # re-insert: the dict's order is then oldest-admitted first
        self._last[key] = now
        if len(self._last) > MAX_KEYS:
            oldest = next(iter(self._last))
            del self._last[oldest]
            self._held.pop(oldest, None)
        return self._held.pop(key, 0)


_seeded = False


def seed_routing_ids() -> None:
    """Seed the C library's ``rand()`` from the OS, once per process, before any ROUTER exists.

    libzmq 4.3 numbers a ROUTER's anonymous peers ``0x00`` + a 32-bit counter that starts at
    ``rand()``, which nothing seeds: every process starts at ``0x006b8b4567``. A peer may also
    claim any routing id it likes, and when the counter later hands out an id a peer already
    claimed, libzmq fails an assertion and aborts the whole process. So any local user could kill
    a node, the launcher or a supervisor with two connections. A seeded ``rand()`` makes the
    next number a 1-in-2^32 guess."""
    global _seeded
    if _seeded:
        return
    try:
        ctypes.CDLL(None).srand(secrets.randbits(32))
    except (OSError, AttributeError):  # no C library symbols to reach: nothing we can do
        pass
    _seeded = True
