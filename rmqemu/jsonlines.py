"""JSON Lines as rmqemu reads them: event files, ``faults.jsonl``, a broker's queue files
(docs/design.md §6, "JSON-lines files").

A line ends at ``"\\n"`` and nowhere else. ``str.splitlines()`` must never cut these files: it
also breaks at U+0085, U+2028, U+2029, VT, FF, U+001C-U+001E and CR, and a JSON string may hold
the first three raw (orjson writes them unescaped), so one message would become two broken
pieces. What follows the last ``"\\n"`` is a write a killed process did not finish: a *torn*
line, skipped (given back as ``torn``, never among the bad lines). A complete line that is not
a JSON object is *bad*: given back with its line number and why, for the caller to report, and
it never moves the lines after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AnyStr, Generic

import orjson

SHOWN = 80  # characters of a bad line quoted in its description


@dataclass(frozen=True)
class BadLine:
    """A complete line that is not a JSON object."""

    number: int  # 1-based line number in the file
    start: int  # where it starts: a byte offset (bytes read) or a character offset (text read)
    reason: str
    head: str  # its first characters, for a person to recognise it

    def __str__(self) -> str:
        return f"line {self.number} (at {self.start}): {self.reason}: {self.head!r}"


@dataclass
class Parsed(Generic[AnyStr]):
    """What :func:`parse` found: each JSON object with its line, the bad lines, the torn tail."""

    records: list[dict[str, Any]] = field(default_factory=list)
    lines: list[AnyStr] = field(default_factory=list)  # the line each record was read from
    numbers: list[int] = field(default_factory=list)  # and its 1-based line number
    starts: list[int] = field(default_factory=list)  # and where that line starts
    bad: list[BadLine] = field(default_factory=list)
    torn: AnyStr | None = None  # what follows the last "\n" (None: nothing)


def split(data: AnyStr) -> tuple[list[AnyStr], AnyStr]:
    """The complete lines of ``data`` (without their ``"\\n"``) and what follows the last one
    (empty when ``data`` ends with a newline)."""
    pieces = data.split(b"\n" if isinstance(data, bytes) else "\n")  # type: ignore[arg-type]
    return pieces[:-1], pieces[-1]


def complete_length(data: bytes) -> int:
    """How many bytes of ``data`` are complete lines (up to and including its last ``"\\n"``)."""
    return data.rfind(b"\n") + 1


def parse(data: AnyStr, *needles: AnyStr) -> Parsed[AnyStr]:
    """Every complete line of ``data`` read as one JSON object. Blank lines are skipped;
    ``needles``: only lines holding one of them are parsed (the rest are neither records nor bad)."""
    lines, tail = split(data)
    out: Parsed[AnyStr] = Parsed(torn=tail or None)
    blank = b" \t\r" if isinstance(data, bytes) else " \t\r"  # JSON's whitespace, not Unicode's
    at = 0
    for number, line in enumerate(lines, 1):
        start, at = at, at + len(line) + 1
        if not line.strip(blank) or (needles and not any(n in line for n in needles)):
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            out.bad.append(_bad(number, start, f"not JSON ({exc.msg})", line))
            continue
        if not isinstance(record, dict):
            out.bad.append(_bad(number, start, f"a JSON {type(record).__name__}, not an object", line))
            continue
        out.records.append(record)
        out.lines.append(line)
        out.numbers.append(number)
        out.starts.append(start)
    return out


def _bad(number: int, start: int, reason: str, line: str | bytes) -> BadLine:
    head = line[:SHOWN * 4].decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    return BadLine(number, start, reason, head[:SHOWN])


def read(path: Path, *needles: bytes) -> Parsed[bytes]:
    """:func:`parse` of a file's bytes; a file that does not exist reads as empty."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    return parse(data, *needles)


def records(path: Path, *needles: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a file's complete lines (bad and torn lines left out)."""
    return read(path, *needles).records


def ends_a_line(path: str | Path) -> bool:
    """Whether appending to ``path`` starts a new line: it is empty, missing, or ends in ``"\\n"``."""
    try:
        with open(path, "rb") as f:
            if f.seek(0, 2) == 0:
                return True
            f.seek(-1, 2)
            return f.read(1) == b"\n"
    except FileNotFoundError:
        return True


def cut_torn_line(path: str | Path, chunk: int = 1 << 16) -> int:
    """Truncate ``path`` after its last ``"\\n"``, so that the next append does not glue its
    line onto a torn one; returns how many bytes were cut (0: it already ended a line)."""
    if ends_a_line(path):
        return 0
    with open(path, "r+b") as f:
        end = pos = f.seek(0, 2)
        while pos > 0:
            step = min(chunk, pos)
            f.seek(pos - step)
            found = f.read(step).rfind(b"\n")
            if found >= 0:
                pos = pos - step + found + 1
                break
            pos -= step
        f.truncate(pos)
    return end - pos
