"""A DLedger member's log (dledger 0.2.6 ``DLedgerMmapFileStore``): entries by index, each with the
term it was written in and its position in the data file, and the committed index.

An entry's body is opaque here (the broker puts a stored message's line in it). On disk the log
is ``dledger/data.jsonl``, one entry a line; an append returns the :class:`Append` of its line,
a truncation the :class:`Persist` of the whole file, and :meth:`DLedgerLog.restore` reads it
back, stopping at the first line that does not continue the log (a torn tail). The committed
index is not on disk: the broker knows it from what it dispatched (docs/rocketmq-model.md §8.2).
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqemu import wire_json
from rmqemu.emulator.roles.common.base import Append, Persist
from rmqemu.jsonlines import parse

DATA_FILE = "dledger/data.jsonl"
HEADER_SIZE = 48  # DLedgerEntry.BODY_OFFSET: magic, size, index, term, pos, channel, chain and body crc, body size


@dataclass(frozen=True)
class Entry:
    """One log entry. Two entries are equal when index, term, position and body are."""

    index: int
    term: int
    pos: int
    body: str

    @property
    def size(self) -> int:
        return HEADER_SIZE + len(self.body.encode("utf-8", "surrogatepass"))

    def to_wire(self) -> dict[str, object]:
        return {"index": self.index, "term": self.term, "pos": self.pos, "body": self.body}

    @classmethod
    def from_wire(cls, data: object) -> "Entry":
        """An entry from a push or a file line; ``ValueError`` if it is not one."""
        if not isinstance(data, dict):
            raise ValueError(f"expected an entry object, got {type(data).__name__}")
        index, term, pos, body = (data.get(k) for k in ("index", "term", "pos", "body"))
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (index, term, pos)):
            raise ValueError("an entry's index, term and pos are integers >= 0")
        if not isinstance(body, str):
            raise ValueError("an entry's body is a string")
        return cls(index, term, pos, body)


class DLedgerLog:
    """The entries ``0..end_index`` (nothing is ever deleted from the front here: begin is 0)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.committed_index = -1

    @property
    def begin_index(self) -> int:
        return 0 if self.entries else -1

    @property
    def end_index(self) -> int:
        return len(self.entries) - 1

    @property
    def end_term(self) -> int:
        return self.entries[-1].term if self.entries else -1

    def get(self, index: int) -> Entry | None:
        return self.entries[index] if 0 <= index < len(self.entries) else None

    def _next_pos(self) -> int:
        last = self.entries[-1] if self.entries else None
        return last.pos + last.size if last else 0

    def append_as_leader(self, term: int, body: str) -> tuple[Entry, Append]:
        """The next index and position, in the leader's current term."""
        entry = Entry(len(self.entries), term, self._next_pos(), body)
        self.entries.append(entry)
        return entry, Append(DATA_FILE, (_line(entry),))

    def append_as_follower(self, entry: Entry) -> Append:
        """A pushed entry at ``end_index + 1`` (the caller checked index, role, term and leader)."""
        assert entry.index == len(self.entries), (entry.index, len(self.entries))
        self.entries.append(entry)
        return Append(DATA_FILE, (_line(entry),))

    def truncate(self, entry: Entry) -> tuple[list[Entry], Persist]:
        """``truncate``: keep the log up to ``entry`` and make ``entry`` the last one -- if the
        local entry at its index equals it, everything after it goes; otherwise it replaces the
        local entry there and everything after. Returns the entries removed and the new file."""
        keep = entry.index + 1 if self.get(entry.index) == entry else entry.index
        keep = min(keep, len(self.entries))
        removed = self.entries[keep:]
        self.entries = self.entries[:keep]
        if len(self.entries) == entry.index:
            self.entries.append(entry)
        elif len(self.entries) < entry.index:  # a gap below the leader's entry: DLedger refuses it too
            raise ValueError(f"truncate at {entry.index} past the local end {len(self.entries) - 1}")
        self.committed_index = min(self.committed_index, self.end_index)
        return removed, Persist(DATA_FILE, "".join(_line(e) + "\n" for e in self.entries))

    def update_committed_index(self, term: int, new_index: int, current_term: int) -> list[Entry]:
        """``updateCommittedIndex``: move the committed index forward (never back, never past the
        end, never for a term older than ours); returns the entries it newly commits, in order."""
        if new_index == -1 or not self.entries or term < current_term or new_index == self.committed_index:
            return []
        if new_index < self.committed_index:
            return []
        new_index = min(new_index, self.end_index)
        newly = self.entries[self.committed_index + 1:new_index + 1]
        self.committed_index = new_index
        return newly

    def restore(self, text: str | None) -> int:
        """Read ``dledger/data.jsonl`` back; the entries that continue the log from index 0 are
        kept, everything from the first line that does not (a damaged or torn tail) is dropped.
        Returns how many complete lines were dropped."""
        self.entries, self.committed_index = [], -1
        parsed = parse(text or "")
        complete = len(parsed.records) + len(parsed.bad)
        for number, record in zip(parsed.numbers, parsed.records, strict=True):
            if parsed.bad and parsed.bad[0].number < number:
                break
            try:
                entry = Entry.from_wire(record)
            except ValueError:
                break
            if entry.index != len(self.entries) or entry.pos != self._next_pos():
                break
            self.entries.append(entry)
        return complete - len(self.entries)


def _line(entry: Entry) -> str:
    return wire_json.dumps(entry.to_wire()).decode()
