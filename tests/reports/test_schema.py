"""The Spark read schema is the event registry's: every registered field is a column and every
column a registered field, of the registered type unless ``reports.schema.OVERRIDES`` says why;
and a line of every kind with every field set is read whole by Spark."""
from __future__ import annotations

from typing import Any

from pyspark.sql import types as T

from reports import schema
from reports.load import load_run
from rmqemu import events
from rmqemu.event_types import ListOf, MapOf, Pair, Scalar, Struct, Type
from tests.reports.runlog import write_run

#: Column types the report modules rely on (casts, bit tests, array functions, the node table).
RELIED_ON = {
    "ts": "double", "local_ms": "double", "pid": "bigint", "broker_id": "int", "code": "int", "signal": "string",
    "targets": "array<string>", "params": "struct<links:array<array<string>>,offset_ms:double>",
    "read_queues": "int", "write_queues": "int", "perm": "int",
    "queue_datas": "array<struct<broker:string,read:int,write:int,perm:int>>", "masters": "array<string>",
    "publish_queues": "array<array<string>>", "changed": "string", "queue_id": "int", "attempt": "int",
    "latency_ms": "double", "msg_ids": "array<string>", "cids": "array<string>", "allocated": "array<array<string>>",
}


def test_every_registry_field_is_a_column_and_every_column_a_registry_field() -> None:
    registry = set(events.columns())
    read = {f.name for f in schema.EVENT_SCHEMA.fields} - {schema.CORRUPT_COLUMN}
    assert registry - read == set(), "registered but not read by the report"
    assert read - registry == set(), "read by the report but not registered"
    assert {"mode", "subscribe_queues"} <= read


def test_columns_have_the_registry_type_unless_overridden() -> None:
    assert set(schema.OVERRIDES) <= set(events.columns())
    for f in schema.EVENT_FIELDS:
        expected = schema.OVERRIDES.get(f.name) or schema.spark_type(events.columns()[f.name].type)
        assert f.dataType == expected, f.name
    assert schema.EVENT_SCHEMA["mode"].dataType == T.StringType()
    assert schema.EVENT_SCHEMA["subscribe_queues"].dataType.simpleString() == "array<array<string>>"
    for name in schema.FAULT_PARAMS.fieldNames():
        events.KINDS["fault.start"].field("params").type.member(name)  # type: ignore[union-attr]


def test_the_types_the_reports_rely_on_did_not_change() -> None:
    got = {f.name: f.dataType.simpleString() for f in schema.EVENT_SCHEMA.fields}
    assert {k: got[k] for k in RELIED_ON} == RELIED_ON
    assert schema.QUEUE_DATA.simpleString() == "struct<broker:string,read:int,write:int,perm:int>"


def example(t: Type) -> Any:
    """A value of type ``t`` (every member of a struct set)."""
    if isinstance(t, Scalar):
        return {"str": "x", "int": 7, "long": 2**40, "float": 1.5, "bool": True}[t.name]
    if isinstance(t, Pair):
        return [example(t.first), example(t.second)]
    if isinstance(t, ListOf):
        return [example(t.item)]
    if isinstance(t, MapOf):
        return {"node-0": example(t.value)}
    assert isinstance(t, Struct)
    return {f.name: example(f.type) for f in t.fields}


def test_spark_reads_a_full_line_of_every_kind_whole(spark, tmp_path) -> None:
    lines = []
    for i, kind in enumerate(events.KINDS.values()):
        line = {"ts": 1000.0 + i, "node": "n-0", "kind": kind.name, "local_ms": 1.0,
                **{f.name: example(f.type) for f in kind.fields}}
        assert events.problems(line) == [], kind.name
        lines.append(line)
    run = load_run(spark, str(write_run(tmp_path / "r", lines, nodes={"n-0": {"role": "broker"}})))
    assert run.bad_lines == {} and run.event_count == len(lines)
    rows = {r["kind"]: r for r in run.events.collect()}
    for kind in events.KINDS.values():
        for f in kind.fields:
            assert rows[kind.name][f.name] is not None, f"{kind.name}.{f.name} was not read"
    assert rows["send"]["mode"] == "x" and rows["client.route"]["subscribe_queues"] == [["x", "7"]]
    assert rows["node.exit"]["signal"] == "7" and rows["client.route"]["changed"] == "true"
