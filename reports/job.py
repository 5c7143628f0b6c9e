"""The report job: run dirs in, each run's ``report/`` out. The SparkSession is passed in.

Why the session is a parameter: the CLI builds it once at the entry point (local or
``--master``), tests pass their one session per worker, the benchmark times the job
without JVM start-up. Nothing below builds or stops a session.

The Spark work of a report of one run or many: one scan of every run's logs into one
cached table with a ``run`` column, hash-partitioned by it (dropped from the cache when the
report is done, so a warm session does not accumulate them), one small job for their bounds
and broken lines, ONE analysis of all the runs together (every table keyed by ``run``) and
TWO actions collecting every metrics and plot query of every run (:mod:`reports.gather`: the
queries that do not wait for the analysis's long chain, while it is still being built; then
the rest), and, only when Parquet is written, one job per table and run. Building the
DataFrames (driver work) and drawing the plots (pandas, matplotlib) run on a few threads.

Entry points: :func:`run_reports` / :func:`run_report` (everything written),
:func:`compute_many` / :func:`metrics` (the metrics.json documents only, nothing written).

Output (``out_dir``, default ``RUN_DIR/report``): ``metrics.json``, ``report.html``, the
plots as PNG, and the derived tables as Parquet under ``parquet/<table>/``.
"""
from __future__ import annotations

import gc
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from reports import gather, html, plotdata, plots
from reports.load import RunData, load_runs, release_runs
from reports.runs import as_one
from reports.metrics import HELPERS, assemble, metric_query_steps, metric_results
from reports.session import THREADS  # threads building DataFrames, drawing, writing Parquet
from reports.session import call_sites_named, name_call_sites
from reports.pipeline import TABLES, Analysis, analysis_steps
from reports.tasks import Step, downstream, run_steps, step
from rmqemu.errors import RunInputError

Progress = Callable[[str], None]



def quiet(_: str) -> None:
    """A progress callback that says nothing."""


@dataclass
class ReportResult:
    """What a report run produced (paths are inside ``out_dir``)."""

    out_dir: Path
    metrics: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


class _Stages:
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
class _Collected:
    """One run, the analysis (of all the runs) and the collected small results (metrics
    document of this run; plot queries and rows of all the runs, split by :mod:`reports.plotdata`)."""

    run: RunData
    analysis: Analysis
    metrics: dict[str, Any]
    plot_queries: dict[str, Any]
    plot_rows: dict[str, Any]


def _collect(spark: SparkSession, run_dirs: list[str], stage: _Stages, plots_too: bool,
             workers: int = 1, release: bool = False) -> list[_Collected]:
    """Load the runs as one table, build ONE analysis of all of them and its queries
    (DataFrames not yet computed: driver work, on ``workers`` threads), and collect every
    metrics (and plot) query in two Spark actions (:mod:`reports.gather`, :func:`_analyse`).

    Why one for all: every transform is keyed by ``run`` (:mod:`reports.intervals`), so the
    plan of N runs is the size of the plan of one; its windows, group-bys and joins need no
    shuffle over the events hash-partitioned by ``run``. (Before the keying, one plan held a
    copy of every query per run, and 4 runs took 8.7x one run's time.)

    ``release``: drop the runs' cached events at the end (:func:`reports.load.release_runs`;
    always on failure), for callers that read nothing more."""
    stage("load", f"reading {', '.join(run_dirs)} (manifest, events/*.jsonl, faults.jsonl)")
    with call_sites_named(spark):
        runs = load_runs(spark, run_dirs)
        try:
            out = _analyse(runs, stage, plots_too, workers, partial(name_call_sites, spark))
        except BaseException:
            release_runs(runs)
            raise
    if release:
        release_runs(runs)
    return out


