"""Ground-truth intervals of docs/design.md §7: alive, paused, partitioned, hosting, truth.

All functions take the good-events DataFrame (``reports.load``) and return interval
tables (``start``/``end`` in host wall ms), disjoint per key so that a point lookup joins
at most one row.

Choices where docs/design.md leaves room (tested in ``tests/reports``):

* A life runs from a ``node.start`` to the next ``node.exit`` of that node; a second
  ``node.start`` without an exit in between also ends the previous life; a life without
  exit lasts until the run end. Extra ``node.exit`` lines (launcher and injector both
  writing one) are harmless.
* Hosting: in each life, from the first ``broker.topic`` of the topic with ``perm & 2``
  until the life ends. Events logged between an exit and the next start belong to the
  next life; so a restarted broker hosts again from its ``how=restore`` line (or any
  later writable line of that life). A later read-only ``broker.topic`` does not end
  hosting (the definition says "until it exits").
* Auto-create: *hosting* ``TBW102`` (``perm & 2``, as for any topic) with the inherit bit
  (``perm & 1``), same life rule, as docs/design.md words it. (RocketMQ's broker checks only
  ``isInherited``, but a broker whose TBW102 is not writable is never in a TBW102 route.)
* A pause ends at its own ``fault.end`` (same ``fault_id``); a pause without one ends at the
  first later ``resume`` fault that targets the node (a hand-written log), else at the run end.
  Overlapping pauses of one node are merged.
* A partition blocks each directed ``params.links`` pair from its ``fault.start`` to its
  ``fault.end`` (else the run end); both directions count, so links are stored as the
  unordered pair ``(a, b)`` with ``a <= b`` and merged over overlapping partitions.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, functions as F

from reports.intervals import (
    RUN, UNBOUNDED, compress, covers, elementary_segments, from_change_points, keyed, merge_intervals,
    overlap_pieces, scalar,
)

#: A per-run number: a plain float for one run, or a Column looked up by ``run``.
Scalar = float | Column
from reports.schema import AUTO_CREATE_TOPIC, PERM_INHERIT, PERM_WRITE


def lives(events: DataFrame, run_end: Scalar) -> DataFrame:
    """``run, node, start, end``: when each node (any role) was alive."""
    marks = events.filter(F.col("kind").isin("node.start", "node.exit")).select(RUN, "node", "ts", "seq", "kind")
    return (from_change_points(marks, ["node"], run_end)
            .filter(F.col("kind") == "node.start").select(RUN, "node", "start", "end"))


def exits(events: DataFrame) -> DataFrame:
    """``run, node, ts, seq`` of every ``node.exit``."""
    return events.filter(F.col("kind") == "node.exit").select(RUN, "node", "ts", "seq")


def broker_nodes(nodes: DataFrame) -> DataFrame:
    """``run, node, broker, broker_id`` of broker nodes (node table from ``reports.load``)."""
    return nodes.filter((F.col("role") == "broker") & F.col("broker").isNotNull()).select(
        RUN, "node", "broker", F.coalesce("broker_id", F.lit(0)).alias("broker_id"))


def _first_per_life(marks: DataFrame, ends: DataFrame, keys: list[str], run_end: Scalar) -> DataFrame:
    """From the first row of ``marks`` in each life (per ``keys``) until the life's exit.

    ``ends`` (``run, node, ts, seq``) are the exits; they are copied to every key of their node.
    """
    keys = keyed(keys)
    key_rows = marks.select(*keys).distinct()
    stops = ends.join(key_rows, [RUN, "node"]).withColumn("_exit", F.lit(1))
    both = marks.withColumn("_exit", F.lit(0)).unionByName(stops, allowMissingColumns=True)
    w = F.sum("_exit").over(Window.partitionBy(*keys).orderBy("ts", "seq").rowsBetween(UNBOUNDED, -1))
    both = both.withColumn("_life", F.coalesce(w, F.lit(0)))
    extra = [c for c in marks.columns if c not in (*keys, "ts", "seq")]
    agg = [F.min(F.when(F.col("_exit") == 0, F.col("ts"))).alias("start"),
           F.coalesce(F.min(F.when(F.col("_exit") == 1, F.col("ts"))), scalar(run_end)).alias("end")]
    agg += [F.first(F.when(F.col("_exit") == 0, F.col(c)), ignorenulls=True).alias(c) for c in extra]
    return (both.groupBy(*keys, "_life").agg(*agg).drop("_life")
            .filter(F.col("start").isNotNull() & (F.col("end") > F.col("start"))))


def _topic_lines(events: DataFrame, nodes: DataFrame) -> DataFrame:
    """``broker.topic`` lines with broker name/id filled from the node table if absent."""
    bn = broker_nodes(nodes).withColumnRenamed("broker", "_b").withColumnRenamed("broker_id", "_bid")
    return (events.filter(F.col("kind") == "broker.topic").join(bn, [RUN, "node"], "left")
            .withColumn("broker", F.coalesce("broker", "_b"))
            .withColumn("broker_id", F.coalesce("broker_id", "_bid", F.lit(0))).drop("_b", "_bid"))


def hosts(events: DataFrame, nodes: DataFrame, run_end: Scalar) -> DataFrame:
    """``run, node, topic, broker, broker_id, start, end``: a broker node hosting a topic."""
    marks = (_topic_lines(events, nodes).filter((F.col("perm").bitwiseAND(PERM_WRITE)) != 0)
             .select(RUN, "node", "topic", "ts", "seq", "broker", "broker_id"))
    return _first_per_life(marks, exits(events), ["node", "topic"], run_end)


def autocreate(events: DataFrame, nodes: DataFrame, run_end: Scalar) -> DataFrame:
    """``run, node, start, end``: the node hosts ``TBW102`` (write bit) with the inherit bit."""
    both = PERM_WRITE | PERM_INHERIT
    marks = (_topic_lines(events, nodes)
             .filter((F.col("topic") == AUTO_CREATE_TOPIC) & ((F.col("perm").bitwiseAND(both)) == both))
             .select(RUN, "node", "ts", "seq"))
    return _first_per_life(marks, exits(events), ["node"], run_end)


def write_queues(events: DataFrame, run_end: Scalar) -> DataFrame:
    """``run, node, topic, write_queues, start, end``: the latest ``broker.topic`` of a topic
    on a node (any perm), until the next one or the node's exit."""
    lines = events.filter(F.col("kind") == "broker.topic").select(RUN, "node", "topic", "ts", "seq", "write_queues")
    stops = (exits(events).join(lines.select(RUN, "node", "topic").distinct(), [RUN, "node"])
             .withColumn("_exit", F.lit(True)))
    both = lines.withColumn("_exit", F.lit(False)).unionByName(stops, allowMissingColumns=True)
    return (from_change_points(both, ["node", "topic"], run_end).filter(~F.col("_exit"))
            .select(RUN, "node", "topic", "write_queues", "start", "end"))


