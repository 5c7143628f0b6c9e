"""PullMessageProcessor + PullRequestHoldService (docs/rocketmq-model.md §4.5, §4.6).

Request header: consumerGroup, topic, queueId, queueOffset, maxMsgNums, sysFlag, commitOffset,
suspendTimeoutMillis, subscription, subVersion, expressionType. Response header: nextBeginOffset,
minOffset, maxOffset, suggestWhichBrokerId; body (FOUND): to rmqemu's own consumers a JSON list of
``{msgId, offsetMsgId, topic, queueId, queueOffset, body or body64, properties, bornTimestamp,
storeTimestamp, reconsumeTimes, commitLogOffset}``, to a real client (the remoting port)
RocketMQ's binary MessageExt list.

Long polling: a PULL_NOT_FOUND carrying FLAG_SUSPEND is held; it is re-run (without suspend, so
it answers) when a matching message lands on its queue or when its ``After`` timer fires --
``suspendTimeoutMillis`` as the client sent it, or ``shortPollingTimeMills`` when
``longPollingEnable`` is off (cluster ms, like every duration a role hands the runtime).
Simplification: PULL_OFFSET_MOVED on a master does
not write the OFFSET_MOVED_EVENT message.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import FAQ_SUFFIX, Perm, is_remoting, message_ext
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Inbound, Now, Reply
from rmqemu.emulator.roles.common.message import body_bytes
from rmqemu.emulator.roles.common.server_dispatch import h_int, h_str
from rmqemu.emulator.roles.store.message_store import GetMessageStatus as S
from rmqemu.emulator.roles.store.message_store import store_host_of

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

FLAG_COMMIT_OFFSET, FLAG_SUSPEND, FLAG_SUBSCRIPTION, FLAG_CLASS_FILTER = 1, 2, 4, 8
SUB_ALL = "*"
_PUBLIC_FIELDS = ("msgId", "offsetMsgId", "topic", "queueId", "queueOffset", "body", "body64", "properties",
                  "bornTimestamp", "storeTimestamp", "reconsumeTimes", "commitLogOffset")


def build_subscription(topic: str, expression: str | None, expression_type: str | None,
                       sub_version: int) -> dict[str, Any]:
    """``FilterAPI.build`` for TAG expressions: ``*`` or blank subscribes everything."""
    expr = (expression or "").strip()
    tags = [] if expr in ("", SUB_ALL) else [t.strip() for t in expr.split("||") if t.strip()]
    return {"topic": topic, "subString": expr or SUB_ALL, "tagsSet": tags, "codeSet": [],
            "expressionType": expression_type or "TAG", "subVersion": sub_version, "classFilterMode": False}


def tag_matcher(sub: dict[str, Any]):
    tags = set(sub.get("tagsSet") or [])
    if sub.get("subString") in (None, "", SUB_ALL) or not tags:
        return lambda m: True
    return lambda m: m.get("properties", {}).get("TAGS") in tags


@dataclass
class HeldPull:
    msg: Inbound
    topic: str
    queue_id: int
    offset: int


class PullProcessor:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.held: dict[str, HeldPull] = {}
        self._ids = itertools.count(1)

    def held_count(self) -> int:
        return len(self.held)

    def pull_message(self, msg: Inbound, now: Now) -> list[Action]:
        return self.process(msg, now, allow_suspend=True)

    def _answer(self, msg: Inbound, code: int, remark: str | None = None, fields: dict[str, Any] | None = None,
                body: Any = None) -> list[Action]:
        return [Reply(msg.channel, msg.frame.response(code, remark, fields, body))]

    def process(self, msg: Inbound, now: Now, allow_suspend: bool) -> list[Action]:
        """``processRequest(channel, request, brokerAllowSuspend)``; checks in docs/rocketmq-model.md §4.5 order."""
        b, f = self.broker, msg.frame
        group = h_str(f, "consumerGroup", required=True)
        topic = h_str(f, "topic", required=True)
        queue_id = h_int(f, "queueId", required=True)
        offset = h_int(f, "queueOffset", required=True)
        sys_flag = h_int(f, "sysFlag", 0) or 0
        if not Perm.readable(b.cfg.brokerPermission):  # 1
            return self._answer(msg, R.NO_PERMISSION, f"the broker[{b.cfg.brokerIP1}] pulling message is forbidden")
        sgc, actions = b.sub_groups.find(group)  # 2
        actions = list(actions)
        if sgc is None:
            return actions + self._answer(msg, R.SUBSCRIPTION_GROUP_NOT_EXIST,
                                          f"subscription group [{group}] does not exist, {FAQ_SUFFIX}")
        if not sgc.consumeEnable:  # 3
            return actions + self._answer(msg, R.NO_PERMISSION, f"subscription group no permission, {group}")
        tc = b.topics.get(topic)
        if tc is None:  # 4 (note the space before the FAQ suffix, unlike the send path)
            return actions + self._answer(msg, R.TOPIC_NOT_EXIST,
                                          f"topic[{topic}] not exist, apply first please! {FAQ_SUFFIX}")
        if not Perm.readable(tc.perm):  # 5
            return actions + self._answer(msg, R.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        if queue_id < 0 or queue_id >= tc.readQueueNums:  # 6
            remark = (f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                      f"topicConfig.readQueueNums:[{tc.readQueueNums}] consumer:[{msg.peer}]")
            return actions + self._answer(msg, R.SYSTEM_ERROR, remark)
        if sys_flag & FLAG_SUBSCRIPTION:  # 7, the request carries its own subscription
            sub = build_subscription(topic, h_str(f, "subscription"), h_str(f, "expressionType"),
                                     h_int(f, "subVersion", 0) or 0)
        else:
            cgi = b.consumers.table.get(group)
            if cgi is None:
                return actions + self._answer(msg, R.SUBSCRIPTION_NOT_EXIST,
                                              "the consumer's group info not exist" + FAQ_SUFFIX)
            if not sgc.consumeBroadcastEnable and cgi.messageModel == "BROADCASTING":
                return actions + self._answer(msg, R.NO_PERMISSION,
                                              f"the consumer group[{group}] can not consume by broadcast way")
            sub = cgi.subscriptionTable.get(topic)
            if sub is None:
                return actions + self._answer(msg, R.SUBSCRIPTION_NOT_EXIST,
                                              "the consumer's subscription not exist" + FAQ_SUFFIX)
            if int(sub.get("subVersion", 0)) < (h_int(f, "subVersion", 0) or 0):
                return actions + self._answer(msg, R.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        expr_type = sub.get("expressionType") or "TAG"
        if expr_type != "TAG" and not b.cfg.enablePropertyFilter:  # 8
            return actions + self._answer(msg, R.SYSTEM_ERROR,
                                          f"The broker does not support consumer to filter message by {expr_type}")

        res = b.store.get(topic, queue_id, offset, h_int(f, "maxMsgNums", 32) or 32, tag_matcher(sub))
        # docs/rocketmq-model.md §4.6: suggest 0 unless slaveReadEnable; a slave's PULL_RETRY_IMMEDIATELY is overwritten
        suggest = sgc.brokerId if b.cfg.slaveReadEnable else 0
        code = {
            S.FOUND: R.SUCCESS, S.MESSAGE_WAS_REMOVING: R.PULL_RETRY_IMMEDIATELY,
            S.NO_MATCHED_MESSAGE: R.PULL_RETRY_IMMEDIATELY, S.OFFSET_FOUND_NULL: R.PULL_NOT_FOUND,
            S.OFFSET_OVERFLOW_BADLY: R.PULL_OFFSET_MOVED, S.OFFSET_OVERFLOW_ONE: R.PULL_NOT_FOUND,
            S.OFFSET_TOO_SMALL: R.PULL_OFFSET_MOVED,
        }.get(res.status)
        if code is None:  # NO_MATCHED_LOGIC_QUEUE / NO_MESSAGE_IN_QUEUE
            code = R.PULL_OFFSET_MOVED if offset != 0 else R.PULL_NOT_FOUND
        if code == R.PULL_OFFSET_MOVED and b.is_slave and not b.cfg.offsetCheckInSlave:
            code, suggest = R.PULL_RETRY_IMMEDIATELY, sgc.brokerId
        if allow_suspend and sys_flag & FLAG_COMMIT_OFFSET and not b.is_slave:
            b.offsets.commit_offset(group, topic, queue_id, h_int(f, "commitOffset", 0) or 0)
        if code == R.PULL_NOT_FOUND and allow_suspend and sys_flag & FLAG_SUSPEND:
            timeout = ((h_int(f, "suspendTimeoutMillis", 0) or 0) if b.cfg.longPollingEnable
                       else b.cfg.shortPollingTimeMills)
            name = f"pull:{next(self._ids)}"
            self.held[name] = HeldPull(msg, topic, queue_id, offset)
            return [*actions, After(name, timeout)]
        fields = {"nextBeginOffset": res.next_begin_offset, "minOffset": res.min_offset,
                  "maxOffset": res.max_offset, "suggestWhichBrokerId": suggest}
        body = self._found_body(msg, res.messages) if code == R.SUCCESS else None
        return actions + self._answer(msg, code, res.status.value, fields, body)

    def _found_body(self, msg: Inbound, records: list[dict[str, Any]]) -> bytes | list[dict[str, Any]]:
        """A real client gets RocketMQ's binary MessageExt list; rmqemu's own consumers a JSON list."""
        if is_remoting(msg.channel):
            host = self.broker.store.store_host
            return message_ext.encode_messages(
                [{**m, "body": body_bytes(m), "storeHost": store_host_of(m, host)} for m in records], host)
        return [{k: m[k] for k in _PUBLIC_FIELDS if k in m} for m in records]

    # ------------------------------------------------------------------ PullRequestHoldService

    def notify_message_arriving(self, topic: str, queue_id: int, now: Now) -> list[Action]:
        """A put on (topic, queue): wake held pulls behind the new max offset whose filter matches."""
        newest = self.broker.store.max_offset(topic, queue_id)
        actions: list[Action] = []
        for name, h in list(self.held.items()):
            if h.topic != topic or h.queue_id != queue_id or newest <= h.offset:
                continue
            cgi = self.broker.consumers.table.get(h.msg.frame.fields.get("consumerGroup", ""))
            sub = cgi.subscriptionTable.get(topic) if cgi else None
            last = self.broker.store.queues[(topic, queue_id)][newest - 1]
            if sub is not None and not tag_matcher(sub)(last):
                continue
            del self.held[name]
            actions += [Cancel(name), *self.process(h.msg, now, allow_suspend=False)]
        return actions + self.broker.pop.notify_message_arriving(topic, queue_id, now)  # POP's long polling

    def check_hold_requests(self, now: Now) -> list[Action]:
        """``PullRequestHoldService.checkHoldRequest``: re-run held pulls whose queue grew past
        their offset (no tag check: the consume queue's tagsCode is not consulted there)."""
        actions: list[Action] = []
        for name, h in list(self.held.items()):
            if self.broker.store.max_offset(h.topic, h.queue_id) > h.offset:
                del self.held[name]
                actions += [Cancel(name), *self.process(h.msg, now, allow_suspend=False)]
        return actions

    def on_hold_timeout(self, name: str, now: Now) -> list[Action]:
        h = self.held.pop(name, None)
        return self.process(h.msg, now, allow_suspend=False) if h else []

    def drop_channel(self, channel: str) -> list[Action]:
        gone = [n for n, h in self.held.items() if h.msg.channel == channel]
        for n in gone:
            del self.held[n]
        return [Cancel(n) for n in gone]

