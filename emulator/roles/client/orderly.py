"""The orderly push consumer: ``ConsumeMessageOrderlyService`` and the lock side of
``RebalanceImpl`` / ``RebalancePushImpl`` in 4.9.4 (docs/rocketmq-model.md §4.9).

Locks: ``lock(mq)`` before a rebalance takes a queue, and ``lockAll()`` 1 s after start then
every 20 s, ask the queue's master (LOCK_BATCH_MQ, 1000 ms); a grant marks the process queues
already in the table (so a queue added by a rebalance starts unlocked: the 4.9.4 gap, #2621),
and in ``lockAll`` a refusal unmarks. A queue given up is unlocked (oneway) at once, or 20 s
later while messages are still cached; shutdown unlocks everything (synchronously).

Consumption (``ConsumeRequest.run``): one request per queue; it runs only while the local lock is
held and younger than 30 s (else it tries to lock again after 100 ms or 10 ms, and consumes 10 ms
after a grant or 3 s after a refusal), takes ``consumeMessageBatchMaxSize`` messages of the lowest
offsets, and calls the listener: the workload's ``fail_rate`` is the chance it answers
SUSPEND_CURRENT_QUEUE_A_MOMENT. Success commits the offset after the batch into the offset store
(``increaseOnly=false``); a failure puts the batch back and consumes it again after
``suspendCurrentQueueTimeMillis``, counting ``reconsumeTimes`` on the cached message; past
``maxReconsumeTimes`` (-1: ``Integer.MAX_VALUE``) the message is sent to ``%RETRY%<group>``
(:mod:`emulator.roles.client.orderly_retry`).
The listener takes no time, so a request runs until the queue is empty or blocked, and the
consume lock is never busy when a queue is given up.

Events: ``consume`` per listener call (``orderly: true``, with the queue offsets), and
``orderly.lock`` when the local lock state changes (``locked``, ``expired``, ``refused``,
``dropped``, ``unlocked``); renewals write nothing. Timers: ``lockAll`` and, per queue,
``orderly|...`` (consume), ``lockLater|...``, ``unlock|...`` and ``lockExpiry|...``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.protocol import MASTER_ID, RequestCode, ResponseCode, oneway, request
from rmqemu.emulator.roles.client.orderly_retry import send_back
from rmqemu.emulator.roles.client.pull_loop import timer_name
from rmqemu.emulator.roles.client.rebalance import ProcessQueue
from rmqemu.emulator.roles.client.route_cache import MessageQueue
from rmqemu.emulator.roles.common.base import Action, After, Emit, Every, Now, Oneway, Request

if TYPE_CHECKING:
    from rmqemu.emulator.roles.client.consumer import Consumer

LOCK_MAX_LIVE_MS = 30000  # rocketmq.client.rebalance.lockMaxLiveTime
LOCK_INTERVAL_MS = 20000  # rocketmq.client.rebalance.lockInterval
LOCK_ALL_INITIAL_MS = 1000
LOCK_TIMEOUT_MS = 1000  # lockBatchMQ / unlockBatchMQ timeout
UNLOCK_DELAY_MS = 20000  # rocketmq.client.unlockDelayTimeMills
FLOW_CONTROL_DELAY_MS = 50  # PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL
INTEGER_MAX = 2**31 - 1
TIMERS = ("orderly", "lockLater", "unlock", "lockExpiry")


def _mq_json(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}


class OrderlyService:
    def __init__(self, consumer: "Consumer") -> None:
        self.c = consumer
        cfg = consumer.cfg
        self.max_reconsume = INTEGER_MAX if cfg.maxReconsumeTimes == -1 else cfg.maxReconsumeTimes
        self.suspend_ms = min(max(cfg.suspendCurrentQueueTimeMillis, 10), 30000)

    def start(self) -> list[Action]:
        return [Every("lockAll", LOCK_ALL_INITIAL_MS, LOCK_INTERVAL_MS)]

    def on_timer(self, kind: str, mq: MessageQueue, now: Now) -> list[Action]:
        pq = self.c.process_table.get(mq)
        if kind == "unlock":
            return self._unlock_oneway(mq)  # runs whatever became of the queue since (as in 4.9.4)
        if pq is None or pq.dropped:
            return []
        if kind == "orderly":
            return self.run(pq, now)
        if kind == "lockLater":  # tryLockLaterAndReconsume
            return self.lock(mq, now, lambda ok, n: [After(timer_name("orderly", mq), 10 if ok else 3000)])
        if kind == "lockExpiry" and pq.locked:
            left = LOCK_MAX_LIVE_MS - (now.wall_ms - pq.last_lock_ms)
            if left >= 0:  # the wall clock went back: not expired yet
                return [After(timer_name("lockExpiry", mq), left + 1)]
            return [self._event(mq, "expired", late_ms=round(-left, 3))]  # a paused consumer notices on resume
        return []

    # ------------------------------------------------------------------ locks

    def _live(self, pq: ProcessQueue, now: Now) -> bool:
        """``isLocked() && !isLockExpired()``."""
        return pq.locked and now.wall_ms - pq.last_lock_ms <= LOCK_MAX_LIVE_MS

    def _grant(self, mq: MessageQueue, now: Now) -> list[Action]:
        """A granted queue: its process queue, if in the table and added, becomes locked now."""
        pq = self.c.process_table.get(mq)
        if pq is None or not pq.ready:  # a queue being added is not in RocketMQ's table yet
            return []
        fresh = not self._live(pq, now)
        pq.locked, pq.last_lock_ms = True, now.wall_ms
        return ([self._event(mq, "locked")] if fresh else []) + [
            After(timer_name("lockExpiry", mq), LOCK_MAX_LIVE_MS + 1)]

    def _lock_request(self, broker: str, mqs: list[MessageQueue], now: Now,
                      then: Callable[[set[MessageQueue] | None, Now], list[Action]]) -> list[Action]:
        """LOCK_BATCH_MQ to ``broker``'s master (``findBrokerAddressInSubscribe(name, 0, true)``);
        ``then(granted or None)``: None without a master or an answer (nothing changes)."""
        c = self.c
        found = c.instance.find_broker_address_in_subscribe(broker, MASTER_ID, True)
        if found is None:
            return then(None, now)
        body = {"consumerGroup": c.group, "clientId": c.client_id, "mqSet": [_mq_json(mq) for mq in mqs]}

        def on_reply(resp, rnow: Now) -> list[Action]:
            if resp is None or resp.code != ResponseCode.SUCCESS or c.stopping:
                return then(None, rnow)
            granted = {MessageQueue(m["topic"], m["brokerName"], int(m["queueId"]))
                       for m in (resp.json_body() or {}).get("lockOKMQSet") or []}
            actions = [a for mq in sorted(granted) for a in self._grant(mq, rnow)]
            return actions + then(granted, rnow)

        frame = request(RequestCode.LOCK_BATCH_MQ, {}, body)
        return [Request(found[0], frame, LOCK_TIMEOUT_MS, on_reply)]

    def lock(self, mq: MessageQueue, now: Now, then: Callable[[bool, Now], list[Action]]) -> list[Action]:
        """``RebalanceImpl.lock(mq)``; ``then(granted)``."""
        return self._lock_request(mq.broker_name, [mq], now, lambda g, n: then(g is not None and mq in g, n))

    def _by_broker(self) -> dict[str, list[MessageQueue]]:
        out: dict[str, list[MessageQueue]] = {}
        for mq, pq in sorted(self.c.process_table.items()):
            if pq.ready and not pq.dropped:
                out.setdefault(mq.broker_name, []).append(mq)
        return out

    def lock_all(self, now: Now) -> list[Action]:
        """``lockAll()``: per broker, lock every queue held; the ones refused become unlocked."""
        actions: list[Action] = []
        for broker, mqs in self._by_broker().items():
            def refused(granted: set[MessageQueue] | None, n: Now, mqs: list[MessageQueue] = mqs) -> list[Action]:
                out: list[Action] = []
                for mq in mqs if granted is not None else []:
                    pq = self.c.process_table.get(mq)
                    if mq not in granted and pq is not None and pq.locked:
                        pq.locked = False
                        out.append(self._event(mq, "refused"))
                return out

            actions += self._lock_request(broker, mqs, now, refused)
        return actions

    def _unlock_frame(self, mqs: list[MessageQueue], one_way: bool):
        body = {"consumerGroup": self.c.group, "clientId": self.c.client_id, "mqSet": [_mq_json(m) for m in mqs]}
        return (oneway if one_way else request)(RequestCode.UNLOCK_BATCH_MQ, {}, body)

    def _unlock_oneway(self, mq: MessageQueue) -> list[Action]:
        found = self.c.instance.find_broker_address_in_subscribe(mq.broker_name, MASTER_ID, True)
        return [Oneway(found[0], self._unlock_frame([mq], True))] if found else []

    def give_up(self, pq: ProcessQueue, now: Now) -> list[Action]:
        """``removeUnnecessaryMessageQueue`` after the offset was persisted and removed:
        ``unlockDelay``, 20 s while messages are cached, else at once."""
        cached = len(pq.msgs)
        delay = UNLOCK_DELAY_MS if cached else 0
        ev = self._event(pq.mq, "dropped", locked=self._live(pq, now), cached=cached, unlock_delay_ms=delay)
        if delay:
            return [ev, After(timer_name("unlock", pq.mq), delay)]
        return [ev, *self._unlock_oneway(pq.mq)]

    def unlock_all(self, now: Now) -> list[Action]:
        """``unlockAll(false)`` on shutdown: a request per master; answered queues become unlocked."""
        actions: list[Action] = []
        for broker, mqs in self._by_broker().items():
            found = self.c.instance.find_broker_address_in_subscribe(broker, MASTER_ID, True)
            if found is None:
                continue

            def on_reply(resp, rnow: Now, mqs: list[MessageQueue] = mqs) -> list[Action]:
                out: list[Action] = []
                for mq in mqs if resp is not None else []:
                    pq = self.c.process_table.get(mq)
                    if pq is not None and pq.locked:
                        pq.locked = False
                        out.append(self._event(mq, "unlocked"))
                return out

            actions.append(Request(found[0], self._unlock_frame(mqs, False), LOCK_TIMEOUT_MS, on_reply))
        return actions

    # ------------------------------------------------------------------ pulling

    def pull_gate(self, pq: ProcessQueue, now: Now, pull: Callable[[Now], list[Action]]) -> list[Action] | None:
        """The orderly checks of ``pullMessage`` before a pull; None: pull now."""
        c = self.c
        if len(pq.msgs) > c.cfg.pullThresholdForQueue:  # flow control: the queue is blocked
            return c.puller.pull_later(pq.mq, FLOW_CONTROL_DELAY_MS)
        if not pq.locked:  # "pull message later because not locked in broker"
            return c.puller.pull_later(pq.mq, c.exception_delay_ms)
        if pq.previously_locked:
            return None

        def then(offset: int | None, n: Now) -> list[Action]:
            if pq.dropped or c.process_table.get(pq.mq) is not pq or c.stopping:
                return []
            if offset is None:  # computePullFromWhereWithException threw
                return c.puller.pull_later(pq.mq, c.exception_delay_ms)
            # a failed lookup gives -1, and 4.9.4 pulls from it: the broker answers OFFSET_MOVED
            # to the queue's min offset, which is consumed again (#1825)
            pq.previously_locked, pq.next_offset = True, offset
            return pull(n)

        return c.rebalancer.compute_pull_from_where(pq, now, then)

    def dispatch(self, pq: ProcessQueue, now: Now) -> list[Action]:
        """``putMessage``'s dispatchToConsume: a request unless one is already running."""
        if pq.consuming:
            return []
        pq.consuming = True
        return self.run(pq, now)

    # ------------------------------------------------------------------ consuming

    def run(self, pq: ProcessQueue, now: Now) -> list[Action]:
        """``ConsumeRequest.run``."""
        if pq.dropped:
            return []
        if not self._live(pq, now):
            return [After(timer_name("lockLater", pq.mq), 100)]
        actions: list[Action] = []
        while not pq.dropped:
            if not self._live(pq, now):
                return actions + [After(timer_name("lockLater", pq.mq), 10)]
            batch = [pq.msgs.pop(off) for off in sorted(pq.msgs)[: self.c.cfg.consumeMessageBatchMaxSize]]
            if not batch:
                pq.consuming = False
                return actions
            failed = self.c.fail_rate > 0 and self.c.rng.random() < self.c.fail_rate
            actions.append(self._consume_event(pq.mq, batch, failed))
            if not failed:
                actions += self.commit(pq, batch)
                continue
            back = [m for m in batch if int(m.get("reconsumeTimes", 0)) >= self.max_reconsume]
            if back:
                return actions + send_back(self, pq, batch, back, now)
            return actions + self.suspend(pq, batch, batch)
        return actions

    def commit(self, pq: ProcessQueue, batch: list[dict[str, Any]]) -> list[Action]:
        offset = max(int(m["queueOffset"]) for m in batch) + 1  # ProcessQueue.commit()
        if not pq.dropped:
            self.c.offset_store.update(pq.mq, offset, False)
        return []

    def suspend(self, pq: ProcessQueue, batch: list[dict[str, Any]], counted: list[dict[str, Any]]) -> list[Action]:
        """``makeMessageToConsumeAgain`` and ``submitConsumeRequestLater(suspend)``."""
        for m in counted:
            m["reconsumeTimes"] = int(m.get("reconsumeTimes", 0)) + 1
        for m in batch:
            pq.msgs[int(m["queueOffset"])] = m
        return [After(timer_name("orderly", pq.mq), self.suspend_ms)]

    # ------------------------------------------------------------------ events

    def _consume_event(self, mq: MessageQueue, batch: list[dict[str, Any]], failed: bool) -> Emit:
        ids = [self.c.puller.uniq(m) for m in batch]
        fields: dict[str, Any] = {"group": self.c.group, "topic": mq.topic, "broker": mq.broker_name,
                                  "queue_id": mq.queue_id, "msg_ids": [] if failed else ids, "orderly": True}
        if failed:
            fields["reconsume_later"] = ids
        else:
            fields["offsets"] = [int(m["queueOffset"]) for m in batch]
        return Emit("consume", fields)

    def _event(self, mq: MessageQueue, change: str, **extra: Any) -> Emit:
        return Emit("orderly.lock", {"group": self.c.group, "topic": mq.topic, "broker": mq.broker_name,
                                     "queue_id": mq.queue_id, "client_id": self.c.client_id, "change": change,
                                     **extra})