def faults(events: DataFrame, run_end: Scalar) -> DataFrame:
    """``run, fault_id, fault, targets, params, start, end, next_start``: one row per fault.

    ``end`` is the ``fault.end`` time or the run end; ``next_start`` is the next fault's
    ``fault.start`` strictly later than this one (faults starting together share a
    convergence window), else the run end.
    """
    starts = (events.filter(F.col("kind") == "fault.start")
              .groupBy(RUN, "fault_id").agg(F.min("ts").alias("start"), F.first("fault").alias("fault"),
                                       F.first("targets").alias("targets"), F.first("params").alias("params")))
    ends = events.filter(F.col("kind") == "fault.end").groupBy(RUN, "fault_id").agg(F.min("ts").alias("_end"))
    # the next distinct start time (an equi-join on the time, not a range join: a range
    # join is planned as a broadcast nested loop, a Spark job of its own)
    times = (starts.select(RUN, F.col("start").alias("t")).distinct()
             .withColumn("_next", F.lead("t").over(Window.partitionBy(RUN).orderBy("t"))))
    nxt = (starts.select(RUN, "fault_id", F.col("start").alias("t")).join(times, [RUN, "t"], "left")
           .select(RUN, "fault_id", "_next"))
    end = scalar(run_end)
    return (starts.join(ends, [RUN, "fault_id"], "left").join(nxt, [RUN, "fault_id"], "left")
            .withColumn("end", F.coalesce("_end", end))
            .withColumn("next_start", F.coalesce("_next", end))
            .withColumn("has_end", F.col("_end").isNotNull())
            .select(RUN, "fault_id", "fault", "targets", "params", "start", "end", "has_end", "next_start"))


