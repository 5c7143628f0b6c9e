"""The small tables the plots draw, collected from an :class:`~reports.pipeline.Analysis`.

This is the only place where Spark results become pandas frames for plotting. Every
table is aggregated in Spark first (state runs instead of raw pieces, time bins instead
of sends), so what crosses to the driver stays small however large the run; the lane
plot keeps at most ``max_lanes`` views per topic and at most ``max_topics`` topics,
preferring the stalest, and says so in :attr:`PlotData.notes`.

Times are seconds since the run's first event (wall), which is what the x axes show.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from pyspark.sql import DataFrame, functions as F

from reports import clients, misrouted
from reports.intervals import compress
from reports.pipeline import Analysis, time_bin_ms

def state() -> F.Column:
    """State of a view on a piece, as the lane plot colours it (built lazily: a Column
    needs a running session)."""
    return (F.when(F.col("over") & F.col("under"), "both").when(F.col("over"), "over")
            .when(F.col("under"), "under").otherwise("fresh"))


@dataclass
class PlotData:
    """pandas inputs of :mod:`reports.plots` (all times in wall seconds since run start)."""

    scale: float
    duration_s: float
    bin_s: float
    faults: pd.DataFrame          # fault_id, fault, targets, start_s, end_s, has_end
    topics: list[str]             # topics drawn in the lane plot, stalest first
    lanes: pd.DataFrame           # topic, lane, kind (truth/namesrv/client), state, label, start_s, end_s
    misrouted: pd.DataFrame       # t_s, reason, sends
    latency: pd.DataFrame         # t_s, n, p50_ms, p99_ms, max_ms, timeouts
    stale_durations: pd.DataFrame  # duration_ms
    notes: list[str] = field(default_factory=list)


def _rel(col: str, t0: float) -> F.Column:
    return ((F.col(col) - F.lit(t0)) / 1000.0).alias(col + "_s")


def _states(pieces: DataFrame, who: str, kind: str, t0: float) -> DataFrame:
    runs = compress(pieces.select(who, "topic", "start", "end", state().alias("state")), [who, "topic"], "state")
    return runs.select("topic", F.col(who).alias("lane"), F.lit(kind).alias("kind"), "state",
                       F.lit("").alias("label"), _rel("start", t0), _rel("end", t0))


def collect_plot_data(a: Analysis, max_topics: int = 6, max_lanes: int = 24,
                      max_durations: int = 200_000) -> PlotData:
    """Aggregate in Spark, collect to pandas. See the module docstring for the limits."""
    run = a.run
    t0, scale = run.run_start, run.manifest.scale
    bin_ms = time_bin_ms(run)
    notes: list[str] = []

    faults = a.faults.select("fault_id", "fault", F.array_join(F.coalesce("targets", F.array().cast("array<string>")), ", ")
                             .alias("targets"), _rel("start", t0), _rel("end", t0), "has_end").toPandas()
    faults = faults.sort_values(["start_s", "fault_id"]).reset_index(drop=True)

    stale = a.client_staleness.groupBy("topic").agg(F.sum("stale_ms").alias("s")).orderBy(F.desc("s"), "topic")
    all_topics = [r["topic"] for r in stale.collect()]
    topics = all_topics[:max_topics]
    if len(all_topics) > len(topics):
        notes.append(f"Route plots show the {len(topics)} stalest of {len(all_topics)} topics; "
                     "the Parquet table client_stale_pieces has all of them.")
    keep = (a.client_staleness.filter(F.col("topic").isin(topics))
            .select("topic", F.col("client").alias("lane"), "stale_ms").toPandas())
    keep = keep.sort_values(["topic", "stale_ms", "lane"], ascending=[True, False, True])
    kept = keep.groupby("topic").head(max_lanes)
    if len(kept) < len(keep):
        notes.append(f"Route plots show at most {max_lanes} clients per topic (the stalest).")
    lanes_keep = a.run.events.sparkSession.createDataFrame(
        kept[["topic", "lane"]] if len(kept) else pd.DataFrame({"topic": ["-"], "lane": ["-"]}))
    cstates = _states(a.client_pieces.filter(F.col("topic").isin(topics)), "client", "client", t0).join(
        F.broadcast(lanes_keep), ["topic", "lane"])
    nstates = _states(a.namesrv_pieces.filter(F.col("topic").isin(topics)), "namesrv", "namesrv", t0)
    truth = a.truth.filter(F.col("topic").isin(topics)).select(
        "topic", F.lit("truth").alias("lane"), F.lit("truth").alias("kind"), F.lit("truth").alias("state"),
        F.array_join("brokers", ", ").alias("label"), _rel("start", t0), _rel("end", t0))
    lanes = truth.unionByName(nstates).unionByName(cstates).toPandas()

    mis = (misrouted.misrouted_over_time(a.classified, t0, bin_ms)
           .select(((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "reason", "sends").toPandas())
    lat = (clients.latency_over_time(a.sends, t0, bin_ms)
           .select(((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "n", "p50_ms", "p99_ms", "max_ms", "timeouts")
           .orderBy("t_s").toPandas())
    n_int = a.client_intervals.count()
    durations = a.client_intervals.select("duration_ms")
    if n_int > max_durations:
        durations = durations.sample(fraction=max_durations / n_int, seed=1)
        notes.append(f"The staleness histogram is drawn from a {max_durations:,}-interval sample of {n_int:,}.")
    return PlotData(scale=scale, duration_s=(run.run_end - t0) / 1000.0, bin_s=bin_ms / 1000.0, faults=faults,
                    topics=topics, lanes=lanes, misrouted=mis, latency=lat,
                    stale_durations=durations.toPandas(), notes=notes)