def _analyse(runs: list[RunData], stage: _Stages, plots_too: bool, workers: int,
             per_thread: Callable[[], None]) -> list[_Collected]:
    """The analysis of the loaded ``runs`` and their collected results (see :func:`_collect`)."""
    stage("analyse", _analysing(runs) + "; assembling metrics" + (", plot data" if plots_too else "")
          + (f" ({workers} threads)" if workers > 1 else ""))
    one = as_one(runs)
    names = [f.name for f in fields(Analysis) if f.name != "run"]
    metric_steps = metric_query_steps(one)
    queries = [s.name for s in metric_steps if s.name not in HELPERS]
    steps: list[Step] = [*analysis_steps(one), *metric_steps]
    steps.append(step("analysis", lambda *t: Analysis(run=one, **dict(zip(names, t))), *names))
    steps.append(step("pq", plotdata.plot_queries if plots_too else (lambda a: {}), "analysis"))
    # two collects: the queries that do not wait for the long chain of the analysis (truth
    # -> stale intervals) run while it is still being built
    late = downstream(steps, "truth")
    early_q, late_q = [q for q in queries if q not in late], [q for q in queries if q in late]
    steps.append(step("got.early", lambda *mq: gather.collect_all(
        {name: df for name, (df, _) in zip(early_q, mq)}), *early_q))
    steps.append(step("got.late", lambda pq, *mq: gather.collect_all(
        {**{name: df for name, (df, _) in zip(late_q, mq)}, **pq}), "pq", *late_q))
    built = run_steps(steps, workers, per_thread)
    a, pq, got = built["analysis"], built["pq"], {**built["got.early"], **built["got.late"]}
    mq = {name: built[name] for name in queries}
    out = [_Collected(run, a, assemble(run, metric_results(mq, got, run.id)), pq, got) for run in runs]
    stage.done()
    return out


def compute_many(spark: SparkSession, run_dirs: list[str], progress: Progress = quiet,
                 workers: int = THREADS) -> dict[str, dict[str, Any]]:
    """``run_dir -> metrics.json document`` of each run, all runs analysed together.

    The runs are read as one cached table with a ``run`` column and every run's metrics
    queries are collected in two Spark actions, so N small runs cost about the jobs of one
    (no plots, HTML or Parquet; nothing is written). Raises ``RunInputError`` for unusable
    input (a run dir given twice included). The SparkSession is the caller's."""
    collected = _collect(spark, list(run_dirs), _Stages(progress), False, workers, release=True)
    docs = {c.run.key: c.metrics for c in collected}
    del collected
    free_proxies()
    return docs


def free_proxies() -> None:
    """Collect Python's reference cycles now, so that py4j frees the JVM objects a
    finished analysis made.

    Why: py4j's proxies form cycles (a ``JavaObject`` keeps the ``JavaMember`` objects
    called on it, each pointing back), so thousands of them outlive a call until Python's
    cyclic collector happens to run, and they pin the JVM's plans and checkpointed tables.
    A warm session (the pytest plugin's lives as long as its worker) then fills its driver
    heap: measured, the tests' 1 GiB driver was in back-to-back full GCs by the 7th warm
    ``metrics()`` call, 15-23 s a call instead of 10 (bench/README.md)."""
    gc.collect()


def metrics(spark: SparkSession, run_dir: str, workers: int = THREADS) -> dict[str, Any]:
    """Only the ``metrics.json`` document of one run (no plots, HTML or Parquet; nothing
    written): the cheapest answer a warm session gives, for tests and notebooks."""
    return compute_many(spark, [run_dir], workers=workers)[run_dir]


def compute(spark: SparkSession, run_dir: str, progress: Progress = quiet,
            seconds: dict[str, float] | None = None, workers: int = THREADS) -> tuple[Analysis, dict[str, Any]]:
    """Load, analyse, assemble metrics (no files written): ``(analysis, metrics)``.
    Raises ``RunInputError``. ``seconds`` receives the time of each stage."""
    stage = _Stages(progress)
    got = _collect(spark, [run_dir], stage, False, workers)[0]
    if seconds is not None:
        seconds.update(stage.seconds)
    return got.analysis, got.metrics


def default_out(run_dir: str) -> Path:
    """``RUN_DIR/report`` for a local run dir; a remote one needs ``--out``."""
    if "://" in run_dir and not run_dir.startswith("file://"):
        raise RunInputError(f"{run_dir}: a remote run dir needs --out DIR (a local directory for the report)")
    return Path(run_dir.removeprefix("file://")) / "report"


