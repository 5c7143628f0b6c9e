"""The 5.x timer store on a master: timed messages held in ``rmq_sys_wheel_timer`` and delivered to
their real topic at their instant (``store/.../timer/TimerMessageStore.java``; docs/rocketmq-model.md §10.4).

Held messages are ordinary records of the timer topic's queue 0 (the put hook, :mod:`.hook`, put
them there), so they survive restarts and replicate like any message. The store's progress is two
numbers, 5.x's checkpoint: ``queue_offset``, the next timer-queue entry to put on the wheel, and
``read_ms``, the slot the wheel reads next (every slot before it has been delivered). ``write_ms`` is
the broker's wall clock rounded down to the precision, and only ever moves forward. A slot is
delivered once ``write_ms`` is past it, so a message of instant ``t`` arrives at the first slot
boundary at or after ``t``; an entry whose slot is already behind ``write_ms`` when it is put on
the wheel is delivered at once (``TIMER_ENQUEUE_MS`` = Long.MAX_VALUE). A delivered message is a
new message of its real topic: the stored properties less ``REAL_TOPIC``/``REAL_QID``, plus
``TIMER_ENQUEUE_MS`` and ``TIMER_DEQUEUE_MS`` (``TIMER_OUT_MS`` and what the producer set stay).

The checkpoint is persisted to ``config/timercheck`` every ``timerFlushIntervalMs`` and on a graceful
stop; a restart rebuilds the wheel from the queue (entries before ``queue_offset`` whose slot is not
behind ``read_ms``). A kill redelivers what was delivered since the last flush (duplicates, never a
loss, never early). A slave takes its master's checkpoint every 3 s (slave_sync.py), so a DLedger
follower that becomes master starts where the old master was then, and delivers again only what
the old master delivered since.

Departure: 5.x reads the wheel every 100 ms; here one one-shot timer, ``timer:wheel``, is armed for
the earliest slot's boundary and re-armed when the wall clock is set (``on_clock``). Messages more
than ``timerRollWindowSlot`` (2 days) ahead are not rolled (no ``TIMER_ROLL_TIMES``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.roles.broker.timer import hook
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Emit, Every, Log, Now, Persist
from rmqemu.emulator.roles.common.topic_config import TIMER_TOPIC

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

CHECKPOINT = "config/timercheck"  # BrokerPathConfigHelper.getTimerCheckPath, as JSON here
WHEEL_TIMER = "timer:wheel"
FLUSH_TIMER = "timer:flush"
TIMERS = (WHEEL_TIMER, FLUSH_TIMER)
SLOTS_TOTAL_S = 7 * 24 * 3600  # TIMER_WHEEL_TTL_DAY days of one-second slots
BLANK_SLOTS = 60


class TimerStore:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.cfg = broker.store_cfg
        self.precision = hook.precision_of(broker.store_cfg)
        self.started = False
        self.read_ms = 0
        self.write_ms = 0
        self.queue_offset = 0
        self.wheel: dict[int, list[tuple[int, int]]] = {}  # slot -> (timer-queue offset, enqueue ms)
        self.loaded: dict[str, int] = {}
        self.persisted: dict[str, int] | None = None

    @staticmethod
    def queues() -> list[tuple[str, int]]:
        return [(TIMER_TOPIC, 0)]

    def _queue(self) -> list[dict[str, Any]]:
        return self.broker.store.queues.get((TIMER_TOPIC, 0), [])

    def _fmt(self, ms: float) -> int:
        return int(ms) // self.precision * self.precision

    # ------------------------------------------------------------------ lifecycle

    def load(self, read_store: Callable[[str], str | None]) -> None:
        """The checkpoint file (``.bak`` when it is empty or unreadable)."""
        self.loaded = {}
        for name in (CHECKPOINT, CHECKPOINT + ".bak"):
            try:
                data = json.loads(read_store(name) or "null")
                self.loaded = {k: int(data[k]) for k in ("lastReadTimeMs", "lastTimerQueueOffset")}
                break
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        self.persisted = self.encode() if self.loaded else None

    def start(self, now: Now) -> list[Action]:
        """``recover`` + ``start``: the read time from the checkpoint (never more than the wheel's
        span back), the queue offset clamped to the queue, the wheel rebuilt, then a first step."""
        if not self.cfg.timerWheelEnable:
            return []
        self.started = True
        self.write_ms = self._fmt(now.wall_ms)
        floor = self.write_ms - (SLOTS_TOTAL_S - BLANK_SLOTS) * self.precision
        self.read_ms = max(self.loaded.get("lastReadTimeMs", 0), floor)
        queue = self._queue()
        self.queue_offset = min(max(self.loaded.get("lastTimerQueueOffset", 0), 0), len(queue))
        self.wheel = {}
        for offset in range(self.queue_offset):
            slot = self._slot(queue[offset])
            if slot is not None and slot >= self.read_ms:
                self.wheel.setdefault(slot, []).append((offset, self._fmt(queue[offset].get("storeTimestamp", 0))))
        interval = self.cfg.timerFlushIntervalMs
        return [Every(FLUSH_TIMER, interval, interval), *self.step(now)]

    def stop(self) -> list[Action]:
        return [self.persist()] if self.started else []

    def start_delivering(self, now: Now) -> list[Action]:
        """A DLedger broker became master: load its own checkpoint and start."""
        if self.started:
            return []
        self.load(self.broker.read_store)
        return self.start(now)

    def checkpoint(self) -> dict[str, int]:
        """What GET_TIMER_CHECK_POINT answers: the running store's progress, else its file's."""
        if self.started:
            return self.encode()
        read, offset = self.loaded.get("lastReadTimeMs", 0), self.loaded.get("lastTimerQueueOffset", 0)
        return {"lastReadTimeMs": read, "lastTimerQueueOffset": offset, "masterTimerQueueOffset": offset}

    def adopt(self, read_ms: int, master_offset: int) -> list[Action]:
        """A slave takes its master's read time and queue offset (``syncTimerCheckPoint``) and
        writes them, so a start as master (:meth:`start_delivering`) reads them."""
        if self.started or (read_ms, master_offset) == (self.loaded.get("lastReadTimeMs"),
                                                         self.loaded.get("lastTimerQueueOffset")):
            return []
        self.loaded = {"lastReadTimeMs": read_ms, "lastTimerQueueOffset": max(master_offset, 0)}
        return [self.persist_loaded()]

    def persist_loaded(self) -> Persist:
        read, offset = self.loaded["lastReadTimeMs"], self.loaded["lastTimerQueueOffset"]
        self.persisted = {"lastReadTimeMs": read, "lastTimerQueueOffset": offset, "masterTimerQueueOffset": offset}
        return Persist(CHECKPOINT, json.dumps(self.persisted, indent=4))

    def stop_delivering(self) -> list[Action]:
        if not self.started:
            return []
        actions: list[Action] = [Cancel(WHEEL_TIMER), Cancel(FLUSH_TIMER), self.persist()]
        self.started, self.wheel = False, {}
        return actions

    def encode(self) -> dict[str, int]:
        return {"lastReadTimeMs": self.read_ms, "lastTimerQueueOffset": self.queue_offset,
                "masterTimerQueueOffset": self.queue_offset}

    def persist(self) -> Persist:
        self.persisted = self.encode()
        return Persist(CHECKPOINT, json.dumps(self.persisted, indent=4))

    # ------------------------------------------------------------------ the wheel

    def _slot(self, rec: dict[str, Any]) -> int | None:
        out = hook.java_long(rec.get("properties", {}).get(hook.TIMER_OUT_MS))
        return None if out is None else self._fmt(out)

    def parked(self, record: dict[str, Any], now: Now) -> list[Action]:
        """The put hook stored ``record`` in the timer topic: its event, and (classic store) the
        enqueue; a DLedger master enqueues it once committed (:meth:`on_dispatched`)."""
        where = self._where(record)
        actions: list[Action] = [Emit("timer.park", {**where, "wait_ms": where["deliver_ms"] - now.wall_ms})]
        if self.started and self.broker.dledger is None:
            actions += self.step(now)
        return actions

    def on_dispatched(self, topic: str, now: Now) -> list[Action]:
        return self.step(now) if topic == TIMER_TOPIC and self.started else []

    def step(self, now: Now) -> list[Action]:
        """Move the write time, deliver every slot behind it, then put new entries on the wheel."""
        if not self.started:
            return []
        self.write_ms = max(self.write_ms, self._fmt(now.wall_ms))
        actions: list[Action] = []
        queue = self._queue()
        for slot in sorted(s for s in self.wheel if s < self.write_ms):
            entries = self.wheel[slot]
            while entries:
                offset, enqueued = entries[0]
                ok, acts = self._deliver(queue[offset], enqueued, now)
                actions += acts
                if not ok:
                    return actions + self._arm(now)
                entries.pop(0)
            del self.wheel[slot]
        self.read_ms = max(self.read_ms, self.write_ms)
        while self.queue_offset < len(queue):
            rec = queue[self.queue_offset]
            slot = self._slot(rec)
            if slot is None:
                actions.append(Log(f"timer: entry {self.queue_offset} of {TIMER_TOPIC} has no TIMER_OUT_MS, skipped"))
            elif slot < self.write_ms:
                ok, acts = self._deliver(rec, hook.JAVA_LONG_MAX, now)
                actions += acts
                if not ok:
                    break
            else:
                self.wheel.setdefault(slot, []).append((self.queue_offset, self.write_ms))
            self.queue_offset += 1
        return actions + self._arm(now)

    def _arm(self, now: Now) -> list[Action]:
        if not self.wheel:
            return []
        return [After(WHEEL_TIMER, max(0.0, min(self.wheel) + self.precision - now.wall_ms))]

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == FLUSH_TIMER:
            return [self.persist()] if self.started and self.encode() != self.persisted else []
        return self.step(now)

    def on_clock(self, now: Now) -> list[Action]:
        """The wall clock was set: a jump forward delivers what it made due, one back waits longer."""
        return self.step(now)

    # ------------------------------------------------------------------ delivery

    def _where(self, rec: dict[str, Any]) -> dict[str, Any]:
        props = rec.get("properties", {})
        slot = self._slot(rec)
        asked = hook.deliver_ms(props, rec.get("storeTimestamp", 0))
        due = float(slot + self.precision) if slot is not None else 0.0
        return {"msg_id": props.get("UNIQ_KEY") or rec.get("offsetMsgId", ""),
                "topic": props.get(hook.REAL_TOPIC, ""), "queue_id": hook.java_long(props.get(hook.REAL_QID)) or 0,
                "broker": self.broker.cfg.brokerName, "offset": int(rec.get("queueOffset", 0)),
                "deliver_ms": float(asked) if asked is not None else due, "due_ms": due}

    def _deliver(self, rec: dict[str, Any], enqueued: int, now: Now) -> tuple[bool, list[Action]]:
        """``convert`` + ``doPut``: False when the put was refused (a DLedger log not leading)."""
        b, props = self.broker, dict(rec.get("properties", {}))
        topic, queue_id = props.pop(hook.REAL_TOPIC, None), hook.java_long(props.pop(hook.REAL_QID, None))
        if not topic or queue_id is None:
            return True, [Log(f"timer: {TIMER_TOPIC} entry {rec.get('queueOffset')} names no real topic, skipped")]
        props[hook.TIMER_ENQUEUE_MS] = str(enqueued)
        props[hook.TIMER_DEQUEUE_MS] = str(int(now.wall_ms))
        where = self._where(rec)
        record, actions, _ = b.put_copy(rec, topic, queue_id, props, now, parked_msg_id=where["msg_id"])
        if record is None:
            return False, actions
        event = Emit("timer.deliver", {**where, "lateness_ms": now.wall_ms - where["deliver_ms"],
                                       "queue_offset": record["queueOffset"], "offset_msg_id": record["offsetMsgId"],
                                       "immediate": enqueued == hook.JAVA_LONG_MAX})
        return True, [*actions, event, *b.puller.notify_message_arriving(topic, queue_id, now),
                      *b.ha.notify_new_data(now)]

    def snapshot(self) -> dict[str, Any]:
        return {"started": self.started, "precision_ms": self.precision, **self.encode(),
                "write_ms": self.write_ms, "held": sum(len(v) for v in self.wheel.values()),
                "pending": len(self._queue()) - self.queue_offset}
