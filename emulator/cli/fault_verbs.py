"""The interactive fault verbs of ``rmqemu`` against a cluster started with ``rmqemu up``.

Each command checks its arguments here first (a bad duration, offset or probability is a usage
error: one line, exit 2, and no cluster is asked), then sends the same arguments to the
supervisor (:mod:`faults.supervisor_verbs`), which resolves the targets against the live run and
starts the fault through the run's one injector. What the cluster refuses — an unknown node, a
fault overlapping another on the same node, a process that is gone — is one line, exit 1.

Every duration and offset is in **cluster seconds**, as in a topology file (``skew namesrv-1
+130s`` crosses the 120 s broker expiry at any ``timing.scale``); the output shows both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rmqemu.emulator.cli.errors import handle_errors
from rmqemu.emulator.launcher.fault_spec import PARTITION_MODES
from rmqemu.errors import SpecError, TargetError
from rmqemu.faults.clients import ConnectedClients, check_connected, check_not_clients, client_names
from rmqemu.faults.verbs import spec_from_args

RUN = click.option("--run", "run", type=click.Path(path_type=Path), default=None,
                   help="run directory (default: the latest under runs/)")
DURATION = click.option("--duration", help="heal after this long (cluster seconds: 30s, 2m)")


fault_verb = handle_errors  # bad arguments exit 2, anything the cluster refuses exits 1


def _call(run: Path | None, verb: str, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Send one verb to the run's supervisor; the result and the run's ``timing.scale``."""
    from rmqemu.emulator.cli.supervisor import call
    from rmqemu.emulator.launcher.run_dir import read_json, resolve_run

    path = resolve_run(run)
    scale = float(read_json(path / "manifest.json").get("scale") or 1.0)
    return call(path, verb, args), scale


def _ms(wall_ms: float | None, scale: float) -> str:
    """``1300 ms wall = 130 cluster s``."""
    if wall_ms is None:
        return "-"
    return f"{wall_ms:+g} ms wall = {wall_ms / 1000 / scale:+g} cluster s"


def describe(fault: dict[str, Any], scale: float) -> str:
    """One line about a started fault, in the user's terms."""
    kind, params = fault["fault"], fault.get("params") or {}
    targets = ",".join(fault["targets"])
    text = f"{fault['fault_id']}: {kind} {targets}"
    if kind == "partition":
        links = params.get("links") or []
        shown = ", ".join(f"{s}->{d}" for s, d in links[:6]) + (" ..." if len(links) > 6 else "")
        text += (f" ({params.get('mode')}{', one-way' if params.get('oneway') else ''}; "
                 f"{len(links)} link(s) blocked: {shown})")
    elif kind == "link":
        bits = [f"{k}={params[k]:g}" for k in ("delay_ms", "jitter_ms", "loss", "duplicate") if params.get(k)]
        text += f" ({', '.join(bits)} on {len(params.get('links') or [])} link(s))"
    elif kind == "clock":
        mode = params.get("mode")
        if mode == "bump":
            text += f" (bump {_ms(params.get('offset_ms'), scale)})"
        elif mode == "strobe":
            text += (f" (strobe {_ms(params.get('strobe_delta_ms'), scale)} every "
                     f"{params.get('strobe_period_ms', 0):g} ms wall)")
        elif mode == "drift":
            text += f" (drift {params.get('drift_ppm', 0):+g} ppm)"
        else:
            text += " (reset to the host clock)"
    if params.get("refused"):
        text += f"; refused: {', '.join(params['refused'])}"
    if fault.get("ends_in_ms") is not None:
        verb = "restarts" if kind in ("kill", "stop") else "heals"
        wall = round(fault["ends_in_ms"])
        text += f"; {verb} in {wall:g} ms wall ({round(wall / 1000 / scale, 1):g} cluster s)"
    return text


def _start(run: Path | None, verb: str, args: dict[str, Any]) -> None:
    if any(not str(t).strip() for t in args.get("targets") or []):  # `kill ''`: say so in the verb's terms
        raise SpecError(f"{verb}: an empty target; name the node(s), a role or a selector, e.g. "
                        f"rmqemu {verb} broker-a-0")
    spec_from_args(verb, args)  # usage errors before anything is asked of the cluster
    _check_clients(run, verb, args)
    result, scale = _call(run, verb, args)
    click.echo(describe(result, scale))


def _check_clients(run: Path | None, verb: str, args: dict[str, Any]) -> None:
    """A real client named (``client@<pid>``) must be connected now: else a usage error (exit 2)
    listing the connected ones. The supervisor checks again when it starts the fault."""
    named = client_names(*(args.get(k) for k in ("targets", "from", "to")))
    if not named:
        return
    found, _ = _call(run, "real_clients", {})
    try:
        check_connected(named, ConnectedClients(found.get("by_node") or {}, bool(found.get("remoting"))))
    except TargetError as err:
        raise SpecError(f"{verb}: {err}") from None


def register(main: click.Group) -> None:
    """Add the fault verbs to the ``rmqemu`` group (called by ``emulator.cli.main``)."""
    for command in (kill, stop, pause, resume, partition, link, skew, heal, faults):
        main.add_command(command)


@click.command()
@click.argument("targets", nargs=-1, required=True)
@click.option("--restart-after", help="restart it this long after the kill (cluster seconds)")
@RUN
@fault_verb
def kill(targets: tuple[str, ...], restart_after: str | None, run: Path | None) -> None:
    """SIGKILL nodes (names, roles or selectors: broker-a-0, master, one:namesrv)."""
    _start(run, "kill", {"targets": list(targets), "restart_after": restart_after})