def write_json(path: Path, data: Any) -> None:
    """Atomic write (tmp + rename): a reader never sees half a metrics.json."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def table_steps(a: Analysis, out: Path, prefix: str = "t.", run_id: int | None = None) -> list[Step]:
    """One step per derived table (``pipeline.TABLES``): write it as Parquet under
    ``out/<name>/`` (``run_id``: only that run's rows, without the ``run`` column)."""
    def writer(name: str, df: Any) -> Step:
        return step(prefix + name, lambda: df.write.mode("overwrite").parquet(str(out / name)))
    return [writer(name, df) for name, df in a.tables(run_id).items()]


def write_tables(a: Analysis, out: Path, workers: int = 1, run_id: int | None = None) -> list[str]:
    """Every derived table as Parquet under ``out/<name>/``; returns the names."""
    run_steps(table_steps(a, out, run_id=run_id), workers)
    return list(TABLES)


def _prepare(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunInputError(f"{out}: cannot create the report directory ({exc.strerror})") from None
    for old in out.glob("routes-*.png"):  # a re-run must not leave plots of topics it no longer draws
        old.unlink()
    if (out / "parquet").is_dir():
        shutil.rmtree(out / "parquet")


def run_reports(spark: SparkSession, run_dirs: list[str], out_dirs: list[Path] | None = None,
                progress: Progress = quiet, parquet: bool = True, workers: int = THREADS,
                expects: list[Any] | None = None) -> list[ReportResult]:
    """The whole job for one or many runs: each run's ``report/`` as :func:`run_report`
    writes it. Raises ``RunInputError`` for unusable input (before writing). ``expects``: per
    run, the :class:`rmqemu.verdicts.Expectations` its report.html opens with (or None).

    Spark work: one scan of all the runs' logs (cached), two actions collecting every
    run's metrics and plot data; then, on ``workers`` threads, the drawing (Python) next
    to the Parquet writes (a job per table, when ``parquet``)."""
    outs = [Path(o) for o in out_dirs] if out_dirs is not None else [default_out(rd) for rd in run_dirs]
    stage = _Stages(progress)
    collected = _collect(spark, list(run_dirs), stage, True, workers)
    try:
        return _write_reports(collected, outs, stage, parquet, workers, expects)
    finally:
        release_runs([c.run for c in collected])
        del collected
        free_proxies()


def _write_reports(collected: list[_Collected], outs: list[Path], stage: _Stages, parquet: bool,
                   workers: int, expects: list[Any] | None) -> list[ReportResult]:
    """Each run's ``report/`` from its collected results (see :func:`run_reports`)."""
    for out in outs:
        _prepare(out)
    stage("write", "writing metrics.json, drawing plots" + (", writing Parquet tables" if parquet else "")
          + (f" ({workers} threads)" if workers > 1 else ""))

    def draw(c: _Collected, out: Path) -> tuple[list[str], list[plots.Figure]]:
        data = plotdata.assemble(c.run, c.analysis, c.plot_queries, c.plot_rows)
        return data.notes, plots.render_all(data, out)

    steps = []
    for i, (c, out) in enumerate(zip(collected, outs)):
        write_json(out / "metrics.json", c.metrics)
        steps.append(step(f"draw.{i}", lambda c=c, out=out: draw(c, out)))
        if parquet:
            steps += table_steps(c.analysis, out / "parquet", f"t.{i}.", c.run.id)
    spark = collected[0].run.events.sparkSession
    with call_sites_named(spark):
        done = run_steps(steps, workers, partial(name_call_sites, spark))
    stage("html", "writing report.html")
    results = []
    for i, (c, out) in enumerate(zip(collected, outs)):
        notes, figures = done[f"draw.{i}"]
        files = [out / "metrics.json", *(out / f.file for f in figures)]
        if parquet:
            files.append(out / "parquet")
        page = out / "report.html"
        page.write_text(html.render(c.metrics, figures, out, notes, list(TABLES) if parquet else [],
                                    expects[i] if expects else None), encoding="utf-8")
        files.append(page)
        results.append(ReportResult(out_dir=out, metrics=c.metrics, files=files))
    stage.done()
    for r in results:
        r.seconds = dict(stage.seconds)
    return results


def run_report(spark: SparkSession, run_dir: str, out_dir: Path | None = None,
               progress: Progress = quiet, parquet: bool = True, workers: int = THREADS) -> ReportResult:
    """The whole job for one run: ``metrics.json``, plots, ``report.html`` and (``parquet``)
    the derived tables under ``out_dir`` (default ``RUN_DIR/report``). Raises
    ``RunInputError`` for unusable input (before writing)."""
    out = [Path(out_dir)] if out_dir is not None else None
    return run_reports(spark, [run_dir], out, progress, parquet, workers)[0]
