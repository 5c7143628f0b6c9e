"""The analysis as one pass over a loaded run: every derived table, built from the pure
transforms of ``truth``, ``staleness``, ``misrouted`` and ``clients``.

Kept apart from ``job`` so tests and notebooks can get the tables of a run without
writing a report, and apart from ``metrics`` so the JSON assembly stays a thin layer of
``collect()`` calls over these DataFrames.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, functions as F

from reports import clients, misrouted, staleness, truth
from reports.load import RunData


@dataclass
class Analysis:
    """Derived tables of one run. Interval tables use host wall ms ``start``/``end``."""

    run: RunData
    lives: DataFrame
    pauses: DataFrame
    partitions: DataFrame
    hosts: DataFrame
    autocreate: DataFrame
    write_queues: DataFrame
    faults: DataFrame
    truth: DataFrame
    client_views: DataFrame
    namesrv_views: DataFrame
    client_pieces: DataFrame
    namesrv_pieces: DataFrame
    client_intervals: DataFrame
    namesrv_intervals: DataFrame
    client_staleness: DataFrame
    namesrv_staleness: DataFrame
    convergence: DataFrame
    sends: DataFrame
    classified: DataFrame

    def tables(self) -> dict[str, DataFrame]:
        """The tables written as Parquet for users' notebooks (name -> DataFrame)."""
        return {
            "lives": self.lives, "pauses": self.pauses, "partitions": self.partitions,
            "hosts": self.hosts, "faults": self.faults, "truth": self.truth,
            "client_views": self.client_views, "namesrv_views": self.namesrv_views,
            "client_stale_pieces": self.client_pieces, "namesrv_stale_pieces": self.namesrv_pieces,
            "client_stale_intervals": self.client_intervals,
            "namesrv_stale_intervals": self.namesrv_intervals,
            "client_staleness": self.client_staleness, "namesrv_staleness": self.namesrv_staleness,
            "fault_convergence": self.convergence, "sends": self.classified,
        }


def materialize(df: DataFrame) -> DataFrame:
    """Compute ``df`` now and cut its lineage (``localCheckpoint``).

    Why: each interval table is reused by several later transforms. With plain
    ``cache()`` every later DataFrame call re-analyses the whole stack of windows and
    joins beneath it, which costs seconds per call even on ten events; a checkpointed
    table is a leaf, so plans stay shallow and a hand-made log is analysed in about a
    second. On large runs it costs what caching costs.
    """
    return df.localCheckpoint(eager=True)


def analyse(run: RunData) -> Analysis:
    """Build every derived table of ``run``; the reused ones are materialized."""
    ev, end, start = run.events, run.run_end, run.run_start
    lives = materialize(truth.lives(ev, end))
    pauses = materialize(truth.pauses(ev, end))
    parts = materialize(truth.partitions(ev, end))
    hosts = materialize(truth.hosts(ev, run.nodes, end))
    auto = materialize(truth.autocreate(ev, run.nodes, end))
    wq = materialize(truth.write_queues(ev, end))
    faults = materialize(truth.faults(ev, end))
    cviews = materialize(staleness.client_views(ev, end))
    nviews = materialize(staleness.namesrv_views(ev, end))
    topics = (hosts.select("topic").unionByName(cviews.select("topic"))
              .unionByName(nviews.select("topic")).distinct())
    truth_iv = materialize(truth.truth(hosts, pauses, topics, start, end))
    cpieces = materialize(staleness.stale_pieces(cviews, truth_iv, "client"))
    npieces = materialize(staleness.stale_pieces(nviews, truth_iv, "namesrv"))
    cint = materialize(staleness.stale_intervals(cpieces, "client"))
    nint = materialize(staleness.stale_intervals(npieces, "namesrv"))
    send_df = misrouted.sends(ev)
    classified = materialize(misrouted.classify_sends(send_df, run.nodes, lives, pauses, parts, hosts, auto, wq))
    return Analysis(
        run=run, lives=lives, pauses=pauses, partitions=parts, hosts=hosts, autocreate=auto,
        write_queues=wq, faults=faults, truth=truth_iv, client_views=cviews, namesrv_views=nviews,
        client_pieces=cpieces, namesrv_pieces=npieces, client_intervals=cint, namesrv_intervals=nint,
        client_staleness=staleness.staleness_summary(cpieces, cint, "client"),
        namesrv_staleness=staleness.staleness_summary(npieces, nint, "namesrv"),
        convergence=staleness.fault_convergence(faults, cint),
        sends=send_df, classified=classified,
    )


def time_bin_ms(run: RunData, bins: int = 120) -> float:
    """Width of the time bins of the over-time plots: the run split into ``bins``."""
    return max((run.run_end - run.run_start) / bins, 1.0)


def offset(col: str, run: RunData) -> F.Column:
    """Milliseconds since the run's first event, for tables meant for people."""
    return F.col(col) - F.lit(run.run_start)
