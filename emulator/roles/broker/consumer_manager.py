"""Broker-side client bookkeeping (docs/rocketmq-model.md §4.2, §4.7): ConsumerManager / ConsumerGroupInfo,
ProducerManager, SubscriptionGroupManager and ConsumerOffsetManager.

The subtle rule (docs/rocketmq-model.md §4.2, issues #351/#5473): a group has **one** subscription table keyed by
topic, overwritten by whichever client's heartbeat came last -- topics missing from that heartbeat
are removed. Liveness stamps use the broker's wall clock (``System.currentTimeMillis()``).
A channel that joins or leaves a group is a ``broker.consumer`` line (:func:`membership`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from rmqemu.emulator.protocol import is_remoting
from rmqemu.emulator.roles.common.base import Emit, Persist

CHANNEL_EXPIRED_TIMEOUT = 1000 * 120  # ConsumerManager / ProducerManager
SUBSCRIPTION_GROUP_JSON = "config/subscriptionGroup.json"
CONSUMER_OFFSET_JSON = "config/consumerOffset.json"


@dataclass
class ClientChannelInfo:
    channel: str
    clientId: str
    lastUpdateTimestamp: float
    peer: str = ""  # the node, or client@<pid> (not RocketMQ's: for broker.consumer lines)


def membership(group: str, info: ClientChannelInfo, change: str, remaining: int, reason: str | None = None) -> Emit:
    """The ``broker.consumer`` line of a channel joining or leaving ``group``."""
    fields = {"group": group, "client": info.peer, "client_id": info.clientId, "change": change,
              "remaining": remaining, "real": is_remoting(info.channel)}
    return Emit("broker.consumer", {**fields, "reason": reason} if reason else fields)


@dataclass
class ConsumerGroupInfo:
    groupName: str
    consumeType: str = "CONSUME_PASSIVELY"
    messageModel: str = "CLUSTERING"
    consumeFromWhere: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[str, ClientChannelInfo] = field(default_factory=dict)
    subscriptionTable: dict[str, dict[str, Any]] = field(default_factory=dict)

    def update_channel(self, info: ClientChannelInfo, consume_type: str, model: str, cfw: str) -> bool:
        """The group-level settings take the latest heartbeat's values; True if the channel is new."""
        self.consumeType, self.messageModel, self.consumeFromWhere = consume_type, model, cfw
        old = self.channels.get(info.channel)
        if old is None:
            self.channels[info.channel] = info
            return True
        if old.clientId != info.clientId:  # "[BUG] consumer channel exist in broker, but clientId not equal"
            self.channels[info.channel] = old = info
        old.lastUpdateTimestamp = info.lastUpdateTimestamp
        return False

    def update_subscription(self, subs: list[dict[str, Any]]) -> bool:
        """docs/rocketmq-model.md §4.2: add new topics (updated), replace on a greater subVersion (not "updated"),
        then drop every topic this heartbeat does not list (updated)."""
        updated = False
        for sub in subs:
            old = self.subscriptionTable.get(sub["topic"])
            if old is None:
                self.subscriptionTable[sub["topic"]] = sub
                updated = True
            elif int(sub.get("subVersion", 0)) > int(old.get("subVersion", 0)):
                self.subscriptionTable[sub["topic"]] = sub
        listed = {s["topic"] for s in subs}
        for topic in [t for t in self.subscriptionTable if t not in listed]:
            del self.subscriptionTable[topic]
            updated = True
        return updated

    def client_ids(self) -> list[str]:
        """``getAllClientId``: in channel-table order; the client sorts (docs/rocketmq-model.md §4.3)."""
        return [c.clientId for c in self.channels.values()]


class ConsumerManager:
    def __init__(self) -> None:
        self.table: dict[str, ConsumerGroupInfo] = {}

    def register_consumer(self, group: str, info: ClientChannelInfo, consume_type: str, model: str,
                          cfw: str, subs: list[dict[str, Any]]) -> tuple[bool, bool]:
        """``(r1 || r2, r1)``: whether the caller should fire CHANGE (NOTIFY_CONSUMER_IDS_CHANGED),
        and whether the channel is new to the group."""
        cgi = self.table.setdefault(group, ConsumerGroupInfo(group))
        r1 = cgi.update_channel(info, consume_type, model, cfw)
        r2 = cgi.update_subscription(subs)
        return r1 or r2, r1

    def unregister_consumer(self, group: str, channel: str) -> tuple[ConsumerGroupInfo | None, list[Emit]]:
        """Removes the channel (and an emptied group); the group info if the group existed, and the
        ``broker.consumer`` line if the channel was in it."""
        cgi = self.table.get(group)
        if cgi is None:
            return None, []
        info = cgi.channels.pop(channel, None)
        if not cgi.channels:
            del self.table[group]
        return cgi, [membership(group, info, "left", len(cgi.channels), "unregister")] if info else []

    def do_channel_close_event(self, channel: str,
                               reason: str = "closed") -> tuple[list[ConsumerGroupInfo], list[Emit]]:
        """The groups that lost ``channel`` (each fires CHANGE to its remaining channels) and their lines."""
        changed, lines = [], []
        for group, cgi in list(self.table.items()):
            info = cgi.channels.pop(channel, None)
            if info is not None:
                if not cgi.channels:
                    del self.table[group]
                changed.append(cgi)
                lines.append(membership(group, info, "left", len(cgi.channels), reason))
        return changed, lines

    def scan_not_active_channel(self, wall_ms: float, timeout_ms: float) -> tuple[list[str], list[Emit]]:
        """Channels silent for more than the timeout: removed (empty groups dropped) and returned
        so the broker closes them, with their lines. No CHANGE is fired here, as in RocketMQ."""
        closed, lines = [], []
        for group, cgi in list(self.table.items()):
            for ch, info in list(cgi.channels.items()):
                if wall_ms - info.lastUpdateTimestamp > timeout_ms:
                    del cgi.channels[ch]
                    closed.append(ch)
                    lines.append(membership(group, info, "left", len(cgi.channels), "expired"))
            if not cgi.channels:
                del self.table[group]
        return closed, lines

    def snapshot(self) -> dict[str, Any]:
        return {
            g: {"consumeType": c.consumeType, "messageModel": c.messageModel, "consumeFromWhere": c.consumeFromWhere,
                "clientIds": c.client_ids(), "subscriptionTable": c.subscriptionTable}
            for g, c in self.table.items()
        }


