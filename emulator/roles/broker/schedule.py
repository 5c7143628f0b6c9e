"""ScheduleMessageService: delay levels on a master broker (docs/rocketmq-model.md §2.9).

A put whose ``DELAY`` property is above 0 (and whose sysFlag is no prepared or rolled-back
transaction) is stored in ``SCHEDULE_TOPIC_XXXX``, queue ``level - 1``, with ``REAL_TOPIC`` and
``REAL_QID`` added (a level above the highest is capped to it): :meth:`ScheduleService.put`, which
both send paths use. It is due at its store time plus the level's delay, by the broker's skewable
clock; each level is delivered strictly in order (an entry not yet due holds back the ones behind
it) to its real topic, as a new message that keeps the stored properties (``DELAY``, ``REAL_TOPIC``
and ``REAL_QID`` included) and the UNIQ_KEY, with a new offsetMsgId and store time, waking held
pulls and HA like any put. ``offsets[level]`` is the next entry to deliver; it is persisted to
``config/delayOffset.json`` every ``flushDelayOffsetInterval`` (when it changed) and on a graceful
stop, and loaded (clamped to the queue) at start, so a killed master delivers again what it
delivered after its last persist: duplicates, never a loss, never early.

Only a master delivers (``start``); every broker loads the file, and a slave's SlaveSync writes it.

Departure (docs/rocketmq-model.md §2.9): RocketMQ polls each level every 100 ms; here each level
has one one-shot timer, ``schedule:<level>``, armed for its head entry's due time (not before
``FIRST_DELAY_TIME`` after start), re-armed after each delivery, armed by a put to an idle level,
and re-armed when the node's wall clock is set (``on_clock``). A delivery is therefore late by one
timer's lateness at most, instead of up to 100 ms.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.roles.broker.timer import hook as timer_hook
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Emit, Every, Now, Persist
from rmqemu.emulator.roles.common.broker_config import parse_delay_levels
from rmqemu.emulator.roles.common.sysflag import HALF_TOPIC, PREPARED_TYPE, ROLLBACK_TYPE, TRANSACTION_MASK
from rmqemu.emulator.roles.common.topic_config import SCHEDULE_TOPIC, TIMER_TOPIC

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

DELAY_OFFSET_JSON = "config/delayOffset.json"  # StorePathConfigHelper.getDelayOffsetStorePath
FIRST_DELAY_TIME = 1000  # ms after start() before a level is first looked at
FLUSH_INITIAL_MS = 10000  # persist() first runs 10 s after start()
DELAY_FOR_A_PERIOD = 10000  # a level whose delivery put failed is looked at again after this
TIMER_PREFIX = "schedule:"
FLUSH_TIMER = "delay_offset_flush"
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


class DelayLevelError(ValueError):
    """``Integer.parseInt`` of the ``DELAY`` property failed; the broker answers SYSTEM_ERROR with
    ``remark`` (NettyRemotingAbstract's ``RemotingHelper.exceptionSimpleDesc``)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.remark = (f'java.lang.NumberFormatException: For input string: "{text}", '
                       "java.lang.NumberFormatException.forInputString(NumberFormatException.java:65)")


def delay_level_of(props: dict[str, str]) -> int:
    """``Message.getDelayTimeLevel``: 0 without ``DELAY``, else ``Integer.parseInt`` of it."""
    text = props.get("DELAY")
    if text is None:
        return 0
    if not _JAVA_INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
        raise DelayLevelError(text)
    return int(text)


def delayable(sys_flag: int) -> bool:
    """``TRANSACTION_NOT_TYPE`` or ``TRANSACTION_COMMIT_TYPE``: prepared and rolled-back messages are never
    delayed."""
    return sys_flag & TRANSACTION_MASK not in (PREPARED_TYPE, ROLLBACK_TYPE)