def pauses(fl: DataFrame, run_end: Scalar) -> DataFrame:
    """``run, node, start, end``: merged paused intervals (see module docstring), from the
    :func:`faults` table ``fl`` (read, not rebuilt: the report cuts it once)."""
    p = (fl.filter(F.col("fault") == "pause")
         .select(RUN, "fault_id", F.explode("targets").alias("node"), "start",
                 F.when(F.col("has_end"), F.col("end")).alias("fend")))
    res = fl.filter(F.col("fault") == "resume").select(RUN, F.explode("targets").alias("node"), F.col("start").alias("r"))
    same = (F.col("p.run") == F.col("q.run")) & (F.col("p.node") == F.col("q.node"))
    p = (p.alias("p").join(res.alias("q"), same & (F.col("q.r") > F.col("p.start")), "left")
         .groupBy("p.run", "p.fault_id", "p.node", "p.start", "p.fend").agg(F.min("q.r").alias("r"))
         .withColumn("end", F.coalesce("fend", "r", scalar(run_end))))
    return merge_intervals(p.select(RUN, "node", "start", "end").filter(F.col("end") > F.col("start")), ["node"])


def partitions(fl: DataFrame) -> DataFrame:
    """``run, a, b, start, end``: the link between nodes ``a <= b`` is blocked (either way),
    from the :func:`faults` table ``fl``."""
    links = (fl.filter(F.col("fault") == "partition")
             .select(RUN, "start", "end", F.explode("params.links").alias("link")).filter(F.size("link") >= 2))
    pairs = links.select(RUN, F.least(F.col("link")[0], F.col("link")[1]).alias("a"),
                         F.greatest(F.col("link")[0], F.col("link")[1]).alias("b"), "start", "end")
    return merge_intervals(pairs.filter(F.col("end") > F.col("start")), ["a", "b"])


def truth(host_iv: DataFrame, pause_iv: DataFrame, topics: DataFrame,
          run_start: Scalar, run_end: Scalar, life_iv: DataFrame | None = None) -> DataFrame:
    """``run, topic, start, end, brokers``: sorted broker names whose master (``broker_id`` 0)
    is alive, not paused and hosts the topic. Covers ``[run_start, run_end)`` for every
    topic in ``topics`` (empty array where none does); adjacent equal sets are merged.

    ``life_iv`` (:func:`lives`): hosting counts only inside a life of the master, so a
    ``broker.topic`` line logged before the node's ``node.start`` (a restore) or by a node
    that never started does not make it part of truth."""
    masters = host_iv.filter(F.col("broker_id") == 0).select(RUN, "node", "topic", "broker", "start", "end")
    if life_iv is not None:
        masters = overlap_pieces(masters, life_iv.select(RUN, "node", "start", "end"), ["node"])
    mpause = pause_iv.join(masters.select(RUN, "node", "topic").distinct(), [RUN, "node"])
    edge = topics.select(RUN, "topic").distinct()
    lo, hi = scalar(run_start), scalar(run_end)
    bounds = (masters.select(RUN, "topic", F.col("start").alias("t"))
              .unionByName(masters.select(RUN, "topic", F.col("end").alias("t")))
              .unionByName(mpause.select(RUN, "topic", F.col("start").alias("t")))
              .unionByName(mpause.select(RUN, "topic", F.col("end").alias("t")))
              .unionByName(edge.select(RUN, "topic", lo.alias("t")))
              .unionByName(edge.select(RUN, "topic", hi.alias("t")))
              .filter((F.col("t") >= lo) & (F.col("t") <= hi)))
    segs = elementary_segments(bounds, ["topic"])
    same = (F.col("s.run") == F.col("h.run")) & (F.col("s.topic") == F.col("h.topic"))
    present = (segs.alias("s").join(F.broadcast(masters).alias("h"), same & covers("h", "s"))
               .select("s.run", "s.topic", "s.start", "s.end", "h.broker", "h.node"))
    same = (F.col("x.run") == F.col("q.run")) & (F.col("x.node") == F.col("q.node"))
    present = present.alias("x").join(F.broadcast(pause_iv).alias("q"), same & covers("q", "x"), "left_anti")
    line = (segs.join(present, [RUN, "topic", "start", "end"], "left").groupBy(RUN, "topic", "start", "end")
            .agg(F.array_sort(F.collect_set("broker")).alias("brokers")))
    return compress(line, ["topic"], "brokers")
