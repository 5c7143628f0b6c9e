"""POP_MESSAGE (200050) and its long polling (5.x ``PopMessageProcessor``, ``PopLongPollingService``;
docs/rocketmq-model.md §10.2, §10.3).

A pop leases up to ``maxMsgNums`` (at most 32) messages of a group for ``invisibleTime`` ms: from one
queue, or from every readable queue when ``queueId`` is -1 (starting at a random one). A non-FIFO pop
also reads the group's retry topic ``%RETRY%<group>_<topic>``: first in ``popFromRetryProbability``
percent of pops, otherwise after the topic when the batch is not full. Each queue's pop offset
(the group's consumer offset of that queue) moves past what it handed out, and a checkpoint per
queue goes to the revive log (records.py). A FIFO pop writes no checkpoint: order_info.py blocks the
queue instead and the offset stays at the first un-acked message.

Nothing to give and ``pollTime`` > 0: the request is held (``Request.held`` on the caller's side)
until a message for the group lands on the topic (or its retry topic), an ack frees a FIFO queue, or
``bornTime + pollTime`` passes; it is then run again, and answered (or held again).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import FAQ_SUFFIX, Perm, is_remoting
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.broker.pop.order_info import order_count_info
from rmqemu.emulator.roles.broker.pop.records import CheckPoint
from rmqemu.emulator.roles.broker.pull_processor import build_subscription, tag_matcher
from rmqemu.emulator.roles.broker.transaction.bridge import msg_id_of
from rmqemu.emulator.roles.common import pop_keys as keys
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Emit, Inbound, Now, Reply
from rmqemu.emulator.roles.common.server_dispatch import h_bool, h_int, h_str
from rmqemu.emulator.roles.store.message_store import GetMessageStatus as S

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.pop.service import PopService

TIMER_PREFIX = "pop_hold:"
MAX_MSG_NUMS = 32
POLLING_TIMEOUT_SLACK = 50  # PopRequest.isTimeout: 50 ms before the end counts as the end
TOO_LATE = 500  # PopMessageRequestHeader.isTimeoutTooMuch
ERROR_STATUSES = (S.OFFSET_TOO_SMALL, S.OFFSET_OVERFLOW_BADLY, S.OFFSET_FOUND_NULL)
EMPTY_STATUSES = (S.NO_MATCHED_MESSAGE, S.OFFSET_FOUND_NULL, S.MESSAGE_WAS_REMOVING, S.NO_MATCHED_LOGIC_QUEUE)


@dataclass
class HeldPop:
    msg: Inbound
    topic: str
    group: str
    queue_id: int
    expired: int  # bornTime + pollTime, the proxy's wall ms


@dataclass
class PopRun:
    """One pop's gathering: the messages, the response header's info strings, rest and events."""

    group: str
    topic: str
    invisible: int
    pop_time: int
    revive_qid: int
    order: bool
    attempt_id: str | None
    max_nums: int
    matches: Any
    init_mode: int
    found: list[dict[str, Any]]
    start_info: list[tuple[str, int, str]]
    msg_info: list[tuple[str, int, str]]
    order_info: list[tuple[str, str, str]]
    rest: int = 0
    events: list[Emit] = field(default_factory=list)


class PopProcessor:
    def __init__(self, pop: "PopService") -> None:
        self.pop = pop
        self.broker = pop.broker
        self.held: dict[str, HeldPop] = {}
        self._ids = itertools.count(1)
        self._ck_number = 0
        self._waking = False

    def pop_message(self, msg: Inbound, now: Now) -> list[Action]:
        return self.process(msg, now, timed_out=False)

    def _answer(self, msg: Inbound, code: int, remark: str | None = None, fields: dict[str, Any] | None = None,
                body: Any = None) -> list[Action]:
        return [Reply(msg.channel, msg.frame.response(code, remark, fields, body))]

    def process(self, msg: Inbound, now: Now, timed_out: bool) -> list[Action]:
        """``processRequest``: 5.x's checks in order, then the pop, then SUCCESS or the hold."""
        b, f = self.broker, msg.frame
        ip = b.cfg.brokerIP1
        if h_int(f, "bornTime") in (None, 0):  # addExtFieldIfNotExist(bornTime, now); "0" replaced too
            f.fields["bornTime"] = int(now.wall_ms)
        group = h_str(f, "consumerGroup", required=True) or ""
        topic = h_str(f, "topic", required=True) or ""
        queue_id = max(-1, keys.java_range(h_int(f, "queueId", required=True), "queueId", keys.INT_MAX))  # any < 0: -1
        max_nums = keys.java_range(h_int(f, "maxMsgNums", required=True), "maxMsgNums", keys.INT_MAX)
        invisible = keys.java_range(h_int(f, "invisibleTime", required=True), "invisibleTime")
        poll_time = keys.java_range(h_int(f, "pollTime", required=True), "pollTime")
        born = keys.java_range(h_int(f, "bornTime", required=True), "bornTime")
        init_mode = keys.java_range(h_int(f, "initMode", required=True), "initMode", keys.INT_MAX)
        order = h_bool(f, "order")
        attempt_id = h_str(f, "attemptId")
        if now.wall_ms - born - poll_time > TOO_LATE:
            return self._answer(msg, R.POLLING_TIMEOUT, f"the broker[{ip}] pop message is timeout too much")
        if not Perm.readable(b.cfg.brokerPermission):
            return self._answer(msg, R.NO_PERMISSION, f"the broker[{ip}] pop message is forbidden")
        if max_nums > MAX_MSG_NUMS:
            return self._answer(msg, R.INVALID_PARAMETER, f"the broker[{ip}] pop message's num is greater than 32")
        tc = b.topics.get(topic)
        if tc is None:
            return self._answer(msg, R.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {FAQ_SUFFIX}")
        if not Perm.readable(tc.perm):
            return self._answer(msg, R.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden")
        if queue_id >= tc.readQueueNums:
            return self._answer(msg, R.INVALID_PARAMETER, f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                                f"topicConfig.readQueueNums:[{tc.readQueueNums}] consumer:[{msg.addr or msg.peer}]")
        sgc, actions = b.sub_groups.find(group)
        actions = list(actions)
        if sgc is None:
            return actions + self._answer(msg, R.SUBSCRIPTION_GROUP_NOT_EXIST,
                                          f"subscription group [{group}] does not exist, {FAQ_SUFFIX}")
        if not sgc.consumeEnable:
            return actions + self._answer(msg, R.NO_PERMISSION, f"subscription group no permission, {group}")
        exp, exp_type = h_str(f, "exp"), h_str(f, "expType") or "TAG"
        if exp and exp_type.upper() != "TAG":  # no SQL92 filter in the emulator (docs/rocketmq-model.md §10.2)
            return actions + self._answer(msg, R.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
        matches = tag_matcher(build_subscription(topic, exp or "*", "TAG", 0))

        run = PopRun(group, topic, invisible, int(now.wall_ms), keys.POP_ORDER_REVIVE_QUEUE, order, attempt_id,
                     max_nums, matches, init_mode, [], [], [], [])
        if not order:
            run.revive_qid = self._ck_number % self.pop.revive_log.queue_nums
            self._ck_number += 1
        random_q = b.rng.randrange(100)
        need_retry = random_q < b.cfg.popFromRetryProbability
        retry = keys.retry_topic(topic, group)
        if need_retry and not order:
            actions += self._pop_topic(run, retry, True, random_q, now)
        if queue_id < 0:
            actions += self._pop_topic(run, topic, False, random_q, now)
        else:
            actions += self._pop_queue(run, topic, False, queue_id, now)
        if not need_retry and not order and len(run.found) < max_nums:
            actions += self._pop_topic(run, retry, True, random_q, now)

        fields: dict[str, Any] = {"popTime": run.pop_time, "invisibleTime": invisible, "reviveQid": run.revive_qid,
                                  "restNum": run.rest, "startOffsetInfo": keys.offset_info(run.start_info),
                                  "msgOffsetInfo": keys.offset_info(run.msg_info)}
        if order:
            fields["orderCountInfo"] = order_count_info(run.order_info)
        if run.found:
            views = [self._view(r, run, msg) for r in run.found]
            actions += [*run.events, *(self._lease(v, r, run) for v, r in zip(views, run.found, strict=True))]
            actions += self._answer(msg, R.SUCCESS, "FOUND", fields, b.puller._found_body(msg, views))
            return actions + (self.notify_key(topic, queue_id, group, now) if run.rest > 0 else [])
        code = self._hold(msg, topic, group, queue_id, born + poll_time, poll_time, now, timed_out)
        if code is None:
            actions.append(self._timer(msg, born + poll_time, now))
            return actions + (self.notify_key(topic, queue_id, group, now, skip=msg) if run.rest > 0 else [])
        return actions + self._answer(msg, code, "NO_MESSAGE_IN_QUEUE", fields)

    def _lease(self, view: dict[str, Any], record: dict[str, Any], run: PopRun) -> Emit:
        attempt = int(record.get("_count", 0)) + 1 if run.order else int(view.get("reconsumeTimes", 0)) + 1
        return Emit("pop.lease", {
            "msg_id": msg_id_of(record), "group": run.group, "topic": run.topic, "broker": self.broker.cfg.brokerName,
            "queue_id": int(record["queueId"]), "queue_offset": int(record["queueOffset"]),
            "retry": str(record["topic"]).startswith(keys.RETRY_PREFIX), "attempt": attempt,
            "invisible_ms": run.invisible, "pop_time": run.pop_time, "fifo": run.order})

    # ------------------------------------------------------------------ one topic, one queue

    def _pop_topic(self, run: PopRun, topic: str, is_retry: bool, random_q: int, now: Now) -> list[Action]:
        tc = self.broker.topics.get(topic)
        actions: list[Action] = []
        if tc is None:
            return actions
        for i in range(tc.readQueueNums):
            actions += self._pop_queue(run, topic, is_retry, (random_q + i) % tc.readQueueNums, now)
        return actions

    def _pop_offset(self, run: PopRun, topic: str, queue_id: int) -> int:
        """``getPopOffset`` with ``init``: a group's first pop of a queue starts at its min offset (a
        retry topic, or ``initMode`` MIN) or, messages being in memory, at 0 (``initPopOffsetByCheckMsgInMem``)."""
        b = self.broker
        offset = b.offsets.query_offset(run.group, topic, queue_id)
        if offset < 0:
            offset = b.store.min_offset(topic, queue_id)
            if not b.is_slave:
                b.offsets.commit_offset(run.group, topic, queue_id, offset)
        return offset

    def _pop_queue(self, run: PopRun, topic: str, is_retry: bool, queue_id: int, now: Now) -> list[Action]:
        """``popMsgFromQueue``."""
        b, store = self.broker, self.broker.store
        offset = self._pop_offset(run, topic, queue_id)
        if run.order and self.pop.order_info.check_block(run.attempt_id, topic, run.group, queue_id, run.invisible,
                                                         int(now.wall_ms)):
            return []
        if len(run.found) >= run.max_nums:
            run.rest += store.max_offset(topic, queue_id) - offset
            return []
        res = store.get(topic, queue_id, offset, run.max_nums - len(run.found), run.matches)
        if res.status in ERROR_STATUSES:
            offset = res.next_begin_offset
            if not b.is_slave:
                b.offsets.commit_offset(run.group, topic, queue_id, offset)
            res = store.get(topic, queue_id, offset, run.max_nums - len(run.found), run.matches)
        actions: list[Action] = []
        if res.messages:
            offsets = [int(m["queueOffset"]) for m in res.messages]
            if run.order:
                old = self.pop.order_info.out(topic, run.group, queue_id)
                again = set(old.offsets) if old and not (old.attempt_id and old.attempt_id == run.attempt_id) else set()
                entries, counts = self.pop.order_info.update(run.attempt_id, topic, run.group, queue_id,
                                                             run.pop_time, run.invisible, offsets)
                run.order_info += entries
                if not b.is_slave:
                    b.offsets.commit_offset(run.group, topic, queue_id, offset)
                run.found += [{**m, "_start": offset, "_count": counts.get(int(m["queueOffset"]), 0)}
                              for m in res.messages]
                run.events += [self.pop.revive.fifo_event(m, run.group, counts.get(int(m["queueOffset"]), 0) + 1)
                               for m in res.messages if int(m["queueOffset"]) in again]
            else:
                ck = CheckPoint(topic, run.group, queue_id, offset, run.pop_time, run.invisible,
                                b.cfg.brokerName, [o - offset for o in offsets])
                _, acts = self.pop.revive_log.put_ck(ck, run.revive_qid, now)  # addCkJustOffset: result not read
                actions += acts
                if not b.is_slave:  # a slave's offset queue is cleared: its pop offset never moves
                    b.offsets.commit_offset(run.group, topic, queue_id, res.next_begin_offset)
                run.found += [{**m, "_start": offset} for m in res.messages]
            run.start_info.append((topic, queue_id, str(offset)))
            run.msg_info.append((topic, queue_id, ",".join(str(o) for o in offsets)))
        elif res.status in EMPTY_STATUSES and res.next_begin_offset > -1 and not b.is_slave:
            b.offsets.commit_offset(run.group, topic, queue_id, res.next_begin_offset)  # addCkMock / order commit
        run.rest += res.max_offset - res.next_begin_offset
        return actions

    def _view(self, record: dict[str, Any], run: PopRun, msg: Inbound) -> dict[str, Any]:
        """What the response carries for one message: the retry topic's copy under the topic's name
        with ``POP_CK``; for rmqemu's own callers ``POP_CK`` on every message and a FIFO message's
        ``reconsumeTimes`` from ``orderCountInfo``, as 5.x's client reads them from the header."""
        topic, queue_id, offset = str(record["topic"]), int(record["queueId"]), int(record["queueOffset"])
        ck = keys.build(int(record["_start"]), run.pop_time, run.invisible, run.revive_qid, topic,
                        self.broker.cfg.brokerName, queue_id, offset)
        view = {k: v for k, v in record.items() if not k.startswith("_")}
        props = dict(view.get("properties") or {})
        if topic.startswith(keys.RETRY_PREFIX) or not is_remoting(msg.channel):
            props.setdefault(keys.POP_CK, ck)
        count = int(record.get("_count", 0))
        if run.order and count > 0 and not is_remoting(msg.channel):
            view["reconsumeTimes"] = count
        view["properties"] = props
        view["topic"] = run.topic
        return view

    # ------------------------------------------------------------------ long polling

    def _hold(self, msg: Inbound, topic: str, group: str, queue_id: int, expired: int, poll_time: int,
              now: Now, timed_out: bool) -> int | None:
        """``PopLongPollingService.polling``: None when held, else the answer's code."""
        if poll_time <= 0 or timed_out or now.wall_ms > expired - POLLING_TIMEOUT_SLACK:
            return R.POLLING_TIMEOUT
        if len(self.held) >= self.broker.cfg.maxPopPollingSize:
            return R.POLLING_FULL
        same = sum(1 for h in self.held.values() if (h.topic, h.group, h.queue_id) == (topic, group, queue_id))
        if same > self.broker.cfg.popPollingSize:
            return R.POLLING_FULL
        return None

    def _timer(self, msg: Inbound, expired: int, now: Now) -> After:
        f = msg.frame
        name = f"{TIMER_PREFIX}{next(self._ids)}"
        self.held[name] = HeldPop(msg, str(f.fields["topic"]), str(f.fields["consumerGroup"]),
                                  max(-1, int(f.fields["queueId"])), expired)
        return After(name, max(0.0, expired - POLLING_TIMEOUT_SLACK - now.wall_ms))

    def notify_arrival(self, topic: str, queue_id: int, now: Now) -> list[Action]:
        """A message landed on (topic, queue): for each group holding pops of ``topic``, wake its oldest
        pop on any queue (-1) and its oldest on this queue. 5.x keys its polling table by the topic the
        pop named, so a message revived into a retry topic wakes nobody: held pops find it when their
        time is up, or on their next pop."""
        actions: list[Action] = []
        for group in dict.fromkeys(h.group for h in self.held.values() if h.topic == topic):
            actions += self.notify_key(topic, -1, group, now)
            actions += self.notify_key(topic, queue_id, group, now)
        return actions

    def notify_key(self, topic: str, queue_id: int, group: str, now: Now, skip: Inbound | None = None,
                   ) -> list[Action]:
        """Wake the oldest pop held for exactly (topic, group, queue): run it again. A pop run by a
        wake-up wakes no other (5.x's would, on another thread: two pops with nothing to take could
        wake each other for ever)."""
        if self._waking:
            return []
        for name, h in list(self.held.items()):
            if (h.topic, h.group, h.queue_id) == (topic, group, queue_id) and h.msg is not skip:
                del self.held[name]
                self._waking = True
                try:
                    return [Cancel(name), *self.process(h.msg, now, timed_out=False)]
                finally:
                    self._waking = False
        return []

    def on_hold_timeout(self, name: str, now: Now) -> list[Action]:
        h = self.held.pop(name, None)
        return self.process(h.msg, now, timed_out=True) if h else []

    def drop_channel(self, channel: str) -> list[Action]:
        gone = [n for n, h in self.held.items() if h.msg.channel == channel]
        for n in gone:
            del self.held[n]
        return [Cancel(n) for n in gone]
