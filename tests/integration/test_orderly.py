"""Ordered producers and orderly consumers on a real cluster (docs/rocketmq-model.md §3.7, §4.9):
fault-free, every key's acked messages are first consumed in send order; a master killed for
longer than the consumers' local lock lets their locks on it expire, and the restarted master,
whose lock table was lost, grants them afresh."""

from __future__ import annotations

from typing import Any

from rmqemu.emulator.chaos import Cluster
from rmqemu.emulator.testing import read_events
from tests.eventdoc import contract_problems

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
    again = [e for e in lock_events(c, "broker.lock", "broker-b-0") if e["ts"] > restarted]
    assert {e["change"] for e in again} == {"locked"}  # fresh grants: the lock table was lost with the process
    assert contract_problems(c.run_dir) == []
