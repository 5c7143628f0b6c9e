"""PopReviveService: leases whose invisible time ran out go back for redelivery (5.x
``broker/.../processor/PopReviveService.java``; docs/rocketmq-model.md §10.2).

Every ``reviveInterval`` a master reads each revive queue after its offset (a consumer offset of
``CID_RMQ_SYS_REVIVE_GROUP``, persisted and synced like any other), collects the checkpoints and
sets the bits their acks name. A checkpoint whose revive time (pop time + invisible time) is more
than ``ackTimeInterval + 1 s`` past is revived: each un-acked message is put into the group's retry
topic ``%RETRY%<group>_<topic>`` (queue 0, made on first use) with ``reconsumeTimes + 1`` and
``1ST_POP_TIME``; a put that fails writes the checkpoint again for that one message (``rePutCK``).
The offset then moves past every record up to the first checkpoint not yet done.

5.x writes checkpoints and acks as timer messages that reach the revive queue at their delivery time
(a checkpoint a second before its revive time, an ack at the end of the lease it acks), so its queue
is in time order and a pass stops at the first checkpoint not yet due. rmqemu writes them at once
with that time (``POP_DELIVER_MS``): a pass reads the records whose time has come in that order,
revives every checkpoint that is due, and the offset waits for the oldest that is not (done ones
above it are kept in memory, and revived again after a restart: a duplicate, never a loss).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import Perm
from rmqemu.emulator.roles.broker.pop.records import Ack, CheckPoint
from rmqemu.emulator.roles.broker.transaction.bridge import msg_id_of
from rmqemu.emulator.roles.common import pop_keys as keys
from rmqemu.emulator.roles.common.base import Action, Cancel, Emit, Every, Now
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.store.message_store import LOST

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.pop.service import PopService

TIMER = "pop_revive"
CK_REWRITE_INTERVALS_S = (10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)


def deliver_ms(record: dict[str, Any]) -> int:
    """When 5.x's timer would let the record into the revive queue."""
    text = str((record.get("properties") or {}).get(keys.DELIVER_MS, "0"))
    return int(text) if text.lstrip("-").isdigit() and len(text) < 25 else 0


def record_text(record: dict[str, Any]) -> str:
    try:
        return body_bytes(record).decode("utf-8")
    except (UnicodeDecodeError, ValueError):
        return ""


