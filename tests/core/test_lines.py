"""The typed reader of event lines (reports.core.lines): pieces of a file cut at any byte read
every line exactly once, in place; broken lines are counted and dropped, blank ones skipped;
lines of older runs are converted; only the columns asked for are read."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from rmqemu.reports.core.lines import BLOCK_BYTES, SEQ_SHIFT, Piece, Tally, parse, read_piece, strict, tally
from rmqemu.reports.core.schema import SEQ

COLUMNS = ("ts", "node", "kind", "topic", "msg_id", "queue_id", "publish_queues")

#: Lines with what user data may hold: any Unicode (a cut can fall inside a character), escapes,
#: newlines escaped inside strings, a queue list.
LINES = [
    {"ts": 1.0, "node": "pg-1-0", "kind": "node.start", "role": "producer", "pid": 7},
    {"ts": 2.5, "node": "pg-1-0", "kind": "client.route", "topic": "Tópico-😀",
     "publish_queues": [{"broker": "broker-a", "queue_id": 0}, {"broker": "bröker-b", "queue_id": 3}]},
    {"ts": 3, "node": "pg-1-0", "kind": "send", "topic": "T\u0000\u2028x", "msg_id": "m\"1\\\n2", "queue_id": 2},
    {"ts": 4.0, "node": "pg-1-0", "kind": "send", "topic": "T", "msg_id": "中文" * 40, "queue_id": None},
    {"ts": 5.0, "node": "pg-1-0", "kind": "run.stop"},
]


def body(lines: list[dict]) -> bytes:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()


@pytest.fixture()
def log(tmp_path: Path) -> Path:
    path = tmp_path / "pg-1-0.jsonl"
    path.write_bytes(body(LINES))
    return path


def rows(table: pa.Table) -> list[tuple]:
    return [(r["ts"], r["kind"], r["topic"], r["msg_id"], r[SEQ]) for r in table.to_pylist()]


def test_every_cut_of_a_file_into_two_pieces_reads_each_line_once_in_place(log: Path) -> None:
    whole, t = read_piece(Piece(str(log), log.name, 3), COLUMNS)
    assert len(whole) == len(LINES) and t == Tally(5, {}, 1.0, 5.0, 5.0, None)
    assert whole.column(SEQ)[0].as_py() == 3 << SEQ_SHIFT  # the file's index, then the byte offset
    size = log.stat().st_size
    for cut in range(size + 1):
        a, ta = read_piece(Piece(str(log), log.name, 3, 0, cut), COLUMNS)
        b, tb = read_piece(Piece(str(log), log.name, 3, cut, -1), COLUMNS)
        assert rows(pa.concat_tables([a, b])) == rows(whole), cut
        assert ta + tb == t


def test_equal_pieces_of_any_size_read_each_line_once(log: Path) -> None:
    whole = rows(read_piece(Piece(str(log), log.name, 0), COLUMNS)[0])
    size = log.stat().st_size
    for step in (1, 7, 64, 100, size):
        got = []
        for start in range(0, size, step):
            end = -1 if start + step >= size else start + step
            got += rows(read_piece(Piece(str(log), log.name, 0, start, end), COLUMNS)[0])
        assert got == whole, step


def test_broken_lines_are_counted_and_blank_ones_skipped() -> None:
    good = body(LINES[:2])
    data = (good + b"\n   \n" + b'{"ts": 6, "node": "x", "kind": "send", "queue_id": "3"}\n'  # a string in an int
            + b'{"node": "x", "kind": "send"}\n' + b"[1, 2]\n" + b"\x00 not json\n" + body(LINES[2:])
            + b'{"ts": 9, "node": "x", "ki')
    table, bad = parse(data, COLUMNS)
    assert bad == 5 and [r[0] for r in rows(table)] == [1.0, 2.5, 3.0, 4.0, 5.0]
    offsets = [r[4] for r in rows(table)]
    assert [data[o:o + 7] for o in offsets] == [b'{"ts": '] * 5  # each row knows where its line starts
    assert tally(table, bad, "f.jsonl").bad == {"f.jsonl": 5}


def test_a_value_of_another_type_in_a_column_not_read_is_not_a_broken_line() -> None:
    table, bad = parse(b'{"ts": 1, "node": "x", "kind": "node.exit", "signal": "SIGKILL", "pid": []}\n', COLUMNS)
    assert (len(table), bad) == (1, 0)


def test_an_older_runs_queue_pairs_are_read_as_queues() -> None:
    old = b'{"ts": 1, "node": "c", "kind": "client.route", "topic": "T", "publish_queues": [["b", 0], ["b", 1]]}\n'
    with pytest.raises(pa.ArrowInvalid):
        strict(old, COLUMNS)  # as written, not the registry's types
    table, bad = parse(old + body(LINES), COLUMNS)
    assert bad == 0 and table.column("publish_queues")[0].as_py() == [{"broker": "b", "queue_id": 0},
                                                                      {"broker": "b", "queue_id": 1}]
    assert len(table) == 1 + len(LINES) and table.column(SEQ)[1].as_py() == len(old)


def test_a_line_longer_than_the_readers_block_is_read() -> None:
    line = {"ts": 1.0, "node": "c", "kind": "send", "msg_id": "x" * (BLOCK_BYTES + 10)}
    table, bad = parse(body([line, *LINES]), COLUMNS)
    assert (len(table), bad) == (1 + len(LINES), 0)


def test_a_file_uri_is_read_like_its_path(log: Path) -> None:
    by_path = read_piece(Piece(str(log), log.name, 0, 10, -1), COLUMNS)
    by_uri = read_piece(Piece(log.as_uri(), log.name, 0, 10, -1), COLUMNS)
    assert rows(by_uri[0]) == rows(by_path[0]) and by_uri[1] == by_path[1]
