"""Ordered producers and orderly consumers on a real cluster (docs/rocketmq-model.md §3.7, §4.9):
fault-free, every key's acked messages are first consumed in send order; a master killed for
longer than the consumers' local lock lets their locks on it expire, and the restarted master,
whose lock table was lost, grants them afresh. The order checker (docs/design.md §7 "Order") in
Spark on the seed topology (its expect: holds) and on the fault-free control (no violation over
10,000 ordered messages)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rmqemu.emulator.chaos import Cluster
from rmqemu.emulator.cli.launch import run_topology
from rmqemu.emulator.launcher.topology_load import load_topology
from rmqemu.emulator.testing import expect_metrics, read_events
from rmqemu.faults.launch_glue import build_plan
from tests.eventdoc import contract_problems
from tests.integration.seeds_lib import sends, stalled_by_host, topology

SCALE = 0.01
ORDERLY = {
    "name": "orderly",
    "timing": {"scale": SCALE},
    "brokers": [{"name": "broker-a"}, {"name": "broker-b"}],
    "topics": [{"name": "OrderTopic", "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "producers": [{"group": "pg", "topics": ["OrderTopic"], "rate": 2, "ordered": {"keys": 8}}],
    # the consumers keep broker-b in their route through the outage (a 120 s poll), so its queues stay
    # theirs and nothing but the lock expiry can end their local locks
    "consumers": [{"group": "cg", "instances": 2, "subscribe": ["OrderTopic"], "orderly": True,
                   "pollNameServerInterval": 120000}],
    "duration": "600s",
}


def acked(c: Cluster, before: float) -> dict[str, list[str]]:
    """Per sharding key, the msg ids acked before host time ``before``, in send order."""
    out: dict[str, list[str]] = {}
    for e in read_events(c.run_dir, "send", node="pg-0", where=lambda e: e["outcome"] == "ok" and e["ts"] < before):
        out.setdefault(e["sharding_key"], []).append(e["msg_id"])
    return out


def first_consumed(c: Cluster) -> dict[str, float]:
    """msg id -> the host time it was first consumed (either consumer)."""
    first: dict[str, float] = {}
    for e in c.events("consume"):
        if e.get("topic") == "OrderTopic":
            for m in e["msg_ids"]:
                first.setdefault(m, e["ts"])
    return first


def lock_events(c: Cluster, kind: str, node: str, **where: Any) -> list[dict[str, Any]]:
    return read_events(c.run_dir, kind, node=node, where=lambda e: e.get("topic") == "OrderTopic"
                       and all(e.get(k) == v for k, v in where.items()))


def test_keys_consumed_in_order_and_a_killed_master_loses_its_locks(start_cluster) -> None:
    c = start_cluster(ORDERLY)
    c.wait_for(lambda: len(c.events("send", node="pg-0")) >= 150, 30, "150 ordered sends")
    cutoff = c.events("send", node="pg-0")[-1]["ts"]
    keys = acked(c, cutoff)
    sent = [m for ids in keys.values() for m in ids]
    c.wait_for(lambda: set(sent) <= set(first_consumed(c)), 30, "every acked message consumed")
    first = first_consumed(c)
    for key, ids in keys.items():
        assert sorted(ids, key=first.__getitem__) == ids, f"key {key} consumed out of order"
    assert len(keys) == 8 and len(sent) >= 100
    holders = {e["client_id"] for b in ("broker-a-0", "broker-b-0") for e in lock_events(c, "broker.lock", b)}
    assert holders == {"127.0.0.1@cg-0", "127.0.0.1@cg-1"}  # the queues were locked on their brokers

    # broker-b's master dies for 60 s: longer than the consumers' 30 s local lock, shorter than their route poll
    mark = c.events()[-1]["ts"]
    c.kill("broker-b-0", restart_after="60s")
    c.wait_for(lambda: len(read_events(c.run_dir, "node.start", node="broker-b-0")) == 2, 30, "broker-b-0 restarted")
    restarted = read_events(c.run_dir, "node.start", node="broker-b-0")[-1]["ts"]
    c.wait_for(lambda: {e["queue_id"] for e in lock_events(c, "broker.lock", "broker-b-0", change="locked")
                        if e["ts"] > restarted} == {0, 1, 2, 3}, 30, "broker-b's queues locked again after its restart")
    expired = [e for n in ("cg-0", "cg-1")
               for e in lock_events(c, "orderly.lock", n, broker="broker-b", change="expired")
               if mark < e["ts"] < restarted]
    assert {e["queue_id"] for e in expired} == {0, 1, 2, 3}  # no master to renew at: every local lock ran out
    first_after: dict[int, str] = {}
    for e in lock_events(c, "broker.lock", "broker-b-0"):
        if e["ts"] > restarted:
            first_after.setdefault(e["queue_id"], e["change"])
    # fresh grants: the lock table was lost with the process, so each queue's first change is a grant of a
    # free queue, never a takeover (a rebalance may then move a queue, with the holder's own unlock)
    assert first_after == {q: "locked" for q in range(4)}
    assert contract_problems(c.run_dir) == []


def test_the_seed_topology_remaps_keys_and_its_expectations_hold(tmp_path: Path, rmqemu_spark: Any) -> None:
    """topologies/seed-orderly-remap.yaml as ``rmqemu launch`` runs it: broker-a's keys move to
    broker-b when the producers' routes drop the killed master, and their later messages are
    consumed before the earlier ones it still held."""
    from rmqemu.reports.job import metrics

    topo = load_topology(topology("seed-orderly-remap"))
    result = run_topology(topo, run_dir=tmp_path / "run", plan=build_plan(topo), progress=False, log=lambda m: None)
    assert result.died == []
    m = metrics(rmqemu_spark, str(result.run_dir), only=["order"])
    expect_metrics(m, topo.expect or {}, result.run_dir)
    o = m["order"]
    drop = o["remaps"]["changes"][0]  # the first change that moved a key: broker-a left a producer's route
    assert (drop["before"], drop["after"], drop["queues_before"], drop["queues_after"]) == (
        ["broker-a", "broker-b"], ["broker-b"], 8, 4)
    assert drop["stale_before"] and drop["out_of_order"] > 0
    assert o["keys"] == 144 and 0 < o["keys_violated"] <= o["remaps"]["keys"]
    assert o["failed_sends"]["misrouted"] == o["failed_sends"]["by_reason"]["dead"]


def ok_sends(run_dir: Path) -> int:
    """Acked sends so far, counted in the producers' raw event files (cheap enough to poll)."""
    return sum(path.read_bytes().count(b'"outcome":"ok"') for path in (run_dir / "events").glob("pg-*.jsonl"))


