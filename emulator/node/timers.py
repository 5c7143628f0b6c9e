"""The runtime's two schedules on the monotonic clock: named timers and request deadlines.

Split out of :mod:`emulator.node.runtime` so the loop reads as "wait, handle input, fire what is
due" and the bookkeeping (fixed-rate rescheduling, skipping missed runs, the deadline heap) has
one home. Both tables are plain data: the runtime decides when to ask them what is due.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterator

from rmqemu.emulator.roles.common.base import Request

MIN_PERIOD_MS = 0.001  # a zero period would fire forever without the clock moving


@dataclass
class Timer:
    """One named timer: due at ``due`` (monotonic ms); periodic when ``period`` is set."""

    due: float
    period: float | None


class TimerTable:
    """``Every`` / ``After`` timers by name; a new timer of the same name replaces the old one.

    Periodic timers run at a fixed rate like ``scheduleAtFixedRate``; a timer that falls a whole
    period behind (the process was SIGSTOPped) skips the missed runs instead of firing them back
    to back, which for RocketMQ's idempotent periodic tasks (register, scan, poll) has the same
    effect.
    """

    def __init__(self) -> None:
        self.entries: dict[str, Timer] = {}
        self.last_due: float = 0.0  # when the timer :meth:`pop_due` last returned was due (lateness)
        self._earliest: float | None = None  # cached min due; None: recompute (asked every loop step)

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def every(self, name: str, first_due: float, period: float) -> None:
        self.entries[name] = Timer(first_due, max(period, MIN_PERIOD_MS))
        self._earliest = None

    def after(self, name: str, due: float) -> None:
        self.entries[name] = Timer(due, None)
        self._earliest = None

    def cancel(self, name: str) -> None:
        self.entries.pop(name, None)
        self._earliest = None

    def clear(self) -> None:
        self.entries.clear()
        self._earliest = None

    def next_due(self) -> float | None:
        if self._earliest is None and self.entries:
            self._earliest = min(t.due for t in self.entries.values())
        return self._earliest

    def pop_due(self, now_ms: float) -> str | None:
        """The name of the earliest timer due at ``now_ms`` (ties by name), already rescheduled
        (periodic) or removed (one-shot); None when nothing is due. Its due time is left in
        ``last_due`` for the lateness accounting (:mod:`emulator.node.lag`)."""
        earliest = self.next_due()
        if earliest is None or earliest > now_ms:
            return None
        due = [(t.due, name) for name, t in self.entries.items() if t.due <= now_ms]
        self.last_due, name = min(due)
        self._earliest = None
        timer = self.entries[name]
        if timer.period is None:
            del self.entries[name]
        else:
            timer.due += timer.period
            if timer.due <= now_ms:  # a whole period behind: skip the missed runs
                behind = now_ms - timer.due
                timer.due += timer.period * (behind // timer.period + 1)
        return name


@dataclass
class Pending:
    """A request on the wire, waiting for its response until ``deadline`` (monotonic ms)."""

    request: Request
    deadline: float


class PendingRequests:
    """Requests by opaque id, with a heap of deadlines; whichever of response, timeout or send
    failure comes first pops the entry, so ``on_reply`` runs exactly once."""

    def __init__(self) -> None:
        self.by_opaque: dict[int, Pending] = {}
        self._deadlines: list[tuple[float, int]] = []

    def __len__(self) -> int:
        return len(self.by_opaque)

    def add(self, opaque: int, request: Request, deadline: float) -> None:
        self.by_opaque[opaque] = Pending(request, deadline)
        heapq.heappush(self._deadlines, (deadline, opaque))

    def pop(self, opaque: int) -> Pending | None:
        return self.by_opaque.pop(opaque, None)

    def waited_for(self) -> bool:
        """Whether a request a graceful stop waits for is pending (a held long poll is not one)."""
        return any(not p.request.held for p in self.by_opaque.values())

    def pop_expired(self, now_ms: float) -> Pending | None:
        """One request whose deadline has passed (None when there is none left)."""
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, opaque = heapq.heappop(self._deadlines)
            pending = self.by_opaque.pop(opaque, None)
            if pending is not None:
                return pending
        return None

    def next_deadline(self) -> float | None:
        """The earliest deadline of a request still waiting. The heap keeps the deadlines of
        answered requests (removing from the middle of a heap is costly), so they are dropped
        here as they reach its top: otherwise the loop would wake at each answered request's
        deadline with nothing to do (a producer sends a request per message: a third of its
        wake-ups were those)."""
        deadlines, waiting = self._deadlines, self.by_opaque
        while deadlines and deadlines[0][1] not in waiting:
            heapq.heappop(deadlines)
        return deadlines[0][0] if deadlines else None
