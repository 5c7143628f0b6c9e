"""Misrouted sends (docs/design.md §7): classify every send attempt by its target.

The target node is the master of the named broker (``broker_id`` 0) unless the send
says ``broker_id``; it is looked up in the node table and defaults to the naming rule
``<broker>-<brokerId>``. At the send's ``ts`` the first matching reason wins:
``dead > paused > partitioned > not_master > no_topic > bad_queue``.

Each reason is a left join against an interval table that is disjoint per key, so each
send matches at most one row per table and the row count never changes: six joins keyed by
``run`` (broadcast for a large input; for a small one, sort-merge joins over tables already
partitioned by run), no shuffle of the sends, no UDF.

Choices: sends without a broker (``outcome: no_route``) are not attempts at any broker
and get no reason. For ``bad_queue`` the write queue count is the one of the latest
``broker.topic`` line of the topic on the target node; when the node has no line for the
topic yet but can auto-create it, the count of its ``TBW102`` line is used (RocketMQ
creates at most that many queues). When neither exists the send is not ``bad_queue``.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, functions as F

from reports.intervals import RUN, contains_ts, scalar
from reports.schema import AUTO_CREATE_TOPIC
from reports.truth import Scalar, broker_nodes

#: How far before the run end a send at the run end is looked up (ms; above the float
#: resolution of epoch-ms timestamps, about 0.0002 ms).
END_EPSILON_MS = 0.001

REASONS: tuple[str, ...] = ("dead", "paused", "partitioned", "not_master", "no_topic", "bad_queue")


def sends(events: DataFrame) -> DataFrame:
    """Send attempts: ``run, producer, ts, seq, msg_id, topic, broker, broker_id, queue_id,
    attempt, outcome, code, latency_ms, error, group``."""
    return events.filter(F.col("kind") == "send").select(
        RUN, F.col("node").alias("producer"), "ts", "seq", "msg_id", "topic", "broker", "broker_id",
        "queue_id", "attempt", "outcome", "code", "latency_ms", "error", "group")


def _lookup(df: DataFrame, iv: DataFrame, keys: dict[str, str], flag: str,
            values: dict[str, str] | None = None) -> DataFrame:
    """Left-join interval table ``iv`` at each row's ``ts``; ``keys`` maps iv columns to
    row columns. Adds boolean ``flag`` and the ``values`` (iv column -> new name)."""
    values = values or {}
    right = F.broadcast(iv.select(RUN, *keys, "start", "end", *values).alias("iv"))
    cond = contains_ts("iv", F.col("l._at")) & (F.col(f"iv.{RUN}") == F.col(f"l.{RUN}"))
    for ivc, col in keys.items():
        cond = cond & (F.col(f"iv.{ivc}") == F.col(f"l.{col}"))
    return df.alias("l").join(right, cond, "left").select(
        "l.*", F.col("iv.start").isNotNull().alias(flag),
        *[F.col(f"iv.{src}").alias(dst) for src, dst in values.items()])


def classify_sends(send_df: DataFrame, nodes: DataFrame, lives: DataFrame, pauses: DataFrame,
                   partitions: DataFrame, hosts: DataFrame, autocreate: DataFrame,
                   write_queues: DataFrame, run_end: Scalar | None = None) -> DataFrame:
    """All sends plus ``target`` (node), ``target_id`` and ``reason`` (null when the send
    was well routed or had no broker).

    ``run_end``: intervals are ``[start, end)`` and the ones nothing ended stop at the run
    end, so a send logged at the very end (the last line of a run cut short) is looked up
    a hair earlier, inside them, instead of finding no life at all ("dead")."""
    bn = F.broadcast(broker_nodes(nodes).withColumnRenamed("node", "_node").alias("bn"))
    df = send_df.withColumn(
        "target_id", F.coalesce("broker_id", F.lit(0)))
    df = (df.alias("s").join(bn, (F.col("s.run") == F.col("bn.run")) & (F.col("s.broker") == F.col("bn.broker"))
                             & (F.col("s.target_id") == F.col("bn.broker_id")), "left")
          .select("s.*", F.when(F.col("s.broker").isNotNull(), F.coalesce("bn._node", F.concat_ws("-", "s.broker", F.col("s.target_id").cast("string"))))
                  .alias("target")))
    df = df.withColumn("_a", F.least("producer", "target")).withColumn("_b", F.greatest("producer", "target"))
    df = df.withColumn("_tbw", F.lit(AUTO_CREATE_TOPIC))
    at = F.col("ts") if run_end is None else F.least(F.col("ts"), scalar(run_end) - F.lit(END_EPSILON_MS))
    df = df.withColumn("_at", at)
    df = _lookup(df, lives, {"node": "target"}, "_alive")
    df = _lookup(df, pauses, {"node": "target"}, "_paused")
    df = _lookup(df, partitions, {"a": "_a", "b": "_b"}, "_cut")
    df = _lookup(df, hosts.select(RUN, "node", "topic", "start", "end"), {"node": "target", "topic": "topic"}, "_hosts")
    df = _lookup(df, autocreate, {"node": "target"}, "_auto")
    df = _lookup(df, write_queues, {"node": "target", "topic": "topic"}, "_wq0", {"write_queues": "_wq"})
    df = _lookup(df, write_queues, {"node": "target", "topic": "_tbw"}, "_wq1", {"write_queues": "_wq_default"})
    wq = F.coalesce("_wq", F.when(F.col("_auto"), F.col("_wq_default")))
    reason = (F.when(F.col("broker").isNull(), F.lit(None).cast("string"))
              .when(~F.col("_alive"), "dead").when(F.col("_paused"), "paused")
              .when(F.col("_cut"), "partitioned").when(F.col("target_id") != 0, "not_master")
              .when(~F.col("_hosts") & ~F.col("_auto"), "no_topic")
              .when(F.col("queue_id") >= wq, "bad_queue"))
    return df.withColumn("reason", reason).drop(
        "_a", "_b", "_at", "_tbw", "_alive", "_paused", "_cut", "_hosts", "_auto", "_wq0", "_wq1", "_wq", "_wq_default")


def misrouted_by_reason(classified: DataFrame) -> DataFrame:
    """``run, reason, outcome, sends`` for misrouted sends."""
    return (classified.filter(F.col("reason").isNotNull())
            .groupBy(RUN, "reason", "outcome").agg(F.count(F.lit(1)).alias("sends")))


def misrouted_over_time(classified: DataFrame, run_start: Scalar, bin_ms: Scalar) -> DataFrame:
    """``run, bin, reason, sends``: misrouted sends per time bin (bin = floor((ts-start)/bin_ms))."""
    return (classified.filter(F.col("reason").isNotNull())
            .withColumn("bin", F.floor((F.col("ts") - scalar(run_start)) / scalar(bin_ms)).cast("long"))
            .groupBy(RUN, "bin", "reason").agg(F.count(F.lit(1)).alias("sends")))
