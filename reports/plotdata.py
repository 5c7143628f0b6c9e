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

from reports import availability, clients, gather, misrouted
from reports.intervals import RUN, compress, scalar
from reports.load import RunData
from reports.pipeline import Analysis


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
    producers: pd.DataFrame = field(default_factory=pd.DataFrame)  # producer, first_s, last_s, attempts
    unavailable: pd.DataFrame = field(default_factory=pd.DataFrame)  # producer, topic, start_s, end_s


def _rel(col: str, t0: F.Column) -> F.Column:
    return ((F.col(col) - t0) / 1000.0).alias(col + "_s")


def _states(pieces: DataFrame, who: str, kind: str, t0: F.Column) -> DataFrame:
    runs = compress(pieces.select(RUN, who, "topic", "start", "end", state().alias("state")), [who, "topic"], "state")
    return runs.select(RUN, "topic", F.col(who).alias("lane"), F.lit(kind).alias("kind"), "state",
                       F.lit("").alias("label"), _rel("start", t0), _rel("end", t0))


def _topic_staleness(client_staleness: DataFrame) -> DataFrame:
    """``run, topic, s``: total client staleness per topic (the lane plot shows the stalest)."""
    return client_staleness.groupBy(RUN, "topic").agg(F.sum("stale_ms").alias("s"))


def _top_topics(client_staleness: DataFrame, max_topics: int) -> DataFrame:
    """``run, topic``: the ``max_topics`` stalest topics of each run (ties by name), picked
    in Spark so the lanes need not wait for a collected topic list."""
    w = Window.partitionBy(RUN).orderBy(F.desc("s"), "topic")
    return (_topic_staleness(client_staleness).withColumn("_rank", F.row_number().over(w))
            .filter(F.col("_rank") <= max_topics).select(RUN, "topic"))


def _lane_rank(client_staleness: DataFrame, topics: DataFrame) -> DataFrame:
    """Client lanes of ``topics`` ranked stalest first per topic (ties by name)."""
    w = Window.partitionBy(RUN, "topic").orderBy(F.desc("stale_ms"), "lane")
    return (client_staleness.join(F.broadcast(topics), [RUN, "topic"], "left_semi")
            .select(RUN, "topic", F.col("client").alias("lane"), "stale_ms").withColumn("rank", F.row_number().over(w)))


def _lanes(t0: F.Column, top: DataFrame, max_lanes: int, client_staleness: DataFrame, client_pieces: DataFrame,
           namesrv_pieces: DataFrame, truth_iv: DataFrame) -> DataFrame:
    def of_top(df: DataFrame) -> DataFrame:
        return df.join(F.broadcast(top), [RUN, "topic"], "left_semi")

    kept = _lane_rank(client_staleness, top).filter(F.col("rank") <= max_lanes).select(RUN, "topic", "lane")
    cstates = _states(of_top(client_pieces), "client", "client", t0).join(F.broadcast(kept), [RUN, "topic", "lane"])
    nstates = _states(of_top(namesrv_pieces), "namesrv", "namesrv", t0)
    truth = of_top(truth_iv).select(
        RUN, "topic", F.lit("truth").alias("lane"), F.lit("truth").alias("kind"), F.lit("truth").alias("state"),
        F.array_join("brokers", ", ").alias("label"), _rel("start", t0), _rel("end", t0))
    return truth.unionByName(nstates).unionByName(cstates)


