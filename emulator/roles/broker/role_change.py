"""A DLedger peer's broker following its member's role (4.9.4
``broker/.../dledger/DLedgerRoleChangeHandler.java`` and ``BrokerController.changeToSlave`` /
``changeToMaster``; docs/rocketmq-model.md §8.3).

- CANDIDATE (unless already a slave) and FOLLOWER: the broker becomes a SLAVE with brokerId
  ``int(selfId[1:]) + 1``: delayed and timed messages stop being delivered, transaction checks stop,
  slave sync restarts (topics,
  consumer offsets and delay offsets every 10 s, the first after 3 s, from the master address a
  registration answer names: none until the periodic registration, since this one is one-way),
  and it registers one-way with every namesrv.
- LEADER: every 100 ms, until its log is all committed and dispatched (or it stops leading), then
  it recovers its queue offsets, becomes SYNC_MASTER with brokerId 0, starts delivering delayed
  messages and checking transactions, and registers one-way.

Each change ends with a ``broker.role`` event. The classic broker never comes here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqemu.emulator.roles.broker.slave_sync import TIMER_SYNC
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Emit, Every, Now
from rmqemu.emulator.roles.dledger.config import slave_broker_id
from rmqemu.emulator.roles.dledger.member import Role as DRole

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

POLL_TIMER = "dledger:role_change"
POLL_MS = 100  # the LEADER case's Thread.sleep(100)
SLAVE_SYNC = "slave_sync"


class RoleChange:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.term = -1

    def handle(self, term: int, role: DRole, now: Now) -> list[Action]:
        """``DLedgerRoleChangeHandler.handle`` (its single-thread executor runs it at once here)."""
        self.term = term
        b = self.broker
        if role is DRole.CANDIDATE:
            return [] if b.is_slave else self.change_to_slave(now)
        if role is DRole.FOLLOWER:
            return self.change_to_slave(now)
        return self.poll(now)

    def poll(self, now: Now) -> list[Action]:
        dledger = self.broker.dledger
        assert dledger is not None
        if not dledger.server.is_leader:
            return []
        if not dledger.caught_up():
            return [After(POLL_TIMER, POLL_MS)]
        dledger.recover_topic_queue_table()
        return self.change_to_master(now)

    def change_to_slave(self, now: Now) -> list[Action]:
        b = self.broker
        dledger = b.dledger
        assert dledger is not None
        self._identity(slave_broker_id(dledger.self_id), "SLAVE")
        actions = b.schedule.stop_delivering() + b.tx_check.stop() + b.timer.stop_delivering()
        b.master_addr = None  # handleSlaveSynchronize(SLAVE): setMasterAddr(null), then the 10 s sync anew
        actions += [Cancel(SLAVE_SYNC), Every(SLAVE_SYNC, 3000, 10000), *b.slave_sync.timer_schedule(3000)]
        actions += b.registrar.register_all(now, oneway_=True, force=True)
        return actions + [self._event()]

    def change_to_master(self, now: Now) -> list[Action]:
        b = self.broker
        b.master_addr = None
        actions: list[Action] = [Cancel(SLAVE_SYNC), Cancel(TIMER_SYNC)]
        self._identity(0, "SYNC_MASTER")
        actions += b.schedule.start_delivering(now) + b.tx_check.start() + b.timer.start_delivering(now)
        actions += b.registrar.register_all(now, oneway_=True, force=True)
        return actions + [self._event()]

    def _identity(self, broker_id: int, role: str) -> None:
        b = self.broker
        b.broker_id = b.cfg.brokerId = broker_id
        b.store_cfg.brokerRole = role
        b.store.is_slave = role == "SLAVE"
        b.topics.broker_id = broker_id
        b.wire.broker_id = broker_id

    def _event(self) -> Emit:
        b = self.broker
        return Emit("broker.role", {"broker": b.cfg.brokerName, "broker_id": b.broker_id,
                                    "role": b.store_cfg.brokerRole, "term": self.term})
