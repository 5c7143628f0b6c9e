"""``manifest.json`` and the per-node spec files a cluster writes into its run directory."""

from __future__ import annotations

import platform
from importlib import metadata
from typing import TYPE_CHECKING, Any

from rmqemu.emulator.launcher.addresses import spec_remoting
from rmqemu.emulator.launcher.run_dir import write_json
from rmqemu.emulator.launcher.topology_proxy import spec_grpc
from rmqemu.emulator.roles.common.node_spec import NodeSpec

if TYPE_CHECKING:
    from rmqemu.emulator.launcher.launcher import Launcher


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def node_entry(cluster: "Launcher", name: str) -> dict[str, Any]:
    plan = cluster.plans[name]
    entry: dict[str, Any] = {"role": plan.role, "config": plan.config}
    for key in ("broker", "broker_id", "peer", "cluster", "group"):
        if getattr(plan, key) is not None:
            entry[key] = getattr(plan, key)
    if plan.role == "broker":
        entry["autoCreateTopicEnable"] = bool(plan.config.get("autoCreateTopicEnable", True))
    proc = cluster.procs.get(name)
    if proc is not None:
        entry.update(pid=proc.pid, create_time=proc.create_time)
    if name in cluster.addrs:
        entry["addr"] = cluster.addrs[name]
    if name in cluster.remoting_addrs:  # remoting: on, the port real clients connect to
        entry["remoting_addr"] = cluster.remoting_addrs[name]
    if name in cluster.grpc_addrs:  # a proxy: the gRPC port RocketMQ 5 clients connect to
        entry["grpc_addr"] = cluster.grpc_addrs[name]
    return entry


def write(cluster: "Launcher") -> None:
    topo = cluster.topo
    data = {
        "run": cluster.run_dir.name,
        "name": topo.name,
        "seed": topo.seed,
        "scale": cluster.scale,
        "started_ms": cluster.started_ms,
        "duration_s": topo.duration,
        "nodes": {name: node_entry(cluster, name) for name in cluster.plans},
        "topology": topo.model_dump(mode="json"),
        "versions": {"rmqemu": _version("rmqemu"), "python": platform.python_version(),
                     "pyzmq": _version("pyzmq"), "emulates": "rocketmq-all-4.9.4"},
    }
    write_json(cluster.run_dir / "manifest.json", data)


def write_spec(cluster: "Launcher", name: str, namesrv_names: list[str]) -> None:
    """What ``python -m rmqemu.emulator.node`` reads (mode 0600). No secret: the node's control key is
    handed over on its stdin by ``spawn_node``."""
    plan = cluster.plans[name]
    names = [n for n in namesrv_names if n in cluster.addrs]
    spec = NodeSpec(
        name=name,
        role=plan.role,  # type: ignore[arg-type]
        seed=cluster.topo.seed,
        scale=cluster.scale,
        anchor_ms=cluster.started_ms,  # set by Launcher.start before any node is spawned
        min_request_timeout_wall_ms=cluster.topo.timing.minRequestTimeoutWallMs,
        port=cluster.ports.get(name, 0),  # a restarted node binds its old port: routes stay valid
        remoting=spec_remoting(cluster, name),  # likewise its remoting port (real clients' namesrvAddr)
        grpc=spec_grpc(cluster, name),  # and a proxy's gRPC port (RocketMQ 5 clients' endpoints)
        control=cluster.control.endpoint,
        store_dir=str(cluster.run_dir / "store" / name),
        events=str(cluster.run_dir / "events" / f"{name}.jsonl"),
        namesrv_addrs=tuple(cluster.addrs[n] for n in names),
        namesrv_names=tuple(names),
        config=plan.config,
        workload=plan.workload,
        broker=plan.broker,
        broker_id=plan.broker_id,
        cluster=plan.cluster,
        group=plan.group,
    )
    (cluster.run_dir / "store" / name).mkdir(parents=True, exist_ok=True)
    write_json(cluster.run_dir / "specs" / f"{name}.json", spec.to_dict(), private=True)
