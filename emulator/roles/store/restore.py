"""A broker's queue files read back at start, and what it says about the ones it finds damaged
(docs/design.md §6, "JSON-lines files").

Each stored message carries its own queue offset, and it keeps it: a line that cannot be read
in the middle of a queue file is reported (a ``broker.store`` event and a line in the node's
log), the offsets it held are served as lost (RocketMQ answers a consume-queue entry whose
commit-log bytes are gone with MESSAGE_WAS_REMOVING, and the consumer moves past), and every
message after it is served at its own offset. Only a torn last line, a write the kill
interrupted and the broker never acknowledged, is dropped quietly; the store cuts it off before
its next append to that file (``StoreDir.append``), as RocketMQ's recovery truncates its commit
log after the last whole message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from rmqemu import jsonlines
from rmqemu.emulator.roles.common.base import Action, Emit, Log
from rmqemu.emulator.roles.store.message_store import MessageStore, queue_file, record_problem


@dataclass(frozen=True)
class StoreProblem:
    """One damaged place in a queue file (or a replicated transfer: ``line`` 0)."""

    file: str  # relative to the node's store directory
    problem: str  # "bad_line": not a stored message; "gap": queue offsets with no message
    reason: str
    line: int = 0  # 1-based line number in the file (0: not from a file's line)
    offset: int = -1  # gap: the first queue offset without a message
    count: int = 0  # gap: how many

    def actions(self, node: str) -> list[Action]:
        """The ``broker.store`` event and the log line that say it."""
        fields: dict[str, Any] = {"queue_file": self.file, "problem": self.problem, "reason": self.reason}
        if self.line:
            fields["line"] = self.line
        if self.problem == "gap":
            fields.update(offset=self.offset, count=self.count)
        return [Emit("broker.store", fields), Log(f"{node}: store: {said(self.file, self.line, self.reason)}")]


@dataclass
class Restored:
    """What :func:`restore` brought back."""

    messages: int = 0
    problems: list[StoreProblem] = field(default_factory=list)


def restore(store: MessageStore, read_store: Callable[[str], str | None],
            queues: Iterable[tuple[str, int]]) -> Restored:
    """Reload the queue files of ``queues`` into ``store``."""
    out = Restored()
    for topic, qid in queues:
        name = queue_file(topic, qid)
        parsed = jsonlines.parse(read_store(name) or "")
        out.problems += [StoreProblem(name, "bad_line", f"{bad.reason}: {bad.head!r}", bad.number)
                         for bad in parsed.bad]
        for record, line, number in zip(parsed.records, parsed.lines, parsed.numbers, strict=True):
            problem = record_problem(record)
            if problem is None and (record["topic"], record["queueId"]) != (topic, qid):
                problem = f"a message of {record['topic']}:{record['queueId']}, not of this queue"
            if problem is not None:
                out.problems.append(StoreProblem(name, "bad_line", problem, number))
                continue
            record["storeSize"] = len(line)
            missing = store.place(record)
            if missing < 0:
                out.problems.append(StoreProblem(
                    name, "bad_line", f"queue offset {record['queueOffset']} again: kept the first", number))
                continue
            if missing:
                first = record["queueOffset"] - missing
                out.problems.append(StoreProblem(
                    name, "gap", f"{_offsets(first, missing)} before line {number}: served as lost, later "
                    "messages keep their offsets", number, first, missing))
            out.messages += 1
    store.sort_log()
    return out


def replicated_gaps(gaps: list[tuple[str, int, int, int]]) -> list[StoreProblem]:
    """The gaps a slave kept as lost in one transfer (:class:`emulator.roles.store.replica.ReplicaBatch` ``gaps``)."""
    return [StoreProblem(queue_file(topic, qid), "gap", f"{_offsets(first, count)} in the master's transfer: "
                         "served as lost", 0, first, count)
            for topic, qid, first, count in gaps]


def said(file: str, line: int | None, reason: str) -> str:
    """How a store problem reads to a person: the node's log line, ``rmqemu launch``'s warning."""
    return f"{file}" + (f" line {line}" if line else "") + f": {reason}"


def _offsets(first: int, count: int) -> str:
    span = f"queue offset {first}" if count == 1 else f"queue offsets {first}..{first + count - 1}"
    return f"no message at {span}"