def test_the_fault_free_control_has_no_violation_over_10000_ordered_messages(start_cluster: Any,
                                                                            rmqemu_spark: Any) -> None:
    """topologies/orderly-control.yaml until 10,000 ordered messages were acked, then finished (the
    drain included) and checked with ``c.metrics``: its own expect: (no violation, no failed
    ordered send, nothing lost) holds."""
    topo = load_topology(topology("orderly-control"))
    c = start_cluster(topology("orderly-control"), duration="3600s")
    last = [0.0]

    def enough() -> bool:  # the files grow by megabytes: looked at every 100 wall ms
        if time.monotonic() - last[0] < 0.1:
            return False
        last[0] = time.monotonic()
        return ok_sends(c.run_dir) >= 10_000
    c.wait_for(enough, 60, "10,000 acked ordered messages")
    m = c.metrics(rmqemu_spark, only=topo.expect)
    expect = dict(topo.expect or {})
    failed = [e for e in sends(c.run_dir) if e["outcome"] != "ok"]
    if failed and stalled_by_host(c.run_dir, failed) == {e["msg_id"] for e in failed}:
        del expect["order.failed_sends.total"]  # every failed send timed out in a stall of the host
    expect_metrics(m, expect, c.run_dir)
    assert m["order"]["keys"] == 128 and m["order"]["consumed"] == m["order"]["messages"] >= 10_000
