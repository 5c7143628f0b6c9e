"""HAService.HAClient, slave side: pull the master's commit log into the slave's store.

RocketMQ 4.9 (``store/.../ha/HAService.java``): the HAClient holds the master's HA address,
which ``BrokerController`` updates from each REGISTER_BROKER result **only when it is not null**
(a slave whose master died keeps the old address). It connects, reports its max commit-log
offset, appends every batch it reads (``appendToCommitLog``; the reput then builds the consume
queues) and reports again. A failed connect, a read error or ``haHousekeepingInterval`` (20 s)
without data closes the connection and the client tries again after 5 s (``waitForRunning(1000 *
5)``): it never spins.

Emulated as a loop of long-polled ``EmulatorCode.HA_TRANSFER`` requests to the master's data-plane
address (``masterAddr`` of the register result; the emulator's ``haServerAddr`` is not a listening
address): each request carries the offset report, its timeout is ``haHousekeepingInterval``
(the master answers within ``haSendHeartbeatInterval``), and a failure, a timeout or the
outbound channel's ``disconnected`` closes the "connection" and schedules ``ha_retry`` 5 s
later. A generation number makes answers to a superseded request harmless.

Events: ``broker.ha`` with ``change`` ``connected`` (first answer of a connection: ``master``,
``offset`` = the slave's, ``master_offset``) and ``disconnected`` (``master``, ``offset``,
``reason``) -- transitions only, never one per batch or retry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqemu.emulator.protocol import EmulatorCode, Frame, request
from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Emit, Now, Request
from rmqemu.emulator.roles.store.replica import append_replicated, transfer_lines
from rmqemu.emulator.roles.store.restore import replicated_gaps

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

RETRY_TIMER = "ha_retry"
RETRY_MS = 1000 * 5  # HAClient.run: waitForRunning(1000 * 5) after a failed connect or a close


class HAClient:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.master: str | None = None
        self.gen = 0
        self.inflight = False
        self.connected = False
        self.retry_pending = False
        self.batches = 0
        self.accepted = 0
        self.rejected = 0

    def update_master(self, addr: str | None, now: Now) -> list[Action]:
        """``updateHaMasterAddress`` from a register result; a null address changes nothing."""
        if not addr or addr == self.broker.addr:
            return []
        if addr == self.master:
            return [] if (self.inflight or self.retry_pending) else self._request(now)
        actions = self._close("master changed") if self.master else []
        self.master = addr
        if self.retry_pending:
            actions.append(Cancel(RETRY_TIMER))
        return actions + self._request(now)

    def on_retry(self, now: Now) -> list[Action]:
        self.retry_pending = False
        return self._request(now) if self.master and not self.inflight else []

    def on_disconnected(self, addr: str | None, now: Now) -> list[Action]:
        """The outbound channel to the master dropped (its process died): close at once."""
        if addr is None or addr != self.master or not (self.inflight or self.connected):
            return []
        return self._close("channel disconnected") + self._retry_later()

    # ------------------------------------------------------------------ the loop

    def _request(self, now: Now) -> list[Action]:
        assert self.master is not None
        self.gen += 1
        gen = self.gen
        self.inflight, self.retry_pending = True, False
        b = self.broker
        fields = {"offset": b.store.max_phy_offset(), "brokerName": b.cfg.brokerName, "brokerId": b.broker_id}
        frame = request(EmulatorCode.HA_TRANSFER, fields)
        timeout = b.store_cfg.haHousekeepingInterval
        return [Request(self.master, frame, timeout, lambda resp, n: self._on_reply(gen, resp, n), held=True)]

    def _on_reply(self, gen: int, resp: Frame | None, now: Now) -> list[Action]:
        if gen != self.gen:
            return []  # superseded: the connection was closed or the master changed
        self.inflight = False
        if resp is None or resp.code != R.SUCCESS:
            reason = "no answer" if resp is None else f"code {resp.code}"
            return self._close(reason) + self._retry_later()
        actions: list[Action] = []
        if not self.connected:
            self.connected = True
            actions.append(Emit("broker.ha", {"change": "connected", "master": self.master,
                                              "offset": self.broker.store.max_phy_offset(),
                                              "master_offset": resp.fields.get("maxOffset")}))
        if resp.body:
            batch = append_replicated(self.broker.store, transfer_lines(resp.body))
            self.batches += 1
            self.accepted += batch.accepted
            self.rejected += batch.rejected
            actions += batch.appends
            actions += [a for p in replicated_gaps(batch.gaps) for a in p.actions(self.broker.name)]
        return actions + self._request(now)

    def _close(self, reason: str) -> list[Action]:
        """``closeMaster``: forget the connection; an answer still in flight is ignored."""
        self.gen += 1
        self.inflight = False
        if not self.connected:
            return []
        self.connected = False
        return [Emit("broker.ha", {"change": "disconnected", "master": self.master,
                                   "offset": self.broker.store.max_phy_offset(), "reason": reason})]

    def _retry_later(self) -> list[Action]:
        if self.retry_pending:
            return []
        self.retry_pending = True
        return [After(RETRY_TIMER, RETRY_MS)]

    def snapshot(self) -> dict[str, Any]:
        return {"master": self.master, "connected": self.connected, "offset": self.broker.store.max_phy_offset(),
                "batches": self.batches, "accepted": self.accepted, "rejected": self.rejected}
