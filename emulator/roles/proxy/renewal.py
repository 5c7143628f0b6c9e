"""The proxy keeps a PushConsumer's leases alive (docs/rocketmq-model.md §10.1).

A receive with ``auto_renew`` (a PushConsumer's) leases for 60 s, and the proxy, not the client,
renews the lease while the client's listener runs, as 5.x's ``DefaultReceiptHandleManager``: each
message delivered is kept under (client, group) with its handle; every
``renewSchedulePeriodMillis`` (5 s) a lease that ends within ``renewAheadTimeMillis`` (10 s) is
renewed by CHANGE_INVISIBLE_TIME for 1, 3, 5, 10, 30, then 60 min (``RenewStrategyPolicy``) and
its handle replaced by the new one. The client's ack, change of invisible time or DLQ forward
takes the message out and goes to the broker with the latest handle (the client still holds the
first). A lease is given up after ``maxRenewRetryTimes`` (3) renewals without an answer, or at once
on a refusal; after ``renewMaxTimeMillis`` (3 h) it is nacked with the group's retry delay for its
attempt. A client that terminated, or has not called for 120 s (5.x's channel expiry; a live one
heartbeats every 10 s), has its leases nacked to ``invisibleTimeMillisWhenClear`` (1 s). Each
renewal, stop and clear is a ``proxy.renew`` line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.protocol import ResponseCode, request
from rmqemu.emulator.roles.common.base import Action, Emit, Every, Now, Request
from rmqemu.emulator.roles.common.pop_keys import real_topic
from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as pb
from rmqemu.emulator.roles.proxy.messages import Handle
from rmqemu.emulator.roles.proxy.sessions import RETRY_DELAYS_S

if TYPE_CHECKING:
    from rmqemu.emulator.roles.proxy.proxy import Proxy

TIMER = "renew"
RENEW_DELAYS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
CHANNEL_EXPIRED_MS = 120_000
TIMEOUT_MS = 3000
Key = tuple[str, str]  # (client id, group)


@dataclass
class Held:
    """One delivered message whose lease the proxy keeps."""

    topic: str
    msg_id: str
    handle: str  # the latest lease's
    consumed_ms: float  # wall ms of its delivery
    reconsume_times: int
    renew_times: int = 0
    retry_times: int = 0
    busy: bool = False  # a renewal is out
    acked: bool = False  # the client acked it while a renewal was out: ack the renewed lease too


class Renewal:
    def __init__(self, proxy: "Proxy") -> None:
        self.proxy = proxy
        self.held: dict[Key, dict[tuple[str, str], Held]] = {}  # -> (msg id, the client's handle) -> Held
        self.seen: dict[str, float] = {}  # client id -> mono ms of its last call (clients holding leases)

    def start(self) -> list[Action]:
        period = self.proxy.cfg.renewSchedulePeriodMillis
        return [Every(TIMER, period, period)] if self.proxy.cfg.enableProxyAutoRenew else []

    def saw(self, client_id: Any, now: Now) -> None:
        if client_id in self.seen:
            self.seen[client_id] = now.mono_ms

    def add(self, client_id: Any, group: str, topic: str, messages: list[pb.Message], now: Now) -> None:
        """Messages an auto-renewed receive delivered."""
        if not client_id or not self.proxy.cfg.enableProxyAutoRenew:
            return
        self.seen[str(client_id)] = now.mono_ms
        table = self.held.setdefault((str(client_id), group), {})
        for m in messages:
            sp = m.system_properties
            table[(sp.message_id, sp.receipt_handle)] = Held(topic, sp.message_id, sp.receipt_handle, now.wall_ms,
                                                             sp.delivery_attempt - 1)

    def take(self, client_id: Any, group: str, msg_id: str, handle: str, acking: bool = False) -> str:
        """The handle to use for the client's ack, change or forward of ``handle``: the latest
        lease's when the proxy renewed it, else ``handle`` itself; the message is no longer kept."""
        table = self.held.get((str(client_id), group)) if client_id else None
        held = table.pop((msg_id, handle), None) if table is not None else None
        if held is None:
            return handle
        if not table:
            self._forget((str(client_id), group))
        held.acked = acking and held.busy  # the renewal's answer acks the lease it made
        return held.handle

    def terminated(self, client_id: Any, now: Now) -> list[Action]:
        return [a for key in [k for k in self.held if k[0] == str(client_id)] for a in self._clear(key, now)]

    # ------------------------------------------------------------------ the scan

    def scan(self, now: Now) -> list[Action]:
        cfg, actions = self.proxy.cfg, []
        for key in list(self.held):
            if now.mono_ms - self.seen.get(key[0], now.mono_ms) > CHANNEL_EXPIRED_MS:
                actions += self._clear(key, now)
                continue
            table = self.held[key]
            for (msg_id, first), held in list(table.items()):
                handle = Handle.decode(held.handle)
                if held.busy or handle is None:
                    continue
                if handle.retrieve_ms + handle.invisible_ms - now.wall_ms > cfg.renewAheadTimeMillis:
                    continue
                if held.retry_times >= cfg.maxRenewRetryTimes:
                    del table[(msg_id, first)]
                elif now.wall_ms - held.consumed_ms < cfg.renewMaxTimeMillis:
                    actions += self._renew(key, (msg_id, first), held, handle)
                else:  # STOP_RENEW: back with the group's retry delay for its attempt
                    del table[(msg_id, first)]
                    delay = RETRY_DELAYS_S[min(held.reconsume_times, len(RETRY_DELAYS_S) - 1)] * 1000
                    actions += self._change(key[1], held, handle, delay, "stop", lambda resp, n: [])
            if not table:
                self._forget(key)
        return actions

    def _renew(self, key: Key, slot: tuple[str, str], held: Held, handle: Handle) -> list[Action]:
        invisible = RENEW_DELAYS_MS[min(held.renew_times, len(RENEW_DELAYS_MS) - 1)]
        if self._master(held, handle) is None:
            del self.held[key][slot]
            return self._change(key[1], held, handle, invisible, "renew", lambda resp, n: [])  # its line
        held.busy = True

        def done(resp: Any, now: Now) -> list[Action]:
            held.busy = False
            kept = self.held.get(key, {}).get(slot) is held
            if resp is None:
                held.retry_times += 1
                return []
            if resp.code != ResponseCode.SUCCESS:  # refused: no more renewals (5.x drops the handle)
                if kept:
                    del self.held[key][slot]
                return []
            held.handle = handle.renewed(resp.fields, invisible)
            held.renew_times, held.retry_times = held.renew_times + 1, 0
            if held.acked:  # the client acked the lease this renewal replaced: ack this one
                return self._ack(key[1], held)
            return []

        return self._change(key[1], held, handle, invisible, "renew", done)

    def _clear(self, key: Key, now: Now) -> list[Action]:
        table = self._forget(key)
        cfg, actions = self.proxy.cfg, []
        for held in table.values():
            handle = Handle.decode(held.handle)
            if handle is not None:
                actions += self._change(key[1], held, handle, cfg.invisibleTimeMillisWhenClear, "clear",
                                        lambda resp, n: [])
        return actions

    def _forget(self, key: Key) -> dict[tuple[str, str], Held]:
        table = self.held.pop(key, {})
        if not any(k[0] == key[0] for k in self.held):
            self.seen.pop(key[0], None)
        return table

    # ------------------------------------------------------------------ the broker's side

    def _master(self, held: Held, handle: Handle) -> str | None:
        view = self.proxy.routes.cached(held.topic)
        return view.masters.get(handle.broker) if view is not None else None

    def _change(self, group: str, held: Held, handle: Handle, invisible: int, why: str,
                then: Callable[[Any, Now], list[Action]]) -> list[Action]:
        addr = self._master(held, handle)
        line = {"group": group, "topic": held.topic, "msg_id": held.msg_id, "broker": handle.broker,
                "invisible_ms": invisible, "reason": why, "proxy": self.proxy.name}
        if addr is None:  # 5.x's INVALID_BROKER_NAME: not retried
            return [Emit("proxy.renew", {**line, "result": "no_broker"})]
        fields = {"consumerGroup": group, "topic": real_topic(held.topic, group, handle.topic_type),
                  "queueId": handle.queue_id, "extraInfo": handle.text, "offset": handle.offset,
                  "invisibleTime": int(invisible)}

        def answered(resp: Any, now: Now) -> list[Action]:
            result = "timeout" if resp is None else "ok" if resp.code == ResponseCode.SUCCESS else f"code_{resp.code}"
            return [Emit("proxy.renew", {**line, "result": result})] + then(resp, now)

        return [Request(addr, request(RC.CHANGE_INVISIBLE_TIME, fields), TIMEOUT_MS, answered)]

    def _ack(self, group: str, held: Held) -> list[Action]:
        handle = Handle.decode(held.handle)
        addr = self._master(held, handle) if handle is not None else None
        if handle is None or addr is None:
            return []
        fields = {"consumerGroup": group, "topic": real_topic(held.topic, group, handle.topic_type),
                  "queueId": handle.queue_id, "extraInfo": handle.text, "offset": handle.offset}
        return [Request(addr, request(RC.ACK_MESSAGE, fields), TIMEOUT_MS, lambda resp, now: [])]
