"""One run's tables as the core reads them: events as pandas, the node table, the run's bounds.

:func:`to_frame` is the one conversion from Arrow (what Spark hands a task, what
:func:`table_of` builds from JSON lines) to pandas, so every core function sees the same
dtypes: whole numbers as nullable ``Int64``, booleans as nullable ``boolean``, doubles as
``float64`` (NaN for null), strings as objects (None for null) and nested values (lists,
structs, maps) as ``pd.ArrowDtype`` columns, vectorized through their ``.list`` and
``.struct`` accessors.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import json as pa_json

from rmqemu.reports.core.schema import EVENTS, FILE, NODES, SEQ

#: Width of the over-time plots' time bins: a run split into this many.
TIME_BINS = 120


def _dtype(t: pa.DataType) -> Any:
    if pa.types.is_integer(t):
        return pd.Int64Dtype()
    if pa.types.is_boolean(t):
        return pd.BooleanDtype()
    if pa.types.is_nested(t):
        return pd.ArrowDtype(t)
    return None  # doubles and strings: pandas' own


def to_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow table as the core's pandas frame (see the module docstring)."""
    return table.to_pandas(types_mapper=_dtype)


def from_json_columns(table: pa.Table) -> pa.Table:
    """``table`` with each nested column (per :data:`~reports.core.schema.EVENTS`) that arrives
    as JSON text parsed back to its Arrow type. Why: Spark moves a JSON string between tasks far
    faster than a nested value (a list of pairs, a list of structs), which it converts field by
    field; the few lines that have one are parsed here in one vectorized pass per column."""
    for i, name in enumerate(table.column_names):
        want = EVENTS.field(name).type if name in EVENTS.names else None
        if want is None or not pa.types.is_nested(want) or not pa.types.is_string(table.schema.field(i).type):
            continue
        text = table.column(i).combine_chunks()
        valid = text.is_valid()
        values = pc.filter(text, valid)
        body = b"\n".join(b'{"v":' + v + b"}" for v in values.cast(pa.binary()).to_pylist())
        parsed = (pa_json.read_json(io.BytesIO(body), parse_options=pa_json.ParseOptions(
            explicit_schema=pa.schema([("v", want)]))).column("v").combine_chunks() if len(values)
            else pa.array([], want))
        where = pc.subtract(pc.cumulative_sum(pc.cast(valid, pa.int64())), 1)
        column = pc.take(parsed, pc.if_else(valid, where, None))
        table = table.set_column(i, pa.field(name, want), column)
    return table


def _as_text(value: Any) -> Any:
    """A JSON scalar read into a string column, as Spark reads it: its JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _coerce(value: Any, t: pa.DataType) -> Any:
    """``value`` shaped for ``t`` where Spark's reader is lenient: numbers and booleans read
    into strings as their text (a pair's queue id, ``signal: 9``), recursively."""
    if value is None:
        return None
    if pa.types.is_string(t):
        return _as_text(value)
    if pa.types.is_list(t) and isinstance(value, list):
        return [_coerce(v, t.value_type) for v in value]
    if pa.types.is_struct(t) and isinstance(value, dict):
        return {f.name: _coerce(value.get(f.name), f.type) for f in t}
    return value


def table_of(records: Iterable[Mapping[str, Any]], file: str = "", first_seq: int = 0) -> tuple[pa.Table, int]:
    """``(events, bad)``: JSON objects as an :data:`~reports.core.schema.EVENTS` table, in order
    (``seq`` from ``first_seq``). A record without ``ts`` or with a value its column cannot hold
    is a bad line, counted and dropped, as Spark's reader does."""
    rows, bad = [], 0
    for i, rec in enumerate(records):
        row = {f.name: _coerce(rec.get(f.name), f.type) for f in EVENTS if f.name not in (FILE, SEQ)}
        row[FILE], row[SEQ] = rec.get(FILE, file), first_seq + i
        try:
            if row["ts"] is None:
                raise ValueError("no ts")
            pa.Table.from_pylist([row], schema=EVENTS)
        except (ValueError, TypeError, pa.ArrowException):
            bad += 1
            continue
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=EVENTS), bad


def events(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Events of one run as the core reads them, from dicts such as ``{"ts": 1.0, "node":
    "pg-1-0", "kind": "send", ...}`` (``seq`` in list order): what the tests build inline.
    Raises ValueError if a record is not a readable line."""
    table, bad = table_of(records)
    if bad:
        raise ValueError(f"{bad} record(s) without ts or with a value of the wrong type")
    return to_frame(table)


@dataclass(frozen=True)
class RunInfo:
    """A run's numbers every metric reads: the first and last ``ts`` of its readable events,
    the launcher's ``run.stop`` (the shutdown begins) and ``run.start`` (every node up), if
    logged, and the time scale."""

    run_start: float
    run_end: float
    stop_ms: float | None = None
    up_ms: float | None = None
    scale: float = 1.0

    @property
    def measure_end(self) -> float:
        """Where route views and availability stop being measured: ``run.stop``, else the run end."""
        return self.run_end if self.stop_ms is None else min(self.stop_ms, self.run_end)

    @property
    def bin_ms(self) -> float:
        """Width of the over-time plots' time bins: the run split into :data:`TIME_BINS`."""
        return max((self.run_end - self.run_start) / TIME_BINS, 1.0)

    @classmethod
    def of(cls, ev: pd.DataFrame, scale: float = 1.0) -> RunInfo:
        """The numbers of a run whose events are all in ``ev``."""
        def first(kind: str) -> float | None:
            ts = ev.loc[ev["kind"] == kind, "ts"]
            return float(ts.min()) if len(ts) else None
        return cls(float(ev["ts"].min()), float(ev["ts"].max()), first("run.stop"), first("run.start"), scale)


def node_table(manifest_nodes: Mapping[str, Mapping[str, Any]], ev: pd.DataFrame) -> pd.DataFrame:
    """One row per node: ``node, role, broker, broker_id, group, auto_create``. The manifest
    is the primary source; the first non-null values of ``node.start`` lines fill in nodes it
    lacks (hand-made logs need not repeat themselves), with ``auto_create`` null."""
    rows = []
    for name, info in manifest_nodes.items():
        bid, auto = info.get("broker_id"), info.get("autoCreateTopicEnable")
        rows.append({"node": name, "role": info.get("role"), "broker": info.get("broker"),
                     "broker_id": int(bid) if isinstance(bid, (int, float)) and not isinstance(bid, bool) else None,
                     "group": info.get("group"), "auto_create": auto if isinstance(auto, bool) else None})
    known = set(manifest_nodes)
    starts = ev.loc[(ev["kind"] == "node.start") & ~ev["node"].isin(known),
                    ["node", "role", "broker", "broker_id", "group"]]
    from_events = starts.groupby("node", sort=True).first().reset_index()  # first non-null per column
    manifest = to_frame(pa.Table.from_pylist(rows, schema=NODES))
    if from_events.empty:
        return manifest
    from_events["auto_create"] = pd.array([None] * len(from_events), dtype="boolean")
    return pd.concat([manifest, from_events[manifest.columns].astype(manifest.dtypes.to_dict())], ignore_index=True)
