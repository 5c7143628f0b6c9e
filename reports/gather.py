"""Every small result of a report (of one run or of many) in ONE ``collect``.

Why: on a few cores most of a report's time was per-action overhead, not data: a job per
metrics query, per plot query, per materialized table (about 40 per report), each paying
planning, scheduling and JIT warm-up. Here every small query becomes rows of one union
``(q, json)`` (``q`` numbers the query, ``json`` is one of its rows as ``to_json``), so
Spark plans once and runs one action; identical sub-plans (the interval tables several
queries read) are computed once inside it (Spark reuses identical exchanges within a plan).

The queries keep their own schemas: a row comes back as the dict ``to_json`` makes of it
(structs as dicts, arrays as lists, maps as dicts, nulls kept), the same shape as
``Row.asDict(recursive=True)``. Doubles round-trip exactly (Java writes enough digits to
tell any two doubles apart).
"""
from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from functools import reduce
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, functions as F

Rows = list[dict[str, Any]]

#: ``to_json`` drops null fields unless told not to; a metrics row must keep its keys.
_JSON_OPTIONS = {"ignoreNullFields": "false"}
#: How ``to_json`` writes a non-finite double (a string, as Jackson quotes them).
_NON_FINITE = {"NaN", "Infinity", "-Infinity", "+Infinity"}


def _as_json(df: DataFrame, q: int) -> DataFrame:
    cols = [F.col(f"`{c}`") for c in df.columns]
    return df.select(F.lit(q).alias("q"), F.to_json(F.struct(*cols), _JSON_OPTIONS).alias("row"))


def clean(value: Any) -> Any:
    """JSON-safe plain Python: NaN/infinite (as float or as ``to_json``'s string) -> None."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, str) and value in _NON_FINITE:
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def collect_all(queries: Mapping[Hashable, DataFrame]) -> dict[Hashable, Rows]:
    """Run every query of ``queries`` in one Spark action; ``key -> rows`` (unordered)."""
    keys = list(queries)
    out: dict[Hashable, Rows] = {k: [] for k in keys}
    if not keys:
        return out
    union = reduce(DataFrame.unionAll, [_as_json(df, i) for i, df in enumerate(queries.values())])
    for r in union.collect():
        out[keys[r["q"]]].append(clean(json.loads(r["row"])))
    return out


def of_run(rows: Rows, run_id: int) -> Rows:
    """The rows of run ``run_id`` (every query has a ``run`` column: one query answers for
    every run of the analysis), without that column, so a run's document is what it was
    when each run had queries of its own."""
    return [{k: v for k, v in r.items() if k != "run"} for r in rows if r.get("run") == run_id]


def _key(value: Any) -> tuple[bool, Any]:
    """Sort key of one value as Spark's ascending ``orderBy`` puts it: nulls first."""
    return (value is not None, value)


def ordered(rows: Rows, order: Sequence[str] | None) -> Rows:
    """``rows`` sorted by the columns ``order`` (what ``df.orderBy(*order)`` gives)."""
    if not order:
        return rows
    return sorted(rows, key=lambda r: tuple(_key(r.get(c)) for c in order))


def frame(rows: Rows, columns: Sequence[str]) -> pd.DataFrame:
    """Collected rows as pandas with the query's columns (also when there are none)."""
    return pd.DataFrame.from_records(rows, columns=list(columns))
