"""The broker's message store: one append-only consume queue per (topic, queueId) (docs/rocketmq-model.md §4.5).

RocketMQ writes every message to one commit log and indexes it per queue; the emulator keeps a
list per queue and a running "commit log offset" so that ``offsetMsgId`` and
CONSUMER_SEND_MSG_BACK's look-up by offset work as in RocketMQ. Durability: each put returns an
``Append`` of one JSON line to ``store/commitlog/<topic>/<qid>.jsonl``;
:mod:`emulator.roles.store.restore` reads those files back at start (queues of the topics the
restored topic table lists).

``get`` implements ``DefaultMessageStore.getMessage``'s status decisions, including
``nextOffsetCorrection`` (a slave without ``offsetCheckInSlave`` never moves a consumer's offset).

Commit-log view for HA replication (emulator/roles/broker/ha.py): every record keeps its place in one
virtual commit log -- ``commitLogOffset`` plus ``storeSize``, the length of its JSON line -- so
``transfer_from`` can hand a slave "everything from offset X" as the very lines the master wrote,
and the slave stores them unchanged (:mod:`emulator.roles.store.replica`: same topics, queue
ids, queue offsets, msgIds and commit-log offsets, as RocketMQ's byte-for-byte copy gives). ``storeSize`` is
not in the line; the restore recomputes it from the line's length, so master and slave agree on
every offset after restarts too.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from rmqemu import wire_json
from rmqemu.emulator.roles.common.base import Append, Persist
from rmqemu.emulator.roles.common.message import body_fields

MAX_FILTER_SCAN = 16000 // 20  # maxFilterMessageCount / CQ_STORE_UNIT_SIZE: entries scanned per pull
MAX_TRANSFER_COUNT = 32  # maxTransferCountOnMessageInMemory
LOST = "lost"  # the key of a queue entry whose message could not be restored (MessageStore.place)


class GetMessageStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass
class GetResult:
    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[dict[str, Any]] = field(default_factory=list)


def offset_msg_id(store_host: str, commit_log_offset: int) -> str:
    """``MessageDecoder.createMessageId``: 4-byte IP, 4-byte port, 8-byte offset, upper hex."""
    host, _, port = store_host.rpartition(":")
    ip = bytes(int(p) for p in host.split(".")) if host.count(".") == 3 else b"\x7f\x00\x00\x01"
    return (ip + int(port or 0).to_bytes(4, "big") + commit_log_offset.to_bytes(8, "big")).hex().upper()


def store_host_of(record: dict[str, Any], default: str) -> str:
    """The ``ip:port`` that stored ``record`` (the first 8 bytes of its offsetMsgId), so a slave
    serves its master's store host, as RocketMQ's replicated bytes carry it."""
    try:
        raw = bytes.fromhex(str(record["offsetMsgId"]))[:8]
        return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{int.from_bytes(raw[4:8], 'big')}"
    except (KeyError, ValueError, IndexError):
        return default


def queue_file(topic: str, queue_id: int) -> str:
    return f"store/commitlog/{topic}/{queue_id}.jsonl"


def record_problem(record: dict[str, Any]) -> str | None:
    """Why a JSON object read from a queue file or a transfer is no stored message, or None."""
    if not isinstance(record.get("topic"), str):
        return f"topic is {record.get('topic')!r:.40}, not a topic name"
    for key in ("queueId", "queueOffset", "commitLogOffset"):
        value = record.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"{key} is {value!r:.40}, not a whole number >= 0"
    return None


def record_line(record: dict[str, Any]) -> str:
    """The stored line of a record: its JSON without ``storeSize`` (which is this line's length)."""
    return wire_json.dumps({k: v for k, v in record.items() if k != "storeSize"}).decode()


class MessageStore:
    def __init__(self, store_host: str, is_slave: bool = False, offset_check_in_slave: bool = False) -> None:
        self.store_host = store_host
        self.is_slave = is_slave
        self.offset_check_in_slave = offset_check_in_slave
        self.queues: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.by_commit_offset: dict[int, dict[str, Any]] = {}
        self.next_commit_offset = 0
        # the commit log in offset order (records and their offsets, for bisect)
        self.log: list[dict[str, Any]] = []
        self.log_offsets: list[int] = []

    # ------------------------------------------------------------------ writes

    def put(self, topic: str, queue_id: int, body: bytes | str, properties: dict[str, str], wall_ms: float,
            born_timestamp: int = 0, reconsume_times: int = 0, flag: int = 0, sys_flag: int = 0,
            born_host: str = "", parked_msg_id: str | None = None) -> tuple[dict[str, Any], Append]:
        """Append one message; returns the stored record (with queueOffset, storeTimestamp, msgId).
        ``parked_msg_id``: a delivered delayed message's id as its send was acked (``parkedMsgId``,
        emulator-only: the id the broker writes its consumption under for a real client without UNIQ_KEY)."""
        record = self.make_record(topic, queue_id, len(self.queues.get((topic, queue_id), ())),
                                  self.next_commit_offset, body, properties, wall_ms, born_timestamp,
                                  reconsume_times, flag, sys_flag, born_host, parked_msg_id)
        line = wire_json.dumps(record).decode()
        record["storeSize"] = len(line)
        self._index(record)
        return record, Append(queue_file(topic, queue_id), (line,))

    def make_record(self, topic: str, queue_id: int, queue_offset: int, commit_log_offset: int,
                    body: bytes | str, properties: dict[str, str], wall_ms: float, born_timestamp: int = 0,
                    reconsume_times: int = 0, flag: int = 0, sys_flag: int = 0, born_host: str = "",
                    parked_msg_id: str | None = None) -> dict[str, Any]:
        """The record a message is stored as, at the given queue and commit-log offsets; it is
        not stored (a DLedger broker stores it once its entry is committed)."""
        record: dict[str, Any] = {
            "topic": topic, "queueId": queue_id, "queueOffset": queue_offset, **body_fields(body),
            "properties": dict(properties), "bornTimestamp": int(born_timestamp), "bornHost": born_host,
            "storeTimestamp": int(wall_ms), "reconsumeTimes": int(reconsume_times), "flag": flag,
            "sysFlag": sys_flag, "commitLogOffset": commit_log_offset,
        }
        record["offsetMsgId"] = offset_msg_id(self.store_host, commit_log_offset)
        record["msgId"] = properties.get("UNIQ_KEY") or record["offsetMsgId"]
        if parked_msg_id is not None:
            record["parkedMsgId"] = parked_msg_id
        return record

    def _index(self, record: dict[str, Any]) -> None:
        q = self.queues.setdefault((record["topic"], record["queueId"]), [])
        if record["queueOffset"] != len(q):
            return  # not the next offset: place() decides what a restored or replicated one means
        record.setdefault("storeSize", len(record_line(record)))
        q.append(record)
        self.by_commit_offset[record["commitLogOffset"]] = record
        self.next_commit_offset = max(self.next_commit_offset, record["commitLogOffset"] + record["storeSize"])
        self.log.append(record)
        self.log_offsets.append(record["commitLogOffset"])

    def delete_topic(self, topic: str) -> list[Persist]:
        """``cleanUnusedTopic``: drop its queues; the returned Persists empty their files."""
        gone = [k for k in self.queues if k[0] == topic]
        for k in gone:
            for r in self.queues.pop(k):
                self.by_commit_offset.pop(r.get("commitLogOffset", -1), None)
        if gone:
            self.log = [r for r in self.log if r["topic"] != topic]
            self.log_offsets = [r["commitLogOffset"] for r in self.log]
        return [Persist(queue_file(t, q), "") for t, q in gone]

    def place(self, record: dict[str, Any]) -> int:
        """Index a restored or replicated record (``storeSize`` set) at its own queue offset, never
        at the next free one: how many offsets before it were missing, each kept as a lost entry
        so every later message keeps its offset (docs/design.md §6, "JSON-lines files"); -1 when
        the queue already holds that offset (a repeated line, or logs that diverged)."""
        q = self.queues.setdefault((record["topic"], record["queueId"]), [])
        missing = record["queueOffset"] - len(q)
        if missing < 0:
            return -1
        for k in range(len(q), record["queueOffset"]):
            q.append({"topic": record["topic"], "queueId": record["queueId"], "queueOffset": k, LOST: True,
                      "storeTimestamp": record.get("storeTimestamp", 0), "properties": {}})
        self._index(record)
        return missing

    def sort_log(self) -> None:
        """Put the commit-log view back in offset order after a restore (the files are per queue)."""
        order = sorted(range(len(self.log)), key=lambda i: self.log_offsets[i])
        self.log = [self.log[i] for i in order]
        self.log_offsets = [self.log_offsets[i] for i in order]

    # ------------------------------------------------------------------ HA (commit-log view)

    def max_phy_offset(self) -> int:
        """``getMaxPhyOffset``: where the next commit-log write goes; what a slave reports."""
        return self.next_commit_offset

    def transfer_from(self, offset: int, max_bytes: int) -> tuple[list[str], int]:
        """The lines of the records at commit-log ``offset`` and after, up to ``max_bytes``
        (``haTransferBatchSize``; at least one record, never a partial one -- RocketMQ cuts raw
        bytes anywhere), and the offset that follows the last one (``offset`` if none)."""
        i = bisect_left(self.log_offsets, offset)
        lines: list[str] = []
        size, nxt = 0, offset
        while i < len(self.log):
            r = self.log[i]
            if lines and size + r["storeSize"] > max_bytes:
                break
            lines.append(record_line(r))
            size += r["storeSize"]
            nxt = r["commitLogOffset"] + r["storeSize"]
            i += 1
        return lines, nxt

    # ------------------------------------------------------------------ reads

    def min_offset(self, topic: str, queue_id: int) -> int:
        return 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        """The next offset to be written (RocketMQ's ``getMaxOffsetInQueue``)."""
        return len(self.queues.get((topic, queue_id), []))

    def look_message_by_offset(self, commit_log_offset: int) -> dict[str, Any] | None:
        return self.by_commit_offset.get(commit_log_offset)

    def _correct(self, old: int, new: int) -> int:
        """``nextOffsetCorrection``: only a master (or offsetCheckInSlave) moves the offset."""
        return new if (not self.is_slave or self.offset_check_in_slave) else old

    def get(self, topic: str, queue_id: int, offset: int, max_msgs: int,
            matches: Callable[[dict[str, Any]], bool] = lambda m: True) -> GetResult:
        """``DefaultMessageStore.getMessage`` (docs/rocketmq-model.md §4.5 status table). Consume queues are created
        on demand in RocketMQ, so an unknown queue is an empty one: NO_MESSAGE_IN_QUEUE."""
        q = self.queues.get((topic, queue_id), [])
        lo, hi = self.min_offset(topic, queue_id), len(q)
        S = GetMessageStatus
        if hi == 0:
            return GetResult(S.NO_MESSAGE_IN_QUEUE, self._correct(offset, 0), lo, hi)
        if offset < lo:
            return GetResult(S.OFFSET_TOO_SMALL, self._correct(offset, lo), lo, hi)
        if offset == hi:
            return GetResult(S.OFFSET_OVERFLOW_ONE, self._correct(offset, offset), lo, hi)
        if offset > hi:
            return GetResult(S.OFFSET_OVERFLOW_BADLY, self._correct(offset, lo if lo == 0 else hi), lo, hi)
        limit = min(max(1, max_msgs), MAX_TRANSFER_COUNT)
        found: list[dict[str, Any]] = []
        lost = False
        i = offset
        while i < hi and i - offset < max(MAX_FILTER_SCAN, max_msgs) and len(found) < limit:
            if LOST in q[i]:  # the commit log has no message there: RocketMQ's MESSAGE_WAS_REMOVING
                lost = True
            elif matches(q[i]):
                found.append(q[i])
            i += 1
        status = S.FOUND if found else S.MESSAGE_WAS_REMOVING if lost else S.NO_MATCHED_MESSAGE
        return GetResult(status, i, lo, hi, found)

    def snapshot(self) -> dict[str, Any]:
        return {f"{t}:{q}": len(msgs) for (t, q), msgs in sorted(self.queues.items())}