class ReviveService:
    def __init__(self, pop: "PopService") -> None:
        self.pop = pop
        self.broker = pop.broker
        self.done: dict[int, set[int]] = {}  # revive queue -> offsets of checkpoints done above its offset

    def start(self) -> list[Action]:
        interval = self.broker.cfg.reviveInterval
        return [Cancel(TIMER), Every(TIMER, interval, interval)]

    def run(self, now: Now) -> list[Action]:
        """One pass over every revive queue; masters only (``shouldRunPopRevive``: brokerId 0)."""
        if self.broker.is_slave:
            return []
        actions: list[Action] = []
        for q in range(self.pop.revive_log.queue_nums):
            actions += self._revive_queue(q, now)
        return actions

    def _checkpoints(self, q: int, due_by: float | None,
                     ) -> tuple[int, list[dict[str, Any]], dict[str, list[CheckPoint]]]:
        """Revive queue ``q`` after its offset: its committed offset, its records, and the
        checkpoints not yet done with the bits of the acks read, both only those due by
        ``due_by`` (None: every record, whenever due)."""
        b, topic = self.broker, self.pop.revive_log.topic
        committed = b.offsets.query_offset(keys.REVIVE_GROUP, topic, q)
        records = b.store.queues.get((topic, q), [])[committed + 1:]
        done = self.done.setdefault(q, set())
        cks: dict[str, list[CheckPoint]] = {}
        for r in sorted((r for r in records if LOST not in r and int(r["queueOffset"]) not in done
                         and (due_by is None or deliver_ms(r) <= due_by)),
                        key=lambda r: (deliver_ms(r), int(r["queueOffset"]))):
            tag = (r.get("properties") or {}).get("TAGS")
            if tag == keys.CK_TAG:
                ck = CheckPoint.from_json(record_text(r))
                if ck is None:
                    done.add(int(r["queueOffset"]))
                    continue
                ck.revive_offset = int(r["queueOffset"])
                cks.setdefault(ck.merge_key, []).append(ck)
            elif tag == keys.ACK_TAG:
                ack = Ack.from_json(record_text(r), b.cfg.brokerName)
                same = cks.get(ack.merge_key, []) if ack is not None else []
                # 5.x's map keeps the later of two checkpoints with one key (a renewal in the pop's
                # own millisecond); the ack belongs to the one whose lease ends when the ack is due
                if ack is not None:
                    self._apply(ack, [c for c in same if c.revive_time == deliver_ms(r)] or same[-1:])
        return committed, records, cks

    def in_flight(self) -> dict[tuple[str, str, int], int]:
        """``{(topic, group, queue): messages}`` leased and neither acked nor revived yet, read
        from the revive log itself (so exact after a restart or a change of master), every ack
        counted at once rather than when due. The drain waits for these (docs/design.md §6): a
        lease that runs out puts its message into the retry topic only then. 5.x keeps a
        counter of the same in memory (``PopInflightMessageCounter``)."""
        out: dict[tuple[str, str, int], int] = {}
        for q in range(self.pop.revive_log.queue_nums):
            for same in self._checkpoints(q, None)[2].values():
                for ck in same:
                    left = sum(1 for i in range(len(ck.diffs)) if not ck.bits >> i & 1)
                    if left:
                        key = (ck.topic, ck.group, ck.queue_id)
                        out[key] = out.get(key, 0) + left
        return out

    def _revive_queue(self, q: int, now: Now) -> list[Action]:
        b, topic = self.broker, self.pop.revive_log.topic
        committed, records, cks = self._checkpoints(q, now.wall_ms)
        done = self.done[q]
        actions: list[Action] = []
        for ck in sorted((c for same in cks.values() for c in same), key=lambda c: c.revive_offset):
            if now.wall_ms - ck.revive_time <= keys.ACK_TIME_INTERVAL + keys.SECOND:
                continue
            normal = keys.normal_topic(ck.topic, ck.group)
            sgc, persists = b.sub_groups.find(ck.group)
            actions += persists
            if b.topics.get(normal) is not None and sgc is not None:
                actions += self._revive_ck(ck, q, now)
            done.add(ck.revive_offset)
        new = committed
        for r in records:
            off = int(r["queueOffset"])
            if LOST not in r and (r.get("properties") or {}).get("TAGS") == keys.CK_TAG and off not in done:
                break
            new = off
        if new > committed:
            b.offsets.commit_offset(keys.REVIVE_GROUP, topic, q, new)
            self.done[q] = {o for o in done if o > new}
        return actions

    @staticmethod
    def _apply(ack: Ack, candidates: list[CheckPoint]) -> None:
        """Set the acked message's bit in the first of ``candidates`` that has it still clear."""
        for ck in candidates:
            index = ck.index_of(ack.ack_offset)
            if index > -1 and not ck.bits >> index & 1:
                ck.bits |= 1 << index
                return

    def _revive_ck(self, ck: CheckPoint, q: int, now: Now) -> list[Action]:
        """``reviveMsgFromCk``: every message of the checkpoint no ack named."""
        actions: list[Action] = []
        queue = self.broker.store.queues.get((ck.topic, ck.queue_id), [])
        for i, offset in enumerate(ck.offsets()):
            if ck.bits >> i & 1:
                continue
            record = queue[offset] if 0 <= offset < len(queue) and LOST not in queue[offset] else None
            if record is None:  # "can not get biz msg": nothing to put back, the checkpoint is done
                actions.append(self._event(ck, offset, None, "missing", None, 0))
                continue
            ok, acts = self._retry(ck, record, now)
            actions += acts
            if not ok:
                actions += self._re_put(ck, offset, q, now)
        return actions

    def _retry(self, ck: CheckPoint, record: dict[str, Any], now: Now) -> tuple[bool, list[Action]]:
        """``reviveRetry``: the message into the retry topic, ``reconsumeTimes + 1``."""
        b = self.broker
        target = ck.topic if ck.topic.startswith(keys.RETRY_PREFIX) else keys.retry_topic(ck.topic, ck.group)
        if not keys.legal_name(target):  # rmqemu's own guard (5.x would make the topic): dropped
            return True, [self._event(ck, int(record["queueOffset"]), record, "illegal_topic", target, 0)]
        _, actions, created = b.topics.create_in_send_message_back_method(target, 1, Perm.READ | Perm.WRITE, 0,
                                                                          now.wall_ms)
        if created and b.offsets.query_offset(ck.group, target, 0) < 0:  # initPopRetryOffset
            b.offsets.commit_offset(ck.group, target, 0, 0)
        props = dict(record.get("properties") or {})
        times = int(record.get("reconsumeTimes", 0))
        if times == 0 or keys.FIRST_POP_TIME not in props:
            props[keys.FIRST_POP_TIME] = str(ck.pop_time)
        stored, acts, _ = b.put_record(target, 0, body_bytes(record), props, now,
                                       born_timestamp=int(record.get("bornTimestamp", 0)), reconsume_times=times + 1,
                                       flag=int(record.get("flag", 0)), sys_flag=int(record.get("sysFlag", 0)),
                                       born_host=b.store.store_host)
        actions += acts
        if stored is None:
            return False, actions
        actions += b.puller.notify_message_arriving(target, 0, now) + b.ha.notify_new_data(now)
        return True, actions + [self._event(ck, int(record["queueOffset"]), record, "retry", target, times + 2)]

    def _re_put(self, ck: CheckPoint, offset: int, q: int, now: Now) -> list[Action]:
        """``rePutCK``: the message's own checkpoint again, later when the old one is overdue."""
        times = int(ck.re_put_times) if (ck.re_put_times or "").isdigit() else 0
        invisible = ck.invisible_time
        if ck.revive_time <= now.wall_ms:
            invisible += CK_REWRITE_INTERVALS_S[min(times, len(CK_REWRITE_INTERVALS_S) - 1)] * 1000
        new = CheckPoint(ck.topic, ck.group, ck.queue_id, offset, ck.pop_time, invisible, ck.broker_name, [0],
                         re_put_times=str(times + 1))
        _, actions = self.pop.revive_log.put_ck(new, q, now)
        return actions + [self._event(ck, offset, None, "put_failed", None, 0)]

    def _event(self, ck: CheckPoint, offset: int, record: dict[str, Any] | None, result: str, target: str | None,
               attempt: int) -> Emit:
        queue = self.broker.store.queues.get((ck.topic, ck.queue_id), [])
        source = record or (queue[offset] if 0 <= offset < len(queue) and LOST not in queue[offset] else None)
        return Emit("pop.revive", {
            "msg_id": msg_id_of(source) if source else None, "group": ck.group,
            "topic": keys.normal_topic(ck.topic, ck.group), "broker": self.broker.cfg.brokerName,
            "queue_id": ck.queue_id, "queue_offset": offset, "retry": ck.topic.startswith(keys.RETRY_PREFIX),
            "result": result, "retry_topic": target, "attempt": attempt or None, "pop_time": ck.pop_time,
            "invisible_ms": ck.invisible_time, "fifo": False})

    def fifo_event(self, record: dict[str, Any], group: str, attempt: int) -> Emit:
        """A FIFO lease that ran out: its message is handed out again by this pop (no retry topic)."""
        return Emit("pop.revive", {
            "msg_id": msg_id_of(record), "group": group, "topic": str(record["topic"]),
            "broker": self.broker.cfg.brokerName, "queue_id": int(record["queueId"]),
            "queue_offset": int(record["queueOffset"]), "retry": False, "result": "redelivered",
            "retry_topic": None, "attempt": attempt, "pop_time": None, "invisible_ms": None, "fifo": True})
