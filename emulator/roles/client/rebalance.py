"""``RebalanceImpl`` / ``RebalancePushImpl`` for one push consumer (docs/rocketmq-model.md §4.3, §4.4, §4.7).

Per subscribed topic: CLUSTERING asks a broker of the topic's route (master preferred) for the
group's consumer ids, sorts queues and ids and runs the allocation strategy; BROADCASTING takes
every readable queue. The process-queue table then drops queues no longer owned (persisting and
forgetting their offsets) and adds new ones, whose first offset comes from
``computePullFromWhere`` (QUERY_CONSUMER_OFFSET, else the consumeFromWhere policy). A change of
the allocation bumps the topic's ``subVersion`` and heartbeats at once (ROCKETMQ-175). An
orderly consumer locks a new queue on its master first and unlocks a queue it gives up
(docs/rocketmq-model.md §4.9, ``emulator/roles/client/orderly.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.protocol import RequestCode, ResponseCode, request
from rmqemu.emulator.roles.client.allocate import AllocateError
from rmqemu.emulator.roles.client.route_cache import MessageQueue
from rmqemu.emulator.roles.client.subscription import RETRY_GROUP_TOPIC_PREFIX
from rmqemu.emulator.roles.common.base import Action, Emit, Now, Request

if TYPE_CHECKING:
    from rmqemu.emulator.roles.client.consumer import Consumer

GET_MAX_OFFSET = RequestCode.GET_MAX_OFFSET  # response header ``offset``
# a first offset: -1 where RocketMQ's lookup failed (readOffset -2), None where it threw (maxOffset)
OffsetThen = Callable[[int | None, Now], list[Action]]
# consumeFromWhere values that behave like CONSUME_FROM_LAST_OFFSET in 4.x
LAST_OFFSET_POLICIES = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
                        "CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET")


@dataclass
class _Added:
    """The queues one rebalance added, while their first offsets are being looked up.

    ``updateProcessQueueTableInRebalance`` sets ``changed`` for a new queue only once its
    offset is known (``computePullFromWhere`` >= 0) and the queue really joins the table
    (docs/rocketmq-model.md §4.3); here that lookup is asynchronous, so messageQueueChanged (new subVersion,
    heartbeat) waits until every lookup of the rebalance has ended."""

    topic: str
    pending: int
    changed: bool  # a queue was removed, or one has been added


@dataclass
class ProcessQueue:
    """``ProcessQueue``: messages pulled but not yet acked, and the next offset to pull."""

    mq: MessageQueue
    next_offset: int = -1
    dropped: bool = False
    ready: bool = False  # first offset known, pulling
    msgs: dict[int, dict[str, Any]] = field(default_factory=dict)
    queue_offset_max: int = -1
    batch: "_Added | None" = None  # the rebalance that added this queue, until its offset is known
    # orderly mode (docs/rocketmq-model.md §4.9, emulator/roles/client/orderly.py)
    locked: bool = False
    last_lock_ms: float = 0.0  # wall ms of the last grant (lastLockTimestamp)
    previously_locked: bool = False  # the pull request's flag: the first locked pull recomputes the offset
    consuming: bool = False  # a consume request is running or scheduled (ProcessQueue.consuming)

    def put(self, msgs: list[dict[str, Any]]) -> None:
        for m in msgs:
            self.msgs[int(m["queueOffset"])] = m
            self.queue_offset_max = max(self.queue_offset_max, int(m["queueOffset"]))

    def remove(self, offsets: list[int]) -> int:
        """``removeMessage``: the offset to commit (-1 if nothing was cached)."""
        if not self.msgs:
            return -1
        for off in offsets:
            self.msgs.pop(off, None)
        return min(self.msgs) if self.msgs else self.queue_offset_max + 1


class Rebalancer:
    def __init__(self, consumer: "Consumer") -> None:
        self.consumer = consumer
        self.runs = 0

    def do_rebalance(self, now: Now) -> list[Action]:
        self.runs += 1
        actions: list[Action] = []
        for topic in list(self.consumer.subscriptions):
            actions += self.rebalance_by_topic(topic, now)
        return actions

    def rebalance_by_topic(self, topic: str, now: Now) -> list[Action]:
        c = self.consumer
        mq_set = c.subscribe_table.get(topic)
        if not mq_set:
            return []  # "doRebalance, {}, but the topic[{}] not exist."
        if c.broadcasting:
            return self._apply(topic, sorted(mq_set), [], now)
        addr = c.instance.find_broker_addr_by_topic(topic)
        if addr is None:
            # MQClientInstance.findConsumerIdList: updateTopicRouteInfoFromNameServer(topic), look
            # again and carry on. The refresh is a Request here, so the second look waits for its
            # answer; still nothing: cidAll is null and this topic's rebalance does nothing.
            def look_again(ok: bool, rnow: Now) -> list[Action]:
                again = c.instance.find_broker_addr_by_topic(topic)
                return [] if again is None or c.stopping else self._ask_consumer_list(topic, again)

            return c.instance.update_route(topic, now, look_again)
        return self._ask_consumer_list(topic, addr)

    def _ask_consumer_list(self, topic: str, addr: str) -> list[Action]:
        """GET_CONSUMER_LIST_BY_GROUP to ``addr``, then allocate (``rebalanceByTopic``, CLUSTERING)."""
        c = self.consumer
        frame = request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": c.group})

        def on_reply(resp, rnow: Now) -> list[Action]:
            if c.stopping:
                return []  # shut down meanwhile: rebalanceImpl.destroy() ran
            if resp is None or resp.code != ResponseCode.SUCCESS:
                return []  # "no consumer for this group" or timeout: cidAll null, nothing done
            cids = list((resp.json_body() or {}).get("consumerIdList") or [])
            mq_all = sorted(c.subscribe_table.get(topic) or [])
            if not cids or not mq_all:
                return []
            try:
                allocated = c.strategy(c.group, c.client_id, mq_all, sorted(cids))
            except AllocateError:
                return []  # "AllocateMessageQueueStrategy.allocate Exception"
            return self._apply(topic, allocated, cids, rnow)

        return [Request(addr, frame, c.api_timeout_ms, on_reply)]

    def _apply(self, topic: str, allocated: list[MessageQueue], cids: list[str], now: Now) -> list[Action]:
        c = self.consumer
        actions: list[Action] = [Emit("rebalance", {
            "group": c.group, "topic": topic, "cid": c.client_id, "cids": cids,
            "strategy": "BROADCASTING" if c.broadcasting else c.strategy_name,
            "allocated": [mq.queue() for mq in allocated]})]
        return actions + self._update_process_queue_table(topic, set(allocated), now)

    def _message_queue_changed(self, topic: str, now: Now) -> list[Action]:
        """messageQueueChanged: a new subVersion, and a heartbeat at once."""
        if topic not in self.consumer.subscriptions:
            return []
        self.consumer.subscriptions[topic]["subVersion"] = int(now.wall_ms)
        return self.consumer.send_heartbeat()

    def _settled(self, pq: ProcessQueue, added: bool, now: Now) -> list[Action]:
        """One first-offset lookup of a rebalance has ended (``added``: the queue joined)."""
        batch, pq.batch = pq.batch, None
        if batch is None:
            return []
        batch.pending -= 1
        batch.changed = batch.changed or added
        return self._message_queue_changed(batch.topic, now) if batch.pending == 0 and batch.changed else []

    def _update_process_queue_table(self, topic: str, mq_set: set[MessageQueue], now: Now) -> list[Action]:
        c = self.consumer
        changed, actions = False, []
        for mq, pq in list(c.process_table.items()):
            if (mq.topic == topic and mq not in mq_set) or mq.topic not in c.subscriptions:
                pq.dropped = True
                actions += c.puller.persist_offset(mq, now)
                c.offset_store.remove(mq)
                del c.process_table[mq]
                if c.orderly is not None:
                    actions += c.orderly.give_up(pq, now)
                changed = True
        new = [mq for mq in sorted(mq_set)  # truncateMessageQueueNotMyTopic drops foreign queues (CONFIG)
               if mq not in c.process_table and mq.topic in c.subscriptions]
        if not new:
            return actions + (self._message_queue_changed(topic, now) if changed else [])
        batch = _Added(topic, len(new), changed)
        pqs = []
        for mq in new:
            c.offset_store.remove(mq)  # removeDirtyOffset
            pq = ProcessQueue(mq, batch=batch)
            c.process_table[mq] = pq  # in the table while its lock and offset are looked up (not pulled)
            pqs.append(pq)
        for pq in pqs:
            if c.orderly is not None:  # lock(mq) first; refused: "add a new mq failed ... because lock failed"
                actions += c.orderly.lock(pq.mq, now, lambda ok, n, pq=pq: (
                    self.compute_pull_from_where(pq, n, self._joined(pq)) if ok else self._give_up(pq, n)))
            else:
                actions += self.compute_pull_from_where(pq, now, self._joined(pq))
        return actions

    # ------------------------------------------------------------------ first offset

    def compute_pull_from_where(self, pq: ProcessQueue, now: Now, then: OffsetThen) -> list[Action]:
        """``computePullFromWhereWithException``: the broker's (or local) offset, else the
        consumeFromWhere policy; ``then(offset, now)``: -1 when the offset lookup failed (no
        broker, no answer: ``readOffset`` -2, which 4.9.4 returns as -1), None when it threw (the
        max offset could not be had) or the queue was dropped meanwhile."""
        c, mq = self.consumer, pq.mq
        if c.broadcasting:
            local = c.offset_store.read_memory(mq)
            return then(local, now) if local >= 0 else self._policy(pq, now, then)
        frame = request(RequestCode.QUERY_CONSUMER_OFFSET,
                        {"consumerGroup": c.group, "topic": mq.topic, "queueId": mq.queue_id})

        def on_reply(resp, rnow: Now) -> list[Action]:
            if resp is None:
                return then(-1, rnow)
            if resp.code == ResponseCode.SUCCESS:  # readOffset(READ_FROM_STORE) keeps it in memory
                offset = int(resp.fields.get("offset", 0))
                c.offset_store.update(mq, offset, False)
                return then(offset, rnow)
            return self._policy(pq, rnow, then)  # QUERY_NOT_FOUND or any broker code: readOffset -1

        def query(found: tuple[str, bool] | None, qnow: Now) -> list[Action]:
            if pq.dropped or c.process_table.get(mq) is not pq:
                return then(None, qnow)
            if found is None:  # "The broker[X] not exist": readOffset -2
                return then(-1, qnow)
            return [Request(found[0], frame, c.api_timeout_ms, on_reply)]

        # RemoteBrokerOffsetStore.fetchConsumeOffsetFromBroker (4.9.4): the master; else a route
        # refresh and one more look that takes any address (the slave left in the route)
        return c.instance.with_offset_broker(mq.topic, mq.broker_name, now, query)

    def _policy(self, pq: ProcessQueue, now: Now, then: OffsetThen) -> list[Action]:
        """No stored offset: CONSUME_FROM_FIRST_OFFSET -> 0; LAST_OFFSET -> 0 for a retry topic,
        else the queue's max offset. CONSUME_FROM_TIMESTAMP is simplified to the LAST_OFFSET rule
        for retry topics and to 0 otherwise (no SEARCH_OFFSET_BY_TIMESTAMP in the emulator)."""
        where = self.consumer.cfg.consumeFromWhere
        is_retry = pq.mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        if where == "CONSUME_FROM_FIRST_OFFSET" or (where == "CONSUME_FROM_TIMESTAMP" and not is_retry):
            return then(0, now)
        if where in LAST_OFFSET_POLICIES and is_retry:
            return then(0, now)
        return self._max_offset(pq, now, then)

    def _max_offset(self, pq: ProcessQueue, now: Now, then: OffsetThen) -> list[Action]:
        c, mq = self.consumer, pq.mq
        addr = c.instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            return then(None, now)
        frame = request(GET_MAX_OFFSET, {"topic": mq.topic, "queueId": mq.queue_id})

        def on_reply(resp, rnow: Now) -> list[Action]:
            if resp is None or resp.code != ResponseCode.SUCCESS:
                return then(None, rnow)
            return then(int(resp.fields.get("offset", 0)), rnow)

        return [Request(addr, frame, c.api_timeout_ms, on_reply)]

    def _joined(self, pq: ProcessQueue) -> OffsetThen:
        """What a new queue does with its first offset: join the table and pull, or give up."""

        def then(offset: int | None, now: Now) -> list[Action]:
            if pq.dropped or self.consumer.process_table.get(pq.mq) is not pq:
                return self._settled(pq, False, now)
            if offset is None or offset < 0:  # "add new mq failed"
                return self._give_up(pq, now)
            return self._start(pq, offset, now)

        return then

    def _give_up(self, pq: ProcessQueue, now: Now) -> list[Action]:
        """nextOffset < 0: "add new mq failed"; the next rebalance tries again."""
        if self.consumer.process_table.get(pq.mq) is pq:
            del self.consumer.process_table[pq.mq]
        return self._settled(pq, False, now)

    def _start(self, pq: ProcessQueue, offset: int, now: Now) -> list[Action]:
        pq.next_offset, pq.ready = offset, True
        return self._settled(pq, True, now) + self.consumer.puller.pull(pq.mq, now)
