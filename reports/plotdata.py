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
from pyspark.sql import DataFrame, Window, functions as F

from reports import clients, misrouted
from reports.intervals import compress
from reports.pipeline import Analysis, time_bin_ms
from reports.tasks import Step, run_steps, step

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


def _durations(a: Analysis, max_durations: int) -> tuple[pd.DataFrame, int | None]:
    """Client stale interval durations, all of them up to ``max_durations`` (one job on a
    small run), else a seeded sample; the second value is the total when sampled."""
    durations = a.client_intervals.select("duration_ms")
    got = durations.limit(max_durations + 1).toPandas()
    if len(got) <= max_durations:
        return got, None
    n_int = a.client_intervals.count()
    return durations.sample(fraction=max_durations / n_int, seed=1).toPandas(), n_int


def _stalest_topics(a: Analysis) -> list[str]:
    stale = a.client_staleness.groupBy("topic").agg(F.sum("stale_ms").alias("s")).orderBy(F.desc("s"), "topic")
    return [r["topic"] for r in stale.collect()]


def _lane_rank(a: Analysis, topics: list[str]) -> DataFrame:
    """Client lanes of ``topics`` ranked stalest first per topic (ties by name)."""
    w = Window.partitionBy("topic").orderBy(F.desc("stale_ms"), "lane")
    return (a.client_staleness.filter(F.col("topic").isin(topics))
            .select("topic", F.col("client").alias("lane"), "stale_ms").withColumn("rank", F.row_number().over(w)))


def _lanes(a: Analysis, topics: list[str], max_lanes: int) -> pd.DataFrame:
    t0 = a.run.run_start
    kept = _lane_rank(a, topics).filter(F.col("rank") <= max_lanes).select("topic", "lane")
    cstates = _states(a.client_pieces.filter(F.col("topic").isin(topics)), "client", "client", t0).join(
        F.broadcast(kept), ["topic", "lane"])
    nstates = _states(a.namesrv_pieces.filter(F.col("topic").isin(topics)), "namesrv", "namesrv", t0)
    truth = a.truth.filter(F.col("topic").isin(topics)).select(
        "topic", F.lit("truth").alias("lane"), F.lit("truth").alias("kind"), F.lit("truth").alias("state"),
        F.array_join("brokers", ", ").alias("label"), _rel("start", t0), _rel("end", t0))
    return truth.unionByName(nstates).unionByName(cstates).toPandas()


def plot_steps(a: Analysis, max_topics: int = 6, max_lanes: int = 24, max_durations: int = 200_000) -> list[Step]:
    """The plot queries as steps (:mod:`reports.tasks`); :func:`assemble` makes the
    :class:`PlotData`. Only the lanes wait for the choice of topics."""
    run = a.run
    t0, bin_ms = run.run_start, time_bin_ms(run)
    return [
        step("p.faults", lambda: a.faults.select(
            "fault_id", "fault", F.array_join(F.coalesce("targets", F.array().cast("array<string>")), ", ")
            .alias("targets"), _rel("start", t0), _rel("end", t0), "has_end").toPandas()),
        step("p.all_topics", lambda: _stalest_topics(a)),
        step("p.topics", lambda all_topics: all_topics[:max_topics], "p.all_topics"),
        step("p.lane_counts", lambda topics: _lane_rank(a, topics).groupBy("topic").count().toPandas(), "p.topics"),
        step("p.lanes", lambda topics: _lanes(a, topics, max_lanes), "p.topics"),
        step("p.misrouted", lambda: misrouted.misrouted_over_time(a.classified, t0, bin_ms)
             .select(((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "reason", "sends").toPandas()),
        step("p.latency", lambda: clients.latency_over_time(a.sends, t0, bin_ms)
             .select(((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "n", "p50_ms", "p99_ms", "max_ms",
                     "timeouts").orderBy("t_s").toPandas()),
        step("p.durations", lambda: _durations(a, max_durations)),
    ]


def assemble(a: Analysis, r: dict, max_lanes: int = 24, max_durations: int = 200_000) -> PlotData:
    """:class:`PlotData` from the results of :func:`plot_steps` (pandas only)."""
    run = a.run
    notes: list[str] = []
    faults = r["p.faults"].sort_values(["start_s", "fault_id"]).reset_index(drop=True)
    all_topics, topics = r["p.all_topics"], r["p.topics"]
    if len(all_topics) > len(topics):
        notes.append(f"Route plots show the {len(topics)} stalest of {len(all_topics)} topics; "
                     "the Parquet table client_stale_pieces has all of them.")
    counts = r["p.lane_counts"]
    if len(counts) and int(counts["count"].max()) > max_lanes:
        notes.append(f"Route plots show at most {max_lanes} clients per topic (the stalest).")
    durations, n_int = r["p.durations"]
    if n_int is not None:
        notes.append(f"The staleness histogram is drawn from a {max_durations:,}-interval sample of {n_int:,}.")
    return PlotData(scale=run.manifest.scale, duration_s=(run.run_end - run.run_start) / 1000.0,
                    bin_s=time_bin_ms(run) / 1000.0, faults=faults, topics=topics, lanes=r["p.lanes"],
                    misrouted=r["p.misrouted"], latency=r["p.latency"], stale_durations=durations, notes=notes)


def collect_plot_data(a: Analysis, max_topics: int = 6, max_lanes: int = 24,
                      max_durations: int = 200_000, workers: int = 1) -> PlotData:
    """Aggregate in Spark, collect to pandas. See the module docstring for the limits."""
    steps = plot_steps(a, max_topics, max_lanes, max_durations)
    return assemble(a, run_steps(steps, workers), max_lanes, max_durations)
