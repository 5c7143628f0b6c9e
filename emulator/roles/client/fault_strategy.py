"""``MQFaultStrategy`` and ``LatencyFaultToleranceImpl`` (docs/rocketmq-model.md §3.4), 4.9.4 behaviour.

Time: latencies, both tables (``latencyMax`` and ``notAvailableDuration``) and the 30000 ms
"isolation" latency are RocketMQ's cluster ms (``Now.mono_ms``), so a send that takes 550 ms of
cluster time blacks its broker out for 30 s of cluster time; the node runtime alone turns
cluster time into wall time. Blackout ends use the node's skewable wall clock
(``System.currentTimeMillis()``), so a clock bump can end or extend them.

The enabled path keeps 4.9.4's in-place mutation of a cached MessageQueue (#7779, fixed only in
4.9.8): when every broker is blacked out, one entry of the publish list is rewritten to the
"least bad" broker and stays rewritten until the next route update.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rmqemu.emulator.roles.client.route_cache import MessageQueue, ThreadLocalIndex, TopicPublishInfo

LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_LATENCY = 30000


def compute_not_available_duration(latency: float) -> float:
    """Scan from the largest threshold down; the first ``latency >= latencyMax[i]`` wins."""
    for i in range(len(LATENCY_MAX) - 1, -1, -1):
        if latency >= LATENCY_MAX[i]:
            return NOT_AVAILABLE_DURATION[i]
    return 0


@dataclass
class FaultItem:
    name: str
    current_latency: float
    start_timestamp: float  # cluster wall ms (System.currentTimeMillis) when the broker is available again

    def is_available(self, wall_ms: float) -> bool:
        return wall_ms - self.start_timestamp >= 0


class LatencyFaultTolerance:
    """``LatencyFaultToleranceImpl``: brokerName -> FaultItem."""

    def __init__(self, rng: random.Random) -> None:
        self.items: dict[str, FaultItem] = {}
        self._which_item_worst = ThreadLocalIndex(rng)

    def update(self, name: str, current_latency: float, not_available_ms: float, wall_ms: float) -> None:
        self.items[name] = FaultItem(name, current_latency, wall_ms + not_available_ms)

    def is_available(self, name: str, wall_ms: float) -> bool:
        item = self.items.get(name)
        return item is None or item.is_available(wall_ms)

    def remove(self, name: str | None) -> None:
        self.items.pop(name, None)  # type: ignore[arg-type]

    def pick_one_at_least(self, wall_ms: float) -> str | None:
        """``pickOneAtLeast`` as in 4.9.4: sort (available first, lower latency, earlier end),
        then take one of the better half by a rotating index. 4.7 to 4.9.3 shuffled the list
        before sorting (``Collections.shuffle``), which only reordered ties; 4.9.4 dropped it. The
        table's order (insertion order here, ConcurrentHashMap order in Java) decides ties, as
        ``Collections.sort`` is stable."""
        items = list(self.items.values())
        if not items:
            return None
        items.sort(key=lambda it: (not it.is_available(wall_ms), it.current_latency, it.start_timestamp))
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        return items[self._which_item_worst.increment_and_get() % half].name


class MQFaultStrategy:
    def __init__(self, enabled: bool, rng: random.Random) -> None:
        self.enabled = enabled
        self.tolerance = LatencyFaultTolerance(rng)

    def update_fault_item(self, broker_name: str, latency_ms: float, isolation: bool, wall_ms: float) -> None:
        if not self.enabled:
            return
        duration = compute_not_available_duration(ISOLATION_LATENCY if isolation else latency_ms)
        self.tolerance.update(broker_name, latency_ms, duration, wall_ms)

    def select_one_message_queue(self, tp: TopicPublishInfo, last_broker_name: str | None,
                                 wall_ms: float) -> MessageQueue:
        if not self.enabled:
            return tp.select_one_message_queue(last_broker_name)
        queues = tp.message_queues
        index = tp.send_which_queue.increment_and_get()
        for i in range(len(queues)):  # 4.8+: no lastBrokerName condition here (#1576)
            mq = queues[(index + i) % len(queues)]
            if self.tolerance.is_available(mq.broker_name, wall_ms):
                return mq
        not_best = self.tolerance.pick_one_at_least(wall_ms)
        write_queue_nums = tp.write_queue_nums(not_best) if not_best is not None else -1
        if write_queue_nums > 0:
            pos = tp.select_index()
            if not_best is not None:  # #7779: the cached entry itself is rewritten
                qid = tp.send_which_queue.increment_and_get() % write_queue_nums
                queues[pos] = MessageQueue(queues[pos].topic, not_best, qid)
            return queues[pos]
        self.tolerance.remove(not_best)
        return tp.message_queues[tp.select_index()]
