"""ConsumerOrderInfoManager: what a FIFO (``order=true``) group has out of each queue (5.x
``broker/.../offset/ConsumerOrderInfoManager.java``; docs/rocketmq-model.md §10.3).

A FIFO pop writes no checkpoint. It records, per (topic, group, queue), the offsets it handed out,
their pop and invisible time, which of them are acked (a bit each) and how often each offset was
handed out before (``offsetConsumedCount``). While any un-acked one is still invisible the queue
is blocked: later pops of the group get nothing from it. When the time runs out, the pop offset
(never moved past the first un-acked message) makes the next pop hand the same offsets out again,
their count raised. An ack moves the pop offset to the first un-acked offset. A renewal moves one
offset's visible time. Persisted as ``config/consumerOrderInfo.json`` with the consumer offsets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from rmqemu.emulator.roles.common import pop_keys as keys
from rmqemu.emulator.roles.common.base import Persist

ORDER_INFO_JSON = "config/consumerOrderInfo.json"


@dataclass
class OrderInfo:
    pop_time: int
    invisible_time: int
    offsets: list[int]  # the queue offsets handed out, in order
    attempt_id: str | None = None
    commit_bits: int = 0
    next_visible: dict[int, int] = field(default_factory=dict)  # offset -> renewed visible time
    consumed: dict[int, int] = field(default_factory=dict)  # offset -> times handed out before

    def acked(self, i: int) -> bool:
        return bool(self.commit_bits >> i & 1)

    def need_block(self, attempt_id: str | None, invisible_time: int, now_ms: int) -> bool:
        """``needBlock``: an un-acked offset still invisible (the same attemptId is never blocked:
        a client retrying a pop whose answer it lost gets the same messages again)."""
        if not self.offsets or (self.attempt_id is not None and self.attempt_id == attempt_id):
            return False
        if self.invisible_time <= 0:
            self.invisible_time = invisible_time
        return any(now_ms < self.next_visible.get(o, self.pop_time + self.invisible_time)
                   for i, o in enumerate(self.offsets) if not self.acked(i))

    def next_offset(self) -> int:
        """``getNextOffset``: the first un-acked offset, or the one after the last."""
        for i, o in enumerate(self.offsets):
            if not self.acked(i):
                return o
        return self.offsets[-1] + 1

    def to_dict(self) -> dict[str, Any]:
        return {"popTime": self.pop_time, "i": self.invisible_time, "o": self.offsets, "a": self.attempt_id,
                "cm": self.commit_bits, "ot": {str(k): v for k, v in self.next_visible.items()},
                "oc": {str(k): v for k, v in self.consumed.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OrderInfo":
        return cls(int(d["popTime"]), int(d.get("i") or 0), [int(o) for o in d.get("o") or []],
                   None if d.get("a") is None else str(d["a"]), int(d.get("cm") or 0),
                   {int(k): int(v) for k, v in (d.get("ot") or {}).items()},
                   {int(k): int(v) for k, v in (d.get("oc") or {}).items()})


class OrderInfoManager:
    def __init__(self) -> None:
        self.table: dict[tuple[str, str, int], OrderInfo] = {}
        self.dirty = False

    def update(self, attempt_id: str | None, topic: str, group: str, queue_id: int, pop_time: int,
               invisible_time: int, offsets: list[int]) -> tuple[list[tuple[str, str, str]], dict[int, int]]:
        """A FIFO pop handed ``offsets`` out: returns the ``orderCountInfo`` entries (one per offset
        handed out before, ``qo<queue>%<offset>``, then the queue's minimum) and each offset's count."""
        key = (topic, group, queue_id)
        old = self.table.get(key)
        info = OrderInfo(pop_time, invisible_time, list(offsets), attempt_id)
        if old is not None:
            if old.attempt_id is not None and old.attempt_id == attempt_id:
                info.consumed = dict(old.consumed)
            else:
                before = set(old.offsets)
                info.consumed = {o: old.consumed.get(o, 0) + 1 for o in offsets if o in before}
        self.table[key] = info
        self.dirty = True
        entries = [(topic, f"qo{queue_id}%{o}", str(n)) for o, n in info.consumed.items()]
        least = min(info.consumed.values()) if info.consumed and len(info.consumed) == len(offsets) else 0
        entries.append((topic, str(queue_id), str(least)))  # for old clients: the queue's least count
        return entries, {o: info.consumed.get(o, 0) for o in offsets}

    def check_block(self, attempt_id: str | None, topic: str, group: str, queue_id: int, invisible_time: int,
                    now_ms: int) -> bool:
        info = self.table.get((topic, group, queue_id))
        return info is not None and info.need_block(attempt_id, invisible_time, now_ms)

    def out(self, topic: str, group: str, queue_id: int) -> OrderInfo | None:
        return self.table.get((topic, group, queue_id))

    def commit_and_next(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int) -> int:
        """``commitAndNext``: mark ``offset`` acked; the new pop offset, -1 illegal, -2 nothing to commit.
        With no order info for the queue (a broker killed before its 10 s flush) 5.x answers the offset
        after the acked one: un-acked offsets before it in the lost batch are skipped."""
        info = self.table.get((topic, group, queue_id))
        if info is None:
            return offset + 1
        if not info.offsets:
            return -1
        if pop_time != info.pop_time:
            return -2
        if offset not in info.offsets:
            return -1
        info.commit_bits |= 1 << info.offsets.index(offset)
        self.dirty = True
        return info.next_offset()

    def update_next_visible_time(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int,
                                 next_visible: int) -> bool:
        """False when there is nothing to renew (no order info, or another pop's time): 5.x logs it and
        answers SUCCESS all the same."""
        info = self.table.get((topic, group, queue_id))
        if info is None or pop_time != info.pop_time:
            return False
        info.next_visible[offset] = next_visible
        self.dirty = True
        return True

    def load(self, read_store: Callable[[str], str | None]) -> None:
        text = read_store(ORDER_INFO_JSON)
        if not text:
            return
        try:
            for row in json.loads(text).get("table") or []:
                self.table[(str(row["topic"]), str(row["group"]), int(row["queueId"]))] = OrderInfo.from_dict(row)
        except (ValueError, TypeError, KeyError, AttributeError):
            self.table.clear()  # 5.x's ConfigManager falls back to the .bak; unreadable: start empty

    def persist(self) -> Persist:
        self.dirty = False
        rows = [{"topic": t, "group": g, "queueId": q, **info.to_dict()}
                for (t, g, q), info in sorted(self.table.items())]
        return Persist(ORDER_INFO_JSON, json.dumps({"table": rows}, ensure_ascii=False, indent=1))


def order_count_info(entries: list[tuple[str, str, str]]) -> str:
    """``orderCountInfo``: ``<mark> <qo<queue>%<offset> or queue> <count>`` joined by ``;``."""
    return ";".join(f"{keys.mark(t)} {k} {v}" for t, k, v in entries)
