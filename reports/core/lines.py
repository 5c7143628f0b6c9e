"""Event lines parsed into the core's Arrow tables by the process that reads them (a Spark task,
or this one): pyarrow's JSON reader with the registry's types (:data:`reports.core.schema.EVENTS`)
and only the columns asked for.

Why pyarrow: on the 1M-event benchmark run it parses about 80 MB/s per core straight into typed
columns, against about 33 MB/s for orjson plus building the columns from its dicts
(bench/README.md, "Tasks read their own files").

**Pieces.** A :class:`Piece` is the lines of a file that *start* in a byte range, so a large file
can be cut anywhere and every line is read by exactly one piece. Each line keeps its place:
``seq`` is the file's index in its run shifted left by :data:`SEQ_SHIFT` plus the line's byte
offset, so lines of one node keep their order whoever reads them.

**Broken lines** (docs/design.md §6): a line that is not a JSON object, has no ``ts``, or has a
value of another type in a column read is counted and dropped; a blank line is skipped. The
typed read takes a piece whole; only when it fails are the piece's lines parsed one by one
(orjson), lines of older runs converted (:func:`rmqemu.events.upgrade`) and the typed read
repeated on the rest; lines it still refuses are found by halving.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import json as pa_json

from rmqemu import jsonlines
from rmqemu.events import upgrade
from rmqemu.reports.core.schema import EVENTS, FILE, SEQ

#: ``seq`` = file index << SEQ_SHIFT | byte offset: files up to 1 TiB, a million files a run.
SEQ_SHIFT = 40
#: The reader's block: lines are parsed a block at a time, on pyarrow's threads.
BLOCK_BYTES = 1 << 22
_NL = 10


@dataclass(frozen=True)
class Piece:
    """The lines of ``path`` that start in bytes ``[start, end)`` (``end`` -1: to its end).
    ``name`` is how ``bad_lines`` names the file, ``index`` its place among its run's files."""

    path: str
    name: str
    index: int
    start: int = 0
    end: int = -1


@dataclass(frozen=True)
class Tally:
    """What a run's lines add up to: readable (good) lines, broken ones per file name, the first
    and last ``ts`` of the good ones and the first ``run.stop`` and ``run.start``."""

    good: int = 0
    bad: dict[str, int] = field(default_factory=dict)
    lo: float | None = None
    hi: float | None = None
    stop: float | None = None
    up: float | None = None

    def __add__(self, other: Tally) -> Tally:
        def pick(a: float | None, b: float | None, f: Any) -> float | None:
            return b if a is None else a if b is None else f(a, b)
        bad = dict(self.bad)
        for name, n in other.bad.items():
            bad[name] = bad.get(name, 0) + n
        return Tally(self.good + other.good, bad, pick(self.lo, other.lo, min), pick(self.hi, other.hi, max),
                     pick(self.stop, other.stop, min), pick(self.up, other.up, min))


def schema_of(columns: Iterable[str]) -> pa.Schema:
    """The read schema of ``columns`` (event fields of :data:`EVENTS`; ``seq`` and ``file`` are
    the reader's own)."""
    return pa.schema([EVENTS.field(c) for c in dict.fromkeys(columns) if c not in (SEQ, FILE)])


def _open(path: str) -> IO[bytes]:
    if "://" in path:
        from pyarrow import fs  # only for URIs: local files need none of it

        filesystem, inner = fs.FileSystem.from_uri(path)
        return filesystem.open_input_file(inner)  # type: ignore[return-value]
    return open(path, "rb")


def _to_line_end(fh: IO[bytes]) -> bytes:
    """The bytes up to and including the next newline (or the end of the file)."""
    out = []
    while True:
        chunk = fh.read(1 << 16)
        if not chunk:
            break
        cut = chunk.find(b"\n")
        if cut >= 0:
            out.append(chunk[:cut + 1])
            break
        out.append(chunk)
    return b"".join(out)


def piece_bytes(piece: Piece) -> tuple[bytes, int]:
    """``(bytes, offset)``: the piece's whole lines and where the first starts in the file."""
    with _open(piece.path) as fh:
        start = piece.start
        if start > 0:
            fh.seek(start - 1)
            start += len(_to_line_end(fh)) - 1  # the line under way at start belongs to the piece before
        if 0 <= piece.end <= start:
            return b"", start
        fh.seek(start)
        data = fh.read() if piece.end < 0 else fh.read(piece.end - start)
        if piece.end >= 0 and data and not data.endswith(b"\n"):
            data += _to_line_end(fh)
    return data, start


