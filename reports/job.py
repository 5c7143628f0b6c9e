"""The report job: run dir in, ``report/`` out. The SparkSession is passed in.

Why the session is a parameter: the CLI builds it once at the entry point (local or
``--master``), tests pass their one session per worker, the benchmark times the job
without JVM start-up. Nothing below builds or stops a session.

Output (``out_dir``, default ``RUN_DIR/report``): ``metrics.json``, ``report.html``, the
plots as PNG, and the derived tables as Parquet under ``parquet/<table>/``.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from reports import html, plotdata, plots
from reports.load import RunInputError, load_run
from reports.metrics import assemble, build_metrics, metric_steps
from reports.pipeline import Analysis, analyse
from reports.tasks import Step, run_steps, step

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


def _load_and_analyse(spark: SparkSession, run_dir: str, stage: _Stages, workers: int) -> Analysis:
    stage("load", f"reading {run_dir} (manifest, events/*.jsonl, faults.jsonl)")
    run = load_run(spark, run_dir)
    bad = sum(run.bad_lines.values())
    stage("analyse", f"analysing {run.event_count:,} events"
          + (f" ({bad} unreadable line(s) skipped)" if bad else "")
          + ": lives, pauses, partitions, hosting, truth, views, staleness, misrouted sends")
    return analyse(run, workers)


def compute(spark: SparkSession, run_dir: str, progress: Progress = quiet,
            seconds: dict[str, float] | None = None, workers: int = 1) -> tuple[Analysis, dict[str, Any]]:
    """Load, analyse, assemble metrics (no files written). Raises ``RunInputError``.
    ``workers``: threads driving independent Spark steps at once (:mod:`reports.tasks`)."""
    stage = _Stages(progress)
    a = _load_and_analyse(spark, run_dir, stage, workers)
    stage("metrics", "assembling metrics")
    m = build_metrics(a, workers)
    stage.done()
    if seconds is not None:
        seconds.update(stage.seconds)
    return a, m


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


def table_steps(a: Analysis, out: Path) -> list[Step]:
    """One step per derived table: write it as Parquet under ``out/<name>/``."""
    def writer(name: str, df: DataFrame) -> Step:
        return step(f"t.{name}", lambda: df.write.mode("overwrite").parquet(str(out / name)))
    return [writer(name, df) for name, df in a.tables().items()]


def write_tables(a: Analysis, out: Path, workers: int = 1) -> list[str]:
    """Every derived table as Parquet under ``out/<name>/``; returns the names."""
    run_steps(table_steps(a, out), workers)
    return list(a.tables())


def run_report(spark: SparkSession, run_dir: str, out_dir: Path | None = None,
               progress: Progress = quiet, parquet: bool = True, workers: int = 1) -> ReportResult:
    """The whole job. Raises ``RunInputError`` for unusable input (before writing).

    After the analysis, the metrics queries, the plot queries, the drawing and the
    Parquet writes are one graph of steps (:mod:`reports.tasks`) run on ``workers``
    threads: the plots are drawn in Python while Spark writes tables."""
    out = Path(out_dir) if out_dir is not None else default_out(run_dir)
    stage = _Stages(progress)
    a = _load_and_analyse(spark, run_dir, stage, workers)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunInputError(f"{out}: cannot create the report directory ({exc.strerror})") from None
    for old in out.glob("routes-*.png"):  # a re-run must not leave plots of topics it no longer draws
        old.unlink()
    if (out / "parquet").is_dir():
        shutil.rmtree(out / "parquet")
    stage("outputs", "assembling metrics, drawing plots" + (f", writing Parquet tables to {out / 'parquet'}"
                                                           if parquet else "")
          + (f" ({workers} threads)" if workers > 1 else ""))
    plot_part = plotdata.plot_steps(a)

    def draw(*results: Any) -> tuple[list[str], list[plots.Figure]]:
        data = plotdata.assemble(a, {s.name: r for s, r in zip(plot_part, results)})
        return data.notes, plots.render_all(data, out)

    metric_part = metric_steps(a)

    def write_metrics(*results: Any) -> dict[str, Any]:  # as soon as its queries are done
        m = assemble(a, {s.name: r for s, r in zip(metric_part, results)})
        write_json(out / "metrics.json", m)
        return m

    steps = [*plot_part, step("draw", draw, *(s.name for s in plot_part)),
             *metric_part, step("metrics", write_metrics, *(s.name for s in metric_part))]
    if parquet:
        steps += table_steps(a, out / "parquet")
    done = run_steps(steps, workers)
    m = done["metrics"]
    files = [out / "metrics.json"]
    notes, figures = done["draw"]
    files += [out / f.file for f in figures]
    tables = list(a.tables()) if parquet else []
    if parquet:
        files.append(out / "parquet")
    stage("html", "writing report.html")
    page = out / "report.html"
    page.write_text(html.render(m, figures, out, notes, tables), encoding="utf-8")
    files.append(page)
    stage.done()
    return ReportResult(out_dir=out, metrics=m, files=files, seconds=stage.seconds)
