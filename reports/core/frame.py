"""One run's tables as the core reads them: events as pandas, the node table, the run's bounds.

:func:`to_frame` is the one conversion from Arrow (what :mod:`reports.core.lines` parses the
event lines into) to pandas, so every core function sees the same
dtypes: whole numbers as nullable ``Int64``, booleans as nullable ``boolean``, doubles as
``float64`` (NaN for null), strings as objects (None for null) and nested values (lists,
structs, maps) as ``pd.ArrowDtype`` columns, vectorized through their ``.list`` and
``.struct`` accessors.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa

from rmqemu.reports.core.lines import Tally, parse
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


def events(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Events of one run as the core reads them, from dicts such as ``{"ts": 1.0, "node":
    "pg-1-0", "kind": "send", ...}`` (``seq`` in list order): what the tests build inline. They
    are read as JSON lines are (:func:`reports.core.lines.parse`), so they must keep the event
    registry's types. Raises ValueError if a record is not a readable line."""
    recs = list(records)
    body = b"".join(orjson.dumps(r, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n" for r in recs)
    table, bad = parse(body, [f.name for f in EVENTS])
    if bad:
        raise ValueError(f"{bad} record(s) without ts or with a value of the wrong type")
    table = table.set_column(table.schema.get_field_index(SEQ), pa.field(SEQ, pa.int64()),
                             pa.array(range(len(table)), pa.int64()))
    files = pa.array([r.get(FILE, "") if isinstance(r.get(FILE, ""), str) else "" for r in recs], pa.string())
    return to_frame(table.add_column(len(table.schema) - 1, pa.field(FILE, pa.string()), files))


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

    @classmethod
    def of_tally(cls, t: Tally, scale: float = 1.0) -> RunInfo | None:
        """The numbers of a run from its lines' tally (None without a readable line)."""
        if t.lo is None or t.hi is None:
            return None
        return cls(t.lo, t.hi, t.stop, t.up, scale)


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
