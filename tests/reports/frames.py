"""Tiny inline DataFrames for the unit tests of single transforms.

Why not ``runlog``: a hand-made run directory goes through loading and the whole pipeline, so a
wrong number there could come from any stage. These helpers build exactly the input one
transform takes (with an explicit DDL schema, so an empty table and a whole-number ``ts`` have
the types the pipeline gives them, and the ``run`` column of one run, :func:`with_run`) and read the result back as sorted plain tuples.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def frame(spark: Any, ddl: str, rows: Iterable[Sequence[Any]]) -> Any:
    """``spark.createDataFrame`` with the schema ``ddl`` (e.g. ``"node string, start double"``).

    Whole numbers in ``double`` columns become floats, so the rows can be written as ``(0, 10)``
    like the times they stand for (Spark refuses an ``int`` for a double field)."""
    from pyspark.sql.types import DoubleType

    schema = spark.createDataFrame([], ddl).schema
    dbl = [isinstance(f.dataType, DoubleType) for f in schema.fields]
    data = [tuple(float(v) if d and isinstance(v, int) else v for v, d in zip(r, dbl, strict=True)) for r in rows]
    return with_run(spark.createDataFrame(data, schema))


#: The ``run`` of the inline tables: every transform is keyed by ``run`` (reports.intervals).
RUN = "r"


def with_run(df: Any, run: str = RUN) -> Any:
    """``df`` with the ``run`` column every transform keys on (unless it has one)."""
    from pyspark.sql import functions as F

    return df if "run" in df.columns else df.withColumn("run", F.lit(run))


def rows(df: Any, *cols: str) -> list[tuple[Any, ...]]:
    """The rows of ``df`` restricted to ``cols``, as sorted tuples (``None`` sorts first)."""
    out = [tuple(r[c] for c in cols) for r in df.select(*cols).collect()]
    return sorted(out, key=lambda t: tuple((v is not None, v) for v in t))
