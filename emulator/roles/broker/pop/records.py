"""Checkpoints and acks: the revive log's records (5.x ``PopCheckPoint``, ``AckMsg``).

A pop of non-FIFO messages writes one checkpoint (CK, tag ``ck``) per queue it took messages
from: the group, topic, queue, start offset, pop time, invisible time and each message's distance
from the start offset. An ack writes an ack record (tag ``ack``) naming the checkpoint (group, topic,
queue, start offset, pop time, broker) and the acked offset. Both are ordinary messages in
``rmq_sys_REVIVE_LOG_<cluster>`` (queue = the revive queue id), stored through ``broker.put_record``,
so a restart's replay of the commit log, HA replication and DLedger carry them as they carry any
message. Bodies are JSON with 5.x's short field names. 5.x hands both to its timer store, which lets
them into the revive queue only at their delivery time; rmqemu stores them at once with that time in
``POP_DELIVER_MS``, and the revive service reads them in its order (revive.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import Perm
from rmqemu.emulator.roles.common import pop_keys as keys
from rmqemu.emulator.roles.common.base import Action, Now

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker


@dataclass
class CheckPoint:
    """``PopCheckPoint``: which messages one pop leased; ``bits`` are the acked indexes."""

    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    broker_name: str
    diffs: list[int] = field(default_factory=list)
    bits: int = 0
    revive_offset: int = -1  # the CK's own offset in its revive queue (set when read back)
    re_put_times: str | None = None

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def merge_key(self) -> str:
        return f"{self.topic}{self.group}{self.queue_id}{self.start_offset}{self.pop_time}{self.broker_name}"

    def offsets(self) -> list[int]:
        return [self.start_offset + d for d in self.diffs]

    def index_of(self, ack_offset: int) -> int:
        """``indexOfAck``: the acked message's index in this checkpoint, -1 if it is none of its."""
        diff = ack_offset - self.start_offset
        return self.diffs.index(diff) if diff >= 0 and diff in self.diffs else -1

    def to_json(self) -> str:
        body: dict[str, Any] = {"so": self.start_offset, "pt": self.pop_time, "it": self.invisible_time,
                                "bm": self.bits, "n": len(self.diffs), "q": self.queue_id, "t": self.topic,
                                "c": self.group, "ro": 0, "d": self.diffs, "bn": self.broker_name}
        if self.re_put_times is not None:
            body["rp"] = self.re_put_times
        return json.dumps(body, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "CheckPoint | None":
        """None for a body that is no checkpoint (5.x skips one without topic or group)."""
        try:
            d = json.loads(text)
            ck = cls(str(d["t"]), str(d["c"]), int(d["q"]), int(d["so"]), int(d["pt"]), int(d["it"]),
                     str(d.get("bn") or ""), [int(x) for x in d.get("d") or []], int(d.get("bm") or 0),
                     re_put_times=None if d.get("rp") is None else str(d["rp"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        if not ck.diffs:  # an old-style checkpoint: n messages from the start offset
            ck.diffs = list(range(max(0, min(int(d.get("n") or 0), 64))))
        return ck


@dataclass
class Ack:
    """``AckMsg``: one acked offset of the checkpoint (topic, group, queue, start offset, pop time)."""

    topic: str
    group: str
    queue_id: int
    start_offset: int
    ack_offset: int
    pop_time: int
    broker_name: str

    @property
    def merge_key(self) -> str:
        return f"{self.topic}{self.group}{self.queue_id}{self.start_offset}{self.pop_time}{self.broker_name}"

    def to_json(self) -> str:
        return json.dumps({"ao": self.ack_offset, "so": self.start_offset, "c": self.group, "t": self.topic,
                           "q": self.queue_id, "pt": self.pop_time, "bn": self.broker_name}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, default_broker: str) -> "Ack | None":
        try:
            d = json.loads(text)
            return cls(str(d["t"]), str(d["c"]), int(d["q"]), int(d["so"]), int(d["ao"]), int(d["pt"]),
                       str(d.get("bn") or default_broker))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


class ReviveLog:
    """Writes checkpoints and acks into the revive topic of the broker's cluster."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.topic = keys.revive_topic(broker.cfg.brokerClusterName)

    @property
    def queue_nums(self) -> int:
        return max(1, self.broker.cfg.reviveQueueNum)

    def queues(self) -> list[tuple[str, int]]:
        return [(self.topic, q) for q in range(self.queue_nums)]

    def put_ck(self, ck: CheckPoint, revive_qid: int, now: Now) -> tuple[bool, list[Action]]:
        """``buildCkMsg``: due in the revive queue a second before the lease ends."""
        uniq = f"{ck.topic}@{ck.queue_id}@{ck.start_offset}@{ck.group}@{ck.pop_time}@{ck.broker_name}@{keys.CK_TAG}"
        return self._put(revive_qid, ck.to_json(), keys.CK_TAG, uniq, ck.revive_time - keys.ACK_TIME_INTERVAL, now)

    def put_ack(self, ack: Ack, invisible_time: int, revive_qid: int, now: Now) -> tuple[bool, list[Action]]:
        """An ack record, due when the lease it acks would have ended (``popTime + invisibleTime``)."""
        uniq = (f"{ack.topic}@{ack.queue_id}@{ack.ack_offset}@{ack.group}@{ack.pop_time}@{ack.broker_name}"
                f"@{keys.ACK_TAG}")
        return self._put(revive_qid, ack.to_json(), keys.ACK_TAG, uniq, ack.pop_time + invisible_time, now)

    def _put(self, revive_qid: int, body: str, tag: str, uniq: str, deliver_ms: int,
             now: Now) -> tuple[bool, list[Action]]:
        """The store's put (a slave's store refuses it, as a DLedger follower's log does). A revive
        queue outside ``0..reviveQueueNum-1`` (only a forged handle names one) is not written: no
        revive service would ever read it."""
        b = self.broker
        if b.is_slave or not 0 <= revive_qid < self.queue_nums:
            return False, []
        _, actions, created = b.topics.create_in_send_message_back_method(
            self.topic, self.queue_nums, Perm.READ | Perm.WRITE, 0, now.wall_ms)
        props = {"TAGS": tag, "UNIQ_KEY": uniq, keys.DELIVER_MS: str(deliver_ms)}
        stored, acts, _ = b.put_record(self.topic, revive_qid, body.encode(), props, now,
                                       born_timestamp=int(now.wall_ms), born_host=b.store.store_host)
        actions = [*actions, *acts]
        if stored is not None:
            actions += b.ha.notify_new_data(now)
        return stored is not None, actions