def strict(data: bytes, columns: Sequence[str]) -> pa.Table:
    """Every line of ``data`` read with ``columns`` as it is: no conversion, nothing dropped.
    Raises ``pyarrow.ArrowInvalid`` at the first line that is not a JSON object of those types."""
    return _read(data, schema_of(columns), max(map(len, data.split(b"\n")), default=0))


def _read(body: bytes, schema: pa.Schema, longest: int) -> pa.Table:
    return pa_json.read_json(
        pa.BufferReader(body),
        read_options=pa_json.ReadOptions(block_size=max(BLOCK_BYTES, longest + 2)),
        parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))


def _typed(lines: list[bytes], schema: pa.Schema) -> tuple[pa.Table, np.ndarray]:
    """``lines`` (each one JSON object) read with ``schema``, and which of them were kept: a
    group the reader refuses is halved until the lines it refuses stand alone."""
    try:
        return _read(b"\n".join(lines), schema, max(map(len, lines))), np.ones(len(lines), bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if len(lines) == 1:
            return schema.empty_table(), np.zeros(1, bool)
    half = len(lines) // 2
    (a, ka), (b, kb) = _typed(lines[:half], schema), _typed(lines[half:], schema)
    return pa.concat_tables([a, b]), np.concatenate([ka, kb])


def _line_by_line(data: bytes, schema: pa.Schema) -> tuple[pa.Table, np.ndarray, int]:
    """The slow path: ``(table, line offsets of its rows, broken lines)``."""
    # a piece is whole lines, but a file's last may lack its newline: a line here, bad if torn
    parsed = jsonlines.parse(data if data.endswith(b"\n") else data + b"\n")
    bad = len(parsed.bad)
    kept = [line if (new := upgrade(rec)) is rec else orjson.dumps(new)
            for rec, line in zip(parsed.records, parsed.lines, strict=True)]
    offsets = parsed.starts
    if not kept:
        return schema.empty_table(), np.zeros(0, np.int64), bad
    table, ok = _typed(kept, schema)
    return table, np.asarray(offsets, np.int64)[ok], bad + int((~ok).sum())


def parse(data: bytes, columns: Sequence[str], first: int = 0) -> tuple[pa.Table, int]:
    """``(table, broken lines)``: the JSON lines of ``data`` with ``columns`` (``ts`` among them)
    and ``seq`` (``first`` plus the line's byte offset in ``data``), in line order."""
    schema = schema_of(columns)
    buf = np.frombuffer(data, np.uint8)
    ends = np.append(np.flatnonzero(buf == _NL), len(buf))
    starts = np.concatenate([[0], ends[:-1] + 1])
    lines = ends > starts
    table = None
    if lines.any():
        try:
            table = _read(data, schema, int((ends - starts).max()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            table = None
    if table is not None and table.num_rows == int(lines.sum()):
        offsets, bad = starts[lines], 0
    elif lines.any():
        table, offsets, bad = _line_by_line(data, schema)
    else:
        table, offsets, bad = schema.empty_table(), np.zeros(0, np.int64), 0
    table = table.append_column(pa.field(SEQ, pa.int64()), pa.array(offsets.astype(np.int64) + first))
    timed = pc.is_valid(table.column("ts"))
    untimed = len(table) - pc.sum(timed).as_py() if len(table) else 0
    return (table.filter(timed) if untimed else table), bad + untimed


def tally(table: pa.Table, bad: int, name: str) -> Tally:
    """The :class:`Tally` of the readable lines ``table`` (``ts`` and ``kind`` read) of file ``name``."""
    if not len(table):
        return Tally(0, {name: bad} if bad else {})
    ts, kind = table.column("ts"), table.column("kind")

    def first(k: str) -> float | None:
        return pc.min(pc.filter(ts, pc.equal(kind, k))).as_py()
    lo_hi = pc.min_max(ts).as_py()
    return Tally(len(table), {name: bad} if bad else {}, lo_hi["min"], lo_hi["max"], first("run.stop"),
                 first("run.start"))


def read_piece(piece: Piece, columns: Sequence[str]) -> tuple[pa.Table, Tally]:
    """A piece's readable lines (``columns``, ``ts``/``kind`` included, and ``seq``) and their tally."""
    data, offset = piece_bytes(piece)
    table, bad = parse(data, columns, (piece.index << SEQ_SHIFT) + offset)
    return table, tally(table, bad, piece.name)
