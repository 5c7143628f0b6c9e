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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from reports import html, plotdata, plots
from reports.load import RunData, load_run
from rmqemu.errors import RunInputError
from reports.metrics import assemble, metric_steps
from reports.pipeline import TABLES, Analysis, analysis_steps, built
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


def _load(spark: SparkSession, run_dir: str, stage: _Stages) -> RunData:
    stage("load", f"reading {run_dir} (manifest, events/*.jsonl, faults.jsonl)")
    return load_run(spark, run_dir)


def _analysing(run: RunData) -> str:
    bad = sum(run.bad_lines.values())
    return (f"analysing {run.event_count:,} events" + (f" ({bad} unreadable line(s) skipped)" if bad else "")
            + ": lives, pauses, partitions, hosting, truth, views, staleness, misrouted sends")


def _analysis(run: RunData, done: dict[str, Any]) -> Analysis:
    return Analysis(run=run, **{f.name: done[f.name] for f in fields(Analysis) if f.name != "run"})


def compute(spark: SparkSession, run_dir: str, progress: Progress = quiet,
            seconds: dict[str, float] | None = None, workers: int = 1) -> tuple[Analysis, dict[str, Any]]:
    """Load, analyse, assemble metrics (no files written). Raises ``RunInputError``.
    ``workers``: threads driving independent Spark steps at once (:mod:`reports.tasks`):
    the analysis and the metrics queries are one graph, a query starts once its tables
    exist."""
    stage = _Stages(progress)
    run = _load(spark, run_dir, stage)
    stage("analyse", _analysing(run) + "; assembling metrics")
    done = run_steps(analysis_steps(run) + metric_steps(run), workers)
    stage.done()
    if seconds is not None:
        seconds.update(stage.seconds)
    return _analysis(run, done), assemble(run, done)


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


def table_steps(out: Path) -> list[Step]:
    """One step per derived table (``pipeline.TABLES``): write it as Parquet under
    ``out/<name>/`` once its analysis step is done."""
    def writer(name: str, field: str) -> Step:
        return step(f"t.{name}", lambda df: df.write.mode("overwrite").parquet(str(out / name)), field)
    return [writer(name, field) for name, field in TABLES.items()]


def write_tables(a: Analysis, out: Path, workers: int = 1) -> list[str]:
    """Every derived table as Parquet under ``out/<name>/``; returns the names."""
    run_steps(built(a) + table_steps(out), workers)
    return list(TABLES)


def run_report(spark: SparkSession, run_dir: str, out_dir: Path | None = None,
               progress: Progress = quiet, parquet: bool = True, workers: int = 1) -> ReportResult:
    """The whole job. Raises ``RunInputError`` for unusable input (before writing).

    After loading, everything is one graph of steps (:mod:`reports.tasks`) on ``workers``
    threads: the analysis tables, the metrics and plot queries (each as soon as the
    tables it reads exist), the drawing (in Python, while Spark works) and the Parquet
    writes. ``metrics.json`` is written as soon as its queries are done."""
    out = Path(out_dir) if out_dir is not None else default_out(run_dir)
    stage = _Stages(progress)
    run = _load(spark, run_dir, stage)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunInputError(f"{out}: cannot create the report directory ({exc.strerror})") from None
    for old in out.glob("routes-*.png"):  # a re-run must not leave plots of topics it no longer draws
        old.unlink()
    if (out / "parquet").is_dir():
        shutil.rmtree(out / "parquet")
    stage("analyse", _analysing(run) + "; assembling metrics, drawing plots"
          + (f", writing Parquet tables to {out / 'parquet'}" if parquet else "")
          + (f" ({workers} threads)" if workers > 1 else ""))
    metric_part, plot_part = metric_steps(run), plotdata.plot_steps(run)

    def write_metrics(*results: Any) -> dict[str, Any]:
        m = assemble(run, {s.name: r for s, r in zip(metric_part, results)})
        write_json(out / "metrics.json", m)
        return m

    def draw(*results: Any) -> tuple[list[str], list[plots.Figure]]:
        data = plotdata.assemble(run, {s.name: r for s, r in zip(plot_part, results)})
        return data.notes, plots.render_all(data, out)

    steps = [*analysis_steps(run), *metric_part, *plot_part,
             step("draw", draw, *(s.name for s in plot_part)),
             step("metrics", write_metrics, *(s.name for s in metric_part))]
    if parquet:
        steps += table_steps(out / "parquet")
    done = run_steps(steps, workers)
    m = done["metrics"]
    notes, figures = done["draw"]
    files = [out / "metrics.json", *(out / f.file for f in figures)]
    tables = list(TABLES) if parquet else []
    if parquet:
        files.append(out / "parquet")
    stage("html", "writing report.html")
    page = out / "report.html"
    page.write_text(html.render(m, figures, out, notes, tables), encoding="utf-8")
    files.append(page)
    stage.done()
    return ReportResult(out_dir=out, metrics=m, files=files, seconds=stage.seconds)