def plot_queries(a: Analysis, max_topics: int = 6, max_lanes: int = 24,
                 max_durations: int = 200_000, max_windows: int = 100_000) -> dict[str, DataFrame]:
    """The small queries the plots draw, by name (what :func:`assemble` reads), each with a
    ``run`` column (one query for every run of the analysis). Nothing runs here: the report
    collects them with the metrics queries in one action."""
    run = a.run
    t0, bin_ms = scalar(run.run_start), scalar(run.bin_ms)
    top = _top_topics(a.client_staleness, max_topics)
    return {
        "p.latency": clients.latency_over_time(a.sends, t0, bin_ms).select(
            RUN, ((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "n", "p50_ms", "p99_ms", "max_ms", "timeouts"),
        "p.faults": a.faults.select(
            RUN, "fault_id", "fault", F.array_join(F.coalesce("targets", F.array().cast("array<string>")), ", ")
            .alias("targets"), _rel("start", t0), _rel("end", t0), "has_end"),
        "p.misrouted": misrouted.misrouted_over_time(a.classified, t0, bin_ms).select(
            RUN, ((F.col("bin") + 0.5) * bin_ms / 1000.0).alias("t_s"), "reason", "sends"),
        "p.topics": _topic_staleness(a.client_staleness),
        "p.lanes": _lanes(t0, top, max_lanes, a.client_staleness, a.client_pieces, a.namesrv_pieces, a.truth),
        "p.lane_counts": _lane_rank(a.client_staleness, top).groupBy(RUN, "topic").count(),
        "p.durations": _first(a.client_intervals, ["client", "topic", "start"], max_durations + 1).select(
            RUN, "duration_ms"),
        "p.intervals": a.client_intervals.groupBy(RUN).agg(F.count(F.lit(1)).alias("n")),
        **_availability_queries(a, t0, max_windows),
    }


def _first(df: DataFrame, order: list[str], n: int) -> DataFrame:
    """At most ``n`` rows of each run of ``df`` (the first by ``order``): a ``limit`` per
    run, ranked within the run's partition (no shuffle)."""
    rank = F.row_number().over(Window.partitionBy(RUN).orderBy(*order))
    return df.withColumn("_n", rank).filter(F.col("_n") <= n).drop("_n")


def _availability_queries(a: Analysis, t0: F.Column, max_windows: int) -> dict[str, DataFrame]:
    """The availability plot's tables: each producer's span of measured attempts and its
    unavailability windows (docs/design.md §9), at most ``max_windows`` + 1 of them."""
    end = a.run.measure_end
    att = availability.measured_attempts(a.sends, end)
    spans = att.groupBy(RUN, "producer").agg(((F.min("ts") - t0) / 1000.0).alias("first_s"),
                                             ((F.max("ts") - t0) / 1000.0).alias("last_s"),
                                        F.count(F.lit(1)).alias("attempts"))
    windows = availability.unavailable_windows(a.sends, end)
    windows = _first(windows, ["producer", "topic", "start"], max_windows + 1).select(
        RUN, "producer", "topic", _rel("start", t0), _rel("end", t0))
    return {"p.producers": spans, "p.unavailable": windows}


def assemble(run: RunData, a: Analysis, queries: dict[str, DataFrame], r: dict[str, gather.Rows],
             max_topics: int = 6, max_lanes: int = 24, max_durations: int = 200_000,
             max_windows: int = 100_000) -> PlotData:
    """:class:`PlotData` of ``run`` (one of the runs of ``a``) from the collected rows of
    :func:`plot_queries`.

    Only a run with more than ``max_durations`` client stale intervals costs one more
    Spark job: the histogram's seeded sample."""
    r = {name: gather.of_run(rows, run.id) for name, rows in r.items()}
    df = {name: gather.frame(r[name], [c for c in q.columns if c != RUN]) for name, q in queries.items()}
    notes: list[str] = []
    faults = df["p.faults"].sort_values(["start_s", "fault_id"]).reset_index(drop=True)
    ranked = sorted(r["p.topics"], key=lambda t: (-(t["s"] or 0.0), t["topic"]))
    all_topics = [t["topic"] for t in ranked]
    topics = all_topics[:max_topics]
    if len(all_topics) > len(topics):
        notes.append(f"Route plots show the {len(topics)} stalest of {len(all_topics)} topics; "
                     "the Parquet table client_stale_pieces has all of them.")
    counts = df["p.lane_counts"]
    if len(counts) and int(counts["count"].max()) > max_lanes:
        notes.append(f"Route plots show at most {max_lanes} clients per topic (the stalest).")
    durations = df["p.durations"]
    if len(durations) > max_durations:
        n_int = int(r["p.intervals"][0]["n"])
        durations = (a.client_intervals.filter(F.col(RUN) == run.id).select("duration_ms")
                     .sample(fraction=max_durations / n_int, seed=1).toPandas())
        notes.append(f"The staleness histogram is drawn from a {max_durations:,}-interval sample of {n_int:,}.")
    unavailable = df["p.unavailable"]
    if len(unavailable) > max_windows:
        unavailable = unavailable.iloc[:max_windows]
        notes.append(f"The availability plot shows {max_windows:,} of the unavailability windows "
                     "(metrics.json counts all of them).")
    return PlotData(scale=run.manifest.scale, duration_s=(run.run_end - run.run_start) / 1000.0,
                    bin_s=run.bin_ms / 1000.0, faults=faults, topics=topics, lanes=df["p.lanes"],
                    misrouted=df["p.misrouted"], latency=df["p.latency"].sort_values("t_s").reset_index(drop=True),
                    stale_durations=durations, notes=notes, producers=df["p.producers"], unavailable=unavailable)


def collect_plot_data(a: Analysis, max_topics: int = 6, max_lanes: int = 24,
                      max_durations: int = 200_000) -> PlotData:
    """Aggregate in Spark, collect to pandas (one action). See the module docstring.
    ``a``: an analysis of one run."""
    if not isinstance(a.run, RunData):
        raise TypeError("collect_plot_data: an analysis of one run")
    queries = plot_queries(a, max_topics, max_lanes, max_durations)
    return assemble(a.run, a, queries, gather.collect_all(queries), max_topics, max_lanes, max_durations)
