"""TransactionalMessageCheckService: a master asks producers about halves nobody ended
(4.9.4 ``TransactionalMessageCheckService`` and ``TransactionalMessageServiceImpl.check``;
docs/rocketmq-model.md §9.4).

Every ``transactionCheckInterval`` (the first pass one interval after the master starts, timer
``tx_check``) the pass reads the op marks after the op offset, then walks the half queue from the
half offset (both offsets are consumer offsets of ``CID_RMQ_SYS_TRANS``, persisted and synced to
slaves like any other). For each half, in order:

- an op mark names it: done;
- checked ``transactionCheckMax`` times already, or born more than ``fileReservedTime`` hours ago:
  given up (``tx.discard``, a copy in ``TRANS_CHECK_MAX_TIME_TOPIC``);
- stored since the pass began, or younger than ``transactionTimeOut`` (by the producer's born
  time): the pass stops, later halves wait for the next one;
- with ``CHECK_IMMUNITY_TIME_IN_SECONDS`` and younger than it: put back once more, unchecked;
- otherwise a copy with its ``TRANSACTION_CHECK_TIMES`` raised goes to the queue's end and
  CHECK_TRANSACTION_STATE (39, oneway) goes to one producer channel of its group, naming the copy
  (``tx.check``; with no channel, the copy and its count are written all the same).

The offsets then move past what the pass finished. A commit that answers a check names the copy, so
the original's earlier check copies stay pending and are checked again: 4.9.4's duplicates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import RequestCode, is_remoting, message_ext
from rmqemu.emulator.protocol.frame import oneway
from rmqemu.emulator.roles.broker.transaction.bridge import (
    CHECK_TIMES,
    HALF_TOPIC,
    IMMUNITY,
    OP_TOPIC,
    PGROUP,
    PREPARED_QUEUE_OFFSET,
    REAL_QID,
    REAL_TOPIC,
    REMOVE_TAG,
    SYS_GROUP,
    java_int,
    msg_id_of,
)
from rmqemu.emulator.roles.common.base import Action, Cancel, Emit, Every, Now, Reply
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.store.message_store import LOST

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

TIMER = "tx_check"
HOUR_MS = 3600 * 1000


class CheckService:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.counter = 0  # ProducerManager's positiveAtomicCounter

    def start(self) -> list[Action]:
        """``startProcessorByHa`` on a master: a pass every ``transactionCheckInterval``."""
        interval = self.broker.cfg.transactionCheckInterval
        return [Cancel(TIMER), Every(TIMER, interval, interval)]

    @staticmethod
    def stop() -> list[Action]:
        """``shutdownProcessorByHa`` when the broker becomes a slave."""
        return [Cancel(TIMER)]

    # ------------------------------------------------------------------ the pass

    def check(self, now: Now) -> list[Action]:
        b = self.broker
        cfg, store, offsets = b.cfg, b.store, b.offsets
        actions = b.transactions.select_topic_config(HALF_TOPIC, now)  # fetchMessageQueues
        half_q = store.queues.get((HALF_TOPIC, 0), [])
        half_offset = offsets.query_offset(SYS_GROUP, HALF_TOPIC, 0)
        op_offset = offsets.query_offset(SYS_GROUP, OP_TOPIC, 0)
        half_offset, op_offset = max(half_offset, 0), max(op_offset, 0)  # -1: the queue's min offset
        remove, done = self._ops(op_offset, half_offset)
        # System.currentTimeMillis(): whole ms, as the store stamps a put (int(wall_ms)). A fractional
        # start would be above the stamp of a copy this very pass wrote, which then reads as old: the
        # pass would check it again, and its copy, up to transactionCheckMax times in one pass.
        start = int(now.wall_ms)
        i = new = half_offset
        missing = 1
        while True:
            if i in remove:
                done.append(remove.pop(i))
            else:
                if i >= len(half_q):
                    break  # NO_NEW_MSG
                half = half_q[i]
                if LOST in half:  # no message at that offset: skipped once, then the pass ends
                    missing += 1
                    if missing > 2:
                        break
                    i = new = i + 1
                    continue
                props = dict(half.get("properties", {}))
                reason = "max_checks" if self._need_discard(props) else "expired" if \
                    start - int(half.get("bornTimestamp", 0)) > b.store_cfg.fileReservedTime * HOUR_MS else None
                if reason is not None:
                    actions += self._discard(half, props, reason, now)
                    i = new = i + 1
                    continue
                if int(half.get("storeTimestamp", 0)) >= start:
                    break  # fresh stored: next pass
                age = start - int(half.get("bornTimestamp", 0))
                immunity = cfg.transactionTimeOut
                text = props.get(IMMUNITY)
                if text is not None:
                    seconds = java_int(text)
                    immunity = cfg.transactionTimeOut if seconds in (None, -1) else seconds * 1000
                    if age < immunity and self._immune(half, props, remove, done, now, actions):
                        i = new = i + 1
                        continue
                elif 0 <= age < immunity:
                    break  # new arrived: this half and every later one wait
                if not (age > immunity or age <= -1):
                    break  # 4.9.4 pulls more op marks here until its 60 s limit: nothing more to read
                copy, acts = b.transactions.renew(half, props, now)
                actions += acts
                if copy is None:
                    break  # the put back failed: 4.9.4 retries the same offset
                actions += self._send_check(copy, age, now)
            i = new = i + 1
        if new != half_offset:
            offsets.commit_offset(SYS_GROUP, HALF_TOPIC, 0, new)
        new_op = op_offset
        for off in sorted(done):  # calculateOpOffset: only a contiguous run of done marks
            if off == new_op:
                new_op += 1
        if new_op != op_offset:
            offsets.commit_offset(SYS_GROUP, OP_TOPIC, 0, new_op)
        return actions

    def _ops(self, op_offset: int, half_offset: int) -> tuple[dict[int, int], list[int]]:
        """``fillOpRemoveMap`` over every mark after ``op_offset``: half offset -> op offset for the
        halves still ahead, and the marks of halves already passed."""
        remove: dict[int, int] = {}
        done: list[int] = []
        for op in self.broker.store.queues.get((OP_TOPIC, 0), [])[op_offset:]:
            if LOST in op or op.get("properties", {}).get("TAGS") != REMOVE_TAG:
                continue
            body = op.get("body")
            target = java_int(body if isinstance(body, str) else None)
            target = -1 if target is None else target
            if target < half_offset:
                done.append(int(op["queueOffset"]))
            else:
                remove[target] = int(op["queueOffset"])
        return remove, done

    def _need_discard(self, props: dict[str, str]) -> bool:
        """``needDiscard``: checked ``transactionCheckMax`` times; otherwise the count is raised in
        ``props`` (kept only by the copy the check writes)."""
        text = props.get(CHECK_TIMES)
        times = 1
        if text is not None:
            parsed = java_int(text)
            times = -1 if parsed is None else parsed
            if times >= self.broker.cfg.transactionCheckMax:
                return True
            times += 1
        props[CHECK_TIMES] = str(times)
        return False

    def _immune(self, half: dict[str, Any], props: dict[str, str], remove: dict[int, int], done: list[int],
                now: Now, actions: list[Action]) -> bool:
        """``checkPrepareQueueOffset``: a half under its own immunity is put back unchecked, unless an
        op mark names the offset it was first stored at."""
        text = props.get(PREPARED_QUEUE_OFFSET)
        if text is not None:
            first = java_int(text)
            if first is None or first == -1:
                return False
            if first in remove:
                done.append(remove.pop(first))
                return True
        else:
            props[PREPARED_QUEUE_OFFSET] = str(int(half["queueOffset"]))
        copy, acts = self.broker.transactions.renew(half, props, now)
        actions += acts
        return copy is not None

    def _discard(self, half: dict[str, Any], props: dict[str, str], reason: str, now: Now) -> list[Action]:
        b = self.broker
        times = java_int(half.get("properties", {}).get(CHECK_TIMES)) or 0
        return b.transactions.discard(half, props, now) + [Emit("tx.discard", {
            "msg_id": msg_id_of(half), "group": props.get(PGROUP, ""), "broker": b.cfg.brokerName,
            "check_times": times, "reason": reason})]

    # ------------------------------------------------------------------ the check

    def _channel(self, group: str) -> tuple[str, str] | None:
        """``getAvailableChannel``: a channel of the group, from a counter shared by every group."""
        chans = list(self.broker.producers.table.get(group, {}).items())
        if not chans:
            return None
        self.counter += 1
        channel, info = chans[self.counter % len(chans)]
        return channel, info.clientId

    def _send_check(self, copy: dict[str, Any], age: float, now: Now) -> list[Action]:
        """``sendCheckMessage``: CHECK_TRANSACTION_STATE naming the copy, its body the message as
        the producer sent it (real topic and queue)."""
        b = self.broker
        props = copy.get("properties", {})
        uniq = props.get("UNIQ_KEY")
        fields = {"commitLogOffset": int(copy["commitLogOffset"]), "offsetMsgId": copy["offsetMsgId"],
                  "msgId": uniq, "transactionId": uniq, "tranStateTableOffset": int(copy["queueOffset"])}
        group = props.get(PGROUP, "")
        line = {"msg_id": msg_id_of(copy), "group": group, "broker": b.cfg.brokerName,
                "check_times": java_int(props.get(CHECK_TIMES)) or 0, "offset": int(copy["queueOffset"]),
                "age_ms": float(age)}
        queue_id = java_int(props.get(REAL_QID))
        found = self._channel(group) if queue_id is not None else None  # a bad REAL_QID: the check throws
        if found is None:
            return [Emit("tx.check", {**line, "client_id": None})]
        channel, client_id = found
        view = {**copy, "topic": props.get(REAL_TOPIC, ""), "queueId": queue_id, "storeSize": 0}
        # a real client gets the stored bytes: a body that is not UTF-8 (one the client deflated,
        # sysFlag bit 0) is kept as ``body64``, and encoding the record's ``body`` sent it empty
        body: bytes | dict[str, Any] = message_ext.encode_messages([{**view, "body": body_bytes(copy)}],
                                                                   b.store.store_host) \
            if is_remoting(channel) else {k: v for k, v in view.items() if k != "storeSize"}
        frame = oneway(RequestCode.CHECK_TRANSACTION_STATE, {k: v for k, v in fields.items() if v is not None}, body)
        return [Reply(channel, frame), Emit("tx.check", {**line, "client_id": client_id})]
