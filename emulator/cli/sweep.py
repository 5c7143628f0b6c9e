"""``rmqemu sweep FILE``: run a sweep's grid (emulator.sweep) with a progress bar over its runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from emulator.cli.errors import handle_errors
from emulator.launcher.run_dir import DEFAULT_ROOT
from emulator.sweep.runner import RunResult, auto_limit, run_sweep, sweep_dir
from emulator.sweep.spec import load_sweep
from emulator.launcher.topology_load import load_topology


@click.command("sweep")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--root", type=click.Path(path_type=Path), default=DEFAULT_ROOT, show_default=True,
              help="where the sweep's directory is created (resumed when its grid is unchanged)")
@click.option("--parallel", type=click.IntRange(1, 64), default=None, help="runs at once (default: the file's, auto)")
@click.option("--fresh", is_flag=True, help="start a new sweep directory even if one with this grid exists")
@handle_errors
def sweep_command(file: Path, root: Path, parallel: int | None, fresh: bool) -> None:
    """Run a grid of seeds x parameter values; a re-run skips the runs already complete."""
    spec = load_sweep(file)
    out = sweep_dir(spec, root, fresh)
    runs = spec.runs()
    limit = parallel or (spec.parallel if isinstance(spec.parallel, int) else auto_limit(spec, load_topology(spec.topology_path)))
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
    if failed:
        click.echo(f"error: {len(failed)} run(s) broke: " + ", ".join(f"{r.run_id} (exit {r.exit_code}, "
                   f"{r.run_dir / 'launch.log'})" for r in failed), err=True)
        sys.exit(3)