@click.command()
@click.argument("targets", nargs=-1, required=True)
@click.option("--restart-after", help="restart it this long after the stop (cluster seconds)")
@RUN
@fault_verb
def stop(targets: tuple[str, ...], restart_after: str | None, run: Path | None) -> None:
    """SIGTERM nodes: a graceful shutdown (a broker unregisters from every namesrv)."""
    _start(run, "stop", {"targets": list(targets), "restart_after": restart_after})


@click.command()
@click.argument("targets", nargs=-1, required=True)
@DURATION
@RUN
@fault_verb
def pause(targets: tuple[str, ...], duration: str | None, run: Path | None) -> None:
    """SIGSTOP nodes until `rmqemu resume` (or --duration)."""
    _start(run, "pause", {"targets": list(targets), "duration": duration})


@click.command()
@click.argument("targets", nargs=-1, required=True)
@RUN
@fault_verb
def resume(targets: tuple[str, ...], run: Path | None) -> None:
    """SIGCONT paused nodes (ends the pause holding them)."""
    check_not_clients("resume", list(targets))
    result, _ = _call(run, "resume", {"targets": list(targets)})
    click.echo(f"healed: {', '.join(result['healed'])}")


@click.command()
@click.argument("targets", nargs=-1)
@click.option("--from", "from_", multiple=True,
              help="the other side: nodes or real clients (client@<pid>); repeat or comma-separate")
@click.option("--mode", type=click.Choice(list(PARTITION_MODES)),
              help="without --from: how to split (default isolate TARGETS from every other node)")
@click.option("--oneway", is_flag=True, help="only TARGETS -> the other side is cut (TARGETS still hear it)")
@DURATION
@RUN
@fault_verb
def partition(targets: tuple[str, ...], from_: tuple[str, ...], mode: str | None, oneway: bool,
              duration: str | None, run: Path | None) -> None:
    """Cut links: TARGETS from every other node, or from the --from nodes.

    `rmqemu partition namesrv-0 --from broker-a-0 --oneway`: namesrv-0 can no longer reach
    broker-a-0 (its replies are lost) while broker-a-0 still reaches namesrv-0.

    A real client connected to a remoting port is a target or a --from peer under the name
    `rmqemu status` shows (client@<pid>): `rmqemu partition client@4242` cuts it off from every
    namesrv and broker, `--from namesrv-0` from that node only. The nodes enforce it:
    `client@4242 --from namesrv-0 --oneway` drops its requests at namesrv-0, `namesrv-0 --from
    client@4242 --oneway` drops namesrv-0's answers to it.
    """
    _start(run, "partition", {"targets": list(targets), "from": list(from_), "mode": mode, "oneway": oneway,
                              "duration": duration})


@click.command()
@click.argument("targets", nargs=-1, required=True)
@click.option("--to", multiple=True, help="only links to these nodes or real clients (default: every other node)")
@click.option("--delay", help="added delay (cluster time: 2s, 500ms)")
@click.option("--jitter", help="+/- this much on the delay (so frames reorder)")
@click.option("--loss", help="drop rate: 0.05 or 5%")
@click.option("--duplicate", help="duplication rate: 0.01 or 1%")
@click.option("--oneway", is_flag=True, help="only TARGETS -> --to, not the way back")
@DURATION
@RUN
@fault_verb
def link(targets: tuple[str, ...], to: tuple[str, ...], delay: str | None, jitter: str | None, loss: str | None,
         duplicate: str | None, oneway: bool, duration: str | None, run: Path | None) -> None:
    """Delay, lose or duplicate frames on the links of TARGETS (both ways unless --oneway).

    A real client (client@<pid>, as `rmqemu status` shows it) may be a target or a --to peer:
    `rmqemu link client@4242 --delay 1s` delays what it sends every namesrv and broker and their
    answers to it (the nodes apply both directions).
    """
    _start(run, "link", {"targets": list(targets), "to": list(to), "delay": delay, "jitter": jitter, "loss": loss,
                         "duplicate": duplicate, "oneway": oneway, "duration": duration})


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("value")
@click.option("--period", help="strobe: flip between the host clock and VALUE every period")
@DURATION
@RUN
@fault_verb
def skew(target: str, value: str, period: str | None, duration: str | None, run: Path | None) -> None:
    """Skew a node's clock: +130s / -2m (bump), 500ppm (drift), reset.

    TARGET may list several nodes with commas (namesrv-0,namesrv-1).
    """
    _start(run, "skew", {"targets": [target], "value": value, "period": period, "duration": duration})


@click.command()
@click.argument("fault_ids", nargs=-1)
@RUN
@fault_verb
def heal(fault_ids: tuple[str, ...], run: Path | None) -> None:
    """End the given faults, or every active fault: resume, reconnect, reset clocks, restart
    killed nodes."""
    result, _ = _call(run, "heal", {"fault_ids": list(fault_ids)})
    click.echo(f"healed: {', '.join(result['healed']) or 'nothing (no active fault)'}")


@click.command()
@RUN
@fault_verb
def faults(run: Path | None) -> None:
    """List the active faults of a cluster started with `rmqemu up`."""
    result, scale = _call(run, "faults", {})
    for fault in result["active"]:
        click.echo(describe(fault, scale))
    if not result["active"]:
        click.echo("no active fault")
