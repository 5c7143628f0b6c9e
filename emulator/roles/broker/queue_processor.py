"""What a client asks a broker about queues, beyond pulling: GET_MIN_OFFSET (31),
SEARCH_OFFSET_BY_TIMESTAMP (29), and the locks of orderly consumers, LOCK_BATCH_MQ (41) and
UNLOCK_BATCH_MQ (42) (``RebalanceLockManager``, docs/rocketmq-model.md §4.9), for rmqemu's
orderly consumers and real clients alike.

Lock bodies: ``{consumerGroup, clientId, mqSet: [{topic, brokerName, queueId}]}``; a lock
answers ``{lockOKMQSet: [...]}``, the queues now held by that client. A lock lives
:data:`LOCK_MAX_LIVE_MS` (``rocketmq.broker.rebalance.lockMaxLiveTime``) on the broker's
(skewable) wall clock unless its holder renews it (every 20 s); the table is in memory only, so
a restarted broker starts with none. A ``broker.lock`` event marks each change of holder: a
grant to a new holder (``locked``), a grant over an expired holder (``taken_over``), and an
unlock (``unlocked``); a renewal writes nothing.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any, NamedTuple

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.base import Action, Emit, Inbound, Now, Reply
from rmqemu.emulator.roles.common.server_dispatch import HeaderError, h_int, h_str

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

LOCK_MAX_LIVE_MS = 60000
MQ = tuple[str, str, int]  # topic, brokerName, queueId


def _mq_set(body: Any) -> tuple[str, str, list[MQ]]:
    if not isinstance(body, dict):
        raise HeaderError("the lock body is not a JSON object")
    group, client = body.get("consumerGroup"), body.get("clientId")
    items = body.get("mqSet") or []
    if not isinstance(group, str) or not isinstance(client, str) or not isinstance(items, list):
        raise HeaderError("the lock body needs consumerGroup, clientId and an mqSet list")
    mqs = [(str(m["topic"]), str(m["brokerName"]), int(m["queueId"])) for m in items]
    return group, client, mqs


def _mq_json(mq: MQ) -> dict[str, Any]:
    return {"topic": mq[0], "brokerName": mq[1], "queueId": mq[2]}


class LockChange(NamedTuple):
    """A queue whose holder changed: ``locked`` (it was free), ``taken_over`` (``previous`` had
    not renewed it for ``idle_ms``, past the expiry) or ``unlocked``."""

    mq: MQ
    change: str
    previous: str | None = None
    idle_ms: float | None = None


class RebalanceLockManager:
    """group -> queue -> (client id, last renewal in wall ms)."""

    def __init__(self) -> None:
        self.table: dict[str, dict[MQ, tuple[str, float]]] = {}

    def try_lock_batch(self, group: str, mqs: list[MQ], client: str,
                       wall_ms: float) -> tuple[list[MQ], list[LockChange]]:
        """``tryLockBatch``: a queue is locked for ``client`` if it holds it already (renewed, even
        past its expiry), if nobody does, or if its holder's lock expired. Returns the queues it
        now holds, in request order, and the changes of holder."""
        locks = self.table.setdefault(group, {})
        held, changes = [], []
        for mq in dict.fromkeys(mqs):
            owner = locks.get(mq)
            idle = None if owner is None else wall_ms - owner[1]
            if owner is None or owner[0] == client or idle > LOCK_MAX_LIVE_MS:
                if owner is None:
                    changes.append(LockChange(mq, "locked"))
                elif owner[0] != client:
                    changes.append(LockChange(mq, "taken_over", owner[0], idle))
                locks[mq] = (client, wall_ms)
                held.append(mq)
        return held, changes

    def unlock_batch(self, group: str, mqs: list[MQ], client: str) -> list[LockChange]:
        """``unlockBatch``: only the holder's own locks go."""
        locks = self.table.get(group, {})
        gone = []
        for mq in dict.fromkeys(mqs):
            if mq in locks and locks[mq][0] == client:
                del locks[mq]
                gone.append(LockChange(mq, "unlocked"))
        return gone

    def snapshot(self) -> dict[str, dict[str, str]]:
        return {g: {f"{t}:{b}:{q}": c for (t, b, q), (c, _) in sorted(locks.items())}
                for g, locks in sorted(self.table.items()) if locks}


class QueueProcessor:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.locks = RebalanceLockManager()

    def get_min_offset(self, msg: Inbound, now: Now) -> list[Action]:
        f = msg.frame
        offset = self.broker.store.min_offset(h_str(f, "topic", required=True), h_int(f, "queueId", required=True))
        return [Reply(msg.channel, f.response(R.SUCCESS, fields={"offset": offset}))]

    def search_offset_by_timestamp(self, msg: Inbound, now: Now) -> list[Action]:
        """``getOffsetInQueueByTime``, simplified: the first queue offset stored at or after
        ``timestamp`` (the max offset if none)."""
        f = msg.frame
        topic, qid = h_str(f, "topic", required=True), h_int(f, "queueId", required=True)
        stamps = [int(r["storeTimestamp"]) for r in self.broker.store.queues.get((topic, qid), [])]
        offset = bisect_left(stamps, h_int(f, "timestamp", required=True))
        return [Reply(msg.channel, f.response(R.SUCCESS, fields={"offset": offset}))]

    def lock_batch_mq(self, msg: Inbound, now: Now) -> list[Action]:
        group, client, mqs = _mq_set(msg.frame.json_body())
        held, changes = self.locks.try_lock_batch(group, mqs, client, now.wall_ms)
        reply = Reply(msg.channel, msg.frame.response(R.SUCCESS, body={"lockOKMQSet": [_mq_json(m) for m in held]}))
        return [reply, *self._events(group, client, msg.peer, changes)]

    def unlock_batch_mq(self, msg: Inbound, now: Now) -> list[Action]:
        group, client, mqs = _mq_set(msg.frame.json_body())
        changes = self.locks.unlock_batch(group, mqs, client)
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS)), *self._events(group, client, msg.peer, changes)]

    @staticmethod
    def _events(group: str, client_id: str, peer: str, changes: list[LockChange]) -> list[Action]:
        out: list[Action] = []
        for c in changes:
            fields: dict[str, Any] = {"group": group, "topic": c.mq[0], "broker": c.mq[1], "queue_id": c.mq[2],
                                      "client_id": client_id, "peer": peer, "change": c.change}
            if c.previous is not None:
                fields.update(previous=c.previous, idle_ms=round(c.idle_ms or 0.0, 3))
            out.append(Emit("broker.lock", fields))
        return out