class ProducerManager:
    def __init__(self) -> None:
        self.table: dict[str, dict[str, ClientChannelInfo]] = {}

    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        chans = self.table.setdefault(group, {})
        old = chans.get(info.channel)
        if old is None or old.clientId != info.clientId:
            chans[info.channel] = info
        else:
            old.lastUpdateTimestamp = info.lastUpdateTimestamp

    def unregister_producer(self, group: str, channel: str) -> None:
        chans = self.table.get(group)
        if chans is not None:
            chans.pop(channel, None)
            if not chans:
                del self.table[group]

    def do_channel_close_event(self, channel: str) -> None:
        for group in list(self.table):
            self.unregister_producer(group, channel)

    def scan_not_active_channel(self, wall_ms: float, timeout_ms: float) -> list[str]:
        closed = []
        for group, chans in list(self.table.items()):
            for ch, info in list(chans.items()):
                if wall_ms - info.lastUpdateTimestamp > timeout_ms:
                    del chans[ch]
                    closed.append(ch)
            if not chans:
                del self.table[group]
        return closed

    def snapshot(self) -> dict[str, Any]:
        return {g: [c.clientId for c in chans.values()] for g, chans in self.table.items()}


@dataclass
class SubscriptionGroupConfig:
    """``SubscriptionGroupConfig`` defaults (docs/rocketmq-model.md §4.7)."""

    groupName: str
    consumeEnable: bool = True
    consumeFromMinEnable: bool = True
    consumeBroadcastEnable: bool = True
    retryQueueNums: int = 1
    retryMaxTimes: int = 16
    brokerId: int = 0
    whichBrokerWhenConsumeSlowly: int = 1
    notifyConsumerIdsChangedEnable: bool = True


class SubscriptionGroupManager:
    def __init__(self, auto_create: bool) -> None:
        self.auto_create = auto_create
        self.table: dict[str, SubscriptionGroupConfig] = {}

    def load(self, read_store: Callable[[str], str | None]) -> None:
        text = read_store(SUBSCRIPTION_GROUP_JSON)
        if text:
            try:
                for name, cfg in (json.loads(text).get("subscriptionGroupTable") or {}).items():
                    self.table[name] = SubscriptionGroupConfig(**{**cfg, "groupName": name})
            except (ValueError, TypeError, AttributeError):
                pass

    def find(self, group: str) -> tuple[SubscriptionGroupConfig | None, list[Persist]]:
        """``findSubscriptionGroupConfig``: auto-creates when enabled or for a system group."""
        cfg = self.table.get(group)
        if cfg is not None:
            return cfg, []
        if self.auto_create or group.startswith("CID_RMQ_SYS_"):
            cfg = self.table[group] = SubscriptionGroupConfig(group)
            return cfg, [self.persist()]
        return None, []

    def persist(self) -> Persist:
        body = {"subscriptionGroupTable": {n: asdict(c) for n, c in self.table.items()}}
        return Persist(SUBSCRIPTION_GROUP_JSON, json.dumps(body, indent=4))


class ConsumerOffsetManager:
    """``offsetTable``: ``"topic@group" -> {queueId: offset}``; persisted by a periodic flush."""

    def __init__(self) -> None:
        self.table: dict[str, dict[int, int]] = {}
        self.dirty = False

    def load(self, read_store: Callable[[str], str | None]) -> None:
        text = read_store(CONSUMER_OFFSET_JSON)
        if text:
            try:
                for key, qs in (json.loads(text).get("offsetTable") or {}).items():
                    self.table[key] = {int(q): int(o) for q, o in qs.items()}
            except (ValueError, TypeError, AttributeError):
                pass

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(f"{topic}@{group}", {})[queue_id] = offset
        self.dirty = True

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self.table.get(f"{topic}@{group}", {}).get(queue_id, -1)

    def persist(self) -> Persist:
        self.dirty = False
        body = {"offsetTable": {k: {str(q): o for q, o in sorted(v.items())} for k, v in self.table.items()}}
        return Persist(CONSUMER_OFFSET_JSON, json.dumps(body, indent=4))
