"""The analysis as one pass over a loaded run: every derived table, built from the pure
transforms of ``truth``, ``staleness``, ``misrouted`` and ``clients``.

Kept apart from ``job`` so tests and notebooks can get the tables of a run without
writing a report, and apart from ``metrics`` so the JSON assembly stays a thin layer of
``collect()`` calls over these DataFrames.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from pyspark.sql import DataFrame, functions as F

from reports import misrouted, staleness, truth
from reports.load import RunData
from reports.tasks import Step, given, run_steps, step


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
        return {name: getattr(self, field) for name, field in TABLES.items()}


#: Parquet table name -> :class:`Analysis` field (= analysis step) it is written from.
TABLES: dict[str, str] = {
    "lives": "lives", "pauses": "pauses", "partitions": "partitions", "hosts": "hosts", "faults": "faults",
    "truth": "truth", "client_views": "client_views", "namesrv_views": "namesrv_views",
    "client_stale_pieces": "client_pieces", "namesrv_stale_pieces": "namesrv_pieces",
    "client_stale_intervals": "client_intervals", "namesrv_stale_intervals": "namesrv_intervals",
    "client_staleness": "client_staleness", "namesrv_staleness": "namesrv_staleness",
    "fault_convergence": "convergence", "sends": "classified",
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


def _topics(hosts: DataFrame, cviews: DataFrame, nviews: DataFrame) -> DataFrame:
    """Every topic some broker hosts or some view names: truth is drawn for each."""
    return (hosts.select("topic").unionByName(cviews.select("topic"))
            .unionByName(nviews.select("topic")).distinct())


def analysis_steps(run: RunData) -> list[Step]:
    """The derived tables as a dependency graph (see :mod:`reports.tasks`); the reused
    ones are materialized. Listed in priority order: the longest chain (hosting and
    views -> truth -> pieces -> stale intervals) first, the rest fills the gaps."""
    ev, end, start, nodes = run.events, run.run_end, run.run_start, run.nodes
    m = materialize
    return [
        step("hosts", lambda: m(truth.hosts(ev, nodes, end))),
        step("pauses", lambda: m(truth.pauses(ev, end))),
        step("client_views", lambda: m(staleness.client_views(ev, end, run.measure_end))),
        step("namesrv_views", lambda: m(staleness.namesrv_views(ev, end, run.measure_end))),
        step("lives", lambda: m(truth.lives(ev, end))),
        step("truth", lambda h, p, cv, nv, lv: m(truth.truth(h, p, _topics(h, cv, nv), start, end, lv)),
             "hosts", "pauses", "client_views", "namesrv_views", "lives"),
        step("client_pieces", lambda v, t: m(staleness.stale_pieces(v, t, "client")), "client_views", "truth"),
        step("namesrv_pieces", lambda v, t: m(staleness.stale_pieces(v, t, "namesrv")), "namesrv_views", "truth"),
        step("client_intervals", lambda p: m(staleness.stale_intervals(p, "client")), "client_pieces"),
        step("namesrv_intervals", lambda p: m(staleness.stale_intervals(p, "namesrv")), "namesrv_pieces"),
        step("client_staleness", lambda p, i: staleness.staleness_summary(p, i, "client"),
             "client_pieces", "client_intervals"),
        step("namesrv_staleness", lambda p, i: staleness.staleness_summary(p, i, "namesrv"),
             "namesrv_pieces", "namesrv_intervals"),
        step("partitions", lambda: m(truth.partitions(ev, end))),
        step("autocreate", lambda: m(truth.autocreate(ev, nodes, end))),
        step("write_queues", lambda: m(truth.write_queues(ev, end))),
        step("sends", lambda: misrouted.sends(ev)),
        step("classified", lambda s, lv, p, pt, h, a, wq: m(misrouted.classify_sends(s, nodes, lv, p, pt, h, a, wq, end)),
             "sends", "lives", "pauses", "partitions", "hosts", "autocreate", "write_queues"),
        step("faults", lambda: m(truth.faults(ev, end))),
        step("convergence", lambda f, i: staleness.fault_convergence(f, i), "faults", "client_intervals"),
    ]


def built(a: Analysis) -> list[Step]:
    """Steps that return the tables of an existing analysis under their step names, for
    running output steps (metrics, plots) on an analysis built earlier."""
    return given({f.name: getattr(a, f.name) for f in fields(a) if f.name != "run"})


def analyse(run: RunData, workers: int = 1) -> Analysis:
    """Build every derived table of ``run``, on ``workers`` threads (see :mod:`reports.tasks`)."""
    return Analysis(run=run, **run_steps(analysis_steps(run), workers))


def time_bin_ms(run: RunData, bins: int = 120) -> float:
    """Width of the time bins of the over-time plots: the run split into ``bins``."""
    return max((run.run_end - run.run_start) / bins, 1.0)


def offset(col: str, run: RunData) -> F.Column:
    """Milliseconds since the run's first event, for tables meant for people."""
    return F.col(col) - F.lit(run.run_start)
