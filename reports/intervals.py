"""Interval arithmetic on DataFrames, without UDFs.

Every state the metrics talk about (a broker alive, a node paused, a client's view of a
topic) is a set of half-open intervals ``[start, end)`` in host wall ms. These helpers
build them from change points with window functions (``lead``/``lag``/running sums),
merge them, cut a time line into elementary segments and join two piecewise-constant
functions into pieces on which both are constant. They stay in the JVM (no Python
UDFs), which is what makes a million events take seconds rather than minutes.

Conventions: columns ``start``/``end`` are doubles; an interval never has
``end <= start`` (such rows are dropped); ``keys`` are the partitioning columns.

Every table carries the ``run`` column (the run's id, :attr:`reports.load.RunData.id`) and
every key of every helper here starts with it, so one plan analyses any number of runs and
no run's rows ever meet another's. Why it is always the first key: the loaded events are
hash-partitioned by ``run`` (once, before the cache), and a window, group-by or join whose
keys include ``run`` is satisfied by that partitioning, so Spark plans it without a shuffle.
Per-run numbers (the run's end, ...) are :func:`scalar` columns, not literals, for the same
reason: one plan for all runs.
"""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window, functions as F

UNBOUNDED = Window.unboundedPreceding

#: The key column of every table: which run a row belongs to.
RUN = "run"


def keyed(keys: Sequence[str]) -> list[str]:
    """``keys`` with ``run`` first (once): the keys of every window, group-by and join."""
    return [RUN, *(k for k in keys if k != RUN)]


def scalar(value: float | Column | None) -> Column:
    """A per-run number as a Column: a Column (e.g. a per-run attribute of
    :class:`reports.runs.Runs`, a lookup by ``run``) as is, a plain number as a double literal (tests of one run), None
    as a null double."""
    if isinstance(value, Column):
        return value
    return F.lit(None).cast("double") if value is None else F.lit(float(value))


def from_change_points(df: DataFrame, keys: Sequence[str], run_end: float | Column,
                       ts: str = "ts", order: Sequence[str] = ("seq",)) -> DataFrame:
    """Turn change points into intervals: each row holds from its ``ts`` until the next
    row of the same key (ties broken by ``order``), the last one until ``run_end``.

    Rows used only as terminators (e.g. a ``node.exit`` cutting a client's view) should
    be in ``df`` too and filtered out by the caller afterwards.
    """
    w = Window.partitionBy(*keyed(keys)).orderBy(ts, *order)
    nxt = F.coalesce(F.lead(ts).over(w), scalar(run_end))
    return (df.withColumn("start", F.col(ts)).withColumn("end", nxt)
            .filter(F.col("end") > F.col("start")))


def merge_intervals(df: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Union of possibly overlapping intervals per key, as disjoint intervals.

    Touching intervals (``[a, b)`` and ``[b, c)``) merge. Used where overlapping faults of
    one kind (two pauses of one node, two partitions cutting one link) must count once.
    """
    keys = keyed(keys)
    w = Window.partitionBy(*keys).orderBy("start", "end")
    prev_end = F.max("end").over(w.rowsBetween(UNBOUNDED, -1))
    opens = (prev_end.isNull() | (F.col("start") > prev_end)).cast("int")
    return (df.select(*keys, "start", "end").withColumn("_open", opens)
            .withColumn("_grp", F.sum("_open").over(w.rowsBetween(UNBOUNDED, 0)))
            .groupBy(*keys, "_grp").agg(F.min("start").alias("start"), F.max("end").alias("end"))
            .drop("_grp"))


def elementary_segments(boundaries: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Cut each key's time line at its boundary points ``t``: consecutive distinct points
    give the segments ``[t_i, t_{i+1})`` on which nothing changes."""
    keys = keyed(keys)
    w = Window.partitionBy(*keys).orderBy("t")
    return (boundaries.select(*keys, "t").distinct()
            .withColumn("end", F.lead("t").over(w)).withColumnRenamed("t", "start")
            .filter(F.col("end").isNotNull()))


def covers(outer: str, inner: str) -> Column:
    """Join condition: interval ``outer`` contains interval ``inner`` (both aliases)."""
    return (F.col(f"{outer}.start") <= F.col(f"{inner}.start")) & (F.col(f"{outer}.end") >= F.col(f"{inner}.end"))


def contains_ts(interval: str, ts: Column) -> Column:
    """Join condition: ``ts`` in ``[start, end)`` of the aliased interval."""
    return (F.col(f"{interval}.start") <= ts) & (ts < F.col(f"{interval}.end"))


def compress(df: DataFrame, keys: Sequence[str], value: str) -> DataFrame:
    """Merge adjacent intervals of one key that carry the same ``value``."""
    keys = keyed(keys)
    w = Window.partitionBy(*keys).orderBy("start")
    changed = ((F.lag(value).over(w).isNull()) | (F.lag(value).over(w) != F.col(value))
               | (F.lag("end").over(w) != F.col("start"))).cast("int")
    return (df.withColumn("_chg", changed)
            .withColumn("_grp", F.sum("_chg").over(w.rowsBetween(UNBOUNDED, 0)))
            .groupBy(*keys, "_grp", value).agg(F.min("start").alias("start"), F.max("end").alias("end"))
            .drop("_grp"))


def overlap_pieces(left: DataFrame, right: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Pieces where an interval of ``left`` and one of ``right`` with the same keys
    overlap: ``[max(starts), min(ends))``. ``right`` is broadcast (pass the smaller side,
    e.g. the truth time line). Other columns of both sides are kept (they must
    not clash). When each side is disjoint per key, the pieces are disjoint too."""
    keys = keyed(keys)
    a, b = left.alias("a"), F.broadcast(right).alias("b")
    cond = [F.col(f"a.{k}") == F.col(f"b.{k}") for k in keys]
    cond.append(F.col("a.start") < F.col("b.end"))
    cond.append(F.col("b.start") < F.col("a.end"))
    others_a = [F.col(f"a.{c}") for c in left.columns if c not in (*keys, "start", "end")]
    others_b = [F.col(f"b.{c}") for c in right.columns if c not in (*keys, "start", "end")]
    return a.join(b, cond).select(
        *[F.col(f"a.{k}") for k in keys], *others_a, *others_b,  # not aliased: keeps the partitioning by run
        F.greatest("a.start", "b.start").alias("start"), F.least("a.end", "b.end").alias("end"),
    )


def runs_of(df: DataFrame, keys: Sequence[str], flag: str) -> DataFrame:
    """Maximal contiguous stretches where boolean column ``flag`` holds, per key.

    Input: disjoint intervals per key. Two flagged intervals belong to one run when the
    second starts exactly where the first ended. Output: ``keys, start, end``.
    """
    keys = keyed(keys)
    w = Window.partitionBy(*keys).orderBy("start")
    prev_flag = F.lag(flag).over(w)
    prev_end = F.lag("end").over(w)
    opens = (F.col(flag) & (prev_flag.isNull() | ~prev_flag | (prev_end != F.col("start")))).cast("int")
    return (df.withColumn("_open", opens)
            .withColumn("_run", F.sum("_open").over(w.rowsBetween(UNBOUNDED, 0)))
            .filter(F.col(flag))
            .groupBy(*keys, "_run").agg(F.min("start").alias("start"), F.max("end").alias("end"))
            .drop("_run"))
