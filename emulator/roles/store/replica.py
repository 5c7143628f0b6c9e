"""A slave's side of HA replication in the store: the body a transfer travels in, and the
records it brings stored unchanged (docs/rocketmq-model.md §2.8; the master's side is
:meth:`MessageStore.transfer_from`).

A transfer is the master's stored lines, one per line, so a line ends at ``"\\n"`` only
(docs/design.md §6, "JSON-lines files"): a record keeps its topic, queue, queue offset, msgId
and commit-log offset on the slave, and a gap in what the master sent keeps its offsets there too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqemu import wire_json
from rmqemu.emulator.roles.common.base import Append
from rmqemu.emulator.roles.store.message_store import MessageStore, queue_file, record_problem


def transfer_body(lines: list[str]) -> bytes:
    """An HA transfer's body: the records' lines, one per line (docs/design.md §6)."""
    return "\n".join(lines).encode()


def transfer_lines(body: bytes) -> list[str]:
    """The lines of a transfer's body, for :func:`append_replicated`."""
    return body.decode("utf-8", errors="replace").split("\n")


@dataclass
class ReplicaBatch:
    """What :func:`append_replicated` did with one HA transfer."""

    appends: list[Append]
    queues: set[tuple[str, int]]
    accepted: int = 0
    skipped: int = 0  # already held (a repeated transfer)
    rejected: int = 0  # unreadable, or a queue offset we already hold (diverged logs)
    gaps: list[tuple[str, int, int, int]] = field(default_factory=list)  # (topic, queue, first, count) lost


def append_replicated(store: MessageStore, lines: list[str]) -> ReplicaBatch:
    """A slave stores what its master transferred (``HAClient.dispatchReadRequest`` then
    ``appendToCommitLog``; the reput builds the consume queues): each line goes unchanged to
    its queue file. A record below our max offset is one we have; one whose queue offset we
    already hold is refused (logs that diverged, e.g. a master that lost its last write in a
    kill), but still moves our offset so the same record is not asked for again; one past
    a gap keeps its offset, the gap kept as lost (:meth:`MessageStore.place`)."""
    batch = ReplicaBatch([], set())
    by_file: dict[str, list[str]] = {}
    for line in lines:
        try:
            record = wire_json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or record_problem(record) is not None:
            batch.rejected += 1
            continue
        offset, topic, qid = record["commitLogOffset"], record["topic"], record["queueId"]
        if offset < store.next_commit_offset:
            batch.skipped += 1
            continue
        record["storeSize"] = len(line)
        missing = store.place(record)
        if missing >= 0:
            batch.accepted += 1
            batch.gaps += [(topic, qid, record["queueOffset"] - missing, missing)] if missing else []
            batch.queues.add((topic, qid))
            by_file.setdefault(queue_file(topic, qid), []).append(line)
        else:
            batch.rejected += 1
        store.next_commit_offset = max(store.next_commit_offset, offset + len(line))
    batch.appends = [Append(path, tuple(ls)) for path, ls in by_file.items()]
    return batch
