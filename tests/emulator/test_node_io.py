"""The node's store directory and JSON codec: what the hot path keeps open or cached must not
change what ends up on disk or on the wire."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rmqemu import jsonlines, wire_json
from rmqemu.emulator.node.io import EventLog, StoreDir
from rmqemu.emulator.protocol import BadFrame, Frame, decode, encode, encode_body


def test_appends_through_a_kept_open_file_are_on_disk_at_once(tmp_path: Path) -> None:
    store = StoreDir(tmp_path / "s")
    store.append("store/commitlog/T/0.jsonl", ("a",))
    store.append("store/commitlog/T/0.jsonl", ("b\n", "c"))
    # read through another file object while ours is still open: every append is flushed
    assert (tmp_path / "s/store/commitlog/T/0.jsonl").read_text() == "a\nb\nc\n"
    assert store.read("store/commitlog/T/0.jsonl") == "a\nb\nc\n"


def test_persist_after_appends_replaces_the_file_and_later_appends_start_over(tmp_path: Path) -> None:
    store = StoreDir(tmp_path / "s")
    store.append("q.jsonl", ("old",))
    store.persist("q.jsonl", "")  # what MessageStore.delete_topic does to a queue file
    store.append("q.jsonl", ("new",))
    assert (tmp_path / "s/q.jsonl").read_text() == "new\n"
    assert (tmp_path / "s/q.jsonl.bak").read_text() == "old\n"  # string2File keeps the previous content


def test_open_appends_are_capped_and_closed(tmp_path: Path) -> None:
    store = StoreDir(tmp_path / "s")
    store.MAX_OPEN_APPENDS = 3
    for i in range(7):
        store.append(f"q/{i}.jsonl", (str(i),))
    assert len(store._appending) <= 3
    store.close()
    assert store._appending == {}
    assert [(tmp_path / f"s/q/{i}.jsonl").read_text() for i in range(7)] == [f"{i}\n" for i in range(7)]


@pytest.mark.parametrize("relpath", ["/etc/passwd", "../x", "a/../../x"])
def test_store_paths_cannot_leave_the_store(tmp_path: Path, relpath: str) -> None:
    with pytest.raises(ValueError, match="leaves the store directory"):
        StoreDir(tmp_path / "s").append(relpath, ("x",))


def test_event_lines_are_compact_json_one_per_line(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "n.jsonl", "n-0", lambda: 5.0, host=lambda: 7.0)
    log.write("node.start", {"role": "probe", "pid": 1})
    log.write("node.error", {"error": "caf\u00e9 \u2603"})
    log.close()
    assert jsonlines.records(tmp_path / "n.jsonl") == [
        {"ts": 7.0, "node": "n-0", "kind": "node.start", "local_ms": 5.0, "role": "probe", "pid": 1},
        {"ts": 7.0, "node": "n-0", "kind": "node.error", "local_ms": 5.0, "error": "caf\u00e9 \u2603"},
    ]
    assert b" " not in (tmp_path / "n.jsonl").read_bytes().split(b"\n")[0]


def test_frames_round_trip_and_bodies_sort_their_keys() -> None:
    frame = Frame(code=10, opaque=7, fields={"topic": "T", "queueId": 3}, body=encode_body({"b": 1, "a": [1, 2]}))
    assert frame.body == b'{"a":[1,2],"b":1}'
    assert decode(encode(frame)) == frame
    assert encode_body({1: "x"}) == b'{"1":"x"}'  # as the standard library writes int keys


def test_wire_json_refuses_what_would_crash_or_mislead() -> None:
    for bad in (b'{"code": 1e400}', b"[" * 5000, b'{"a": NaN}', b"\xff"):
        with pytest.raises(ValueError):
            wire_json.loads(bad)
    with pytest.raises(BadFrame):
        decode([b'{"code": 1e400, "opaque": 1, "flag": 0}', b""])
    assert wire_json.dumps({"x": math.nan, "y": math.inf}) == b'{"x":null,"y":null}'


def test_a_persist_that_changes_nothing_on_disk_is_skipped_and_any_other_is_not(tmp_path: Path) -> None:
    store = StoreDir(tmp_path / "s")
    f, bak = tmp_path / "s/c.json", tmp_path / "s/c.json.bak"
    store.persist("c.json", "A")
    store.persist("c.json", "A")  # written: the .bak still held nothing
    assert (f.read_text(), bak.read_text()) == ("A", "A")
    f.write_text("changed behind our back")  # to see whether the next persist writes
    store.persist("c.json", "A")
    assert f.read_text() == "changed behind our back"  # file and .bak already held "A": skipped
    store.persist("c.json", "B")
    assert (f.read_text(), bak.read_text()) == ("B", "changed behind our back")
    store.append("c.json", ("x",))  # an append changes the content: the next persist must write
    store.persist("c.json", "B")
    store.persist("c.json", "B")
    assert f.read_text() == "B"
