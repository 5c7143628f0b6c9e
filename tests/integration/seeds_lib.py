"""Helpers for the seed-phenomenon tests: topology paths and joins over a run's events.

Everything here reads the JSON-lines events of a run (docs/design.md §6) through
:func:`emulator.testing.read_events`; nothing talks to the processes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rmqemu.emulator.testing import read_events

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
SEED_FILES = sorted(TOPOLOGIES.glob("seed-*.yaml"))
NO_ROUTE_PREFIX = "No route info of this topic: "


def topology(name: str) -> Path:
    return TOPOLOGIES / f"{name}.yaml"


def sends(run_dir: Path, node: str | None = None, **match: Any) -> list[dict[str, Any]]:
    """``send`` events (one per attempt), optionally of one node and with equal fields."""
    return read_events(run_dir, "send", node=node,
                       where=lambda e: all(e.get(k) == v for k, v in match.items()))


def stalled_by_host(run_dir: Path, failed: list[dict[str, Any]]) -> set[str]:
    """The msg_ids of the ``failed`` sends that timed out while a node of the run was late by half
    the send's wait or more (its ``node.lag``: the host did not run the cluster in time,
    docs/design.md §9). A 2-core host running other tests' clusters and JVMs beside this one
    sometimes stalls every node for ~200 ms, the wall floor of a send's timeout at scale 0.01."""
    lags = read_events(run_dir, "node.lag")

    def stalled(send: dict[str, Any]) -> bool:
        wait = send.get("latency_ms") or 0.0
        return send["outcome"] == "timeout" and any(
            lag["ts"] >= send["ts"] - wait and lag["ts"] - lag["window_ms"] <= send["ts"] and lag["max_ms"] >= wait / 2
            for lag in lags)
    return {e["msg_id"] for e in failed if stalled(e)}


def acked(run_dir: Path, node: str | None = None) -> dict[str, dict[str, Any]]:
    """msg_id -> the ``send`` attempt that stored it (outcome ok), batches expanded."""
    out: dict[str, dict[str, Any]] = {}
    for e in sends(run_dir, node, outcome="ok"):
        for mid in e.get("msg_ids") or [e["msg_id"]]:
            out[mid] = e
    return out


def consumed(run_dir: Path, group: str) -> Counter[str]:
    """msg_id -> how many times ``group`` consumed it (successfully)."""
    counts: Counter[str] = Counter()
    for e in read_events(run_dir, "consume", where=lambda e: e.get("group") == group):
        counts.update(e["msg_ids"])
    return counts


def pulls(run_dir: Path, node: str | None = None, **match: Any) -> list[dict[str, Any]]:
    return read_events(run_dir, "pull", node=node, where=lambda e: all(e.get(k) == v for k, v in match.items()))


def rebalances(run_dir: Path, node: str | None = None, **match: Any) -> list[dict[str, Any]]:
    return read_events(run_dir, "rebalance", node=node,
                       where=lambda e: all(e.get(k) == v for k, v in match.items()))


def client_routes(run_dir: Path, node: str, topic: str) -> list[dict[str, Any]]:
    return read_events(run_dir, "client.route", node=node, where=lambda e: e.get("topic") == topic)


def ns_routes(run_dir: Path, topic: str, node: str = "namesrv-0") -> list[dict[str, Any]]:
    return read_events(run_dir, "ns.route", node=node, where=lambda e: e.get("topic") == topic)


def broker_topics(run_dir: Path, topic: str, **match: Any) -> list[dict[str, Any]]:
    return read_events(run_dir, "broker.topic",
                       where=lambda e: e.get("topic") == topic and all(e.get(k) == v for k, v in match.items()))


def brokers_of(queues: list[dict[str, Any]]) -> set[str]:
    """Broker names in a ``publish_queues`` / ``allocated`` list of queues."""
    return {q["broker"] for q in queues}


def queue_keys(queues: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """``(broker, queue_id)`` of each queue in a ``publish_queues`` / ``allocated`` list."""
    return {(q["broker"], q["queue_id"]) for q in queues}


def moved_queues(run_dir: Path, group: str) -> set[tuple[str, str, int]]:
    """Queues (topic, broker, qid) that more than one node of ``group`` was allocated at some
    time, or that a node lost and got back: where a fault-free run may consume twice."""
    owners: dict[tuple[str, str, int], set[str]] = defaultdict(set)
    regained: set[tuple[str, str, int]] = set()
    held: dict[str, set[tuple[str, str, int]]] = defaultdict(set)
    ever: dict[str, set[tuple[str, str, int]]] = defaultdict(set)
    for e in rebalances(run_dir, group=group):
        now = {(e["topic"], b, q) for b, q in queue_keys(e["allocated"])}
        mine = {k for k in held[e["node"]] if k[0] == e["topic"]}
        regained |= {k for k in now - mine if k in ever[e["node"]]}
        held[e["node"]] = (held[e["node"]] - mine) | now
        ever[e["node"]] |= now
        for k in now:
            owners[k].add(e["node"])
    return {k for k, nodes in owners.items() if len(nodes) > 1} | regained
