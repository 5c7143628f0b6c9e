"""Client-side metrics: send outcomes and latency, "No route info" errors, auto-create
coverage (the TBW102 imbalance), SUBSCRIPTION_NOT_EXIST pulls, queues left to
non-subscribers, and acked-but-never-consumed / duplicate messages.

Choices (tested):

* ``failed`` = ``timeout`` + ``error`` attempts; ``no_route`` attempts are counted apart,
  so ``attempts = ok + failed + no_route`` (+ any other outcome string, under ``other``).
* Latency percentiles are exact (``percentile``, linear interpolation), over attempts
  with a latency, for all attempts and for ``ok`` ones.
* A message is *acked* if any attempt of its ``msg_id`` was ``ok``; it is *lost*
  (acked-but-never-consumed) if its topic was consumed by some group (a ``consume`` or
  ``rebalance`` for the topic) and no ``consume`` of any group lists it; a message first
  acked at or after ``run.stop`` (the shutdown has begun: consumers are stopping) is outside
  the measured run and never counted lost, as route views are not measured past it. A *duplicate*
  is a ``msg_id`` consumed more than once by the same group; redeliveries to other
  groups are expected.
* Queues to non-subscribers, per (group, topic), at the latest rebalance of every
  subscriber: subscribers are the ``cid`` values that rebalanced the topic; if the
  ``cids`` they saw contain others, the queues nobody subscribing owns (the queues of
  their latest ``client.route``, plus all allocated ones, minus the allocated ones) are
  the queues allocated to non-subscribers.
* Auto-create coverage: for every topic some master created with ``how=auto``, how many
  of the masters with auto-create on (TBW102 with the inherit bit at any time, or
  ``autoCreateTopicEnable`` in the manifest) hosted it at any time.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window, functions as F

from reports.intervals import RUN, scalar
from reports.schema import NO_ROUTE_ERROR, SUBSCRIPTION_NOT_EXIST
from reports.truth import Scalar, broker_nodes


#: The columns of :func:`send_outcomes` after ``run``, in order.
OUTCOME_COLUMNS: tuple[str, ...] = ("attempts", "ok", "failed", "no_route", "timeout", "error", "other",
                                    "messages", "acked")


def send_outcomes(send_df: DataFrame) -> DataFrame:
    """One row per run: ``run, attempts, ok, failed, no_route, timeout, error, other, messages, acked``."""
    o = F.col("outcome")
    n = lambda cond: F.sum(F.when(cond, 1).otherwise(0)).cast("long")  # noqa: E731
    # per message first, then per run: two group-bys keyed by run, where ``countDistinct``
    # would be planned as an expand and two shuffles
    per_msg = send_df.groupBy(RUN, "msg_id").agg(
        F.count(F.lit(1)).alias("attempts"), n(o == "ok").alias("ok"),
        n(o.isin("timeout", "error")).alias("failed"), n(o == "no_route").alias("no_route"),
        n(o == "timeout").alias("timeout"), n(o == "error").alias("error"),
        n(~o.isin("ok", "timeout", "error", "no_route") | o.isNull()).alias("other"))
    counts = ["attempts", "ok", "failed", "no_route", "timeout", "error", "other"]
    return per_msg.groupBy(RUN).agg(
        *[F.sum(c).cast("long").alias(c) for c in counts],
        F.count("msg_id").alias("messages"),
        F.count(F.when(F.col("ok") > 0, F.col("msg_id"))).alias("acked"))


def latency_percentiles(send_df: DataFrame) -> DataFrame:
    """``run, scope`` (all/ok), ``n, p50_ms, p90_ms, p99_ms, max_ms, mean_ms``."""
    lat = send_df.filter(F.col("latency_ms").isNotNull())
    both = lat.withColumn("scope", F.lit("all")).unionByName(
        lat.filter(F.col("outcome") == "ok").withColumn("scope", F.lit("ok")))
    return both.groupBy(RUN, "scope").agg(
        F.count(F.lit(1)).alias("n"),
        *[F.percentile("latency_ms", q).alias(f"p{int(q * 100)}_ms") for q in (0.5, 0.9, 0.99)],
        F.max("latency_ms").alias("max_ms"), F.avg("latency_ms").alias("mean_ms"))


def latency_over_time(send_df: DataFrame, run_start: Scalar, bin_ms: Scalar) -> DataFrame:
    """``run, bin, n, p50_ms, p99_ms, max_ms, timeouts`` per time bin, for the latency plot."""
    return (send_df.filter(F.col("latency_ms").isNotNull())
            .withColumn("bin", F.floor((F.col("ts") - scalar(run_start)) / scalar(bin_ms)).cast("long"))
            .groupBy(RUN, "bin").agg(F.count(F.lit(1)).alias("n"),
                                F.percentile_approx("latency_ms", 0.5).alias("p50_ms"),
                                F.percentile_approx("latency_ms", 0.99).alias("p99_ms"),
                                F.max("latency_ms").alias("max_ms"),
                                F.sum(F.when(F.col("outcome") == "timeout", 1).otherwise(0)).alias("timeouts")))


def no_route_errors(send_df: DataFrame) -> DataFrame:
    """``run, topic, errors``: attempts whose error says "No route info of this topic"."""
    return (send_df.filter(F.col("error").contains(NO_ROUTE_ERROR))
            .groupBy(RUN, "topic").agg(F.count(F.lit(1)).alias("errors")))


def autocreate_coverage(events: DataFrame, nodes: DataFrame, host_iv: DataFrame,
                        autocreate_iv: DataFrame) -> DataFrame:
    """``run, topic, created_on, hosted_on, auto_masters, hosts, of_auto_masters``."""
    bn = broker_nodes(nodes)
    masters = bn.filter(F.col("broker_id") == 0)
    on = (autocreate_iv.select(RUN, "node").join(masters, [RUN, "node"]).select(RUN, "broker")
          .unionByName(nodes.filter((F.col("role") == "broker") & F.coalesce("auto_create", F.lit(False))
                                    & (F.coalesce("broker_id", F.lit(0)) == 0)).select(RUN, "broker"))
          .groupBy(RUN).agg(F.array_sort(F.collect_set("broker")).alias("auto_masters")))
    created = (events.filter((F.col("kind") == "broker.topic") & (F.col("how") == "auto")
                             & (F.coalesce("broker_id", F.lit(0)) == 0))
               .groupBy(RUN, "topic").agg(F.array_sort(F.collect_set("broker")).alias("created_on")))
    hosted = (host_iv.filter(F.col("broker_id") == 0).groupBy(RUN, "topic")
              .agg(F.array_sort(F.collect_set("broker")).alias("hosted_on")))
    # a run without any auto-create master has no row in ``on``: an empty list, as the
    # global aggregate of one run gave
    return (created.join(hosted, [RUN, "topic"], "left").join(on, RUN, "left")
            .withColumn("auto_masters", F.coalesce("auto_masters", F.array().cast("array<string>")))
            .withColumn("hosted_on", F.coalesce("hosted_on", F.array().cast("array<string>")))
            .withColumn("hosts", F.size("hosted_on"))
            .withColumn("of_auto_masters", F.size(F.array_intersect("hosted_on", "auto_masters")))
            .select(RUN, "topic", "created_on", "hosted_on", "auto_masters", "hosts", "of_auto_masters"))


def subscription_not_exist(events: DataFrame) -> DataFrame:
    """``run, node, group, topic, pulls`` with code SUBSCRIPTION_NOT_EXIST (24)."""
    return (events.filter((F.col("kind") == "pull") & (F.col("code") == SUBSCRIPTION_NOT_EXIST))
            .groupBy(RUN, "node", "group", "topic").agg(F.count(F.lit(1)).alias("pulls")))


def _queue_keys(col: str) -> F.Column:
    return F.transform(F.coalesce(col, F.array().cast("array<array<string>>")),
                       lambda q: F.concat_ws(":", q[0], q[1]))


def non_subscriber_queues(events: DataFrame) -> DataFrame:
    """``run, group, topic, subscribers, non_subscribers, queues, unowned_queues``
    (``unowned_queues`` = number of queues allocated to non-subscribers)."""
    reb = events.filter(F.col("kind") == "rebalance")
    w = Window.partitionBy(RUN, "node", "group", "topic").orderBy(F.col("ts").desc(), F.col("seq").desc())
    latest = reb.withColumn("_r", F.row_number().over(w)).filter(F.col("_r") == 1)
    routes = events.filter(F.col("kind") == "client.route").withColumn(
        "_r", F.row_number().over(Window.partitionBy(RUN, "node", "topic").orderBy(F.col("ts").desc(), F.col("seq").desc())))
    routes = routes.filter(F.col("_r") == 1).select(RUN, "node", "topic", _queue_keys("publish_queues").alias("_route_q"))
    per = (latest.join(routes, [RUN, "node", "topic"], "left")
           .groupBy(RUN, "group", "topic").agg(
               F.array_sort(F.collect_set("cid")).alias("subscribers"),
               F.array_distinct(F.flatten(F.collect_list(F.coalesce("cids", F.array().cast("array<string>"))))).alias("_seen"),
               F.array_distinct(F.flatten(F.collect_list(_queue_keys("allocated")))).alias("_alloc"),
               F.array_distinct(F.flatten(F.collect_list(F.coalesce("_route_q", F.array().cast("array<string>"))))).alias("_rq")))
    nonsub = F.array_sort(F.array_except("_seen", "subscribers"))
    universe = F.array_union("_rq", "_alloc")
    return per.select(
        RUN, "group", "topic", "subscribers", nonsub.alias("non_subscribers"), F.size(universe).alias("queues"),
        F.when(F.size(nonsub) > 0, F.size(F.array_except(universe, "_alloc"))).otherwise(0).alias("unowned_queues"))


def consumption(events: DataFrame, send_df: DataFrame, until: Scalar | None = None) -> DataFrame:
    """Per run and topic: ``acked, consumed, lost, duplicate_messages, duplicate_deliveries,
    consumed_unacked`` (see module docstring); ``until``: ``run.stop``, after which an ack
    cannot make a message lost (null: none)."""
    ok = send_df.filter(F.col("outcome") == "ok")
    acked = ok.select(RUN, "topic", "msg_id").distinct()
    first_ack = ok.groupBy(RUN, "topic", "msg_id").agg(F.min("ts").alias("_acked_ts"))
    if until is not None:
        stop = scalar(until)
        first_ack = first_ack.filter(stop.isNull() | (F.col("_acked_ts") < stop))
    deliveries = (events.filter(F.col("kind") == "consume")
                  .select(RUN, "group", "topic", F.explode("msg_ids").alias("msg_id")))
    consumed = deliveries.select(RUN, "topic", "msg_id").distinct()
    watched = (events.filter(F.col("kind").isin("consume", "rebalance")).select(RUN, "topic").distinct()
               .withColumn("_watched", F.lit(True)))
    topic, msg = [RUN, "topic"], [RUN, "msg_id"]
    lost = (first_ack.select(RUN, "topic", "msg_id").join(watched, topic)
            .join(consumed.select(*msg), msg, "left_anti")
            .groupBy(*topic).agg(F.count(F.lit(1)).alias("lost")))
    dup = (deliveries.groupBy(RUN, "group", "topic", "msg_id").agg(F.count(F.lit(1)).alias("n"))
           .filter(F.col("n") > 1).groupBy(*topic)
           .agg(F.count(F.lit(1)).alias("duplicate_messages"), F.sum(F.col("n") - 1).alias("duplicate_deliveries")))
    unacked = (consumed.join(acked.select(*msg), msg, "left_anti")
               .groupBy(*topic).agg(F.count(F.lit(1)).alias("consumed_unacked")))
    topics = acked.select(*topic).unionByName(consumed.select(*topic)).distinct()
    return (topics
            .join(acked.groupBy(*topic).agg(F.count(F.lit(1)).alias("acked")), topic, "left")
            .join(consumed.groupBy(*topic).agg(F.count(F.lit(1)).alias("consumed")), topic, "left")
            .join(lost, topic, "left").join(dup, topic, "left").join(unacked, topic, "left")
            .fillna(0, ["acked", "consumed", "lost", "duplicate_messages", "duplicate_deliveries", "consumed_unacked"]))
