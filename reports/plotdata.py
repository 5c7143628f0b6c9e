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
from reports.load import RunData
from reports.pipeline import Analysis, built, time_bin_ms
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


def _durations(intervals: DataFrame, max_durations: int) -> tuple[pd.DataFrame, int | None]:
    """Client stale interval durations, all of them up to ``max_durations`` (one job on a
    small run), else a seeded sample; the second value is the total when sampled."""
    durations = intervals.select("duration_ms")
    got = durations.limit(max_durations + 1).toPandas()
    if len(got) <= max_durations:
        return got, None
    n_int = intervals.count()
    return durations.sample(fraction=max_durations / n_int, seed=1).toPandas(), n_int


def _stalest_topics(client_staleness: DataFrame) -> list[str]:
    stale = client_staleness.groupBy("topic").agg(F.sum("stale_ms").alias("s")).orderBy(F.desc("s"), "topic")
    return [r["topic"] for r in stale.collect()]


def _lane_rank(client_staleness: DataFrame, topics: list[str]) -> DataFrame:
    """Client lanes of ``topics`` ranked stalest first per topic (ties by name)."""
    w = Window.partitionBy("topic").orderBy(F.desc("stale_ms"), "lane")
    return (client_staleness.filter(F.col("topic").isin(topics))
            .select("topic", F.col("client").alias("lane"), "stale_ms").withColumn("rank", F.row_number().over(w)))


def _lanes(t0: float, topics: list[str], max_lanes: int, client_staleness: DataFrame, client_pieces: DataFrame,
           namesrv_pieces: DataFrame, truth_iv: DataFrame) -> pd.DataFrame:
    kept = _lane_rank(client_staleness, topics).filter(F.col("rank") <= max_lanes).select("topic", "lane")
    cstates = _states(client_pieces.filter(F.col("topic").isin(topics)), "client", "client", t0).join(
        F.broadcast(kept), ["topic", "lane"])
    nstates = _states(namesrv_pieces.filter(F.col("topic").isin(topics)), "namesrv", "namesrv", t0)
    truth = truth_iv.filter(F.col("topic").isin(topics)).select(
        "topic", F.lit("truth").alias("lane"), F.lit("truth").alias("kind"), F.lit("truth").alias("state"),
        F.array_join("brokers", ", ").alias("label"), _rel("start", t0), _rel("end", t0))
    return truth.unionByName(nstates).unionByName(cstates).toPandas()


def plot_steps(run: RunData, max_topics: int = 6, max_lanes: int = 24, max_durations: int = 200_000) -> list[Step]:
    """The plot queries as steps naming the analysis tables they read (:mod:`reports.tasks`);
    :func:`assemble` makes the :class:`PlotData`. Only the lanes wait for the topics."""
    t0, bin_ms = run.run_start, time_bin_ms(run)
    return [
        step("p.latency", lambda s: clients.latency_over_time(s, t0, bin_ms)
             .select(((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "n", "p50_ms", "p99_ms", "max_ms",
                     "timeouts").orderBy("t_s").toPandas(), "sends"),
        step("p.faults", lambda f: f.select(
            "fault_id", "fault", F.array_join(F.coalesce("targets", F.array().cast("array<string>")), ", ")
            .alias("targets"), _rel("start", t0), _rel("end", t0), "has_end").toPandas(), "faults"),
        step("p.misrouted", lambda c: misrouted.misrouted_over_time(c, t0, bin_ms)
             .select(((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "reason", "sends").toPandas(),
             "classified"),
        step("p.all_topics", _stalest_topics, "client_staleness"),
        step("p.topics", lambda all_topics: all_topics[:max_topics], "p.all_topics"),
        step("p.lanes", lambda topics, *tables: _lanes(t0, topics, max_lanes, *tables),
             "p.topics", "client_staleness", "client_pieces", "namesrv_pieces", "truth"),
        step("p.lane_counts", lambda topics, st: _lane_rank(st, topics).groupBy("topic").count().toPandas(),
             "p.topics", "client_staleness"),
        step("p.durations", lambda i: _durations(i, max_durations), "client_intervals"),
    ]


#: The plot steps' names (what :func:`assemble` reads).
PLOT_RESULTS = ("p.latency", "p.faults", "p.misrouted", "p.all_topics", "p.topics", "p.lanes", "p.lane_counts",
                "p.durations")


def assemble(run: RunData, r: dict, max_lanes: int = 24, max_durations: int = 200_000) -> PlotData:
    """:class:`PlotData` from the results of :func:`plot_steps` (pandas only)."""
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
    steps = built(a) + plot_steps(a.run, max_topics, max_lanes, max_durations)
    return assemble(a.run, run_steps(steps, workers), max_lanes, max_durations)
