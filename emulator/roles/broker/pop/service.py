"""The broker's POP room wired together: the processors, the revive service, the FIFO order info,
their timers and what a restart reads back (docs/rocketmq-model.md §10.2, §10.3).

Timers (cluster ms): ``pop_revive`` every ``reviveInterval`` (the revive pass, masters only);
``pop_order_flush`` every 10 s after 10 s, as 5.x's BrokerController persists
``config/consumerOrderInfo.json`` (and at a graceful stop);
``pop_hold:<n>`` one per held POP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import RequestCode as RC
from rmqemu.emulator.roles.broker.pop.ack_processor import AckProcessor
from rmqemu.emulator.roles.broker.pop.order_info import OrderInfoManager
from rmqemu.emulator.roles.broker.pop.pop_processor import TIMER_PREFIX, PopProcessor
from rmqemu.emulator.roles.broker.pop.records import ReviveLog
from rmqemu.emulator.roles.broker.pop.revive import TIMER as REVIVE_TIMER
from rmqemu.emulator.roles.broker.pop.revive import ReviveService
from rmqemu.emulator.roles.common.base import Action, Cancel, Every, Now
from rmqemu.emulator.roles.common.server_dispatch import Handler

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

FLUSH_TIMER = "pop_order_flush"
TIMERS = (REVIVE_TIMER, FLUSH_TIMER)
ORDER_FLUSH_MS = 10000


class PopService:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.revive_log = ReviveLog(broker)
        self.order_info = OrderInfoManager()
        self.popper = PopProcessor(self)
        self.acker = AckProcessor(self)
        self.revive = ReviveService(self)

    def handlers(self) -> dict[int, Handler]:
        return {RC.POP_MESSAGE: self.popper.pop_message, RC.ACK_MESSAGE: self.acker.ack_message,
                RC.CHANGE_INVISIBLE_TIME: self.acker.change_invisible_time}

    def queues(self) -> list[tuple[str, int]]:
        """The revive queues a restore reads, whether or not the topic table lists them yet."""
        return self.revive_log.queues()

    def start(self, now: Now) -> list[Action]:
        """Load the order info, run the revive pass and the order-info flush (every broker: a pass
        on a slave does nothing, so a DLedger member that becomes master needs no restart of it)."""
        self.order_info.load(self.broker.read_store)
        return [*self.revive.start(), Cancel(FLUSH_TIMER), Every(FLUSH_TIMER, ORDER_FLUSH_MS, ORDER_FLUSH_MS)]

    def stop(self) -> list[Action]:
        return [self.order_info.persist()] if self.order_info.dirty else []

    @staticmethod
    def owns_timer(name: str) -> bool:
        return name in TIMERS or name.startswith(TIMER_PREFIX)

    def on_timer(self, name: str, now: Now) -> list[Action]:
        if name == REVIVE_TIMER:
            return self.revive.run(now)
        if name == FLUSH_TIMER:
            return [self.order_info.persist()] if self.order_info.dirty else []
        return self.popper.on_hold_timeout(name, now)

    def notify_message_arriving(self, topic: str, queue_id: int, now: Now) -> list[Action]:
        return self.popper.notify_arrival(topic, queue_id, now)

    def drop_channel(self, channel: str) -> list[Action]:
        return self.popper.drop_channel(channel)

    def snapshot(self) -> dict[str, Any]:
        """``in_flight``: ``[topic, group, queue, messages]`` rows leased and not yet acked or revived."""
        return {"held_pops": len(self.popper.held),
                "fifo_out": {f"{t}@{g}@{q}": i.offsets for (t, g, q), i in self.order_info.table.items()},
                "in_flight": [[t, g, q, n] for (t, g, q), n in sorted(self.revive.in_flight().items())]}
