"""The push consumer's pull loop and consumption (docs/rocketmq-model.md §4.5, §4.6, §4.7).

One outstanding PULL_MESSAGE per owned queue, long-polled (suspend 15 s, request timeout 30 s,
RocketMQ's own numbers on the wire too: the broker holds the pull for ``suspendTimeoutMillis``
cluster ms). The node to pull from follows the broker's ``suggestWhichBrokerId`` and falls back
through ``findBrokerAddressInSubscribe``, so a broker whose master left the route is pulled from
its slave (without the commit-offset flag); with no address at all the route is refreshed and
looked up once more (``pullKernelImpl``). Offsets are committed to the master, or after a route
refresh to any address (the remaining slave), as 4.9.4's ``updateConsumeOffsetToBroker`` does.
Consumption is immediate: the listener succeeds
unless the workload's ``fail_rate`` says RECONSUME_LATER; failed messages of a CLUSTERING group
go back with CONSUMER_SEND_MSG_BACK at level 0 (the broker picks %RETRY% through the delay
levels, or %DLQ%: docs/rocketmq-model.md §4.7), and are consumed again 5 s later with
reconsumeTimes + 1 if that fails (without the Java client's fallback send to %RETRY%).
Timers are named ``pull|<topic>|<broker>|<qid>``. An orderly consumer pulls only locked queues
and consumes one queue at a time (``emulator/roles/client/orderly.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import MASTER_ID, RequestCode, ResponseCode, oneway, request
from rmqemu.emulator.roles.client.client_config import effective_max_reconsume_times
from rmqemu.emulator.roles.client.rebalance import ProcessQueue
from rmqemu.emulator.roles.client.route_cache import MessageQueue
from rmqemu.emulator.roles.client.subscription import tag_matches
from rmqemu.emulator.roles.common.base import Action, After, Emit, Now, Oneway, Request

if TYPE_CHECKING:
    from rmqemu.emulator.roles.client.consumer import Consumer

FLAG_COMMIT_OFFSET, FLAG_SUSPEND, FLAG_SUBSCRIPTION = 1, 2, 4
BROKER_SUSPEND_MAX_TIME_MILLIS = 15000
CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND = 30000
OFFSET_ILLEGAL_DELAY_MS = 10000  # executeTaskLater before the queue is dropped and re-added
RECONSUME_LATER_DELAY_MS = 5000  # submitConsumeRequestLater
PULL_CODES = (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
              ResponseCode.PULL_OFFSET_MOVED)


def timer_name(kind: str, mq: MessageQueue) -> str:
    return f"{kind}|{mq.topic}|{mq.broker_name}|{mq.queue_id}"


def parse_timer(name: str) -> tuple[str, MessageQueue] | None:
    parts = name.split("|")
    if len(parts) != 4:
        return None
    return parts[0], MessageQueue(parts[1], parts[2], int(parts[3]))


class Puller:
    def __init__(self, consumer: "Consumer") -> None:
        self.consumer = consumer
        self.reconsume: dict[MessageQueue, list[dict[str, Any]]] = {}
        self.pending_moves: dict[MessageQueue, int] = {}

    # ------------------------------------------------------------------ pulling

    def pull_later(self, mq: MessageQueue, delay_ms: float) -> list[Action]:
        return [After(timer_name("pull", mq), delay_ms)]

    def _pull_if_found(self, pq: ProcessQueue, mq: MessageQueue) -> list[Action] | None:
        """The pull (or, with no subscription, a later retry); None when no broker address is known."""
        sub = self.consumer.subscriptions.get(mq.topic)
        if sub is None:
            return self.pull_later(mq, self.consumer.exception_delay_ms)
        found = self._find_pull_broker(mq)
        return self._send_pull(pq, sub, found) if found is not None else None

    def pull(self, mq: MessageQueue, now: Now) -> list[Action]:
        c = self.consumer
        pq = c.process_table.get(mq)
        if pq is None or pq.dropped or not pq.ready:
            return []
        if c.orderly is not None:  # only while locked (docs/rocketmq-model.md §4.9)
            gate = c.orderly.pull_gate(pq, now, lambda n: self.pull(mq, n))
            if gate is not None:
                return gate
        first = self._pull_if_found(pq, mq)
        if first is not None:
            return first

        def look_again(ok: bool, rnow: Now) -> list[Action]:
            """``PullAPIWrapper.pullKernelImpl``: refresh the route, look once more, and pull
            if found. The refresh is a Request here, so the second look waits for its answer."""
            again = c.process_table.get(mq)
            if again is not pq or pq.dropped or c.stopping:
                return []
            second = self._pull_if_found(pq, mq)
            if second is not None:
                return second
            ev = Emit("pull", {"group": c.group, "topic": mq.topic, "broker": mq.broker_name,
                               "queue_id": mq.queue_id, "code": None, "count": 0,
                               "error": f"The broker[{mq.broker_name}] not exist"})
            return [ev] + self.pull_later(mq, c.exception_delay_ms)  # MQClientException: executePullRequestLater

        return c.instance.update_route(mq.topic, now, look_again)

    def _find_pull_broker(self, mq: MessageQueue) -> tuple[str, bool] | None:
        """``findBrokerAddressInSubscribe(brokerName, recalculatePullFromWhichNode(mq), false)``."""
        c = self.consumer
        return c.instance.find_broker_address_in_subscribe(mq.broker_name, c.pull_from_which_node.get(mq, MASTER_ID),
                                                            False)

    def _send_pull(self, pq: ProcessQueue, sub: dict[str, Any], found: tuple[str, bool]) -> list[Action]:
        c, mq = self.consumer, pq.mq
        addr, slave = found
        commit_offset = c.offset_store.read_memory(mq) if not c.broadcasting else -1
        sys_flag = FLAG_SUSPEND
        if commit_offset > 0 and not slave:
            sys_flag |= FLAG_COMMIT_OFFSET
        if c.cfg.postSubscriptionWhenPull:
            sys_flag |= FLAG_SUBSCRIPTION
        fields = {
            "consumerGroup": c.group, "topic": mq.topic, "queueId": mq.queue_id,
            "queueOffset": pq.next_offset, "maxMsgNums": c.cfg.pullBatchSize, "sysFlag": sys_flag,
            "commitOffset": max(commit_offset, 0), "suspendTimeoutMillis": BROKER_SUSPEND_MAX_TIME_MILLIS,
            "subscription": sub["subString"], "subVersion": sub["subVersion"], "expressionType": sub["expressionType"],
        }
        frame = request(RequestCode.PULL_MESSAGE, fields)
        return [Request(addr, frame, CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND,
                        lambda resp, n: self._on_pull(pq, addr, slave, resp, n), held=True)]

    def _on_pull(self, pq: ProcessQueue, addr: str, slave: bool, resp, now: Now) -> list[Action]:
        c, mq = self.consumer, pq.mq
        if c.stopping:  # the client's channels are closed in RocketMQ: the answer is never seen
            return []
        code = None if resp is None else resp.code
        msgs: list[dict[str, Any]] = []
        if code == ResponseCode.SUCCESS:
            msgs = [m for m in (resp.json_body() or [])
                    if tag_matches(c.subscriptions.get(mq.topic, {"tagsSet": []}), m)]
        ev = Emit("pull", {"group": c.group, "topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id,
                           "code": code, "count": len(msgs), "broker_id": 1 if slave else 0, "addr": addr,
                           "offset": pq.next_offset})
        if pq.dropped or c.process_table.get(mq) is not pq:
            return [ev]
        if code not in PULL_CODES:  # timeout, SUBSCRIPTION_NOT_EXIST/NOT_LATEST, ...: MQBrokerException
            return [ev] + self.pull_later(mq, c.exception_delay_ms)
        f = resp.fields
        c.pull_from_which_node[mq] = int(f.get("suggestWhichBrokerId", MASTER_ID))
        next_offset = int(f.get("nextBeginOffset", pq.next_offset))
        if code == ResponseCode.PULL_OFFSET_MOVED:  # OFFSET_ILLEGAL: drop, fix offset 10 s later
            pq.next_offset, pq.dropped = next_offset, True
            self.pending_moves[mq] = next_offset
            return [ev, After(timer_name("offsetMoved", mq), OFFSET_ILLEGAL_DELAY_MS)]
        pq.next_offset = next_offset
        actions: list[Action] = [ev]
        if msgs:
            pq.put(msgs)
            actions += self.consume(pq, msgs, now)
        elif code != ResponseCode.SUCCESS and not pq.msgs:  # NO_NEW_MSG / NO_MATCHED_MSG: correctTagsOffset
            c.offset_store.update(mq, next_offset, True)
        return actions + self.pull(mq, now)

    def offset_moved(self, mq: MessageQueue, now: Now) -> list[Action]:
        offset = self.pending_moves.pop(mq, None)
        if offset is None:
            return []
        self.consumer.offset_store.update(mq, offset, False)
        actions = self.persist_offset(mq, now)
        pq = self.consumer.process_table.get(mq)
        if pq is not None and pq.dropped:
            del self.consumer.process_table[mq]  # re-added by the next rebalance
            if self.consumer.orderly is not None:  # removeProcessQueue: removeUnnecessaryMessageQueue
                actions += self.consumer.orderly.give_up(pq, now)
        return actions

    # ------------------------------------------------------------------ consuming

    def consume(self, pq: ProcessQueue, msgs: list[dict[str, Any]], now: Now) -> list[Action]:
        c, mq = self.consumer, pq.mq
        if c.orderly is not None:
            return c.orderly.dispatch(pq, now)
        failed = [m for m in msgs if c.fail_rate > 0 and c.rng.random() < c.fail_rate]
        ok = [m for m in msgs if m not in failed]
        fields = {"group": c.group, "topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id,
                  "msg_ids": [self.uniq(m) for m in ok], "offsets": [int(m["queueOffset"]) for m in ok]}
        if failed:
            fields["reconsume_later"] = [self.uniq(m) for m in failed]
        actions: list[Action] = [Emit("consume", fields)]
        done = ok + (failed if c.broadcasting else [])  # BROADCASTING drops failures
        if not c.broadcasting:
            for m in failed:
                actions += self._send_back(pq, m)
        return actions + self._ack(pq, done)

    def _ack(self, pq: ProcessQueue, msgs: list[dict[str, Any]]) -> list[Action]:
        offset = pq.remove([int(m["queueOffset"]) for m in msgs])
        if offset >= 0 and not pq.dropped:
            self.consumer.offset_store.update(pq.mq, offset, True)
        return []

    @staticmethod
    def uniq(m: dict[str, Any]) -> str:
        return (m.get("properties") or {}).get("UNIQ_KEY") or m.get("msgId")

    def _send_back(self, pq: ProcessQueue, m: dict[str, Any]) -> list[Action]:
        c = self.consumer
        addr = c.instance.find_broker_address_in_publish(pq.mq.broker_name)
        if addr is None:
            return self._consume_later(pq, m)
        props = m.get("properties") or {}
        fields = {"offset": m.get("commitLogOffset", m.get("queueOffset")), "group": c.group, "delayLevel": 0,
                  "originMsgId": m.get("msgId"), "originTopic": props.get("RETRY_TOPIC", m.get("topic")),
                  "maxReconsumeTimes": effective_max_reconsume_times(c.cfg), "unitMode": False}
        body = m.get("body", "")
        frame = request(RequestCode.CONSUMER_SEND_MSG_BACK, fields, body.encode() if isinstance(body, str) else body)

        def on_reply(resp, rnow: Now) -> list[Action]:
            if resp is not None and resp.code == ResponseCode.SUCCESS:
                return self._ack(pq, [m])
            return self._consume_later(pq, m)

        return [Request(addr, frame, c.api_timeout_ms, on_reply)]

    def _consume_later(self, pq: ProcessQueue, m: dict[str, Any]) -> list[Action]:
        """The send-back failed: ``msg.setReconsumeTimes(+1)`` and ``submitConsumeRequestLater`` (5 s)."""
        self.reconsume.setdefault(pq.mq, []).append({**m, "reconsumeTimes": int(m.get("reconsumeTimes", 0)) + 1})
        return [After(timer_name("reconsume", pq.mq), RECONSUME_LATER_DELAY_MS)]

    def reconsume_due(self, mq: MessageQueue, now: Now) -> list[Action]:
        msgs = self.reconsume.pop(mq, [])
        pq = self.consumer.process_table.get(mq)
        if not msgs or pq is None or pq.dropped:
            return []
        return self.consume(pq, msgs, now)

    # ------------------------------------------------------------------ offsets

    def persist_offset(self, mq: MessageQueue, now: Now) -> list[Action]:
        """``persist(mq)``: UPDATE_CONSUMER_OFFSET oneway to the broker that
        ``RemoteBrokerOffsetStore.updateConsumeOffsetToBroker`` finds (4.9.4: the master; else a
        route refresh and a second look that takes any address, the slave while the master is
        out of the route: ``ClientInstance.with_offset_broker``), or the local file when
        BROADCASTING. The offset is the one in memory now, as Java reads it before the lookup;
        with no address after the refresh, nothing is sent ("The broker[X] not exist", logged)."""
        c = self.consumer
        offset = c.offset_store.read_memory(mq)
        if offset < 0:
            return []
        if c.broadcasting:
            return [c.offset_store.persist_local()]
        frame = oneway(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": c.group, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": offset})
        return c.instance.with_offset_broker(
            mq.topic, mq.broker_name, now, lambda found, n: [Oneway(found[0], frame)] if found else [])

    def persist_all(self, now: Now) -> list[Action]:
        c = self.consumer
        owned = [mq for mq in c.offset_store.table if mq in c.process_table]
        if c.broadcasting:
            return [c.offset_store.persist_local()] if owned else []
        return [a for mq in sorted(owned) for a in self.persist_offset(mq, now)]
