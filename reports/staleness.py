"""Route staleness (docs/design.md §7): views, view-vs-truth pieces, stale intervals,
per-(client, topic) and per-(namesrv, topic) totals, and per-fault convergence.

A *view* is piecewise constant: each ``client.route`` (or ``ns.route``) line holds until
the next one for the same topic, or until the node's ``node.exit``. Intersecting view
intervals with truth intervals of the same topic gives *pieces* on which both are
constant; a piece is ``over`` if the view has a broker truth lacks, ``under`` if truth
has a broker the view lacks. A piece that is both adds its length to ``stale_over_ms``
and to ``stale_under_ms`` but only once to ``stale_ms``.

A *stale interval* is a maximal run of contiguous stale pieces: going from over to
under without a fresh moment in between is one interval, not two.

The namesrv view is the route a producer would build from the namesrv's latest
``ns.route``: brokers whose queue data is writable (``perm & 2`` and, as in
``topicRouteData2TopicPublishInfo``, at least one write queue; a missing ``write``
counts as writable) and whose name is in ``masters``.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, functions as F

from reports.intervals import RUN, from_change_points, keyed, overlap_pieces, runs_of, scalar
from reports.schema import PERM_WRITE
from reports.truth import Scalar, exits


def _views(lines: DataFrame, events: DataFrame, who: str, run_end: Scalar, until: Scalar | None) -> DataFrame:
    """Intervals of ``lines`` (``run, node, topic, ts, seq, view``) cut by the node's exits, and
    at ``until`` (the run's ``run.stop``: the shutdown is not measured; null: not cut)."""
    stops = (exits(events).join(lines.select(RUN, "node", "topic").distinct(), [RUN, "node"])
             .withColumn("_exit", F.lit(True)))
    both = lines.withColumn("_exit", F.lit(False)).unionByName(stops, allowMissingColumns=True)
    iv = from_change_points(both, ["node", "topic"], run_end).filter(~F.col("_exit"))
    if until is not None:
        stop = scalar(until)
        cut: Column = F.when(stop < scalar(run_end), stop)  # null: nothing to cut
        iv = (iv.filter(cut.isNull() | (F.col("start") < cut))
              .withColumn("end", F.when(cut.isNull(), F.col("end")).otherwise(F.least("end", cut))))
    return iv.select(RUN, F.col("node").alias(who), "topic", "start", "end", "view")


def client_views(events: DataFrame, run_end: Scalar, until: Scalar | None = None) -> DataFrame:
    """``run, client, topic, start, end, view``: broker names in the client's publish queues."""
    lines = events.filter(F.col("kind") == "client.route").select(
        RUN, "node", "topic", "ts", "seq",
        F.array_sort(F.array_distinct(F.transform(
            F.coalesce("publish_queues", F.array().cast("array<array<string>>")), lambda q: q[0]))).alias("view"))
    return _views(lines, events, "client", run_end, until)


def namesrv_views(events: DataFrame, run_end: Scalar, until: Scalar | None = None) -> DataFrame:
    """``run, namesrv, topic, start, end, view``: the producer route a namesrv would hand out."""
    qd = F.coalesce("queue_datas", F.array().cast("array<struct<broker:string,read:int,write:int,perm:int>>"))
    masters = F.coalesce("masters", F.array().cast("array<string>"))
    usable = F.filter(qd, lambda q: ((q["perm"].bitwiseAND(PERM_WRITE)) != 0)
                      & (F.coalesce(q["write"], F.lit(1)) > 0) & F.array_contains(masters, q["broker"]))
    lines = events.filter(F.col("kind") == "ns.route").select(
        RUN, "node", "topic", "ts", "seq", F.array_sort(F.array_distinct(F.transform(usable, lambda q: q["broker"]))).alias("view"))
    return _views(lines, events, "namesrv", run_end, until)


def stale_pieces(views: DataFrame, truth: DataFrame, who: str) -> DataFrame:
    """``run, <who>, topic, start, end, view, brokers, over, under, stale``."""
    pieces = overlap_pieces(views, truth, ["topic"])
    over = F.size(F.array_except("view", "brokers")) > 0
    under = F.size(F.array_except("brokers", "view")) > 0
    return (pieces.select(RUN, who, "topic", "start", "end", "view", "brokers")
            .withColumn("over", over).withColumn("under", under)
            .withColumn("stale", F.col("over") | F.col("under")))


def stale_intervals(pieces: DataFrame, who: str) -> DataFrame:
    """``run, <who>, topic, start, end, duration_ms``: maximal contiguous stale stretches."""
    return runs_of(pieces, [who, "topic"], "stale").withColumn("duration_ms", F.col("end") - F.col("start"))


def staleness_summary(pieces: DataFrame, intervals: DataFrame, who: str) -> DataFrame:
    """Per (run, who, topic): ``measured_ms, stale_ms, stale_over_ms, stale_under_ms,
    intervals, max_ms`` (zeros for a view that was never stale)."""
    dur = F.col("end") - F.col("start")
    keys = keyed([who, "topic"])
    totals = pieces.groupBy(*keys).agg(
        F.sum(dur).alias("measured_ms"),
        F.sum(F.when(F.col("stale"), dur).otherwise(0.0)).alias("stale_ms"),
        F.sum(F.when(F.col("over"), dur).otherwise(0.0)).alias("stale_over_ms"),
        F.sum(F.when(F.col("under"), dur).otherwise(0.0)).alias("stale_under_ms"))
    runs = intervals.groupBy(*keys).agg(F.count(F.lit(1)).alias("intervals"),
                                               F.max("duration_ms").alias("max_ms"))
    return (totals.join(runs, keys, "left")
            .select(*keys, "measured_ms", "stale_ms", "stale_over_ms", "stale_under_ms",
                    F.coalesce("intervals", F.lit(0)).alias("intervals"),
                    F.coalesce("max_ms", F.lit(0.0)).alias("max_ms")))


def fault_convergence(fault_iv: DataFrame, client_intervals: DataFrame) -> DataFrame:
    """``run, fault_id, fault, start, next_start, converged_ms, stale_views``.

    ``converged_ms``: from the fault's start to the end of the last client stale
    interval overlapping ``[start, next_start)``; 0 if none. ``stale_views`` counts the
    (client, topic) pairs with such an interval.
    """
    f, i = fault_iv.alias("f"), client_intervals.alias("i")
    cond = ((F.col("i.run") == F.col("f.run")) & (F.col("i.start") < F.col("f.next_start"))
            & (F.col("i.end") > F.col("f.start")))
    return (f.join(i, cond, "left")
            .groupBy("f.run", "f.fault_id", "f.fault", "f.start", "f.next_start")
            .agg(F.coalesce(F.max("i.end") - F.col("f.start"), F.lit(0.0)).alias("converged_ms"),
                 F.countDistinct("i.client", "i.topic").alias("stale_views"))
            .select(RUN, "fault_id", "fault", "start", "next_start", "converged_ms", "stale_views"))
