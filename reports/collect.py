"""One analysis of some runs and its collected results: the Spark half of a report.

Load the runs as one cached table (:func:`reports.load.load_runs`), build ONE analysis of all
of them (:mod:`reports.pipeline`, every table keyed by ``run``) and its metrics and plot
queries, and collect them in two actions (:mod:`reports.gather`). Kept apart from
:mod:`reports.job`, which decides what is asked for and writes the results, so that each
reads on its own: this module runs Spark, that one runs the files.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

from pyspark.sql import SparkSession

from reports import gather, plotdata
from reports.load import RunData, load_runs, release_runs
from reports.metrics import HELPERS, assemble, metric_query_steps, metric_results, queries_of
from reports.pipeline import Analysis, analysis_steps
from reports.runs import as_one
from reports.session import call_sites_named, name_call_sites
from reports.tasks import Step, downstream, run_steps, step, upstream

Progress = Callable[[str], None]


class Stages:
    """Announce each stage and time it: Spark start-up and big runs take seconds."""

    def __init__(self, progress: Progress) -> None:
        self.progress, self.seconds = progress, {}
        self._name: str | None = None
        self._t = time.perf_counter()

    def __call__(self, name: str, message: str) -> None:
        self.done()
        self.progress(message)
        self._name, self._t = name, time.perf_counter()

    def done(self) -> None:
        if self._name is not None:
            self.seconds[self._name] = time.perf_counter() - self._t
            self._name = None


def _analysing(runs: list[RunData]) -> str:
    bad = sum(sum(r.bad_lines.values()) for r in runs)
    what = f"{sum(r.event_count for r in runs):,} events" + (f" of {len(runs)} runs" if len(runs) > 1 else "")
    return (f"analysing {what}" + (f" ({bad} unreadable line(s) skipped)" if bad else "")
            + ": lives, pauses, partitions, hosting, truth, views, staleness, misrouted sends")


@dataclass
class Collected:
    """One run, the analysis (of all the runs) and the collected small results (metrics
    document of this run; plot queries and rows of all the runs, split by :mod:`reports.plotdata`)."""

    run: RunData
    analysis: Analysis | None  # None when only some sections were asked for
    metrics: dict[str, Any]
    plot_queries: dict[str, Any]
    plot_rows: dict[str, Any]


def collect(spark: SparkSession, run_dirs: list[str], stage: Stages, plots_too: bool,
            workers: int = 1, release: bool = False, sections: tuple[str, ...] | None = None) -> list[Collected]:
    """Load the runs as one table, build ONE analysis of all of them and its queries
    (DataFrames not yet computed: driver work, on ``workers`` threads), and collect every
    metrics (and plot) query in two Spark actions (:mod:`reports.gather`, :func:`_analyse`).

    Why one for all: every transform is keyed by ``run`` (:mod:`reports.intervals`), so the
    plan of N runs is the size of the plan of one; its windows, group-bys and joins need no
    shuffle over the events hash-partitioned by ``run``. (Before the keying, one plan held a
    copy of every query per run, and 4 runs took 8.7x one run's time.)

    ``release``: drop the runs' cached events at the end (:func:`reports.load.release_runs`;
    always on failure), for callers that read nothing more. ``sections``: only these sections
    of the metrics documents (:func:`reports.metrics.sections_of`; no plots then): only the
    steps their queries need are built, and there is no :class:`Analysis`."""
    stage("load", f"reading {', '.join(run_dirs)} (manifest, events/*.jsonl, faults.jsonl)")
    with call_sites_named(spark):
        runs = load_runs(spark, run_dirs)
        try:
            out = _analyse(runs, stage, plots_too, workers, partial(name_call_sites, spark), sections)
        except BaseException:
            release_runs(runs)
            raise
    if release:
        release_runs(runs)
    return out


def _analyse(runs: list[RunData], stage: Stages, plots_too: bool, workers: int,
             per_thread: Callable[[], None], sections: tuple[str, ...] | None = None) -> list[Collected]:
    """The analysis of the loaded ``runs`` and their collected results (see :func:`collect`)."""
    stage("analyse", _analysing(runs) + "; assembling metrics" + (", plot data" if plots_too else "")
          + (f" (only {', '.join(sections)})" if sections is not None else "")
          + (f" ({workers} threads)" if workers > 1 else ""))
    one = as_one(runs)
    names = [f.name for f in fields(Analysis) if f.name != "run"]
    metric_steps = metric_query_steps(one)
    steps: list[Step] = [*analysis_steps(one), *metric_steps]
    if sections is None:
        queries = [s.name for s in metric_steps if s.name not in HELPERS]
        steps.append(step("analysis", lambda *t: Analysis(run=one, **dict(zip(names, t))), *names))
        steps.append(step("pq", plotdata.plot_queries if plots_too else (lambda a: {}), "analysis"))
    else:  # only what the sections' queries read: no Analysis, no plots
        queries = queries_of(sections)
        steps = [*upstream(steps, queries), step("pq", lambda: {})]
    # two collects: the queries that do not wait for the long chain of the analysis (truth
    # -> stale intervals) run while it is still being built
    late = downstream(steps, "truth")
    early_q, late_q = [q for q in queries if q not in late], [q for q in queries if q in late]
    steps.append(step("got.early", lambda *mq: gather.collect_all(
        {name: df for name, (df, _) in zip(early_q, mq)}), *early_q))
    steps.append(step("got.late", lambda pq, *mq: gather.collect_all(
        {**{name: df for name, (df, _) in zip(late_q, mq)}, **pq}), "pq", *late_q))
    built = run_steps(steps, workers, per_thread)
    a, pq, got = built.get("analysis"), built["pq"], {**built["got.early"], **built["got.late"]}
    mq = {name: built[name] for name in queries}
    out = [Collected(run, a, assemble(run, metric_results(mq, got, run.id), sections), pq, got) for run in runs]
    stage.done()
    return out
