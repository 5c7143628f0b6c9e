"""``rmqemu sweep FILE``: run a sweep's grid (emulator.sweep) with a progress bar over its runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from rmqemu.emulator.cli.errors import handle_errors
from rmqemu.emulator.cli.interrupts import stop_signals
from rmqemu.emulator.launcher.run_dir import DEFAULT_ROOT
from rmqemu.emulator.sweep.on_spark import SparkRuns, prepare_local_workers, spark_parallel
from rmqemu.emulator.sweep.runner import RunResult, all_complete, run_sweep, runs_at_once, sweep_dir
from rmqemu.emulator.sweep.spec import SweepSpec, load_sweep


@click.command("sweep")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--root", type=click.Path(path_type=Path), default=DEFAULT_ROOT, show_default=True,
              help="where the sweep's directory is created (resumed when its grid is unchanged)")
@click.option("--parallel", type=click.IntRange(1, 64), default=None, help="runs at once (default: the file's, auto)")
@click.option("--fresh", is_flag=True, help="start a new sweep directory even if one with this grid exists")
@click.option("--master", default=None,
              help="Spark master: each run is a Spark task, and the analysis runs there too (default: runs "
                   "here, analysis on local[*]); --root must be a path every executor shares")
@click.option("--report/--no-report", default=True, show_default=True,
              help="analyse every run in one Spark job: report/sweep.html, runs.csv, runs.parquet")
@handle_errors
def sweep_command(file: Path, root: Path, parallel: int | None, fresh: bool, master: str | None,
                  report: bool) -> None:
    """Run a grid of seeds x parameter values; a re-run skips the runs already complete.

    Exit 0 when every run passed the sweep's expectations, 1 when one failed (the cell is
    marked in sweep.html), 3 when a run broke; 130/143 when SIGINT/SIGTERM stopped it (the runs
    under way stop their nodes and run again on the next invocation)."""
    spec = load_sweep(file)
    out = sweep_dir(spec, root, fresh)
    spark: Any = None
    with stop_signals() as interrupt:
        try:
            if master:
                prepare_local_workers(master)
            if master and not all_complete(spec, out):  # else no run to start: a session only to analyse
                click.echo(f"sweep {spec.name}: starting Spark ({master}), every run a Spark task", err=True)
                spark = _build_session(master)
            results, failed = _run(spec, out, parallel, master, spark)
            failed_expectations = _analyse(spec, results, out, master, spark) if report else 0
        except KeyboardInterrupt:
            interrupt.finishing = True
            done = sum((out / run.run_id / "done.json").is_file() for run in spec.runs())
            click.echo(f"\n{interrupt.name}: sweep stopped, {done} of {len(spec.runs())} run(s) complete; the runs "
                       f"under way were stopped and run again when the sweep is re-invoked ({out})", err=True)
            sys.exit(interrupt.exit_code)
        finally:
            if spark is not None:
                _stop_session(spark)
    if failed:
        click.echo(f"error: {len(failed)} run(s) broke: " + ", ".join(
            f"{r.run_id} ({r.error or f'exit {r.exit_code}'}, {r.run_dir / 'launch.log'})" for r in failed), err=True)
        sys.exit(3)
    if failed_expectations:
        sys.exit(1)


def _run(spec: SweepSpec, out: Path, parallel: int | None, master: str | None,
         spark: Any) -> tuple[list[RunResult], list[RunResult]]:
    """Every run of the grid, here or as Spark tasks, with a progress bar; (results, broken runs)."""
    runs = spec.runs()
    limit = runs_at_once(spec, parallel)
    spark_runs = SparkRuns(spark) if spark is not None else None
    if spark_runs is not None and master:
        explicit = parallel is not None or isinstance(spec.parallel, int)
        limit = spark_parallel(limit, spark_runs.slots, master, explicit)
    where = (f"as Spark tasks on {master}" if spark_runs is not None
             else "all complete before" if master else "here")
    click.echo(f"sweep {spec.name}: {len(spec.cells())} cell(s) x {len(spec.seeds)} seed(s) = {len(runs)} run(s), "
               f"{limit} at once, {where}, in {out}", err=True)
    failed: list[RunResult] = []
    with click.progressbar(length=len(runs), label="runs", file=sys.stderr,
                           show_pos=True, item_show_func=lambda r: r) as bar:
        def done(result: RunResult) -> None:
            if result.exit_code != 0:
                failed.append(result)
            bar.update(1, f"{result.run_id}{' (done before)' if result.skipped else ''}")

        results = run_sweep(spec, out, limit, on_done=done, execute=spark_runs,
                            cancel=spark_runs.cancel if spark_runs is not None else None)
    skipped = sum(r.skipped for r in results)
    behind = [r.run_id for r in results if r.fell_behind]
    click.echo(f"{len(results) - skipped} run(s) now, {skipped} complete before"
               + (f"; the host fell behind in {', '.join(behind)} (parallelism lowered)" if behind else ""), err=True)
    click.echo(str(out))
    return results, failed


def _analyse(spec: SweepSpec, results: list[RunResult], out: Path, master: str | None, spark: Any = None) -> int:
    """One Spark job over every run (on the sweep's session, else one of its own); the number
    of runs that failed an expectation."""
    from rmqemu.emulator.sweep.analysis import analyse, unanalysed

    missing = unanalysed(results)
    analysed = sum(r.exit_code == 0 for r in results) - len(missing)
    kept = f"{analysed} run(s) analysed before (kept in <run>/analysis.json)"
    if missing:
        click.echo(f"analysing {len(missing)} run(s) in one Spark job ({master or 'local[*]'})"
                   + (f"; {kept}" if analysed else ""), err=True)
    else:
        click.echo(f"no Spark job: {kept}", err=True)
    own = spark is None and bool(missing)
    if own:
        spark = _build_session(master)
    try:
        analysis = analyse(spark, spec, results, out / "report")
    finally:
        if own:
            _stop_session(spark)
    for row in analysis.failed:
        click.echo(f"FAIL {row['run_id']}: {row['failed_expectations']}", err=True)
    click.echo(str(out / "report" / "sweep.html"))
    return len(analysis.failed)


def _build_session(master: str | None) -> Any:
    """A session for the sweep's runs and analysis, its JVMs (on a cluster the executors' too)
    with the small-input options: a sweep's runs are small, and its tasks are Python's."""
    from rmqemu.reports.session import build_session  # Spark: imported only when a sweep needs it

    return build_session(master, small_input=True)


def _stop_session(spark: Any) -> None:
    from rmqemu.reports.session import stop_session

    stop_session(spark)
