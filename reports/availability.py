"""Availability and per-fault impact (docs/design.md §9): unavailability windows per
(producer, topic), and what each fault cost the producers (``rto_ms``, ``failed_sends``,
``misrouted_sends`` beside its ``converged_ms``).

Pure DataFrame -> DataFrame transforms over the tables of :mod:`reports.pipeline`; the
report collects their small results with every other query in one action
(:mod:`reports.gather`).

Choices where docs/design.md §9 leaves room (tested in ``tests/reports/test_availability.py``):

* Only attempts of the **measured run** count (``ts`` at or before the measured end,
  docs/design.md §7). The launcher writes ``run.stop`` once the producers have stopped (§6), so
  that is every attempt of a run of today; in an older run, attempts logged during the shutdown
  say nothing about the cluster. A window still open there ends at the measured end.
* An attempt whose outcome is ``oneway`` is left out: a oneway send expects no answer, so it
  is neither evidence of availability nor of its absence (counting it as not ok would make
  every oneway producer look unavailable for its whole run).
* Attempts are ordered by ``ts`` then ``seq`` (the producer's line order), so an ok attempt
  logged at the same ``ts`` right after a failed one closes a window of length 0, which is
  dropped: a window is an interval of positive length.
* Attribution windows are half-open, ``[fault.start, max(fault.end, fault.start +
  converged_ms))``, as every interval of §7; a fault without a ``fault.end`` runs to the run
  end there (as in the fault table).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window, functions as F

from reports.intervals import RUN, keyed, scalar
from reports.truth import Scalar

#: Outcomes that carry no answer from a broker: left out of availability (see above).
NO_ANSWER_OUTCOMES: tuple[str, ...] = ("oneway",)


def measured_attempts(send_df: DataFrame, measure_end: Scalar) -> DataFrame:
    """The attempts availability is judged on: those of the measured run that expect an
    answer, with boolean ``ok``. Keeps every column of ``send_df``."""
    answered = ~F.coalesce(F.col("outcome").isin(*NO_ANSWER_OUTCOMES), F.lit(False))
    return (send_df.filter((F.col("ts") <= scalar(measure_end)) & answered)
            .withColumn("ok", F.coalesce(F.col("outcome") == "ok", F.lit(False))))


def unavailable_windows(send_df: DataFrame, measure_end: Scalar) -> DataFrame:
    """``run, producer, topic, start, end``: the unavailability windows (docs/design.md §9).

    A window opens at a non-ok attempt that is the pair's first or follows an ok one, and
    ends at the pair's next ok attempt, else at the measured end. One sort per pair: the
    previous attempt's outcome and the next ok ``ts`` are two window functions over it.

    The next ok ``ts`` is a running minimum over the pair's attempts in *reverse* order
    (every attempt before this one in that order): Spark computes a frame that ends at
    ``unboundedFollowing`` again for every row (quadratic in a pair's attempts: a 1M-event
    run's report never finished), a frame that starts at ``unboundedPreceding`` in one pass.
    A pair's attempts are one producer's, so ``(ts, seq)`` orders them strictly either way."""
    keys = (RUN, "producer", "topic")
    prev_ok = F.lag("ok").over(Window.partitionBy(*keys).orderBy("ts", "seq"))
    reverse = Window.partitionBy(*keys).orderBy(F.col("ts").desc(), F.col("seq").desc())
    next_ok = F.min(F.when(F.col("ok"), F.col("ts"))).over(reverse.rowsBetween(Window.unboundedPreceding, -1))
    opens = ~F.col("ok") & F.coalesce(prev_ok, F.lit(True))
    return (measured_attempts(send_df, measure_end)
            .withColumn("_opens", opens).withColumn("_next_ok", next_ok)
            .filter(F.col("_opens"))
            .select(RUN, "producer", "topic", F.col("ts").alias("start"),
                    F.coalesce("_next_ok", scalar(measure_end)).alias("end"))
            .filter(F.col("end") > F.col("start")))


def availability_by_pair(send_df: DataFrame, windows: DataFrame) -> DataFrame:
    """``run, producer, topic, windows, total_ms, max_ms`` for every (producer, topic) that made
    an attempt; a pair that was never unavailable has ``windows`` 0 (so a fault-free run
    can be checked pair by pair)."""
    keys = keyed(["producer", "topic"])
    pairs = send_df.select(*keys).distinct()
    per = (windows.withColumn("_d", F.col("end") - F.col("start")).groupBy(*keys)
           .agg(F.count(F.lit(1)).alias("windows"), F.sum("_d").alias("total_ms"), F.max("_d").alias("max_ms")))
    return (pairs.join(per, keys, "left")
            .select(*keys, F.coalesce("windows", F.lit(0)).cast("long").alias("windows"),
                    F.coalesce("total_ms", F.lit(0.0)).alias("total_ms"),
                    F.coalesce("max_ms", F.lit(0.0)).alias("max_ms")))


def with_impact(rows: DataFrame, faults: DataFrame, windows: DataFrame, classified: DataFrame,
                measure_end: Scalar) -> DataFrame:
    """``rows`` (one per fault, with at least ``fault_id, start, end, converged_ms``) plus
    ``impact_end`` (the attribution window's end), ``rto_ms``, ``failed_sends`` and
    ``misrouted_sends``.

    ``rto_ms``: the longest unavailability window *starting* in the attribution window
    ``[start, max(end, start + converged_ms))`` (0 if none); ``failed_sends`` /
    ``misrouted_sends``: non-ok / misrouted attempts (of the measured run) whose ``ts`` is in
    it. An attempt or window counts for every fault whose window holds it.

    How, and why so: attempts and windows are one marks table (a window as its start and
    length) joined to the few fault rows by a range condition. Every fault must keep its row,
    but an *outer* range join is planned as a broadcast nested loop join, a Spark job of its
    own that broadcasts the large side; and joining the counts back to ``rows`` would put
    ``rows`` (whose ``converged_ms`` comes from such a join) twice in the plan. So the join is
    inner, and each fault also matches one blank mark of its own (``_fid``, taken from
    ``faults``): within the report's single job, a sort-merge join on ``run`` (the range
    condition is checked on each run's rows) when broadcasts are off (small inputs), a
    broadcast of the fault rows otherwise."""
    att = measured_attempts(classified, measure_end)
    failed, mis = ~F.col("ok"), F.col("reason").isNotNull()
    blank = F.lit(None).cast("string").alias("_fid")
    marks = (att.filter(failed | mis)
             .select(RUN, blank, F.col("ts").alias("_t"), failed.cast("long").alias("_failed"),
                     mis.cast("long").alias("_mis"), F.lit(None).cast("double").alias("_len"))
             .unionByName(windows.select(RUN, blank, F.col("start").alias("_t"), F.lit(0).cast("long").alias("_failed"),
                                         F.lit(0).cast("long").alias("_mis"),
                                         (F.col("end") - F.col("start")).alias("_len")))
             .unionByName(faults.select(RUN, F.col("fault_id").alias("_fid"), F.lit(None).cast("double").alias("_t"),
                                        F.lit(0).cast("long").alias("_failed"), F.lit(0).cast("long").alias("_mis"),
                                        F.lit(None).cast("double").alias("_len"))))
    r = rows.withColumn("impact_end", F.greatest(
        "end", F.col("start") + F.coalesce("converged_ms", F.lit(0.0))))
    inside = F.col("_fid").isNull() & (F.col("_t") >= F.col("r.start")) & (F.col("_t") < F.col("impact_end"))
    # aliases, not a renamed ``run``: a renamed column would lose the partitioning by run
    return (r.alias("r").join(marks.alias("m"), (F.col("r.run") == F.col("m.run"))
                              & ((F.col("_fid") == F.col("fault_id")) | inside))
            .groupBy(*[F.col(f"r.{c}") for c in r.columns])
            .agg(F.coalesce(F.max("_len"), F.lit(0.0)).alias("rto_ms"),
                 F.sum("_failed").cast("long").alias("failed_sends"),
                 F.sum("_mis").cast("long").alias("misrouted_sends")))
