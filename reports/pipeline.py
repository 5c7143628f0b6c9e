"""The analysis as one pass over a loaded run: every derived table, built from the pure
transforms of ``truth``, ``staleness``, ``misrouted`` and ``clients``.

Kept apart from ``job`` so tests and notebooks can get the tables of a run without
writing a report, and apart from ``metrics`` so the JSON assembly stays a thin layer of
small queries over these DataFrames (collected together, :mod:`reports.gather`).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from pyspark.sql import DataFrame, functions as F

from reports import misrouted, staleness, truth
from reports.intervals import RUN
from reports.load import RunData
from reports.runs import Runs
from reports.tasks import Step, run_steps, step

#: What an analysis reads: one run (per-run numbers as floats) or several as one
#: (:func:`reports.runs.as_one`: the same attributes, per-run numbers as columns).
Input = RunData | Runs


@dataclass
class Analysis:
    """Derived tables of one run or of several at once (every table has the ``run``
    column). Interval tables use host wall ms ``start``/``end``."""

    run: Input
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

    def tables(self, run_id: int | None = None) -> dict[str, DataFrame]:
        """The tables written as Parquet for users' notebooks (name -> DataFrame); ``run_id``:
        only that run's rows, without the ``run`` column (a report is of one run)."""
        def of_run(df: DataFrame) -> DataFrame:
            return df if run_id is None else df.filter(F.col(RUN) == run_id).drop(RUN)
        return {name: of_run(getattr(self, field)) for name, field in TABLES.items()}


#: Parquet table name -> :class:`Analysis` field it is written from.
TABLES: dict[str, str] = {
    "lives": "lives", "pauses": "pauses", "partitions": "partitions", "hosts": "hosts", "faults": "faults",
    "truth": "truth", "client_views": "client_views", "namesrv_views": "namesrv_views",
    "client_stale_pieces": "client_pieces", "namesrv_stale_pieces": "namesrv_pieces",
    "client_stale_intervals": "client_intervals", "namesrv_stale_intervals": "namesrv_intervals",
    "client_staleness": "client_staleness", "namesrv_staleness": "namesrv_staleness",
    "fault_convergence": "convergence", "sends": "classified",
}


def reuse(df: DataFrame) -> DataFrame:
    """``df`` computed now and cut from its lineage (``localCheckpoint``, kept in memory or
    on local disk): later reads get the kept rows.

    Why a cut: a table is read by several later transforms. Without it every plan above it
    holds a copy of the whole stack of windows and joins beneath it: one report's plan
    grew to thousands of operators, took minutes to optimize and ran the driver out of
    memory.

    Why eager (a Spark job per cut table, about 16 per analysis, whatever its number of
    runs): the steps that build the tables run on several threads (:mod:`reports.tasks`), so
    a cut's job runs beside the building of the others, and the actions that collect the
    results then plan and ship small plans over kept rows. Lazy cuts (computed inside those
    actions) made each
    of its tasks carry the plans of every table beneath it: warm ``metrics()`` of a small
    run took 15.0 s against 12.6 s eager, alternating in one session (bench/README.md)."""
    return df.localCheckpoint(eager=True)


def _topics(hosts: DataFrame, cviews: DataFrame, nviews: DataFrame) -> DataFrame:
    """Every topic some broker hosts or some view names: truth is drawn for each."""
    return (hosts.select(RUN, "topic").unionByName(cviews.select(RUN, "topic"))
            .unionByName(nviews.select(RUN, "topic")).distinct())


def analysis_steps(run: Input, prefix: str = "") -> list[Step]:
    """The derived tables of ``run`` as a dependency graph (:mod:`reports.tasks`), step
    names prefixed with ``prefix`` (one graph can hold several runs). Nothing runs: a
    step builds a DataFrame; the ones several others read are cut (:func:`reuse`).

    Why a graph: building the DataFrames is the driver's work (py4j round trips, Spark's
    analysis and planning of each), a good part of a small run's time; independent
    chains are built on several threads at once. Listed in priority order: the longest
    chain (hosting and views -> truth -> pieces -> stale intervals) first."""
    ev, end, start, nodes, m, p = run.events, run.run_end, run.run_start, run.nodes, reuse, prefix
    return [
        step(p + "hosts", lambda: m(truth.hosts(ev, nodes, end))),
        step(p + "faults", lambda: m(truth.faults(ev, end))),
        step(p + "pauses", lambda f: m(truth.pauses(f, end)), p + "faults"),
        step(p + "client_views", lambda: m(staleness.client_views(ev, end, run.measure_end))),
        step(p + "namesrv_views", lambda: m(staleness.namesrv_views(ev, end, run.measure_end))),
        step(p + "lives", lambda: m(truth.lives(ev, end))),
        step(p + "truth", lambda h, pa, cv, nv, lv: m(truth.truth(h, pa, _topics(h, cv, nv), start, end, lv)),
             p + "hosts", p + "pauses", p + "client_views", p + "namesrv_views", p + "lives"),
        step(p + "client_pieces", lambda v, t: m(staleness.stale_pieces(v, t, "client")),
             p + "client_views", p + "truth"),
        step(p + "namesrv_pieces", lambda v, t: m(staleness.stale_pieces(v, t, "namesrv")),
             p + "namesrv_views", p + "truth"),
        step(p + "client_intervals", lambda x: m(staleness.stale_intervals(x, "client")), p + "client_pieces"),
        step(p + "namesrv_intervals", lambda x: m(staleness.stale_intervals(x, "namesrv")), p + "namesrv_pieces"),
        step(p + "client_staleness", lambda x, i: staleness.staleness_summary(x, i, "client"),
             p + "client_pieces", p + "client_intervals"),
        step(p + "namesrv_staleness", lambda x, i: staleness.staleness_summary(x, i, "namesrv"),
             p + "namesrv_pieces", p + "namesrv_intervals"),
        step(p + "partitions", lambda f: m(truth.partitions(f)), p + "faults"),
        step(p + "autocreate", lambda: m(truth.autocreate(ev, nodes, end))),
        step(p + "write_queues", lambda: m(truth.write_queues(ev, end))),
        step(p + "sends", lambda: misrouted.sends(ev)),
        step(p + "classified", lambda s, lv, pa, pt, h, a, wq: m(misrouted.classify_sends(
            s, nodes, lv, pa, pt, h, a, wq, end)),
             p + "sends", p + "lives", p + "pauses", p + "partitions", p + "hosts", p + "autocreate",
             p + "write_queues"),
        step(p + "convergence", lambda f, i: staleness.fault_convergence(f, i), p + "faults", p + "client_intervals"),
    ]


def analysis_of(run: Input, done: dict[str, DataFrame], prefix: str = "") -> Analysis:
    """The :class:`Analysis` of ``run`` from the results of :func:`analysis_steps`."""
    return Analysis(run=run, **{f.name: done[prefix + f.name] for f in fields(Analysis) if f.name != "run"})


def analyse(run: Input, workers: int = 1) -> Analysis:
    """Every derived table of ``run`` (one or several, :data:`Input`), built on ``workers``
    threads: the tables several others read are computed as they are cut (:func:`reuse`),
    the rest stay DataFrames not yet computed. The report collects all its small results
    in one action (:mod:`reports.gather`)."""
    return analysis_of(run, run_steps(analysis_steps(run), workers))
