"""Loss per (consumer group, topic) (docs/design.md §7 "Consumption").

``consumption.lost`` counts a message lost only when no group consumed it, which hides a
group that missed it while another got it. In RocketMQ's clustering mode every group that
subscribes a topic must get every message of it, so each (group, topic) is charged apart:
a message is *lost for a group* when the group subscribes its topic, it was acked in the
measured run (first ok attempt before ``run.stop``, as for ``consumption.lost``) and no
``consume`` of that group lists it.

Choices (tested in ``tests/reports/test_loss.py``):

* A group **subscribes** a topic if any of its consumers logged a ``rebalance``, ``pull`` or
  ``consume`` for it in the run. The consumers' subscriptions are not logged as such; every
  subscription of a running consumer is rebalanced (a ``rebalance`` line) as soon as the
  topic has a route and the broker lists the group's consumers, so a group whose topic never
  got a route is not charged (its consumers never saw a queue of it).
* A message counts as consumed by a group if a ``consume`` of the group lists its
  ``msg_id`` under any topic: a message redelivered from ``%RETRY%<group>`` keeps its id.
* Rows are the subscribed (group, topic) pairs whose topic some producer sent to; the
  ``%RETRY%`` topics every clustering group subscribes carry no ``send`` and are left out.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, functions as F

from reports.intervals import RUN, scalar
from reports.truth import Scalar

#: Consumer event kinds that show a group subscribes a topic.
SUBSCRIBING_KINDS: tuple[str, ...] = ("rebalance", "pull", "consume")


def subscriptions(events: DataFrame) -> DataFrame:
    """``run, group, topic``: the topics each consumer group subscribed in the run."""
    return (events.filter(F.col("kind").isin(*SUBSCRIBING_KINDS)
                          & F.col("group").isNotNull() & F.col("topic").isNotNull())
            .select(RUN, "group", "topic").distinct())


def group_loss(events: DataFrame, send_df: DataFrame, until: Scalar | None = None) -> DataFrame:
    """``run, group, topic, expected, consumed, lost`` per subscribed (group, topic) (see the
    module docstring): ``expected`` messages acked in the measured run, ``consumed`` of
    them by the group, ``lost`` = ``expected - consumed``. ``until``: the ``run.stop``
    time, at or after which a first ack is outside the measured run (null: none)."""
    first_ack = (send_df.filter(F.col("outcome") == "ok").groupBy(RUN, "topic", "msg_id")
                 .agg(F.min("ts").alias("_acked_ts")))
    expected = first_ack
    if until is not None:
        stop = scalar(until)
        expected = first_ack.filter(stop.isNull() | (F.col("_acked_ts") < stop))
    pairs = subscriptions(events).join(send_df.select(RUN, "topic").distinct(), [RUN, "topic"])
    got = (events.filter(F.col("kind") == "consume")
           .select(RUN, "group", F.explode("msg_ids").alias("msg_id")).distinct()
           .withColumn("_got", F.lit(1)))
    per = (pairs.join(expected.select(RUN, "topic", "msg_id"), [RUN, "topic"])
           .join(got, [RUN, "group", "msg_id"], "left")
           .groupBy(RUN, "group", "topic")
           .agg(F.count(F.lit(1)).alias("expected"), F.count("_got").alias("consumed")))
    return (pairs.join(per, [RUN, "group", "topic"], "left")
            .select(RUN, "group", "topic", F.coalesce("expected", F.lit(0)).cast("long").alias("expected"),
                    F.coalesce("consumed", F.lit(0)).cast("long").alias("consumed"))
            .withColumn("lost", F.col("expected") - F.col("consumed")))
