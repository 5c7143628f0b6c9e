"""The JSON-lines rule (docs/design.md §6, "JSON-lines files"): a line ends at "\\n" only, the
piece after the last one is torn, a bad line in the middle is given back and moves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqemu import jsonlines, wire_json
from tests import strategies

text = strategies.text()
values = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | text,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                      max_leaves=6)
objects = st.dictionaries(text, values, max_size=5)


@settings(max_examples=80, deadline=None)
@given(st.lists(objects, max_size=8))
def test_what_the_writers_write_reads_back_whole_as_bytes_and_as_text(records: list[dict]) -> None:
    data = b"".join(wire_json.dumps_line(r) for r in records)
    assert jsonlines.parse(data).records == records
    parsed = jsonlines.parse(data.decode("utf-8"))
    assert parsed.records == records and parsed.bad == [] and parsed.torn is None
    assert [len(line) for line in parsed.lines] == [len(wire_json.dumps(r).decode()) for r in records]


def test_the_characters_splitlines_breaks_at_stay_inside_their_line() -> None:
    line = wire_json.dumps_line({"body": "a\u2028b\x85c\u2029d"})
    assert b"\xe2\x80\xa8" in line  # written raw, not escaped: the reason for the rule
    assert len(line.decode().splitlines()) == 4
    assert jsonlines.parse(line * 3).records == [{"body": "a\u2028b\x85c\u2029d"}] * 3


@settings(max_examples=60, deadline=None)
@given(st.lists(objects, min_size=2, max_size=6), st.data())
def test_a_torn_last_line_is_skipped_quietly_and_only_it(records: list[dict], data: st.DataObject) -> None:
    lines = [wire_json.dumps_line(r) for r in records]
    last = lines[-1]
    cut = data.draw(st.integers(1, len(last) - 1))  # any byte of the last write but its newline
    parsed = jsonlines.parse(b"".join(lines[:-1]) + last[:cut])
    assert parsed.records == records[:-1] and parsed.bad == [] and parsed.torn == last[:cut]


@settings(max_examples=60, deadline=None)
@given(st.lists(objects, min_size=1, max_size=6), st.data())
def test_a_bad_line_in_the_middle_is_given_back_and_moves_nothing(records: list[dict], data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(records)))
    junk = data.draw(st.sampled_from([b"{\"torn", b"[1, 2]", b"\xff\xfe garbage", b"\"text\"", b"{}{}"]))
    lines = [wire_json.dumps_line(r) for r in records]
    parsed = jsonlines.parse(b"".join(lines[:at]) + junk + b"\n" + b"".join(lines[at:]))
    assert parsed.records == records
    assert [b.number for b in parsed.bad] == [at + 1]
    assert parsed.numbers == [n + 1 for n in range(at)] + [n + 2 for n in range(at, len(records))]
    assert parsed.bad[0].start == sum(map(len, lines[:at]))


def test_blank_lines_are_neither_records_nor_bad_and_a_needle_filters_before_parsing() -> None:
    data = b'{"kind":"a"}\n\n \t\r\n{"kind":"b"}\nnot json but not wanted\n'
    assert jsonlines.parse(data, b'"kind":"b"').records == [{"kind": "b"}]
    assert [b.number for b in jsonlines.parse(data).bad] == [5]


@pytest.mark.parametrize(("content", "cut"), [
    (b"", 0), (b'{"a":1}\n', 0), (b'{"a":1}\n{"b":', 5), (b'{"b":', 5), (b'{"a":1}\n' + b"x" * 200_000, 200_000),
])
def test_cut_torn_line_leaves_whole_lines_only(tmp_path: Path, content: bytes, cut: int) -> None:
    path = tmp_path / "q.jsonl"
    path.write_bytes(content)
    assert jsonlines.ends_a_line(path) == (cut == 0)
    assert jsonlines.cut_torn_line(path, chunk=4096) == cut
    assert path.read_bytes() == content[:len(content) - cut]
    assert jsonlines.ends_a_line(path) and jsonlines.ends_a_line(tmp_path / "missing")


def test_read_gives_a_missing_file_as_empty(tmp_path: Path) -> None:
    assert jsonlines.records(tmp_path / "none.jsonl") == []
