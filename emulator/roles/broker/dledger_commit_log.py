"""The commit log of a broker in DLedger mode (4.9.4 ``store/.../dledger/DLedgerCommitLog.java``,
docs/rocketmq-model.md §8.3).

A put builds the stored record at the queue offset the broker's own ``topicQueueTable`` gives
(it counts appends not yet committed) and at commit-log offset ``entry pos + 48``, and appends
its line to the DLedger member as one entry. Nothing reaches a consume queue until the entry is
committed: then, on every peer alike, the line is stored in its queue file as a slave stores a
replicated one (:func:`append_replicated`), which is why pulls only ever see committed messages.
Each record carries its entry's ``dledgerIndex``, so a restarted peer knows from its queue files
how far it had committed. The answer to a put comes when DLedger acknowledges the entry (a quorum
holds it), times it out, or refuses it: :meth:`DLedgerCommitLog.await_ack`.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any, Callable

from rmqemu.emulator.roles.common.base import Action, Now
from rmqemu.emulator.roles.dledger.config import DLedgerConfig
from rmqemu.emulator.roles.dledger.log import HEADER_SIZE, Entry
from rmqemu.emulator.roles.dledger.server import DLedgerServer, Hooks
from rmqemu.emulator.roles.dledger.wire import Code
from rmqemu.emulator.roles.store.message_store import record_line
from rmqemu.emulator.roles.store.replica import append_replicated, transfer_lines
from rmqemu.emulator.roles.store.restore import replicated_gaps

if TYPE_CHECKING:
    from rmqemu.emulator.roles.broker.broker import Broker

# PutMessageStatus of a DLedger append, by DLedger's answer (asyncPutMessage's thenApply)
PUT_OK, OS_PAGECACHE_BUSY, SERVICE_NOT_AVAILABLE, UNKNOWN_ERROR = (
    "PUT_OK", "OS_PAGECACHE_BUSY", "SERVICE_NOT_AVAILABLE", "UNKNOWN_ERROR")
_STATUS = {Code.SUCCESS: PUT_OK, Code.WAIT_QUORUM_ACK_TIMEOUT: OS_PAGECACHE_BUSY,
           Code.LEADER_PENDING_FULL: OS_PAGECACHE_BUSY, Code.INCONSISTENT_LEADER: SERVICE_NOT_AVAILABLE,
           Code.NOT_LEADER: SERVICE_NOT_AVAILABLE}
Answer = Callable[[str, Now], list[Action]]  # the put's status, when DLedger has decided it


def put_status(code: int) -> str:
    """The PutMessageStatus a DLedger answer maps to (TERM_CHANGED and the rest: UNKNOWN_ERROR)."""
    return _STATUS.get(Code(code) if code in Code._value2member_map_ else Code.UNKNOWN, UNKNOWN_ERROR)


def dledger_peers(text: str) -> dict[str, str]:
    """``dLegerPeers`` ("n0-NODE;n1-NODE"): peer id -> the node that runs it."""
    peers = {}
    for item in text.split(";"):
        peer, sep, node = item.strip().partition("-")
        if not sep or not peer or not node:
            raise ValueError(f"dLegerPeers: expected 'n0-<node>;n1-<node>;...', got {text!r}")
        peers[peer] = node
    return peers


class DLedgerCommitLog:
    def __init__(self, broker: "Broker", seed: int) -> None:
        self.broker = broker
        sc = broker.store_cfg
        nodes = dledger_peers(sc.dLegerPeers)
        cfg = DLedgerConfig(group=sc.dLegerGroup or broker.cfg.brokerName, self_id=sc.dLegerSelfId,
                            peers=tuple(nodes), preferred_leader=sc.preferredLeaderId or None)
        # every node of a run has the run's seed: a peer's own RNG comes from it and its name, or two
        # candidates would draw the same vote backoffs and collide ballot after ballot, in lockstep
        own_seed = zlib.crc32(f"{seed}/{broker.name}".encode())
        self.server = DLedgerServer(cfg, nodes, Hooks(broker.role_change.handle, self._dispatch), own_seed,
                                    read_store=broker.read_store)
        self.queue_table: dict[tuple[str, int], int] = {}  # topicQueueTable: the next queue offset to hand out
        self.waiting: dict[int, Answer] = {}

    @property
    def self_id(self) -> str:
        return self.server.cfg.self_id

    def restored(self) -> None:
        """After the store's restore: the committed index is the last entry dispatched to a
        queue, and the queue offsets continue from the queues (``recoverTopicQueueTable``)."""
        dispatched = [int(r.get("dledgerIndex", -1)) for r in self.broker.store.log]
        log = self.server.log
        log.committed_index = min(max(dispatched, default=-1), log.end_index)
        self.recover_topic_queue_table()

    def recover_topic_queue_table(self) -> None:
        self.queue_table = {key: len(q) for key, q in self.broker.store.queues.items()}

    def caught_up(self) -> bool:
        """What the role-change handler waits for before a leader becomes master: every entry of
        its log committed (and so dispatched, which here happens at the commit itself)."""
        log = self.server.log
        return log.end_index == -1 or log.end_index == log.committed_index

    # ------------------------------------------------------------------ puts

    def put(self, topic: str, queue_id: int, body: bytes | str, props: dict[str, str], now: Now,
            **kw: Any) -> tuple[dict[str, Any] | None, list[Action], str | None]:
        """``asyncPutMessage``: (the record, actions, None) once appended, or (None, actions, the
        status) when DLedger refused it at once (not leader, transferring, pending full: the
        broker answers OS_PAGECACHE_BUSY without waiting)."""
        store, log = self.broker.store, self.server.log
        key = (topic, queue_id)
        queue_offset = self.queue_table.get(key, len(store.queues.get(key, ())))
        pos = log.entries[-1].pos + log.entries[-1].size if log.entries else 0
        record = store.make_record(topic, queue_id, queue_offset, pos + HEADER_SIZE, body, props, now.wall_ms, **kw)
        record["dledgerIndex"] = log.end_index + 1
        entry, actions = self.server.append(record_line(record), now, lambda code, n: self._acked(record, code, n))
        if entry is None:
            return None, actions, OS_PAGECACHE_BUSY
        self.queue_table[key] = queue_offset + 1
        return record, actions, None

    def await_ack(self, record: dict[str, Any], answer: Answer) -> None:
        """Answer the put of ``record`` when DLedger decides it (always later than the put)."""
        self.waiting[int(record["dledgerIndex"])] = answer

    def _acked(self, record: dict[str, Any], code: int, now: Now) -> list[Action]:
        answer = self.waiting.pop(int(record["dledgerIndex"]), None)
        return answer(put_status(code), now) if answer is not None else []

    # ------------------------------------------------------------------ commits

    def _dispatch(self, entries: list[Entry], now: Now) -> list[Action]:
        """The reput: committed entries into the consume queues, in log order; held pulls and
        the delay levels hear of them on the master."""
        b = self.broker
        batch = append_replicated(b.store, transfer_lines("\n".join(e.body for e in entries).encode()))
        actions: list[Action] = [*batch.appends]
        actions += [a for p in replicated_gaps(batch.gaps) for a in p.actions(b.name)]
        if not b.is_slave:
            for topic, queue_id in sorted(batch.queues):
                actions += b.puller.notify_message_arriving(topic, queue_id, now)
                actions += b.schedule.on_dispatched(topic, queue_id, now) + b.timer.on_dispatched(topic, now)
        return actions

    def snapshot(self) -> dict[str, Any]:
        return {**self.server.snapshot(), "waiting": len(self.waiting)}