class ScheduleService:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.delays = parse_delay_levels(broker.store_cfg.messageDelayLevel)  # level i+1 -> ms
        self.offsets: dict[int, int] = {}
        self.started = False
        self.ready_mono = 0.0  # FIRST_DELAY_TIME after start, on the monotonic clock
        self.armed: set[int] = set()
        self.persisted: dict[str, Any] | None = None

    @property
    def max_level(self) -> int:
        return len(self.delays)

    def queues(self) -> list[tuple[str, int]]:
        """Every level's queue, for the store's restore (levels past the topic's 18 queues too)."""
        return [(SCHEDULE_TOPIC, q) for q in range(self.max_level)]

    def _queue(self, level: int) -> list[dict[str, Any]]:
        return self.broker.store.queues.get((SCHEDULE_TOPIC, level - 1), [])

    # ------------------------------------------------------------------ lifecycle

    def load(self, read_store: Callable[[str], str | None]) -> None:
        """``load()``: the file (``.bak`` when it is empty or unreadable) over the table, then
        ``correctDelayOffset``: each level's offset clamped to its queue."""
        for name in (DELAY_OFFSET_JSON, DELAY_OFFSET_JSON + ".bak"):
            try:
                table = json.loads(read_store(name) or "null")["offsetTable"]
                self.offsets.update({int(level): int(off) for level, off in table.items()})
                break
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        for level in range(1, self.max_level + 1):
            if level in self.offsets:
                self.offsets[level] = min(max(self.offsets[level], 0), len(self._queue(level)))
        self.persisted = self.encode()

    def start(self, now: Now) -> list[Action]:
        """A master's ``start()``: each level looked at ``FIRST_DELAY_TIME`` from now, the offsets
        persisted every ``flushDelayOffsetInterval`` after 10 s."""
        self.started, self.ready_mono = True, now.mono_ms + FIRST_DELAY_TIME
        actions: list[Action] = [Every(FLUSH_TIMER, FLUSH_INITIAL_MS, self.broker.store_cfg.flushDelayOffsetInterval)]
        for level in range(1, self.max_level + 1):
            actions += self._arm(level, now)
        return actions

    def stop(self) -> list[Action]:
        """``shutdown()`` persists the offsets."""
        return [self.persist()] if self.started else []

    def start_delivering(self, now: Now) -> list[Action]:
        """``handleScheduleMessageService`` for a broker that became master (DLedger): ``start()``
        once, which reloads the offsets (a slave's sync kept the file current) and arms the levels."""
        if self.started:
            return []
        self.load(self.broker.read_store)
        return self.start(now)

    def stop_delivering(self) -> list[Action]:
        """The same for a broker that became a slave: ``shutdown()``, its timers gone, offsets persisted."""
        if not self.started:
            return []
        actions: list[Action] = [Cancel(f"{TIMER_PREFIX}{level}") for level in sorted(self.armed)]
        actions += [Cancel(FLUSH_TIMER), self.persist()]
        self.started = False
        self.armed.clear()
        return actions

    def on_dispatched(self, topic: str, queue_id: int, now: Now) -> list[Action]:
        """A DLedger master stored a parked message only at its commit: arm its level then."""
        level = queue_id + 1
        if topic != SCHEDULE_TOPIC or not self.started or level in self.armed or not 1 <= level <= self.max_level:
            return []
        return self._arm(level, now)

    def encode(self) -> dict[str, Any]:
        """``DelayOffsetSerializeWrapper``: ``{"offsetTable": {level: next offset}}`` (keys are levels)."""
        return {"offsetTable": {str(level): off for level, off in sorted(self.offsets.items())}}

    def persist(self) -> Persist:
        self.persisted = self.encode()
        return Persist(DELAY_OFFSET_JSON, json.dumps(self.persisted, indent=4))

    # ------------------------------------------------------------------ the write path

    def put(self, topic: str, queue_id: int, body: bytes | str, props: dict[str, str], now: Now,
            sys_flag: int = 0, **kw: Any) -> tuple[dict[str, Any] | None, list[Action]]:
        """``CommitLog.asyncPutMessage``: the delay rewrite (``DELAY`` must parse: see
        :func:`delay_level_of`), the append, and for a parked message its ``delay.park`` and the
        level's timer. The caller wakes held pulls and HA for ``record["topic"]``/``["queueId"]``.
        The record is None when a DLedger commit log refused the append (not its group's leader)."""
        level = delay_level_of(props) if delayable(sys_flag) else 0
        # 5.x's timer hook runs first (emulator/roles/broker/timer/hook.py): a timed message goes to
        # rmq_sys_wheel_timer, and a delay level drops the timer properties
        topic, queue_id, props = timer_hook.transform(topic, queue_id, props, level, delayable(sys_flag),
                                                      self.broker.store_cfg, now.wall_ms)
        store_props, asked = dict(props), level
        if level > 0:
            level = min(level, self.max_level)
            store_props.update(DELAY=str(level), REAL_TOPIC=topic, REAL_QID=str(queue_id))
            topic, queue_id = SCHEDULE_TOPIC, level - 1
        record, actions, _ = self.broker.put_record(topic, queue_id, body, store_props, now, sys_flag=sys_flag, **kw)
        if record is not None and topic == TIMER_TOPIC:
            actions += self.broker.timer.parked(record, now)
        if record is None or level <= 0:
            return record, actions
        fields = {**self._where(level, record), "delay_ms": float(self.delays[level - 1])}
        if asked != level:
            fields["level_asked"] = asked
        actions.append(Emit("delay.park", fields))
        if level not in self.armed:
            actions += self._arm(level, now)
        return record, actions

    def stored_properties(self, topic: str, queue_id: int, props: dict[str, str], sys_flag: int) -> dict[str, str]:
        """The properties string a single send stores (what the commit log's length limit counts):
        without ``WAIT``, which asyncSendMessage leaves out, unless the delay rewrite rebuilds the
        string from every property and adds ``REAL_TOPIC`` and ``REAL_QID``."""
        level = delay_level_of(props) if delayable(sys_flag) else 0
        if level <= 0:
            return {k: v for k, v in props.items() if k != "WAIT"}
        return {**props, "DELAY": str(min(level, self.max_level)), "REAL_TOPIC": topic, "REAL_QID": str(queue_id)}

    def _where(self, level: int, record: dict[str, Any]) -> dict[str, Any]:
        props = record["properties"]
        return {"msg_id": props.get("UNIQ_KEY") or record["offsetMsgId"], "topic": props.get("REAL_TOPIC", ""),
                "queue_id": _int(props.get("REAL_QID")) or 0, "broker": self.broker.cfg.brokerName,
                "level": level, "offset": record["queueOffset"], "due_ms": float(self._due(level, record)),
                "reconsume_times": int(record.get("reconsumeTimes", 0))}

    # ------------------------------------------------------------------ delivery

    def _due(self, level: int, record: dict[str, Any]) -> int:
        """``computeDeliverTimestamp``: store time plus the level's delay (the dispatch's tagsCode)."""
        return int(record["storeTimestamp"]) + self.delays[level - 1]

    def _deliver_at(self, level: int, record: dict[str, Any], now: Now) -> float:
        """``correctDeliverTimestamp``: a due time more than the level's delay ahead is now."""
        due = self._due(level, record)
        return now.wall_ms if due > now.wall_ms + self.delays[level - 1] else due

    def _arm(self, level: int, now: Now) -> list[Action]:
        queue, offset = self._queue(level), self.offsets.get(level, 0)
        if not self.started or offset >= len(queue):
            self.armed.discard(level)
            return []
        self.armed.add(level)
        wait = max(self._deliver_at(level, queue[offset], now) - now.wall_ms, self.ready_mono - now.mono_ms, 0.0)
        return [After(f"{TIMER_PREFIX}{level}", wait)]

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == FLUSH_TIMER:
            return [self.persist()] if self.started and self.encode() != self.persisted else []
        level = _int(name[len(TIMER_PREFIX):]) or 0
        if not self.started or not 1 <= level <= self.max_level:
            return []
        self.armed.discard(level)
        queue, offset = self._queue(level), self.offsets.get(level, 0)
        actions: list[Action] = []
        while offset < len(queue) and self._deliver_at(level, queue[offset], now) <= now.wall_ms:
            stored, acts = self._time_up(level, queue[offset], now)
            actions += acts
            if not stored:  # a put that failed: the level is looked at again after DELAY_FOR_A_PERIOD
                self.armed.add(level)
                return actions + [After(f"{TIMER_PREFIX}{level}", DELAY_FOR_A_PERIOD)]
            offset += 1
            self.offsets[level] = offset  # syncDeliver's updateOffset(level, offset + 1) on PUT_OK
        return actions + self._arm(level, now)

    def on_clock(self, now: Now) -> list[Action]:
        """The wall clock was set: due times moved against the monotonic timers, re-arm them."""
        return [a for level in sorted(self.armed) for a in self._arm(level, now)]

    def _time_up(self, level: int, rec: dict[str, Any], now: Now) -> tuple[bool, list[Action]]:
        """``messageTimeup`` + the put: the stored properties string is kept as it is. False when
        the put was refused (a DLedger commit log that is not leader). A DLedger master does not
        wait for the entry's quorum ack here (syncDeliver would): it counts as delivered once appended."""
        b, props = self.broker, rec["properties"]
        topic, queue_id = props.get("REAL_TOPIC"), _int(props.get("REAL_QID"))
        if not topic or queue_id is None or topic == HALF_TOPIC:
            return True, []  # never stored so by this broker; RocketMQ discards a half message the same way
        where = self._where(level, rec)
        record, actions, _ = b.put_copy(rec, topic, queue_id, props, now, parked_msg_id=where["msg_id"])
        if record is None:
            return False, actions
        event = Emit("delay.deliver", {**where, "lateness_ms": now.wall_ms - where["due_ms"],
                                       "queue_offset": record["queueOffset"], "offset_msg_id": record["offsetMsgId"]})
        return True, [*actions, event, *b.puller.notify_message_arriving(topic, queue_id, now),
                      *b.ha.notify_new_data(now)]

    def snapshot(self) -> dict[str, Any]:
        levels = range(1, self.max_level + 1)
        pending = {level: len(self._queue(level)) - self.offsets.get(level, 0) for level in levels}
        return {"started": self.started, "levels": self.max_level, **self.encode(),
                "pending": {str(level): n for level, n in pending.items() if n > 0}}


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
