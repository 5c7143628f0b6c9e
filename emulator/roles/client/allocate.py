"""The push consumer's queue allocation strategies (docs/rocketmq-model.md §4.4), selected by a short name.

Every strategy takes ``(group, current_cid, mq_all, cid_all)`` already sorted by the caller
(``RebalanceImpl`` sorts queues by topic/brokerName/queueId and cids as strings) and returns the
queues this consumer owns. The common checks raise :class:`AllocateError`
(``IllegalArgumentException``); a cid missing from ``cid_all`` returns ``[]`` after the
``[BUG]`` log line, which is how a consumer the broker does not list ends up with nothing.
"""

from __future__ import annotations

import bisect
import hashlib
from typing import Any, Callable, Sequence

from rmqemu.emulator.roles.client.route_cache import MessageQueue

Strategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


class AllocateError(ValueError):
    """``IllegalArgumentException`` from a strategy's argument checks."""


def _java_split(text: str, sep: str) -> list[str]:
    """Java's ``String.split``: trailing empty strings are removed ("idc@" has 1 part, not 2)."""
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _check(group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """``AbstractAllocateMessageQueueStrategy.check``: False (after a [BUG] log) if not listed."""
    if not current_cid:
        raise AllocateError("currentCID is empty")
    if not mq_all:
        raise AllocateError("mqAll is null or mqAll empty")
    if not cid_all:
        raise AllocateError("cidAll is null or cidAll empty")
    return current_cid in cid_all  # "[BUG] ConsumerGroup: {} The consumerId: {} not in cidAll: {}"


def allocate_averagely(group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                       cid_all: Sequence[str]) -> list[MessageQueue]:
    """AVG: contiguous blocks, the first ``n % c`` consumers get one extra queue."""
    if not _check(group, current_cid, mq_all, cid_all):
        return []
    n, c, i = len(mq_all), len(cid_all), list(cid_all).index(current_cid)
    mod = n % c
    if n <= c:
        avg = 1
    else:
        avg = n // c + 1 if (mod > 0 and i < mod) else n // c
    start = i * avg if (mod > 0 and i < mod) else i * avg + mod
    rng = min(avg, n - start)
    return [mq_all[(start + k) % n] for k in range(max(rng, 0))]


def allocate_averagely_by_circle(group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                                 cid_all: Sequence[str]) -> list[MessageQueue]:
    """AVG_BY_CIRCLE: queue ``j`` goes to consumer ``j % c``."""
    if not _check(group, current_cid, mq_all, cid_all):
        return []
    i, c = list(cid_all).index(current_cid), len(cid_all)
    return [mq for j, mq in enumerate(mq_all) if j >= i and j % c == i]


def md5_hash(key: str) -> int:
    """ConsistentHashRouter's default hash: first 4 MD5 bytes, big-endian, unsigned."""
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")


def consistent_hash_ring(cid_all: Sequence[str], virtual_node_cnt: int) -> dict[int, str]:
    """``ConsistentHashRouter``'s ring (hash -> cid). ``addNode`` numbers a node's virtual nodes
    from ``getExistingReplicas`` (its entries already on the ring), so a cid listed twice gets
    ``"<cid>-0".."<cid>-(2n-1)"``, twice the weight. A colliding key overwrites (``TreeMap.put``)."""
    ring: dict[int, str] = {}
    for cid in cid_all:
        existing = sum(1 for owner in ring.values() if owner == cid)
        for v in range(virtual_node_cnt):
            ring[md5_hash(f"{cid}-{v + existing}")] = cid
    return ring


def make_consistent_hash(virtual_node_cnt: int = 10) -> Strategy:
    """CONSISTENT_HASH: ring of ``"<cid>-<i>"`` virtual nodes (:func:`consistent_hash_ring`); a queue
    goes to the first ring key at or after ``hash(str(mq))``, wrapping around."""
    if virtual_node_cnt < 0:
        raise AllocateError(f"illegal virtual node counts :{virtual_node_cnt}")

    def allocate(group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        if not _check(group, current_cid, mq_all, cid_all):
            return []
        ring = consistent_hash_ring(cid_all, virtual_node_cnt)
        if not ring:
            return []
        keys = sorted(ring)
        out = []
        for mq in mq_all:
            pos = bisect.bisect_left(keys, md5_hash(str(mq)))
            if ring[keys[pos % len(keys)]] == current_cid:
                out.append(mq)
        return out

    return allocate


def make_by_config(message_queue_list: Sequence[MessageQueue]) -> Strategy:
    """CONFIG: the configured list for every consumer, no checks at all."""
    fixed = list(message_queue_list)

    def allocate(group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        return list(fixed)

    return allocate


def make_by_machine_room(consumeridcs: Sequence[str]) -> Strategy:
    """MACHINE_ROOM: queues of brokers named ``<idc>@<name>`` with ``idc`` in ``consumeridcs``,
    split in blocks of ``|premq| // c`` plus one of the remainder for the first consumers."""
    idcs = set(consumeridcs)

    def allocate(group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        if not _check(group, current_cid, mq_all, cid_all):
            return []
        i, c = list(cid_all).index(current_cid), len(cid_all)
        premq = [mq for mq in mq_all
                 if len(parts := _java_split(mq.broker_name, "@")) == 2 and parts[0] in idcs]
        mod, rem = len(premq) // c, len(premq) % c
        out = premq[i * mod: i * mod + mod]
        if rem > i:
            out.append(premq[i + mod * c])
        return out

    return allocate


def _queue_from_param(item: Any) -> MessageQueue:
    if isinstance(item, dict):
        return MessageQueue(item["topic"], item["brokerName"], int(item["queueId"]))
    topic, broker, qid = item
    return MessageQueue(topic, broker, int(qid))


STRATEGY_NAMES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM")


def strategy_from_spec(name: str, params: dict[str, Any] | None = None) -> Strategy:
    """The strategy for a consumer spec's ``allocate`` / ``allocate_params``.

    Params: CONSISTENT_HASH ``virtualNodeCnt`` (10); CONFIG ``messageQueueList`` as
    ``[[topic, broker, qid], ...]`` or ``[{topic, brokerName, queueId}, ...]``;
    MACHINE_ROOM ``consumeridcs``.
    """
    params = params or {}
    if name == "AVG":
        return allocate_averagely
    if name == "AVG_BY_CIRCLE":
        return allocate_averagely_by_circle
    if name == "CONSISTENT_HASH":
        return make_consistent_hash(int(params.get("virtualNodeCnt", 10)))
    if name == "CONFIG":
        return make_by_config([_queue_from_param(x) for x in params.get("messageQueueList", [])])
    if name == "MACHINE_ROOM":
        return make_by_machine_room(list(params.get("consumeridcs", [])))
    raise ValueError(f"allocate: unknown strategy {name!r}, expected one of {', '.join(STRATEGY_NAMES)}")
