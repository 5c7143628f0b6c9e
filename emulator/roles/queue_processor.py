"""What a client asks a broker about queues, beyond pulling: GET_MIN_OFFSET (31),
SEARCH_OFFSET_BY_TIMESTAMP (29), and the locks of orderly consumers, LOCK_BATCH_MQ (41) and
UNLOCK_BATCH_MQ (42) (RebalanceLockManager). rmqemu's own consumers use none of them; real
clients do (the Java client's orderly push consumer locks every queue it is allocated).

Lock bodies: ``{consumerGroup, clientId, mqSet: [{topic, brokerName, queueId}]}``; a lock
answers ``{lockOKMQSet: [...]}``, the queues now held by that client. A lock lives
:data:`LOCK_MAX_LIVE_MS` (``rocketmq.broker.rebalance.lockMaxLiveTime``) on the broker's clock
unless its holder renews it (the Java client does every 20 s).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.base import Action, Inbound, Now, Reply
from rmqemu.emulator.roles.server_dispatch import HeaderError, h_int, h_str

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker import Broker

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


class RebalanceLockManager:
    """group -> queue -> (client id, last renewal in wall ms)."""

    def __init__(self) -> None:
        self.table: dict[str, dict[MQ, tuple[str, float]]] = {}

    def try_lock_batch(self, group: str, mqs: list[MQ], client: str, wall_ms: float) -> list[MQ]:
        """``tryLockBatch``: a queue is locked for ``client`` if it holds it already (renewed), if
        nobody does, or if its holder's lock expired; the queues it now holds, in request order."""
        locks = self.table.setdefault(group, {})
        held = []
        for mq in dict.fromkeys(mqs):
            owner = locks.get(mq)
            if owner is None or owner[0] == client or wall_ms - owner[1] > LOCK_MAX_LIVE_MS:
                locks[mq] = (client, wall_ms)
                held.append(mq)
        return held

    def unlock_batch(self, group: str, mqs: list[MQ], client: str) -> None:
        """``unlockBatch``: only the holder's own locks go."""
        locks = self.table.get(group, {})
        for mq in mqs:
            if mq in locks and locks[mq][0] == client:
                del locks[mq]

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
        held = self.locks.try_lock_batch(group, mqs, client, now.wall_ms)
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS, body={"lockOKMQSet": [_mq_json(m) for m in held]}))]

    def unlock_batch_mq(self, msg: Inbound, now: Now) -> list[Action]:
        group, client, mqs = _mq_set(msg.frame.json_body())
        self.locks.unlock_batch(group, mqs, client)
        return [Reply(msg.channel, msg.frame.response(R.SUCCESS))]
