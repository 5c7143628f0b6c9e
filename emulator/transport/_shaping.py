"""Link faults on the sending side: the rule of ``(self, destination)`` decides whether a frame
is dropped, delayed or sent twice (:mod:`emulator.node.links`). Delayed frames wait in a heap
until they are due; the transport flushes them from its poll loop. No zmq here: delivery is the
transport's callback, so this is plain bookkeeping that a test can drive with a fake clock.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Callable

from rmqemu.emulator.node.clock import mono_ms
from rmqemu.emulator.node.links import LinkTable
from rmqemu.emulator.protocol import Frame


class ShapedSender:
    """Send through the link table: ``deliver(channel, frame)`` puts a frame on the wire now."""

    def __init__(self, name: str, links: LinkTable, deliver: Callable[[str, Frame], bool],
                 peer_of: Callable[[str], str | None], reachable: Callable[[str], bool],
                 counters: dict[str, int], clock: Callable[[], float] = mono_ms) -> None:
        self.name = name
        self.links = links
        self.deliver = deliver
        self.peer_of = peer_of
        self.reachable = reachable
        self.counters = counters
        self.clock = clock
        self.delayed: list[tuple[float, int, str, Frame]] = []  # (due, seq, channel, frame)
        self._seq = itertools.count()

    def send(self, channel: str, frame: Frame) -> bool:
        """Deliver now, later, twice or not at all; ``False`` when the peer cannot be reached."""
        if not self.links.rules:  # no link fault anywhere (most of every run): nothing to decide
            return self.deliver(channel, frame)
        dst = self.peer_of(channel)
        if dst is None:
            return False
        decision = self.links.on_send(self.name, dst)
        if decision.dropped:
            self.counters["dropped_out"] += 1
            return self.reachable(channel)
        if decision.copies > 1:
            self.counters["duplicated"] += 1
        if decision.delay_ms > 0:
            self.counters["delayed"] += 1
            for _ in range(decision.copies):
                heapq.heappush(self.delayed, (self.clock() + decision.delay_ms, next(self._seq), channel, frame))
            return self.reachable(channel)
        ok = True
        for _ in range(decision.copies):
            ok = self.deliver(channel, frame) and ok
        return ok

    def next_due(self) -> float | None:
        return self.delayed[0][0] if self.delayed else None

    def flush(self, now: float) -> None:
        """Deliver every delayed frame that is due."""
        while self.delayed and self.delayed[0][0] <= now:
            _due, _seq, channel, frame = heapq.heappop(self.delayed)
            self.deliver(channel, frame)
