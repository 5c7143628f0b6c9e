"""``rmqemu admin``: mqadmin-like verbs against a live cluster (started with ``rmqemu up``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rmqemu.emulator.cli.errors import handle_errors
from rmqemu.emulator.launcher import admin as _admin
from rmqemu.emulator.launcher.run_dir import read_json, resolve_run
from rmqemu.errors import RmqemuError


def _nodes(run: Path | None) -> dict[str, Any]:
    return read_json(resolve_run(run) / "manifest.json")["nodes"]


def _namesrv_addr(run: Path | None, namesrv: str | None) -> str:
    nodes = _nodes(run)
    names = sorted(n for n, v in nodes.items() if v["role"] == "namesrv" and v.get("addr"))
    if not names:
        raise RmqemuError("no namesrv address in the manifest (is the cluster up?)")
    name = namesrv or names[0]
    if name not in names:
        raise RmqemuError(f"unknown namesrv {name!r}; known: {', '.join(names)}")
    return nodes[name]["addr"]


_handled = handle_errors


RUN = click.option("--run", type=click.Path(path_type=Path), default=None,
                   help="run directory (default: the latest under runs/)")
NAMESRV = click.option("--namesrv", default=None, help="which namesrv to ask (default: namesrv-0)")


@click.group()
def admin() -> None:
    """Admin requests against a live cluster (topic-route, cluster-list, topic-list, update-topic)."""


@admin.command("topic-route")
@click.argument("topic")
@RUN
@NAMESRV
@_handled
def topic_route(topic: str, run: Path | None, namesrv: str | None) -> None:
    """GET_ROUTEINFO_BY_TOPIC, printed as RocketMQ's TopicRouteData JSON."""
    click.echo(json.dumps(_admin.topic_route(_namesrv_addr(run, namesrv), topic), indent=2))


@admin.command("cluster-list")
@RUN
@NAMESRV
@_handled
def cluster_list(run: Path | None, namesrv: str | None) -> None:
    """GET_BROKER_CLUSTER_INFO: one line per broker address."""
    info = _admin.cluster_list(_namesrv_addr(run, namesrv))
    click.echo(f"{'#Cluster':<18}{'#Broker':<18}{'#BID':<6}#Addr")
    for cluster, names in sorted(info.get("clusterAddrTable", {}).items()):
        for name in sorted(names):
            addrs = info["brokerAddrTable"].get(name, {}).get("brokerAddrs", {})
            for bid, addr in sorted(addrs.items(), key=lambda kv: int(kv[0])):
                click.echo(f"{cluster:<18}{name:<18}{bid:<6}{addr}")


@admin.command("topic-list")
@RUN
@NAMESRV
@_handled
def topic_list(run: Path | None, namesrv: str | None) -> None:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER."""
    for t in sorted(_admin.topic_list(_namesrv_addr(run, namesrv))):
        click.echo(t)


@admin.command("update-topic")
@click.argument("topic")
@click.option("--broker", "brokers", multiple=True, required=True, help="broker name (repeatable)")
@click.option("--queues", type=int, default=4, show_default=True)
@click.option("--perm", type=int, default=6, show_default=True)
@RUN
@NAMESRV
@_handled
def update_topic(topic: str, brokers: tuple[str, ...], queues: int, perm: int, run: Path | None,
                 namesrv: str | None) -> None:
    """UPDATE_AND_CREATE_TOPIC on the master of each named broker: the address the namesrv holds
    as its brokerId 0 (as ``mqadmin updateTopic -c`` finds masters), so a DLedger group's
    current master."""
    from rmqemu.emulator.launcher.topology import TopicEntry

    nodes = _nodes(run)
    known = sorted({n["broker"] for n in nodes.values() if n.get("broker")})
    info = _admin.cluster_list(_namesrv_addr(run, namesrv))
    entry = TopicEntry(name=topic, brokers=list(brokers), queues=queues, perm=perm)
    for b in brokers:
        if b not in known:
            raise RmqemuError(f"unknown broker {b!r} (this run's brokers: {', '.join(known) or 'none'})")
        addr = info.get("brokerAddrTable", {}).get(b, {}).get("brokerAddrs", {}).get("0")
        if not addr:
            raise RmqemuError(f"broker {b!r} has no master on the namesrv now (dead, or a DLedger group "
                              "between leaders): try again, or see `rmqemu admin cluster-list`")
        _admin.update_topic(addr, entry)
        click.echo(f"{topic}: created/updated on {b} ({addr})")
