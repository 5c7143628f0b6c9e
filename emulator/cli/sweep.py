"""``rmqemu sweep FILE``: run a sweep's grid (emulator.sweep) with a progress bar over its runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from emulator.cli.errors import handle_errors
from emulator.launcher.run_dir import DEFAULT_ROOT
from emulator.sweep.runner import RunResult, run_sweep, runs_at_once, sweep_dir
from emulator.sweep.spec import SweepSpec, load_sweep


@click.command("sweep")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--root", type=click.Path(path_type=Path), default=DEFAULT_ROOT, show_default=True,
              help="where the sweep's directory is created (resumed when its grid is unchanged)")
@click.option("--parallel", type=click.IntRange(1, 64), default=None, help="runs at once (default: the file's, auto)")
@click.option("--fresh", is_flag=True, help="start a new sweep directory even if one with this grid exists")
@click.option("--master", default=None, help="Spark master of the analysis (default local[*])")
@click.option("--report/--no-report", default=True, show_default=True,
              help="analyse every run in one Spark job: report/sweep.html, runs.csv, runs.parquet")
@handle_errors
def sweep_command(file: Path, root: Path, parallel: int | None, fresh: bool, master: str | None,
                  report: bool) -> None:
    """Run a grid of seeds x parameter values; a re-run skips the runs already complete.

    Exit 0 when every run passed the sweep's expectations, 1 when one failed (the cell is
    marked in sweep.html), 3 when a run broke."""
    spec = load_sweep(file)
    out = sweep_dir(spec, root, fresh)
    runs = spec.runs()
    limit = runs_at_once(spec, parallel)
    click.echo(f"sweep {spec.name}: {len(spec.cells())} cell(s) x {len(spec.seeds)} seed(s) = {len(runs)} run(s), "
               f"{limit} at once, in {out}", err=True)
    failed: list[RunResult] = []
    with click.progressbar(length=len(runs), label="runs", file=sys.stderr,
                           show_pos=True, item_show_func=lambda r: r) as bar:
        def done(result: RunResult) -> None:
            if result.exit_code != 0:
                failed.append(result)
            bar.update(1, f"{result.run_id}{' (done before)' if result.skipped else ''}")

        results = run_sweep(spec, out, limit, on_done=done)
    skipped = sum(r.skipped for r in results)
    behind = [r.run_id for r in results if r.fell_behind]
    click.echo(f"{len(results) - skipped} run(s) now, {skipped} complete before"
               + (f"; the host fell behind in {', '.join(behind)} (parallelism lowered)" if behind else ""), err=True)
    click.echo(str(out))
    failed_expectations = _analyse(spec, results, out, master) if report else 0
    if failed:
        click.echo(f"error: {len(failed)} run(s) broke: " + ", ".join(f"{r.run_id} (exit {r.exit_code}, "
                   f"{r.run_dir / 'launch.log'})" for r in failed), err=True)
        sys.exit(3)
    if failed_expectations:
        sys.exit(1)


def _analyse(spec: SweepSpec, results: list[RunResult], out: Path, master: str | None) -> int:
    """One Spark job over every run; the number of runs that failed an expectation."""
    from emulator.sweep.analysis import analyse
    from reports.session import build_session, stop_session

    click.echo(f"analysing {len(results)} run(s) in one Spark job ({master or 'local[*]'})", err=True)
    spark = build_session(master, small_input=master is None)
    try:
        analysis = analyse(spark, spec, results, out / "report")
    finally:
        stop_session(spark)
    for row in analysis.failed:
        click.echo(f"FAIL {row['run_id']}: {row['failed_expectations']}", err=True)
    click.echo(str(out / "report" / "sweep.html"))
    return len(analysis.failed)
