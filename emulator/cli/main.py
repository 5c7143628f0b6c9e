"""The ``rmqemu`` command line (docs/design.md §8).

Every command turns the project's exceptions into one clear message: a bad topology prints one
line per problem and exits 2; any other failure exits 1. No traceback reaches a user unless
``RMQEMU_DEBUG=1`` is set.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import click

from rmqemu.emulator.cli.errors import handle_errors
from rmqemu.emulator.cli.interrupts import finish as finish_interrupted
from rmqemu.emulator.cli.interrupts import stop_signals
from rmqemu.emulator.launcher.run_dir import DEFAULT_ROOT, new_run_dir, read_json, resolve_run
from rmqemu.emulator.launcher.topology_load import load_topology, override, parse_topology
from rmqemu.errors import PlanError, TopologyError, UsageError
from rmqemu.faults.launch_glue import check_topology_faults


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rmqemu", message="%(prog)s %(version)s")
def main() -> None:
    """rmqemu: a multiprocess emulator of an Apache RocketMQ 4.9 cluster with fault injection."""


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@handle_errors
def validate(files: tuple[Path, ...]) -> None:
    """Check topology files; one line per problem, exit 2 if any is bad."""
    from rmqemu.emulator.launcher.topology_load import plan_nodes

    bad: list[TopologyError] = []
    for f in files:
        try:
            topo = check_topology_faults(load_topology(f), str(f))
            nodes = plan_nodes(topo)
            click.echo(f"{f}: ok ({len(nodes)} nodes, {topo.duration:g} cluster s at scale {topo.timing.scale:g})")
            warn(topo, f"{f}: ")
        except TopologyError as exc:
            bad.append(exc)
            click.echo(f"error: {exc}", err=True)
    if bad:
        sys.exit(2)


def warn(topo: Any, where: str = "") -> None:
    """The topology's warnings (real clients at a fast scale, remoting ports open to other hosts)
    on stderr, one line each; never an error: the exit status stays what it was."""
    from rmqemu.emulator.launcher.topology_proxy import proxy_warnings
    from rmqemu.emulator.launcher.topology_remoting import remoting_warnings

    for line in remoting_warnings(topo) + proxy_warnings(topo):
        click.echo(f"warning: {where}{line}", err=True)


@main.command()
def schema() -> None:
    """Print the topology JSON Schema (for editors: yaml-language-server, VS Code)."""
    from rmqemu.emulator.launcher.topology import Topology

    click.echo(json.dumps(Topology.model_json_schema(), indent=2))


ROOT_OPTION = click.option("--root", type=click.Path(path_type=Path), default=DEFAULT_ROOT,
                           show_default=True, help="where run directories are created")
CONCURRENCY_OPTION = click.option("--concurrency", type=int, default=1, show_default=True,
                                  help="nemesis: up to N faults at once, never two on one node")
RUN_OPTION = click.option("--run", "run", type=click.Path(path_type=Path), default=None,
                          help="run directory (default: the latest under runs/)")


@main.command()
@click.argument("file", required=False, type=click.Path(path_type=Path))
@ROOT_OPTION
@click.option("--run-dir", type=click.Path(path_type=Path), help="use this (empty) directory for the run")
@click.option("--seed", type=int, help="override the topology's seed")
@click.option("--duration", help="override the duration (cluster seconds: 60, 90s, 2m)")
@click.option("--nemesis", help="random faults of these kinds: kill,pause,partition,clock,...")
@click.option("--interval", default="30s", show_default=True,
              help="each nemesis fault lasts one interval, then one interval of calm (cluster s)")
@click.option("--replay", type=click.Path(path_type=Path), help="run the plan of an earlier run again")
@CONCURRENCY_OPTION
@click.option("--report/--no-report", default=False, help="run `rmqemu report` on the run afterwards and judge "
              "it by the topology's expect: (exit 1 when one fails)")
@click.option("--progress/--no-progress", default=True)
@handle_errors(refused=3)
def launch(file: Path | None, root: Path, run_dir: Path | None, seed: int | None, duration: str | None,
           nemesis: str | None, interval: str, replay: Path | None, concurrency: int, report: bool,
           progress: bool) -> None:
    """Run a topology to completion (default: topologies/quickstart.yaml).

    Exit 0 done (with --report: every expectation held), 1 an expectation failed, 2 bad input,
    3 the run broke (a node died without a fault, a node's role raised, a node did not start, a
    fault step failed, the report's Spark job failed), 130/143 interrupted."""
    if replay is not None and file is None:  # the replayed run's topology, as it resolved it
        topo = check_topology_faults(parse_topology(read_json(resolve_run(replay) / "manifest.json")["topology"],
                                                    str(replay)), str(replay))
    else:
        path = file or Path("topologies/quickstart.yaml")
        topo = check_topology_faults(load_topology(path), str(path))
    topo = override(topo, "command line", seed=seed, duration=duration)
    try:
        plan = _fault_plan(topo, nemesis, interval, replay, concurrency)
    except PlanError as exc:  # the topology's own faults were checked above: this is --nemesis/--interval/--replay
        raise UsageError(str(exc)) from None
    if report and _report_import_error is not None:  # say so before the run, not after it
        raise UsageError(f"--report needs PySpark: pip install 'rmqemu[spark]' ({_report_import_error})")
    from rmqemu.emulator.cli.launch import run_topology

    click.echo(f"launching {topo.name} (seed {topo.seed}, scale {topo.timing.scale:g})", err=True)
    warn(topo)
    with stop_signals() as interrupt:  # SIGTERM as Ctrl-C: heal, stop the nodes, say so
        try:
            result = run_topology(topo, run_dir=run_dir, root=root, plan=plan, progress=progress)
        except KeyboardInterrupt:  # run_topology healed every fault and stopped every node on the way out
            interrupt.finishing = True
            where = (run_dir or (root / "latest")).resolve()
            total, killed = finish_interrupted(where)  # ... unless a signal cut that short
            stopped = (f"{total - len(killed)} of {total} nodes stopped gracefully, SIGKILL for "
                       f"{', '.join(killed)}" if killed else "nodes stopped")
            healed = "shutdown cut short" if interrupt.count >= 3 else "faults healed"
            click.echo(f"\ninterrupted ({interrupt.name}): {healed}, {stopped}; the partial run is in "
                       f"{where} (seed {topo.seed}; `rmqemu launch --replay {where}` runs its plan again)",
                       err=True)
            sys.exit(interrupt.exit_code)
    click.echo(str(result.run_dir))
    code = 0
    if report:  # judged by the topology's expect: as the manifest recorded it
        from rmqemu.reports.cli import report_command

        # Its JVM starts only now, every node stopped: on a small host a JVM starting beside the
        # nodes made their timers late, so the run measured the host (docs/design.md §9).
        # Non-standalone click returns an Exit's code; the report already said why on stderr.
        code = report_command.main([str(result.run_dir)], standalone_mode=False)
        code = code if isinstance(code, int) else 0
    if not result.ok:  # a broken run outranks a failed expectation: its metrics measure the breakage
        if result.died:
            click.echo(f"error: node(s) died without a fault: {', '.join(result.died)} (seed {topo.seed}; "
                       f"logs in {result.run_dir}/logs)", err=True)
        if result.role_errors:
            nodes = ", ".join(f"{node} ({n})" for node, n in sorted(result.role_errors.items()))
            click.echo(f"error: role error(s), a bug in rmqemu: {nodes} (seed {topo.seed}; tracebacks in "
                       f"{result.run_dir}/logs)", err=True)
        sys.exit(3)
    if code:
        sys.exit(code)


@main.command("plan")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--seed", type=int, help="override the topology's seed")
@click.option("--duration", help="override the duration (cluster seconds: 60, 90s, 2m)")
@click.option("--nemesis", help="random faults of these kinds: kill,pause,partition,clock,...")
@click.option("--interval", default="30s", show_default=True, help="as for launch")
@CONCURRENCY_OPTION
@handle_errors
def plan_command(file: Path | None, seed: int | None, duration: str | None, nemesis: str | None,
                 interval: str, concurrency: int) -> None:
    """Print the fault plan a launch would run (its plan.json), without running anything."""
    path = file or Path("topologies/quickstart.yaml")
    topo = override(check_topology_faults(load_topology(path), str(path)), "command line", seed=seed,
                    duration=duration)
    try:
        plan = _fault_plan(topo, nemesis, interval, None, concurrency)
    except PlanError as exc:
        raise UsageError(str(exc)) from None
    if plan is None:
        click.echo(f"{path}: no faults (the topology has no faults: list and no --nemesis was given)", err=True)
        return
    click.echo(plan.to_json(), nl=False)
    click.echo(f"{len(plan.steps)} step(s), seed {plan.seed}, scale {plan.scale:g}", err=True)


def _fault_plan(topo: Any, nemesis: str | None, interval: str, replay: Path | None, concurrency: int = 1) -> Any:
    """The run's fault plan: replayed, random (nemesis) or from the topology's faults list."""
    if concurrency != 1 and not nemesis:
        raise PlanError("--concurrency is for --nemesis plans (a topology's faults: list says its own times)")
    if replay is None and nemesis is None and not topo.faults:
        return None
    from rmqemu.faults.launch_glue import build_plan

    return build_plan(topo, nemesis=nemesis, interval=interval,
                      replay=resolve_run(replay) if replay else None, concurrency=concurrency)


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@ROOT_OPTION
@handle_errors
def up(file: Path, root: Path) -> None:
    """Start a cluster and leave it running (stop it with `rmqemu down`)."""
    from rmqemu.emulator.cli.supervisor import start_detached
    from rmqemu.emulator.launcher.addresses import check_free_ports, manifest_namesrv_addr

    topo = check_topology_faults(load_topology(file), str(file))
    warn(topo)
    check_free_ports(str(file), topo.remoting)  # bad input (exit 2) before the supervisor starts
    run = new_run_dir(topo.name, root).resolve()
    start_detached(file.resolve(), run)
    click.echo(f"{topo.name} is up: {run}")
    from rmqemu.emulator.launcher.topology_proxy import manifest_endpoints

    manifest = read_json(run / "manifest.json")
    if (addr := manifest_namesrv_addr(manifest)) is not None:
        click.echo(f"namesrvAddr={addr}")  # what a real client takes (remoting: on)
    if (endpoints := manifest_endpoints(manifest)) is not None:
        click.echo(f"endpoints={endpoints}")  # what a RocketMQ 5 client takes (proxies:)


@main.command()
@RUN_OPTION
@ROOT_OPTION
@handle_errors
def status(run: Path | None, root: Path) -> None:
    """Show the nodes of a running cluster (exit 1, at once, if its supervisor is dead)."""
    from rmqemu.emulator.cli import updown

    updown.status(run, click.echo, root)


@main.command()
@RUN_OPTION
@ROOT_OPTION
@handle_errors
def down(run: Path | None, root: Path) -> None:
    """Stop a cluster started with `rmqemu up` (brokers unregister, every process ends); also
    cleans up after a dead supervisor or a deleted run directory."""
    from rmqemu.emulator.cli import updown

    updown.down(run, click.echo, root)


def _report_missing(exc: ImportError) -> click.Command:
    """Stands in for ``rmqemu report`` when PySpark (the ``spark`` extra) is not installed."""

    @click.command("report", context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def report(args: tuple[str, ...]) -> None:
        """Analyse a run with Spark (needs the `spark` extra: pip install 'rmqemu[spark]')."""
        click.echo(f"error: rmqemu report needs PySpark: pip install 'rmqemu[spark]' ({exc})", err=True)
        sys.exit(2)

    return report


def _register_commands() -> None:
    """Commands that live in other packages: admin verbs, fault verbs, the Spark report."""
    from rmqemu.emulator.cli.admin import admin
    from rmqemu.emulator.cli.fault_verbs import register as register_fault_verbs
    from rmqemu.emulator.cli.runs import runs_command
    from rmqemu.emulator.cli.sweep import sweep_command

    main.add_command(admin)
    main.add_command(sweep_command)
    main.add_command(runs_command)
    register_fault_verbs(main)
    global _report_import_error
    try:
        # Whether the `spark` extra is installed, without importing it: pyspark costs a third
        # of a second, and `rmqemu --help` or `rmqemu down` need none of it (reports.cli
        # imports it lazily, when a report is made).
        if importlib.util.find_spec("pyspark") is None:
            raise ImportError("No module named 'pyspark'")
        from rmqemu.reports.cli import report_command
    except ImportError as exc:
        _report_import_error = exc
        main.add_command(_report_missing(exc))
    else:
        main.add_command(report_command)


_report_import_error: ImportError | None = None


_register_commands()
