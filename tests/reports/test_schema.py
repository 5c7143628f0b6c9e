"""The read schema is the event registry's (:mod:`reports.core.schema`): every registered field is
a column and every column a registered field, of the registered type unless
``reports.core.schema.OVERRIDES`` says why; and a line of every kind with every field set is
read whole, in this process and in Spark's tasks."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from rmqemu import events
from rmqemu.event_types import ListOf, MapOf, Pair, Scalar, Struct, Type
from rmqemu.reports.core import schema
from rmqemu.reports.local import read_run
from tests.reports.runlog import write_run

#: Column types the core relies on (casts, bit tests, list functions, the node table).
_PAIRS = pa.list_(pa.list_(pa.string()))
_QUEUES = pa.list_(pa.struct([pa.field("broker", pa.string()), pa.field("queue_id", pa.int32())]))
RELIED_ON: dict[str, pa.DataType] = {
    "ts": pa.float64(), "local_ms": pa.float64(), "pid": pa.int64(), "broker_id": pa.int32(), "code": pa.int32(),
    "signal": pa.int32(), "targets": pa.list_(pa.string()),
    "params": pa.struct([pa.field("links", _PAIRS), pa.field("offset_ms", pa.float64())]),
    "read_queues": pa.int32(), "write_queues": pa.int32(), "perm": pa.int32(),
    "queue_datas": pa.list_(pa.struct([pa.field("broker", pa.string()), pa.field("read", pa.int32()),
                                       pa.field("write", pa.int32()), pa.field("perm", pa.int32())])),
    "masters": pa.list_(pa.string()), "publish_queues": _QUEUES, "changed": pa.bool_(), "queue_id": pa.int32(),
    "attempt": pa.int32(), "latency_ms": pa.float64(), "msg_ids": pa.list_(pa.string()),
    "cids": pa.list_(pa.string()), "allocated": _QUEUES,
}


def test_every_registry_field_is_a_column_and_every_column_a_registry_field() -> None:
    registry = set(events.columns())
    read = set(schema.EVENTS.names) - {schema.FILE, schema.SEQ}
    assert registry - read == set(), "registered but not read by the report"
    assert read - registry == set(), "read by the report but not registered"
    assert {"mode", "subscribe_queues"} <= read
    assert schema.EVENTS.names[-2:] == [schema.FILE, schema.SEQ]
    assert schema.EVENTS.field(schema.SEQ).type == pa.int64()


def test_columns_have_the_registry_type_unless_overridden() -> None:
    assert set(schema.OVERRIDES) <= set(events.columns())
    for f in schema.EVENT_FIELDS:
        expected = schema.OVERRIDES.get(f.name) or schema.arrow_type(events.columns()[f.name].type)
        assert f.type == expected, f.name
    assert schema.EVENTS.field("mode").type == pa.string()
    assert schema.EVENTS.field("subscribe_queues").type == _QUEUES
    assert set(schema.OVERRIDES) == {"params"}  # a projection, not another type
    for f in schema.OVERRIDES["params"]:
        events.KINDS["fault.start"].field("params").type.member(f.name)  # type: ignore[union-attr]


def test_the_types_the_reports_rely_on_did_not_change() -> None:
    got = {f.name: f.type for f in schema.EVENT_FIELDS}
    assert {k: got[k] for k in RELIED_ON} == RELIED_ON


def example(t: Type) -> Any:
    """A value of type ``t`` (every member of a struct set)."""
    if isinstance(t, Scalar):
        return {"str": "x", "int": 7, "long": 2**40, "float": 1.5, "bool": True}[t.name]
    if isinstance(t, Pair):
        return [example(t.item), example(t.item)]
    if isinstance(t, ListOf):
        return [example(t.item)]
    if isinstance(t, MapOf):
        return {"node-0": example(t.value)}
    assert isinstance(t, Struct)
    return {f.name: example(f.type) for f in t.fields}


@pytest.fixture()
def full_lines(tmp_path) -> tuple[str, list[dict[str, Any]]]:
    """A run dir with one line of every kind, every field set."""
    lines = []
    for i, kind in enumerate(events.KINDS.values()):
        line = {"ts": 1000.0 + i, "node": "n-0", "kind": kind.name, "local_ms": 1.0,
                **{f.name: example(f.type) for f in kind.fields}}
        assert events.problems(line) == [], kind.name
        lines.append(line)
    return str(write_run(tmp_path / "r", lines, nodes={"n-0": {"role": "broker"}})), lines


def _assert_whole(rows: dict[str, dict[str, Any]]) -> None:
    for kind in events.KINDS.values():
        for f in kind.fields:
            assert rows[kind.name][f.name] is not None, f"{kind.name}.{f.name} was not read"
    assert rows["send"]["mode"] == "x" and rows["client.route"]["subscribe_queues"] == [{"broker": "x", "queue_id": 7}]
    assert rows["node.exit"]["signal"] == 7 and rows["client.route"]["changed"] is True


def test_a_full_line_of_every_kind_is_read_whole(full_lines) -> None:
    run_dir, lines = full_lines
    meta, table = read_run(run_dir)
    assert meta.bad_lines == {} and meta.event_count == len(lines) == table.num_rows
    assert table.schema == schema.EVENTS
    _assert_whole({r["kind"]: r for r in table.to_pylist()})


@pytest.mark.spark
def test_spark_tasks_read_a_full_line_of_every_kind(spark, full_lines) -> None:
    from rmqemu.reports.engine import analyse_runs, names

    run_dir, lines = full_lines
    for share_bytes in (1 << 30, 0):  # read by the task that analyses the run, and by a read task
        meta = analyse_runs(spark, [run_dir], names(["m.outcomes"]), share_bytes=share_bytes)[0].meta
        assert (meta.bad_lines, meta.event_count) == ({}, len(lines))
