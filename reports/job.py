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
:func:`compute_many` / :func:`metrics` (the metrics.json documents only, nothing written;
``only=`` limits them to some sections, and the analysis to the tables those read). The Spark
half, load to collected rows, is :mod:`reports.collect`.

Output (``out_dir``, default ``RUN_DIR/report``): ``metrics.json``, ``report.html``, the
plots as PNG, and the derived tables as Parquet under ``parquet/<table>/``.
"""
from __future__ import annotations

import gc
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from reports import html, plotdata, plots
from reports.collect import Collected, Progress, Stages, collect
from reports.load import release_runs
from reports.metrics import sections_of
from reports.session import THREADS  # threads building DataFrames, drawing, writing Parquet
from reports.session import call_sites_named, name_call_sites
from reports.pipeline import TABLES, Analysis
from reports.tasks import Step, run_steps, step
from rmqemu.errors import RunInputError


def quiet(_: str) -> None:
    """A progress callback that says nothing."""


@dataclass
class ReportResult:
    """What a report run produced (paths are inside ``out_dir``)."""

    out_dir: Path
    metrics: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def compute_many(spark: SparkSession, run_dirs: list[str], progress: Progress = quiet,
                 workers: int = THREADS, only: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """``run_dir -> metrics.json document`` of each run, all runs analysed together;
    ``only``: the header and these sections of it (names, or paths in them such as an
    ``expect:`` mapping's keys: :func:`reports.metrics.sections_of`), of which only the
    queries and tables they read are built (what a test asserting a few metrics needs).

    The runs are read as one cached table with a ``run`` column and every run's metrics
    queries are collected in two Spark actions, so N small runs cost about the jobs of one
    (no plots, HTML or Parquet; nothing is written). Raises ``RunInputError`` for unusable
    input (a run dir given twice included). The SparkSession is the caller's."""
    sections = None if only is None else sections_of(only)
    collected = collect(spark, list(run_dirs), Stages(progress), False, workers, release=True,
                         sections=sections)
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


def metrics(spark: SparkSession, run_dir: str, workers: int = THREADS,
            only: Iterable[str] | None = None) -> dict[str, Any]:
    """Only the ``metrics.json`` document of one run (no plots, HTML or Parquet; nothing
    written): the cheapest answer a warm session gives, for tests and notebooks. ``only``:
    the header and these sections (see :func:`compute_many`)."""
    return compute_many(spark, [run_dir], workers=workers, only=only)[run_dir]


def compute(spark: SparkSession, run_dir: str, progress: Progress = quiet,
            seconds: dict[str, float] | None = None, workers: int = THREADS) -> tuple[Analysis, dict[str, Any]]:
    """Load, analyse, assemble metrics (no files written): ``(analysis, metrics)``.
    Raises ``RunInputError``. ``seconds`` receives the time of each stage."""
    stage = Stages(progress)
    got = collect(spark, [run_dir], stage, False, workers)[0]
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
    stage = Stages(progress)
    collected = collect(spark, list(run_dirs), stage, True, workers)
    try:
        return _write_reports(collected, outs, stage, parquet, workers, expects)
    finally:
        release_runs([c.run for c in collected])
        del collected
        free_proxies()


def _write_reports(collected: list[Collected], outs: list[Path], stage: Stages, parquet: bool,
                   workers: int, expects: list[Any] | None) -> list[ReportResult]:
    """Each run's ``report/`` from its collected results (see :func:`run_reports`)."""
    for out in outs:
        _prepare(out)
    stage("write", "writing metrics.json, drawing plots" + (", writing Parquet tables" if parquet else "")
          + (f" ({workers} threads)" if workers > 1 else ""))

    def draw(c: Collected, out: Path) -> tuple[list[str], list[plots.Figure]]:
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
