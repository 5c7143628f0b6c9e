"""Availability and per-fault impact (docs/design.md §9): unavailability windows per
(producer, topic), and what each fault cost the producers (``rto_ms``, ``failed_sends``,
``misrouted_sends`` beside its ``converged_ms``).

Pure DataFrame -> DataFrame transforms over the tables of :mod:`reports.pipeline`; the
report collects their small results with every other query in one action
(:mod:`reports.gather`).

Choices where docs/design.md §9 leaves room (tested in ``tests/reports/test_availability.py``):

* Only attempts of the **measured run** count (``ts`` at or before the measured end,
  docs/design.md §7): past ``run.stop`` the clients are being shut down, so their failures say
  nothing about the cluster. A window still open there ends at the measured end.
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

#: Outcomes that carry no answer from a broker: left out of availability (see above).
NO_ANSWER_OUTCOMES: tuple[str, ...] = ("oneway",)


def measured_attempts(send_df: DataFrame, measure_end: float) -> DataFrame:
    """The attempts availability is judged on: those of the measured run that expect an
    answer, with boolean ``ok``. Keeps every column of ``send_df``."""
    answered = ~F.coalesce(F.col("outcome").isin(*NO_ANSWER_OUTCOMES), F.lit(False))
    return (send_df.filter((F.col("ts") <= F.lit(float(measure_end))) & answered)
            .withColumn("ok", F.coalesce(F.col("outcome") == "ok", F.lit(False))))


def unavailable_windows(send_df: DataFrame, measure_end: float) -> DataFrame:
    """``producer, topic, start, end``: the unavailability windows (docs/design.md §9).

    A window opens at a non-ok attempt that is the pair's first or follows an ok one, and
    ends at the pair's next ok attempt, else at the measured end. One sort per pair: the
    previous attempt's outcome and the next ok ``ts`` are two window functions over it."""
    w = Window.partitionBy("producer", "topic").orderBy("ts", "seq")
    prev_ok = F.lag("ok").over(w)
    next_ok = F.min(F.when(F.col("ok"), F.col("ts"))).over(w.rowsBetween(1, Window.unboundedFollowing))
    opens = ~F.col("ok") & F.coalesce(prev_ok, F.lit(True))
    return (measured_attempts(send_df, measure_end)
            .withColumn("_opens", opens).withColumn("_next_ok", next_ok)
            .filter(F.col("_opens"))
            .select("producer", "topic", F.col("ts").alias("start"),
                    F.coalesce("_next_ok", F.lit(float(measure_end))).alias("end"))
            .filter(F.col("end") > F.col("start")))


def availability_by_pair(send_df: DataFrame, windows: DataFrame) -> DataFrame:
    """``producer, topic, windows, total_ms, max_ms`` for every (producer, topic) that made
    an attempt; a pair that was never unavailable has ``windows`` 0 (so a fault-free run
    can be checked pair by pair)."""
    pairs = send_df.select("producer", "topic").distinct()
    per = (windows.withColumn("_d", F.col("end") - F.col("start")).groupBy("producer", "topic")
           .agg(F.count(F.lit(1)).alias("windows"), F.sum("_d").alias("total_ms"), F.max("_d").alias("max_ms")))
    return (pairs.join(per, ["producer", "topic"], "left")
            .select("producer", "topic", F.coalesce("windows", F.lit(0)).cast("long").alias("windows"),
                    F.coalesce("total_ms", F.lit(0.0)).alias("total_ms"),
                    F.coalesce("max_ms", F.lit(0.0)).alias("max_ms")))


def attribution_windows(faults: DataFrame, convergence: DataFrame) -> DataFrame:
    """``fault_id, start, impact_end``: each fault's attribution window, from its
    ``fault.start`` to the later of its end and ``start + converged_ms``."""
    conv = convergence.select("fault_id", "converged_ms")
    return (faults.select("fault_id", "start", "end").join(conv, "fault_id", "left")
            .select("fault_id", "start", F.greatest(
                "end", F.col("start") + F.coalesce("converged_ms", F.lit(0.0))).alias("impact_end")))


def fault_impact(faults: DataFrame, convergence: DataFrame, windows: DataFrame,
                 classified: DataFrame, measure_end: float) -> DataFrame:
    """``fault_id, impact_end, rto_ms, failed_sends, misrouted_sends`` per fault.

    ``rto_ms``: the longest unavailability window *starting* in the attribution window (0
    if none); ``failed_sends`` / ``misrouted_sends``: non-ok / misrouted attempts (of the
    measured run) whose ``ts`` is in it. An attempt or window counts for every fault whose
    window holds it. Windows and attempts go through one range join with the (few) faults:
    the marks table holds both, a window as its start and length."""
    att = measured_attempts(classified, measure_end)
    failed = ~F.col("ok")
    mis = F.col("reason").isNotNull()
    marks = (att.filter(failed | mis)
             .select(F.col("ts").alias("t"), failed.cast("long").alias("_failed"), mis.cast("long").alias("_mis"),
                     F.lit(None).cast("double").alias("_len"))
             .unionByName(windows.select(F.col("start").alias("t"), F.lit(0).cast("long").alias("_failed"),
                                         F.lit(0).cast("long").alias("_mis"),
                                         (F.col("end") - F.col("start")).alias("_len"))))
    f = attribution_windows(faults, convergence).alias("f")
    m = marks.alias("m")
    hit = f.join(m, (F.col("m.t") >= F.col("f.start")) & (F.col("m.t") < F.col("f.impact_end")), "left")
    return (hit.groupBy("f.fault_id", "f.impact_end")
            .agg(F.coalesce(F.max("m._len"), F.lit(0.0)).alias("rto_ms"),
                 F.coalesce(F.sum("m._failed"), F.lit(0)).cast("long").alias("failed_sends"),
                 F.coalesce(F.sum("m._mis"), F.lit(0)).cast("long").alias("misrouted_sends"))
            .select("fault_id", "impact_end", "rto_ms", "failed_sends", "misrouted_sends"))
