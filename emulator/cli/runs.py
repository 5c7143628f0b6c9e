"""``rmqemu runs [ROOT]``: every run and sweep under ROOT, newest first, and ``ROOT/index.html``."""

from __future__ import annotations

from pathlib import Path

import click

from rmqemu.emulator.cli.errors import handle_errors
from rmqemu.emulator.launcher.run_dir import DEFAULT_ROOT
from rmqemu.emulator.runs_index import collect, render_index
from rmqemu.errors import RunDirError


@click.command("runs")
@click.argument("root", required=False, type=click.Path(path_type=Path), default=DEFAULT_ROOT)
@click.option("--html/--no-html", default=True, show_default=True, help="also write ROOT/index.html")
@handle_errors
def runs_command(root: Path, html: bool) -> None:
    """List runs and sweeps, newest first, with verdict and headline numbers."""
    if not root.is_dir():
        raise RunDirError(f"{root}: no such directory (runs are created under runs/ by default; pass ROOT)")
    entries = collect(root)
    for e in entries:
        numbers = ", ".join(f"{k} {'-' if v is None else v}" for k, v in e.numbers.items()) or "not reported"
        click.echo(f"{e.started:19}  {e.kind:5}  {e.verdict:6}  {e.path.name}  ({numbers}; {e.detail})")
    if not entries:
        click.echo(f"no runs under {root}", err=True)
    if html:
        page = root / "index.html"
        page.write_text(render_index(root, entries), encoding="utf-8")
        click.echo(f"{page}", err=True)
