"""HAService, master side: commit-log replication to slaves and the SYNC_MASTER wait.

RocketMQ 4.9 (``store/.../ha/HAService.java``, ``HAConnection.java``, ``CommitLog``):

- A slave's HAClient connects to the master's ``haServerAddr`` (listenPort + 1) and reports its
  max commit-log offset: on connect, after every batch it read, and at least every
  ``haSendHeartbeatInterval`` (5000 ms). The master's ``HAConnection`` streams the commit log from
  that offset in batches of at most ``haTransferBatchSize`` (32 KiB); when it has nothing new it
  waits on ``WaitNotifyObject.allWaitForRunning(100)`` and sends an empty heartbeat batch every
  ``haSendHeartbeatInterval``. Every report raises ``push2SlaveMaxOffset`` (never lowered).
- An ASYNC_MASTER acks a send as soon as it is in its own commit log. A SYNC_MASTER's
  ``submitReplicaRequest`` (only for messages whose ``WAIT`` property is not ``false``) answers
  SLAVE_NOT_AVAILABLE (11) unless ``isSlaveOK``: an HA connection exists and the slave is less than
  ``haSlaveFallbehindMax`` (256 MiB) behind; otherwise it waits for ``push2SlaveMaxOffset`` to reach
  the message's end, up to ``syncFlushTimeout`` (5000 ms; later releases use ``slaveTimeout``),
  and answers FLUSH_SLAVE_TIMEOUT (12) if it does not. The message stays stored either way, and
  the producer treats 11/12 as a SendResult, not an error.
- ``haHousekeepingInterval`` (20000 ms): a connection silent that long is closed.

The emulator has one data-plane address per node, so the HA connection is a **long poll** with an
emulator-internal code (``EmulatorCode.HA_TRANSFER``, not a RocketMQ RequestCode): the slave
sends "transfer from offset X" (that is its offset report), the master answers at once with a
batch if it has data past X, else holds the request (an ``After`` timer, like a held pull) and
answers when data arrives -- at once on a SYNC_MASTER (``wakeupAll``), after RocketMQ's 100 ms
wait on an ASYNC_MASTER -- or empty after ``haSendHeartbeatInterval`` (the heartbeat).
The first request of a connection is answered at once, empty or not: it stands for the accept,
so the slave knows it is connected without waiting a heartbeat interval.
An inbound channel that sent HA requests is one HAConnection: dropped when it closes or after
``haHousekeepingInterval`` without a request. Timers: ``ha_hold:<n>``, ``ha_wait:<n>``, ``ha_push``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.protocol import ResponseCode as R
from rmqemu.emulator.roles.common.base import Action, After, Cancel, Emit, Inbound, Now, Reply
from rmqemu.emulator.roles.common.server_dispatch import h_int
from rmqemu.emulator.roles.store.replica import transfer_body

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

WAIT_NOTIFY_MS = 100  # HAConnection.WriteSocketService: allWaitForRunning(100) when no new data
PUT_OK, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE = "PUT_OK", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"
PutDone = Callable[[str, Now], list[Action]]


@dataclass
class HAConnection:
    channel: str
    peer: str
    ack_offset: int  # slaveAckOffset: the latest report
    last_seen_ms: float  # monotonic time of the latest request


@dataclass
class HeldTransfer:
    msg: Inbound
    offset: int


@dataclass
class ReplicaWait:
    """``CommitLog.GroupCommitRequest``: a SYNC_MASTER put waiting for the slave."""

    channel: str
    next_offset: int
    on_done: PutDone


def wait_store_msg_ok(properties: dict[str, str]) -> bool:
    """``Message.isWaitStoreMsgOK``: the ``WAIT`` property, true when absent."""
    return properties.get("WAIT", "true").strip().lower() != "false"


class HAService:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.cfg = broker.store_cfg
        self.connections: dict[str, HAConnection] = {}
        self.push2slave_max_offset = 0
        self.held: dict[str, HeldTransfer] = {}
        self.waits: dict[str, ReplicaWait] = {}
        self.push_pending = False
        self._ids = itertools.count(1)

    @property
    def sync_master(self) -> bool:
        return self.cfg.brokerRole == "SYNC_MASTER"

    # ------------------------------------------------------------------ HAConnection

    def on_transfer_request(self, msg: Inbound, now: Now) -> list[Action]:
        """A slave's report + request: record its offset, release SYNC waits, transfer or hold."""
        offset = h_int(msg.frame, "offset", required=True)
        assert offset is not None
        actions = self._expire(now)
        conn = self.connections.get(msg.channel)
        new = conn is None
        if conn is None:
            conn = self.connections[msg.channel] = HAConnection(msg.channel, msg.peer, offset, now.mono_ms)
            actions.append(Emit("broker.ha", {"change": "slave_connected", "slave": msg.peer, "offset": offset,
                                              "master_offset": self.broker.store.max_phy_offset()}))
        conn.ack_offset, conn.last_seen_ms = offset, now.mono_ms
        actions += self.notify_transfer_some(offset, now)
        if new or self.broker.store.max_phy_offset() > offset:  # a new connection is answered at once (the accept)
            return actions + [self._transfer(msg, offset)]
        name = f"ha_hold:{next(self._ids)}"
        self.held[name] = HeldTransfer(msg, offset)
        return actions + [After(name, self.cfg.haSendHeartbeatInterval)]

    def _transfer(self, msg: Inbound, offset: int) -> Reply:
        """One batch from ``offset`` (empty = the heartbeat)."""
        lines, nxt = self.broker.store.transfer_from(offset, self.cfg.haTransferBatchSize)
        fields = {"masterPhyOffset": offset, "nextOffset": nxt, "maxOffset": self.broker.store.max_phy_offset()}
        return Reply(msg.channel, msg.frame.response(R.SUCCESS, fields=fields, body=transfer_body(lines)))

    def on_hold_timeout(self, name: str, now: Now) -> list[Action]:
        h = self.held.pop(name, None)
        return [self._transfer(h.msg, h.offset)] if h else []

    def notify_new_data(self, now: Now) -> list[Action]:
        """After a put: wake held transfers -- at once on a SYNC_MASTER (``wakeupAll`` in
        ``submitReplicaRequest``), after the write service's 100 ms wait otherwise."""
        if not self.held:
            return []
        if self.sync_master:
            return self.push_held(now)
        if self.push_pending:
            return []
        self.push_pending = True
        return [After("ha_push", WAIT_NOTIFY_MS)]

    def push_held(self, now: Now) -> list[Action]:
        """Answer every held transfer that now has data past its offset."""
        self.push_pending = False
        top = self.broker.store.max_phy_offset()
        actions: list[Action] = []
        for name, h in list(self.held.items()):
            if top > h.offset:
                del self.held[name]
                actions += [Cancel(name), self._transfer(h.msg, h.offset)]
        return actions

    def _expire(self, now: Now) -> list[Action]:
        """``haHousekeepingInterval``: drop connections silent that long (none is while held)."""
        limit = self.cfg.haHousekeepingInterval
        waiting = {h.msg.channel for h in self.held.values()}
        gone = [ch for ch, c in self.connections.items()
                if ch not in waiting and now.mono_ms - c.last_seen_ms > limit]
        return [a for ch in gone for a in self._drop_connection(ch, "expired")]

    def _drop_connection(self, channel: str, reason: str) -> list[Action]:
        conn = self.connections.pop(channel, None)
        if conn is None:
            return []
        return [Emit("broker.ha", {"change": "slave_disconnected", "slave": conn.peer, "offset": conn.ack_offset,
                                   "reason": reason})]

    def drop_channel(self, channel: str) -> list[Action]:
        """The channel closed: a slave's HA connection, or a producer whose SYNC send waits."""
        actions = self._drop_connection(channel, "closed")
        for name in [n for n, h in self.held.items() if h.msg.channel == channel]:
            del self.held[name]
            actions.append(Cancel(name))
        for name in [n for n, w in self.waits.items() if w.channel == channel]:
            del self.waits[name]  # the producer is gone: nobody to answer
            actions.append(Cancel(name))
        return actions

    # ------------------------------------------------------------------ SYNC_MASTER (GroupTransferService)

    def is_slave_ok(self, master_put_where: int) -> bool:
        """``isSlaveOK``: a connection, and the slave less than haSlaveFallbehindMax behind."""
        return bool(self.connections) and \
            master_put_where - self.push2slave_max_offset < self.cfg.haSlaveFallbehindMax

    def await_replica(self, channel: str, next_offset: int, on_done: PutDone, now: Now) -> list[Action]:
        """``submitReplicaRequest`` for a SYNC_MASTER put ending at ``next_offset``."""
        actions = self._expire(now)
        if not self.is_slave_ok(next_offset):
            return actions + on_done(SLAVE_NOT_AVAILABLE, now)
        if self.push2slave_max_offset >= next_offset:
            return actions + on_done(PUT_OK, now)
        name = f"ha_wait:{next(self._ids)}"
        self.waits[name] = ReplicaWait(channel, next_offset, on_done)
        return actions + [After(name, self.cfg.syncFlushTimeout)]

    def notify_transfer_some(self, offset: int, now: Now) -> list[Action]:
        """A slave acked ``offset``: raise push2SlaveMaxOffset, answer the waits it covers."""
        if offset <= self.push2slave_max_offset:
            return []
        self.push2slave_max_offset = offset
        actions: list[Action] = []
        for name, w in list(self.waits.items()):
            if w.next_offset <= offset:
                del self.waits[name]
                actions += [Cancel(name), *w.on_done(PUT_OK, now)]
        return actions

    def on_wait_timeout(self, name: str, now: Now) -> list[Action]:
        w = self.waits.pop(name, None)
        return w.on_done(FLUSH_SLAVE_TIMEOUT, now) if w else []

    def snapshot(self) -> dict[str, Any]:
        return {"slaves": sorted(c.peer for c in self.connections.values()),
                "push2slave_max_offset": self.push2slave_max_offset,
                "held_transfers": len(self.held), "sync_waits": len(self.waits)}
