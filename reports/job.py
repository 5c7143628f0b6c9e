"""The report job: run dirs in, each run's ``report/`` out. The SparkSession is passed in.

Why the session is a parameter: the CLI builds it once at the entry point (local or
``--master``), tests pass their one session per worker, the benchmark times the job
without JVM start-up. Nothing below builds or stops a session.

Spark's tasks read the runs and run the analysis (:mod:`reports.engine`); this module
decides what is asked for and writes the results: ``metrics.json``, the plots as PNG, the
derived tables as Parquet under ``parquet/<table>/`` and ``report.html`` (``out_dir``, default
``RUN_DIR/report``). Entry points: :func:`run_reports` / :func:`run_report` (everything
written), :func:`compute_many` / :func:`metrics` (the metrics.json documents only, nothing
written; ``only=`` limits them to some sections).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from rmqemu.errors import RunInputError
from rmqemu.reports import html, plotdata, plots
from rmqemu.reports.core.analysis import TABLES
from rmqemu.reports.engine import analyse_runs, names
from rmqemu.reports.manifest import is_uri, read_manifest
from rmqemu.reports.metrics import document, queries_of, sections_of
from rmqemu.reports.rundir import default_out, event_paths
from rmqemu.reports.session import THREADS

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


def compute_many(spark: SparkSession, run_dirs: list[str], progress: Progress = quiet,
                 only: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """``run_dir -> metrics.json document`` of each run, all runs analysed in one Spark job;
    ``only``: the header and these sections of it (names, or paths in them such as an
    ``expect:`` mapping's keys: :func:`reports.metrics.sections_of`). Nothing is written.
    Raises ``RunInputError`` for unusable input (a run dir given twice included). The
    SparkSession is the caller's."""
    sections = None if only is None else sections_of(only)
    queries = None if sections is None else queries_of(sections)
    got = analyse_runs(spark, list(run_dirs), names(["m."]), progress, queries)
    return {r.meta.key: document(r, sections) for r in got}


def metrics(spark: SparkSession, run_dir: str, only: Iterable[str] | None = None) -> dict[str, Any]:
    """Only the ``metrics.json`` document of one run (no plots, HTML or Parquet; nothing
    written): for tests and notebooks. ``only``: the header and these sections (see
    :func:`compute_many`)."""
    return compute_many(spark, [run_dir], only=only)[run_dir]


def write_json(path: Path, data: Any) -> None:
    """Atomic write (tmp + rename): a reader never sees half a metrics.json."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _prepare(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunInputError(f"{out}: cannot create the report directory ({exc.strerror})") from None
    for old in out.glob("routes-*.png"):  # a re-run must not leave plots of topics it no longer draws
        old.unlink()
    if (out / "parquet").is_dir():  # replaced by this run's tables, or gone with --no-parquet
        shutil.rmtree(out / "parquet")


def run_reports(spark: SparkSession, run_dirs: list[str], out_dirs: list[Path] | None = None,
                progress: Progress = quiet, parquet: bool = True, workers: int = THREADS,
                expects: list[Any] | None = None) -> list[ReportResult]:
    """The whole job for one or many runs: each run's ``report/`` as :func:`run_report`
    writes it. Raises ``RunInputError`` for unusable input (before writing, as far as the files
    show it). ``expects``: per run, the :class:`rmqemu.verdicts.Expectations` its report.html
    opens with (or None). ``workers``: processes drawing the plots (:func:`reports.plots.drawing_pool`)."""
    outs = [Path(o) for o in out_dirs] if out_dirs is not None else [default_out(rd) for rd in run_dirs]
    for run_dir in run_dirs:  # bad input is found before anything is written
        if not is_uri(run_dir) or run_dir.startswith("file://"):
            read_manifest(None, run_dir)
            event_paths(run_dir)
    for out in outs:
        _prepare(out)
    stage = Stages(progress)
    stage("analyse", "analysing with Spark" + (" (the run's tasks write its Parquet tables)" if parquet else ""))
    tables_to = [str((out / "parquet").resolve()) for out in outs] if parquet else None
    results = analyse_runs(spark, list(run_dirs), names(["m.", "p."]), progress, tables_to=tables_to)
    stage("write", "writing metrics.json, drawing plots")

    docs = [document(r) for r in results]
    for doc, out in zip(docs, outs, strict=True):
        write_json(out / "metrics.json", doc)
    with plots.drawing_pool(workers) as pool:
        drawn = [(data.notes, plots.render_all(data, out, pool))
                 for data, out in zip(map(plotdata.assemble, results), outs, strict=True)]
    stage("html", "writing report.html")
    reports = []
    for i, (doc, out, (notes, figures)) in enumerate(zip(docs, outs, drawn, strict=True)):
        files = [out / "metrics.json", *(out / f.file for f in figures)]
        if parquet:
            files.append(out / "parquet")
        page = out / "report.html"
        page.write_text(html.render(doc, figures, out, notes, list(TABLES) if parquet else [],
                                    expects[i] if expects else None), encoding="utf-8")
        files.append(page)
        reports.append(ReportResult(out_dir=out, metrics=doc, files=files))
    stage.done()
    for r in reports:
        r.seconds = dict(stage.seconds)
    return reports


def run_report(spark: SparkSession, run_dir: str, out_dir: Path | None = None,
               progress: Progress = quiet, parquet: bool = True, workers: int = THREADS) -> ReportResult:
    """The whole job for one run: ``metrics.json``, plots, ``report.html`` and (``parquet``)
    the derived tables under ``out_dir`` (default ``RUN_DIR/report``). Raises
    ``RunInputError`` for unusable input (before writing)."""
    out = [Path(out_dir)] if out_dir is not None else None
    return run_reports(spark, [run_dir], out, progress, parquet, workers)[0]
